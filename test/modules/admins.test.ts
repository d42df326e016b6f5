import { describe, expect, test } from 'bun:test'
import { createAdmin } from '../../src/modules/admins/service'
import { CLI_ACTOR, createRole, findRoleByName } from '../../src/modules/roles/service'
import { testApp } from '../support/app'

const PASSWORD = 'correct horse battery'

describe('/api/v2/admins', () => {
  test('create, list, get, update and delete; the password is never shown and is stored as argon2id', async () => {
    const t = testApp()
    const { key } = t.makeKey()
    const adminRole = findRoleByName(t.deps, 'Administrator')!
    const made = await t.call('POST', '/api/v2/admins', { key, body: { email: ' Grace@Example.com ', password: PASSWORD, role_id: adminRole.id } })
    expect(made.status).toBe(201)
    expect(made.body.data).toMatchObject({
      email: 'grace@example.com',
      role: { id: adminRole.id, name: 'Administrator' },
      status: 'active',
      last_sign_in_at: null,
    })
    expect(JSON.stringify(made.body)).not.toContain(PASSWORD)
    const hash = (t.deps.db.$client.query('SELECT password_hash FROM admins').get() as { password_hash: string }).password_hash
    expect(hash).toStartWith('$argon2id$')
    expect(await Bun.password.verify(PASSWORD, hash)).toBe(true)

    const clash = await t.call('POST', '/api/v2/admins', { key, body: { email: 'GRACE@example.com', password: PASSWORD, role_id: adminRole.id } })
    expect(clash.status).toBe(409)
    const short = await t.call('POST', '/api/v2/admins', { key, body: { email: 'x@example.com', password: 'short', role_id: adminRole.id } })
    expect(short.status).toBe(422)
    expect(Object.keys(short.body.error.details)).toEqual(['password'])
    const badEmail = await t.call('POST', '/api/v2/admins', { key, body: { email: 'not an email', password: PASSWORD, role_id: adminRole.id } })
    expect(badEmail.status).toBe(422)
    expect(Object.keys(badEmail.body.error.details)).toEqual(['email'])

    const second = await t.call('POST', '/api/v2/admins', { key, body: { email: 'linus@example.com', password: PASSWORD, role_id: adminRole.id } })
    const list = await t.call('GET', '/api/v2/admins?status=active', { key })
    expect(list.body.data.map((a: { email: string }) => a.email)).toEqual(['grace@example.com', 'linus@example.com'])
    expect(list.body.meta).toMatchObject({ total: 2 })

    const readers = createRole(t.deps, CLI_ACTOR, { name: 'Readers', permissions: ['lists.read'] })
    const changed = await t.call('PATCH', `/api/v2/admins/${second.body.data.id}`, { key, body: { role_id: readers.id, status: 'disabled' } })
    expect(changed.status).toBe(200)
    expect(changed.body.data).toMatchObject({ role: { id: readers.id, name: 'Readers' }, status: 'disabled' })
    expect((await t.call('GET', `/api/v2/admins/${second.body.data.id}`, { key })).body.data.status).toBe('disabled')
    // The role is held by someone: it cannot be deleted under them.
    expect((await t.call('DELETE', `/api/v2/roles/${readers.id}`, { key })).status).toBe(409)

    const removed = await t.call('DELETE', `/api/v2/admins/${second.body.data.id}`, { key })
    expect(removed.status).toBe(200)
    expect((await t.call('GET', `/api/v2/admins/${second.body.data.id}`, { key })).status).toBe(404)
  })

  test('the last active administrator with every permission cannot be deleted, disabled or demoted', async () => {
    const t = testApp()
    const { key } = t.makeKey()
    const adminRole = findRoleByName(t.deps, 'Administrator')!
    const readers = createRole(t.deps, CLI_ACTOR, { name: 'Readers', permissions: ['lists.read'] })
    const only = await createAdmin(t.deps, CLI_ACTOR, { email: 'only@example.com', password: PASSWORD, role_id: adminRole.id })
    for (const [method, body] of [
      ['DELETE', undefined],
      ['PATCH', { status: 'disabled' }],
      ['PATCH', { role_id: readers.id }],
    ] as const) {
      const r = await t.call(method, `/api/v2/admins/${only.id}`, { key, body })
      expect(r.status).toBe(409)
      expect(r.body.error.message).toContain('last active administrator')
    }
    await createAdmin(t.deps, CLI_ACTOR, { email: 'second@example.com', password: PASSWORD, role_id: adminRole.id })
    expect((await t.call('DELETE', `/api/v2/admins/${only.id}`, { key })).status).toBe(200)
  })

  test('an administrator cannot delete or disable themselves; a role beyond the caller is refused (403)', async () => {
    const t = testApp()
    const adminRole = findRoleByName(t.deps, 'Administrator')!
    const me = await createAdmin(t.deps, CLI_ACTOR, { email: 'me@example.com', password: PASSWORD, role_id: adminRole.id })
    await createAdmin(t.deps, CLI_ACTOR, { email: 'other@example.com', password: PASSWORD, role_id: adminRole.id })
    const signIn = await t.call('POST', '/admin/api/session', { body: { email: 'me@example.com', password: PASSWORD } })
    const cookie = /mailroom_session=([^;]+)/.exec(signIn.headers.get('set-cookie')!)![0]
    const headers = { cookie, 'x-csrf-token': signIn.body.data.csrf_token }
    const self = await t.call('DELETE', `/api/v2/admins/${me.id}`, { headers })
    expect(self.status).toBe(409)
    expect(self.body.error.message).toContain('yourself')
    expect((await t.call('PATCH', `/api/v2/admins/${me.id}`, { headers, body: { status: 'disabled' } })).status).toBe(409)

    // A key that may manage administrators but holds only a few permissions cannot hand out more.
    const limited = t.makeKey({ permissions: ['admins.create', 'admins.read'] })
    const r = await t.call('POST', '/api/v2/admins', { key: limited.key, body: { email: 'new@example.com', password: PASSWORD, role_id: adminRole.id } })
    expect(r.status).toBe(403)
  })
})
