import { describe, expect, test } from 'bun:test'
import { ALL_PERMISSIONS, grants, isSubset, PERMISSION_TREE } from '../../src/modules/permissions/service'
import { findRoleByName } from '../../src/modules/roles/service'
import { testApp } from '../support/app'
import { runScenarios, type Scenario, type ScenarioContext } from '../support/scenarios'

const administratorId = ({ t }: ScenarioContext) => findRoleByName(t.deps, 'Administrator')!.id

runScenarios('the built-in Administrator role exists and cannot be changed or deleted', [
  {
    name: 'it is the only role, and holds the key',
    method: 'GET',
    url: '/api/v2/roles',
    status: 200,
    json: { data: [{ name: 'Administrator', permissions: ['*'], builtin: true, key_count: 1 }] },
    after: (_, r) => expect(r.body.data).toHaveLength(1),
  },
  { name: 'PATCH', method: 'PATCH', url: (c) => `/api/v2/roles/${administratorId(c)}`, body: { permissions: [] }, status: 409 },
  { name: 'DELETE', method: 'DELETE', url: (c) => `/api/v2/roles/${administratorId(c)}`, status: 409 },
])

runScenarios('create refuses', [
  ...(
    [
      ['unknown permission', { name: 'X', permissions: ['contacts.read', 'contacts.fly'] }, 422, 'validation_failed'],
      ['missing permissions', { name: 'X' }, 422, 'validation_failed'],
      ['empty name', { name: '', permissions: [] }, 422, 'validation_failed'],
      ['duplicate name, other case', { name: 'administrator', permissions: [] }, 409, 'conflict'],
    ] as const
  ).map(([name, body, status, code]): Scenario => ({ name, method: 'POST', url: '/api/v2/roles', body, status, code })),
  {
    name: 'an unknown permission, named in the details',
    method: 'POST',
    url: '/api/v2/roles',
    body: { name: 'X', permissions: ['contacts.fly'] },
    status: 422,
    after: (_, r) => expect(r.body.error.details.permissions[0]).toContain('"contacts.fly" is not a permission'),
  },
])

runScenarios('a role bound to keys cannot be deleted', [
  {
    name: 'DELETE a role with one key',
    method: 'DELETE',
    before: ({ t }) => t.makeKey({ permissions: ['roles.read'] }),
    url: ({ setup }) => `/api/v2/roles/${setup.role_id}`,
    status: 409,
    message: 'bound to 1 API key',
  },
])

// A key that may create and update roles and read them, but grants nothing else.
const limited = ({ t }: ScenarioContext) => t.makeKey({ permissions: ['roles.create', 'roles.update', 'roles.read'] })
runScenarios('a role cannot grant what the caller lacks', [
  {
    name: 'a permission the caller lacks',
    method: 'POST',
    url: '/api/v2/roles',
    before: limited,
    key: (c) => c.setup.key,
    body: { name: 'Sneaky', permissions: ['api_keys.create'] },
    status: 403,
  },
  {
    name: 'the wildcard',
    method: 'POST',
    url: '/api/v2/roles',
    before: limited,
    key: (c) => c.setup.key,
    body: { name: 'Star', permissions: ['*'] },
    status: 403,
  },
  {
    name: 'the wildcard, onto its own role',
    method: 'PATCH',
    before: limited,
    url: (c) => `/api/v2/roles/${c.setup.role_id}`,
    key: (c) => c.setup.key,
    body: { permissions: ['*'] },
    status: 403,
  },
  {
    name: 'a permission it holds',
    method: 'POST',
    url: '/api/v2/roles',
    before: limited,
    key: (c) => c.setup.key,
    body: { name: 'Reader', permissions: ['roles.read'] },
    status: 201,
  },
])

