import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { getApiKey } from '../../src/modules/api-keys/service'
import { findRoleByName } from '../../src/modules/roles/service'
import { testApp } from '../support/app'
import { UNLIMITED } from '../../src/lib/rate-limit'
import { runScenarios, type Scenario, type ScenarioContext } from '../support/scenarios'
import { tempDir } from '../support/temp-dirs'

describe('API key lifecycle', () => {
  test('create shows the key once; reads never show it', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const created = await t.call('POST', '/api/v2/api-keys', {
      key: admin.key,
      body: { name: 'deploy bot', role_id: admin.role_id, rate_limit: 120, allowed_ips: ['10.0.0.0/8', ' 2001:db8::1 '] },
    })
    expect(created.status).toBe(201)
    expect(created.body.success).toBe(true)
    const data = created.body.data
    expect(data.key).toMatch(/^mr_[a-z0-9]{12}_[A-Za-z0-9_-]{43}$/)
    expect(data.key.startsWith(data.prefix + '_')).toBe(true)
    expect(data).toMatchObject({
      name: 'deploy bot',
      role: { id: admin.role_id, name: 'Administrator' },
      rate_limit: 120,
      allowed_ips: ['10.0.0.0/8', '2001:db8::1'],
      status: 'active',
      deleted_at: null,
      last_used_at: null,
    })
    expect(data.created_at).toBe('2026-03-01T12:00:30.000Z')

    const read = await t.call('GET', `/api/v2/api-keys/${data.id}`, { key: admin.key })
    expect(read.status).toBe(200)
    expect(read.body.data.key).toBeUndefined()
    expect(JSON.stringify(read.body)).not.toContain(data.key)

    const list = await t.call('GET', '/api/v2/api-keys', { key: admin.key })
    expect(list.body.data.map((k: { id: number }) => k.id)).toEqual([admin.id, data.id])
    expect(JSON.stringify(list.body)).not.toContain(data.key)

    // The new key is live and its allowlist applies: without a known client address it is refused.
    const own = await t.call('GET', '/api/v2/api-keys', { key: data.key })
    expect(own.status).toBe(403)
    expect(own.body.error.code).toBe('ip_not_allowed')
  })

  test('rate_limit omitted takes the configured default; null is unlimited', async () => {
    const t = testApp({ default_rate_limit: 42 })
    const admin = t.makeKey()
    const a = await t.call('POST', '/api/v2/api-keys', { key: admin.key, body: { name: 'a', role_id: admin.role_id } })
    const b = await t.call('POST', '/api/v2/api-keys', { key: admin.key, body: { name: 'b', role_id: admin.role_id, rate_limit: null } })
    expect(a.body.data.rate_limit).toBe(42)
    expect(b.body.data.rate_limit).toBeNull()
    const unlimited = await t.call('GET', '/api/v2/roles', { key: b.body.data.key })
    expect(unlimited.status).toBe(200)
    // Issue 13 item 15: the headers are on every response; an unlimited key's say UNLIMITED.
    expect(unlimited.headers.get('x-ratelimit-limit')).toBe(String(UNLIMITED))
  })

  test('update changes limit, allowlist, role and status without changing the key', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const other = t.makeKey({ permissions: ['roles.read'] })
    const target = t.makeKey({ name: 'target' })
    const r = await t.call('PATCH', `/api/v2/api-keys/${target.id}`, {
      key: admin.key,
      body: { name: 'renamed', rate_limit: 5, allowed_ips: ['192.0.2.0/24'], role_id: other.role_id },
    })
    expect(r.status).toBe(200)
    expect(r.body.data).toMatchObject({ name: 'renamed', rate_limit: 5, allowed_ips: ['192.0.2.0/24'], role: { id: other.role_id } })
    const bad = await t.call('PATCH', `/api/v2/api-keys/${target.id}`, { key: admin.key, body: { allowed_ips: ['nope'] } })
    expect(bad.status).toBe(422)
    const still = await t.call('GET', `/api/v2/api-keys/${target.id}`, { key: admin.key })
    expect(still.body.data.allowed_ips).toEqual(['192.0.2.0/24'])
  })

  test('inactive keys are refused at once and work again when reactivated', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const k = t.makeKey()
    expect((await t.call('PATCH', `/api/v2/api-keys/${k.id}`, { key: admin.key, body: { status: 'inactive' } })).status).toBe(200)
    const refused = await t.call('GET', '/api/v2/roles', { key: k.key })
    expect(refused.status).toBe(401)
    expect(refused.body.error).toEqual({ code: 'unauthorized', message: 'The API key is inactive.' })
    await t.call('PATCH', `/api/v2/api-keys/${k.id}`, { key: admin.key, body: { status: 'active' } })
    expect((await t.call('GET', '/api/v2/roles', { key: k.key })).status).toBe(200)
  })

  test('delete is soft: the key stops working, is listed as deleted, and restore brings it back', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const k = t.makeKey({ name: 'old' })
    const del = await t.call('DELETE', `/api/v2/api-keys/${k.id}`, { key: admin.key })
    expect(del.status).toBe(200)
    expect(del.body.data.deleted_at).toBe('2026-03-01T12:00:30.000Z')
    expect((await t.call('GET', '/api/v2/roles', { key: k.key })).body.error.message).toBe('The API key has been deleted.')

    expect((await t.call('GET', '/api/v2/api-keys', { key: admin.key })).body.data.map((x: { id: number }) => x.id)).toEqual([admin.id])
    expect((await t.call('GET', '/api/v2/api-keys?state=deleted', { key: admin.key })).body.data.map((x: { id: number }) => x.id)).toEqual([k.id])
    expect((await t.call('GET', '/api/v2/api-keys?state=all', { key: admin.key })).body.meta.total).toBe(2)
    expect((await t.call('PATCH', `/api/v2/api-keys/${k.id}`, { key: admin.key, body: { name: 'x' } })).status).toBe(409)

    const restored = await t.call('POST', `/api/v2/api-keys/${k.id}/restore`, { key: admin.key })
    expect(restored.status).toBe(200)
    expect(restored.body.data.deleted_at).toBeNull()
    expect((await t.call('GET', '/api/v2/roles', { key: k.key })).status).toBe(200)
    expect((await t.call('POST', `/api/v2/api-keys/${k.id}/restore`, { key: admin.key })).status).toBe(409)
  })

  test('rotation without downtime: create the new key, use it, delete the old one', async () => {
    const t = testApp()
    const old = t.makeKey({ name: 'v1' })
    const created = await t.call('POST', '/api/v2/api-keys', { key: old.key, body: { name: 'v2', role_id: old.role_id } })
    const fresh = created.body.data.key
    expect((await t.call('GET', '/api/v2/roles', { key: old.key })).status).toBe(200)
    expect((await t.call('GET', '/api/v2/roles', { key: fresh })).status).toBe(200)
    expect((await t.call('DELETE', `/api/v2/api-keys/${old.id}`, { key: fresh })).status).toBe(200)
    expect((await t.call('GET', '/api/v2/roles', { key: old.key })).status).toBe(401)
    expect((await t.call('GET', '/api/v2/roles', { key: fresh })).status).toBe(200)
  })

  test('every call updates last access time and address', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const k = t.makeKey()
    t.deps.clock.advance(5_000)
    await t.call('GET', '/api/v2/permissions', { key: k.key })
    const read = await t.call('GET', `/api/v2/api-keys/${k.id}`, { key: admin.key })
    expect(read.body.data.last_used_at).toBe('2026-03-01T12:00:35.000Z')
    t.deps.clock.advance(60_000)
    await t.call('GET', '/api/v2/permissions', { key: k.key })
    t.usage.flush()
    // getApiKey reads the stored row, without the API's overlay of pending uses: this checks the flush wrote it.
    expect(getApiKey(t.deps, k.id).last_used_at).toBe('2026-03-01T12:01:35.000Z')
  })

  test('last_used_ip is the address of the first call in each batch of uses (the address is read once per batch)', async () => {
    const t = testApp({ trust_proxy: true })
    const admin = t.makeKey()
    const k = t.makeKey()
    const from = (ip: string) => t.call('GET', '/api/v2/permissions', { key: k.key, headers: { 'x-forwarded-for': ip } })
    const shown = async () => (await t.call('GET', `/api/v2/api-keys/${k.id}`, { key: admin.key })).body.data.last_used_ip
    await from('192.0.2.1')
    await from('192.0.2.2')
    expect(await shown()).toBe('192.0.2.1')
    t.usage.flush()
    expect(getApiKey(t.deps, k.id).last_used_ip).toBe('192.0.2.1')
    await from('192.0.2.3') // the first call of the next batch
    expect(await shown()).toBe('192.0.2.3')
    const flushed = t.usage.flushGrouped()
    await from('192.0.2.4') // a call while that batch is being written starts the next one
    await flushed
    expect(getApiKey(t.deps, k.id).last_used_ip).toBe('192.0.2.3')
    expect(await shown()).toBe('192.0.2.4')
  })

  test("the server's grouped flush: reads show the use until its group commit has stored it; a use made meanwhile stays pending", async () => {
    const t = testApp()
    const admin = t.makeKey()
    const k = t.makeKey()
    t.deps.clock.advance(5_000)
    await t.call('GET', '/api/v2/permissions', { key: k.key })
    const flushed = t.usage.flushGrouped() // joins the next group commit, a turn later
    expect((await t.call('GET', `/api/v2/api-keys/${k.id}`, { key: admin.key })).body.data.last_used_at).toBe('2026-03-01T12:00:35.000Z')
    t.deps.clock.advance(1_000)
    await t.call('GET', '/api/v2/permissions', { key: k.key }) // a newer use before the write lands
    await flushed
    expect(getApiKey(t.deps, k.id).last_used_at).toBe('2026-03-01T12:00:35.000Z')
    expect((await t.call('GET', `/api/v2/api-keys/${k.id}`, { key: admin.key })).body.data.last_used_at).toBe('2026-03-01T12:00:36.000Z')
    await t.usage.flushGrouped()
    expect(getApiKey(t.deps, k.id).last_used_at).toBe('2026-03-01T12:00:36.000Z')
  })

  test('a refused call does not count as a use of the key', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const k = t.makeKey({ permissions: ['roles.read'] })
    expect((await t.call('GET', '/api/v2/api-keys', { key: k.key })).status).toBe(403)
    expect((await t.call('GET', `/api/v2/api-keys/${k.id}`, { key: admin.key })).body.data.last_used_at).toBeNull()
  })

  test('pagination meta follows the spec (out-of-range values: the table below)', async () => {
    const t = testApp()
    const admin = t.makeKey()
    for (let i = 0; i < 6; i++) t.makeKey({ name: `k${i}` })
    const p2 = await t.call('GET', '/api/v2/api-keys?page=2&per_page=3', { key: admin.key })
    expect(p2.body.meta).toEqual({ current_page: 2, per_page: 3, total: 7, last_page: 3 })
    expect(p2.body.data.map((k: { name: string }) => k.name)).toEqual(['k2', 'k3', 'k4'])
    const dflt = await t.call('GET', '/api/v2/api-keys', { key: admin.key })
    expect(dflt.body.meta.per_page).toBe(25)
  })
})

