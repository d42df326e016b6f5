import { describe, expect, test } from 'bun:test'
import { testApp } from '../support/app'

/** An app with example.com as a sending domain (unverified senders allowed) and a bridge "shop" on it. */
async function setup() {
  const t = testApp({ allow_unverified_domains: true })
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown, key = admin.key) => t.call(method, path, { key, body })
  for (const name of ['example.com', 'other.example']) expect((await call('POST', '/api/v2/sending-domains', { name })).status).toBe(201)
  const created = await call('POST', '/api/v2/bridges', { name: 'shop', domains: ['example.com'], hourly_quota: 2 })
  expect(created.status).toBe(201)
  const b = created.body.data as { id: number; api_key_id: number }
  return { ...t, admin, call, b }
}

describe('POST /api/v2/bridges/:id/test', () => {
  test("queues one message through the accept path with the bridge's identity: counted, quota taken, From at its first domain", async () => {
    const { call, b, deps } = await setup()
    const sent = await call('POST', `/api/v2/bridges/${b.id}/test`, { to: 'ada@example.net' })
    expect(sent.status, JSON.stringify(sent.body)).toBe(202)
    expect(sent.body.data).toMatchObject({
      status: 'queued',
      queued: 1,
      suppressed: [],
      to: 'ada@example.net',
      from: 'Mailroom test <mailroom-test@example.com>',
    })
    const row = deps.db.$client.query('SELECT bridge_id, api_key_id, source, subject FROM messages WHERE id = ?').get(sent.body.data.id)
    expect(row).toEqual({ bridge_id: b.id, api_key_id: b.api_key_id, source: 'api', subject: 'Test message through the bridge "shop"' })
    const bridge = (await call('GET', `/api/v2/bridges/${b.id}`)).body.data
    expect(bridge.counts.accepted).toBe(1)
    expect(bridge.usage).toEqual({ this_hour: 1, today: 1 })
    // The bridge's quota holds for tests too: the third message this hour is refused.
    expect((await call('POST', `/api/v2/bridges/${b.id}/test`, { to: 'ada@example.net' })).status).toBe(202)
    const third = await call('POST', `/api/v2/bridges/${b.id}/test`, { to: 'ada@example.net' })
    expect(third.status).toBe(429)
    expect(third.body.error.code).toBe('rate_limited')
  })

  test("the bridge's rules apply: a From outside its domains 403, a bad address 422 on the field, inactive 403, unknown 404", async () => {
    const { call, b } = await setup()
    const foreign = await call('POST', `/api/v2/bridges/${b.id}/test`, { to: 'ada@example.net', from: 'x@other.example' })
    expect(foreign.status).toBe(403)
    expect(foreign.body.error.message).toContain('other.example')
    const bad = await call('POST', `/api/v2/bridges/${b.id}/test`, { to: 'not an address' })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.error.details)).toEqual(['to'])
    expect((await call('POST', '/api/v2/bridges/999/test', { to: 'ada@example.net' })).status).toBe(404)
    await call('PATCH', `/api/v2/bridges/${b.id}`, { active: false })
    const inactive = await call('POST', `/api/v2/bridges/${b.id}/test`, { to: 'ada@example.net' })
    expect(inactive.status).toBe(403)
    expect(inactive.body.error.message).toContain('inactive')
    expect((await call('GET', `/api/v2/bridges/${b.id}`)).body.data.counts.accepted).toBe(0)
  })

  test('permissions: bridges.test is needed, and transactional.send on the caller too', async () => {
    const { call, b, makeKey } = await setup()
    const reader = makeKey({ permissions: ['bridges.read', 'transactional.send'] })
    expect((await call('POST', `/api/v2/bridges/${b.id}/test`, { to: 'ada@example.net' }, reader.key)).status).toBe(403)
    const tester = makeKey({ permissions: ['bridges.test'] })
    const refused = await call('POST', `/api/v2/bridges/${b.id}/test`, { to: 'ada@example.net' }, tester.key)
    expect(refused.status).toBe(403)
    expect(refused.body.error.message).toContain('transactional.send')
    const sender = makeKey({ permissions: ['bridges.test', 'transactional.send'] })
    expect((await call('POST', `/api/v2/bridges/${b.id}/test`, { to: 'ada@example.net' }, sender.key)).status).toBe(202)
  })
})