describe('roles', () => {
  test('create, read, update, delete a custom role', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const created = await t.call('POST', '/api/v2/roles', {
      key: admin.key,
      body: { name: 'Support', description: 'reads things', permissions: ['roles.read', 'api_keys.read', 'api_keys.read'] },
    })
    expect(created.status).toBe(201)
    expect(created.body.data).toMatchObject({
      name: 'Support',
      description: 'reads things',
      permissions: ['api_keys.read', 'roles.read'],
      builtin: false,
      key_count: 0,
    })
    const id = created.body.data.id
    const updated = await t.call('PATCH', `/api/v2/roles/${id}`, { key: admin.key, body: { name: 'Helpdesk', permissions: ['roles.read'] } })
    expect(updated.body.data).toMatchObject({ name: 'Helpdesk', permissions: ['roles.read'] })
    expect((await t.call('GET', `/api/v2/roles/${id}`, { key: admin.key })).body.data.name).toBe('Helpdesk')
    expect((await t.call('DELETE', `/api/v2/roles/${id}`, { key: admin.key })).status).toBe(200)
    expect((await t.call('GET', `/api/v2/roles/${id}`, { key: admin.key })).status).toBe(404)
  })

  test('a change to a role applies to its keys at the next request', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const a = t.makeKey({ permissions: ['roles.read'] })
    const b = await t.call('POST', '/api/v2/api-keys', { key: admin.key, body: { name: 'second', role_id: a.role_id, rate_limit: null } })
    const keys = [a.key, b.body.data.key]
    for (const key of keys) expect((await t.call('GET', '/api/v2/api-keys', { key })).status).toBe(403)
    await t.call('PATCH', `/api/v2/roles/${a.role_id}`, { key: admin.key, body: { permissions: ['roles.read', 'api_keys.read'] } })
    for (const key of keys) expect((await t.call('GET', '/api/v2/api-keys', { key })).status).toBe(200)
    await t.call('PATCH', `/api/v2/roles/${a.role_id}`, { key: admin.key, body: { permissions: [] } })
    for (const key of keys) expect((await t.call('GET', '/api/v2/roles', { key })).status).toBe(403)
  })

  test("key_count counts each role's own live keys", async () => {
    const t = testApp()
    const admin = t.makeKey()
    const one = t.makeKey({ permissions: ['roles.read'] })
    const second = await t.call('POST', '/api/v2/api-keys', { key: admin.key, body: { name: 'second', role_id: one.role_id, rate_limit: null } })
    await t.call('POST', '/api/v2/api-keys', { key: admin.key, body: { name: 'third', role_id: one.role_id, rate_limit: null } })
    await t.call('DELETE', `/api/v2/api-keys/${second.body.data.id}`, { key: admin.key })
    const empty = await t.call('POST', '/api/v2/roles', { key: admin.key, body: { name: 'Unused', permissions: [] } })
    const list = await t.call('GET', '/api/v2/roles', { key: admin.key })
    const counts = Object.fromEntries(list.body.data.map((r: { id: number; key_count: number }) => [r.id, r.key_count]))
    expect(counts).toEqual({ [list.body.data[0].id]: 1, [one.role_id]: 2, [empty.body.data.id]: 0 })
    expect((await t.call('GET', `/api/v2/roles/${one.role_id}`, { key: admin.key })).body.data.key_count).toBe(2)
    expect((await t.call('GET', `/api/v2/roles/${empty.body.data.id}`, { key: admin.key })).body.data.key_count).toBe(0)
  })
})

describe('permission tree', () => {
  test('is readable and has every group the spec and later issues name', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const r = await t.call('GET', '/api/v2/permissions', { key: admin.key })
    expect(r.status).toBe(200)
    const names = r.body.data.map((g: { name: string }) => g.name)
    for (const group of [
      'Contacts',
      'Lists',
      'Broadcasts',
      'Segments',
      'Custom Fields',
      'Sending Nodes',
      'Sending Domains',
      'Drips',
      'Triggers',
      'Suppression',
      'Statistics',
      'Webhooks',
      'Templates',
      'Transactional',
      'Bridges',
      'IPs and Pools',
      'Web Forms',
      'Feedback Loops',
      'Spin Tags',
      'Activity Logs',
      'API Keys',
      'Roles',
    ]) {
      expect(names).toContain(group)
    }
    const ids = r.body.data.flatMap((g: { permissions: Array<{ id: string }> }) => g.permissions.map((p) => p.id))
    expect(ids).toEqual([...ALL_PERMISSIONS])
    expect(new Set(ids).size).toBe(ids.length)
  })

  test('every permission of every group is granted or denied on its own', () => {
    for (const permission of ALL_PERMISSIONS) {
      const allBut = ALL_PERMISSIONS.filter((p) => p !== permission)
      expect(grants(allBut, permission)).toBe(false)
      expect(grants([permission], permission)).toBe(true)
      expect(ALL_PERMISSIONS.filter((p) => grants([permission], p))).toEqual([permission])
      expect(grants(['*'], permission)).toBe(true)
      expect(isSubset([permission], allBut)).toBe(false)
    }
  })

  test('every permission id is <group>.<action>', () => {
    for (const g of PERMISSION_TREE) for (const p of g.permissions) expect(p.id).toBe(`${g.id}.${p.action}`)
  })
})