runScenarios('create refuses with 422 naming the field', [
  ...(
    [
      ['missing name', { role_id: 1 }, 'name', /./],
      ['empty name', { name: '', role_id: 1 }, 'name', /./],
      ['missing role', { name: 'x' }, 'role_id', /./],
      ['unknown role', { name: 'x', role_id: 999 }, 'role_id', /No role with id 999/],
      ['rate limit zero', { name: 'x', role_id: 1, rate_limit: 0 }, 'rate_limit', /./],
      ['rate limit text', { name: 'x', role_id: 1, rate_limit: 'lots' }, 'rate_limit', /./],
      ['bad allowlist entry', { name: 'x', role_id: 1, allowed_ips: ['10.0.0.1', 'ten'] }, 'allowed_ips', /"ten" is not a valid IP address/],
      ['bad CIDR', { name: 'x', role_id: 1, allowed_ips: ['10.0.0.0/40'] }, 'allowed_ips', /prefix length/],
      ['bad status', { name: 'x', role_id: 1, status: 'paused' }, 'status', /./],
    ] as Array<[name: string, body: Record<string, unknown>, field: string, message: RegExp]>
  ).map(([name, body, field, message]): Scenario => ({
    name: `${name} (${field})`,
    method: 'POST',
    url: '/api/v2/api-keys',
    body,
    status: 422,
    code: 'validation_failed',
    json: { success: false },
    after: async ({ t, admin }, r) => {
      expect(Object.keys(r.body.error.details)).toContain(field)
      expect(r.body.error.details[field].join(' ')).toMatch(message)
      expect((await t.call('GET', '/api/v2/api-keys', { key: admin })).body.meta.total).toBe(1)
    },
  })),
])

