import { expect, test } from 'bun:test'
import { testApp } from '../support/app'

test('changes are recorded with the key as actor; reads and refusals are not', async () => {
  const t = testApp()
  const admin = t.makeKey({ name: 'ops' })
  const weak = t.makeKey({ permissions: ['roles.read'], name: 'weak' })
  const created = await t.call('POST', '/api/v2/roles', { key: admin.key, body: { name: 'R', permissions: [] } })
  await t.call('PATCH', `/api/v2/roles/${created.body.data.id}`, { key: admin.key, body: { permissions: ['nope'] } }) // 422
  await t.call('GET', '/api/v2/roles', { key: admin.key }) // a read
  await t.call('POST', '/api/v2/roles', { key: weak.key, body: { name: 'S', permissions: [] } }) // 403, refused
  await t.call('POST', '/api/v2/roles', { rawBody: '{}', headers: { 'content-type': 'application/json' } }) // 401
  t.deps.clock.advance(1000)
  await t.call('DELETE', `/api/v2/roles/${created.body.data.id}`, { key: admin.key })

  const log = await t.call('GET', '/api/v2/activity-logs', { key: admin.key })
  expect(log.status).toBe(200)
  expect(log.body.meta.total).toBe(3)
  const [del, patch, create] = log.body.data
  expect(create).toMatchObject({
    actor: { type: 'api_key', key_id: admin.id, name: 'ops' },
    action: 'roles.create',
    target: { type: 'roles', id: String(created.body.data.id) },
    method: 'POST',
    path: '/api/v2/roles',
    status: 201,
    outcome: 'success',
  })
  expect(patch).toMatchObject({ action: 'roles.update', status: 422, outcome: 'failure', target: { type: 'roles', id: String(created.body.data.id) } })
  expect(del).toMatchObject({ action: 'roles.delete', status: 200, outcome: 'success', created_at: '2026-03-01T12:00:31.000Z' })
})

test('the log filters by key, action, target, outcome and time range', async () => {
  const t = testApp()
  const a = t.makeKey({ name: 'a' })
  const b = t.makeKey({ name: 'b' })
  await t.call('POST', '/api/v2/roles', { key: a.key, body: { name: 'one', permissions: [] } })
  t.deps.clock.advance(60_000)
  const two = await t.call('POST', '/api/v2/roles', { key: b.key, body: { name: 'two', permissions: [] } })
  await t.call('POST', '/api/v2/api-keys', { key: b.key, body: { name: 'k', role_id: 999 } })
  const q = async (query: string) => (await t.call('GET', `/api/v2/activity-logs?${query}`, { key: a.key })).body
  expect((await q(`key_id=${a.id}`)).meta.total).toBe(1)
  expect((await q(`key_id=${b.id}`)).meta.total).toBe(2)
  expect((await q('action=api_keys.create')).data[0].outcome).toBe('failure')
  expect((await q('outcome=success')).meta.total).toBe(2)
  expect((await q(`target_type=roles&target_id=${two.body.data.id}`)).data[0].actor.name).toBe('b')
  expect((await q('since=2026-03-01T12:01:00Z')).meta.total).toBe(2)
  expect((await q('until=2026-03-01T12:01:00Z')).meta.total).toBe(1)
  const bad = await t.call('GET', '/api/v2/activity-logs?since=yesterday', { key: a.key })
  expect(bad.status).toBe(422)
})