runScenarios('unknown ids are 404 with the envelope; a malformed id is 422', [
  { name: 'GET', method: 'GET', url: '/api/v2/api-keys/999', status: 404, code: 'not_found' },
  { name: 'PATCH', method: 'PATCH', url: '/api/v2/api-keys/999', body: { name: 'x' }, status: 404, code: 'not_found' },
  { name: 'DELETE', method: 'DELETE', url: '/api/v2/api-keys/999', status: 404, code: 'not_found' },
  { name: 'restore', method: 'POST', url: '/api/v2/api-keys/999/restore', status: 404, code: 'not_found' },
  { name: 'GET abc', method: 'GET', url: '/api/v2/api-keys/abc', status: 422, after: (_, r) => expect(r.body.error.details.id).toBeDefined() },
])

runScenarios(
  'pagination out of range is 422',
  ['per_page=101', 'per_page=0', 'page=0', 'page=x'].map((q): Scenario => ({
    name: q,
    method: 'GET',
    url: `/api/v2/api-keys?${q}`,
    status: 422,
    code: 'validation_failed',
  })),
)

// A key manager cannot mint or manage keys more powerful than itself.
const manager = ({ t }: ScenarioContext) => t.makeKey({ permissions: ['api_keys.create', 'api_keys.read', 'api_keys.update', 'api_keys.delete'] })
const adminRole = (c: ScenarioContext) => findRoleByName(c.t.deps, 'Administrator')!.id
runScenarios('no privilege escalation through keys', [
  {
    name: 'mint an Administrator key',
    method: 'POST',
    url: '/api/v2/api-keys',
    before: manager,
    key: (c) => c.setup.key,
    body: (c) => ({ name: 'root', role_id: adminRole(c) }),
    status: 403,
    code: 'forbidden',
  },
  {
    name: 'delete the Administrator key',
    method: 'DELETE',
    before: (c) => ({ manager: manager(c), adminId: c.t.makeKey().id }),
    url: (c) => `/api/v2/api-keys/${c.setup.adminId}`,
    key: (c) => c.setup.manager.key,
    status: 403,
  },
  {
    name: 'raise its own role',
    method: 'PATCH',
    before: manager,
    url: (c) => `/api/v2/api-keys/${c.setup.id}`,
    key: (c) => c.setup.key,
    body: (c) => ({ role_id: adminRole(c) }),
    status: 403,
  },
  {
    name: 'its own role is fine',
    method: 'POST',
    url: '/api/v2/api-keys',
    before: manager,
    key: (c) => c.setup.key,
    body: (c) => ({ name: 'peer', role_id: c.setup.role_id }),
    status: 201,
  },
])

describe('cached key identities stay current', () => {
  // The access version lives only in storage (no service reads it for callers): raw SQL on purpose.
  const version = (t: ReturnType<typeof testApp>) =>
    (t.deps.db.$client.query("SELECT value FROM system_state WHERE key = 'access_version'").get() as { value: string }).value

  // In memory the version is read on every request; in a file, only after a commit (db/commit-counter.ts),
  // so there the changes come from a second connection, as the CLI's would from its own process.
  for (const storage of ['memory', 'file'] as const) {
    test(`a change made straight in the database (another process, the CLI) applies at the next request (${storage})`, async () => {
      const dbPath = storage === 'file' ? join(tempDir('mailroom-keys-'), 'm.db') : undefined
      const t = testApp({}, { dbPath })
      const other = dbPath ? new Database(dbPath) : t.deps.db.$client
      const k = t.makeKey()
      expect((await t.call('GET', '/api/v2/roles', { key: k.key })).status).toBe(200) // now cached
      expect((await t.call('GET', `/api/v2/api-keys/${k.id}`, { key: k.key })).body.data.name).toBe('test key')
      other.run("UPDATE api_keys SET name = 'renamed elsewhere' WHERE id = ?", [k.id])
      expect((await t.call('GET', `/api/v2/api-keys/${k.id}`, { key: k.key })).body.data.name).toBe('renamed elsewhere')
      other.run("UPDATE api_keys SET status = 'inactive' WHERE id = ?", [k.id])
      expect((await t.call('GET', '/api/v2/roles', { key: k.key })).status).toBe(401)
      other.run("UPDATE api_keys SET status = 'active', allowed_ips = '[\"192.0.2.1\"]' WHERE id = ?", [k.id])
      expect((await t.call('GET', '/api/v2/roles', { key: k.key })).body.error.code).toBe('ip_not_allowed')
      other.run("UPDATE api_keys SET allowed_ips = '[]' WHERE id = ?", [k.id])
      other.run(`UPDATE roles SET permissions = '["roles.read"]' WHERE id = ?`, [k.role_id])
      expect((await t.call('GET', '/api/v2/api-keys', { key: k.key })).status).toBe(403)
      other.run('DELETE FROM api_keys WHERE id = ?', [k.id])
      expect((await t.call('GET', '/api/v2/roles', { key: k.key })).status).toBe(401)
    })
  }

  test('every access-relevant change bumps the version; recording key use does not', async () => {
    const t = testApp()
    const admin = t.makeKey()
    let before = version(t)
    const changes: Array<[string, string, unknown]> = [
      ['PATCH', `/api/v2/api-keys/${admin.id}`, { rate_limit: 1000 }],
      ['PATCH', `/api/v2/api-keys/${admin.id}`, { allowed_ips: [] }],
      ['PATCH', `/api/v2/api-keys/${admin.id}`, { name: 'renamed' }],
      ['POST', '/api/v2/api-keys', { name: 'new', role_id: admin.role_id }],
    ]
    for (const [method, path, body] of changes) {
      await t.call(method, path, { key: admin.key, body })
      expect(version(t)).not.toBe(before)
      before = version(t)
    }
    // A new role binds no key yet, so it need not invalidate anything; changing one does.
    const role = (await t.call('POST', '/api/v2/roles', { key: admin.key, body: { name: 'R', permissions: ['roles.read'] } })).body.data
    expect(version(t)).toBe(before)
    await t.call('PATCH', `/api/v2/roles/${role.id}`, { key: admin.key, body: { permissions: [] } })
    expect(version(t)).not.toBe(before)
    before = version(t)
    t.deps.clock.advance(1000)
    await t.call('GET', '/api/v2/roles', { key: admin.key })
    t.usage.flush()
    expect(version(t)).toBe(before)
  })
})
