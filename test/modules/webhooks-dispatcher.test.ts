import { afterEach, expect, test } from 'bun:test'
import type { Config } from '../../src/config'
import { createWebhookDispatcher, REQUEUE_EXPIRED_SQL, type DispatcherParts } from '../../src/modules/webhooks/dispatcher'
import { emit } from '../../src/modules/events/service'
import { testApp } from '../support/app'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver'

const open: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  for (const o of open.splice(0)) await o.close()
})

async function setup(overrides: Partial<Config> = {}, parts: DispatcherParts = {}) {
  const t = testApp({ webhooks_allow_private: true, ...overrides })
  // Timestamps near the real time: the receiver's package checks them against Date.now().
  t.deps.clock.set(Math.floor(Date.now() / 1000) * 1000)
  const rx = await startWebhookReceiver({ now: () => t.deps.clock.now() })
  open.push(rx)
  const { key } = t.makeKey()
  const created = await t.call('POST', '/api/v2/webhooks', { key, body: { endpoint: rx.url, events: ['*'] } })
  expect(created.status).toBe(201)
  rx.secrets.push(created.body.data.secret)
  const hook = created.body.data as { id: number; secret: string }
  const d = createWebhookDispatcher(t.deps, { random: () => 0.5, ...parts })
  open.push({ close: () => d.stop() })
  const event = (n = 1) => {
    for (let i = 0; i < n; i++)
      emit(t.deps.db, t.deps.clock.now(), { kind: 'contact.subscribed', contact_id: i + 1, list_id: 1, data: { email: `c${i}@example.com` } })
  }
  const sql = <T>(q: string, ...args: Array<string | number>) => t.deps.db.$client.query(q).all(...args) as T[]
  const webhook = () =>
    sql<{ enabled: number; disabled_reason: string | null; consecutive_failures: number }>('SELECT * FROM webhooks WHERE id = ?', hook.id)[0]!
  const deliveries = () =>
    sql<{ id: number; state: string; attempts: number; next_attempt_at: number | null; last_status: number | null; last_error: string | null }>(
      'SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id',
      hook.id,
    )
  return { ...t, key, rx, hook, d, event, sql, webhook, deliveries }
}

const fail = (rx: WebhookReceiver, status = 500) => (rx.fallback = { status })

test('a delivery is signed per Standard Webhooks and verifies with the standardwebhooks package', async () => {
  const s = await setup()
  s.event(3)
  await s.d.drain()
  expect(s.rx.received).toHaveLength(3)
  for (const r of s.rx.received) {
    expect(r.error).toBeNull()
    expect(r.verified).toBe(true)
    expect(r.payload.type).toBe('contact.subscribed')
    expect(r.payload.data.kind).toBe('contact.subscribed')
    expect(typeof r.payload.timestamp).toBe('string')
    expect(r.id).toMatch(/^evt_\d+_\d+$/)
  }
  expect(s.rx.ids.size).toBe(3)
  expect(s.deliveries().map((x) => x.state)).toEqual(['succeeded', 'succeeded', 'succeeded'])
  expect(s.sql<{ n: number }>('SELECT count(*) AS n FROM webhook_attempts')[0]!.n).toBe(3)
})

test('the retry schedule is persisted: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then failed; the webhook-id never changes', async () => {
  const s = await setup()
  fail(s.rx)
  s.event()
  const start = s.deps.clock.now()
  await s.d.drain()
  const delays = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]
  for (const delay of delays) {
    const due = s.deliveries()[0]!.next_attempt_at!
    expect(due - s.deps.clock.now()).toBe(delay)
    // Not a moment early.
    s.deps.clock.set(due - 1)
    await s.d.drain()
    s.deps.clock.set(due)
    await s.d.drain()
  }
  expect(s.deps.clock.now() - start).toBe(delays.reduce((a, b) => a + b))
  const [d] = s.deliveries()
  expect(d!.state).toBe('failed')
  expect(d!.attempts).toBe(8)
  expect(s.rx.received).toHaveLength(8)
  expect(new Set(s.rx.received.map((r) => r.id)).size).toBe(1)
  expect(s.rx.received.every((r) => r.verified)).toBe(true)
  expect(s.webhook().consecutive_failures).toBe(8)
  expect(s.webhook().enabled).toBe(1)
})

test('9 failures then a success: not disabled, and the count is reset', async () => {
  const s = await setup({}, { maxInFlight: 1 })
  s.rx.answers = Array.from({ length: 9 }, () => ({ status: 500 }))
  s.event(2)
  while (s.rx.received.length < 10) {
    await s.d.drain()
    s.deps.clock.advance(10 * 3600_000)
  }
  expect(s.rx.received.slice(0, 9).every((r) => r.answered === 500)).toBe(true)
  expect(s.rx.received[9]!.answered).toBe(204)
  expect(s.webhook()).toMatchObject({ enabled: 1, consecutive_failures: 0 })
  expect(s.sql('SELECT * FROM events WHERE kind = ?', 'webhook.disabled')).toHaveLength(0)
})

test('exactly 10 consecutive failures disable the webhook once, even with many deliveries failing at the same time', async () => {
  const s = await setup()
  fail(s.rx)
  s.event(9)
  await s.d.drain()
  expect(s.webhook()).toMatchObject({ enabled: 1, consecutive_failures: 9 })
  s.event(6)
  await s.d.drain() // 6 concurrent failures: the 10th, 11th ... 15th
  expect(s.webhook()).toMatchObject({ enabled: 0, disabled_reason: 'failures', consecutive_failures: 15 })
  expect(s.sql('SELECT * FROM events WHERE kind = ?', 'webhook.disabled')).toHaveLength(1)
  const log = s.sql<{ actor_name: string; target_id: string }>('SELECT * FROM activity_logs WHERE action = ?', 'webhooks.disable')
  expect(log).toEqual([expect.objectContaining({ actor_name: 'system', target_id: String(s.hook.id) })])

  // A disabled webhook's deliveries are kept (pending, parked) and not attempted.
  const before = s.rx.received.length
  s.deps.clock.advance(48 * 3600_000)
  s.event(2)
  await s.d.drain()
  expect(s.rx.received.length).toBe(before)
  const pending = s.deliveries().filter((d) => d.state === 'pending')
  expect(pending.length).toBe(15 + 2 + 1) // + the webhook.disabled event itself
  expect(pending.every((d) => d.next_attempt_at === null)).toBe(true)

  // Enabling again resets the count and sends every pending delivery.
  s.rx.fallback = { status: 204 }
  const res = await s.call('PATCH', `/api/v2/webhooks/${s.hook.id}`, { key: s.key, body: { enabled: true } })
  expect(res.status).toBe(200)
  expect(res.body.data).toMatchObject({ enabled: true, disabled_reason: null, consecutive_failures: 0 })
  await s.d.drain()
  expect(s.deliveries().every((d) => d.state === 'succeeded')).toBe(true)
  expect(s.rx.ids.size).toBe(18)
})

test('410 Gone disables at once; a redirect is a failure and is not followed', async () => {
  const s = await setup()
  s.rx.answers = [{ status: 302, headers: { location: s.rx.url + '/elsewhere' } }]
  s.event()
  await s.d.drain()
  expect(s.rx.received).toHaveLength(1)
  expect(s.deliveries()[0]).toMatchObject({ state: 'pending', last_status: 302 })
  expect(s.deliveries()[0]!.last_error).toContain('redirect')
  expect(s.webhook().enabled).toBe(1)

  s.rx.answers = [{ status: 410 }]
  s.deps.clock.advance(5_000)
  await s.d.drain()
  expect(s.webhook()).toMatchObject({ enabled: 0, disabled_reason: 'gone' })
  expect(s.deliveries()[0]).toMatchObject({ state: 'pending', next_attempt_at: null })
  expect(s.sql('SELECT * FROM events WHERE kind = ?', 'webhook.disabled')).toHaveLength(1)
})

test('no answer within webhook_timeout_ms is a failure', async () => {
  const s = await setup({ webhook_timeout_ms: 100 })
  s.rx.answers = [{ status: 200, delayMs: 1000 }]
  s.event()
  await s.d.drain()
  const [d] = s.deliveries()
  expect(d).toMatchObject({ state: 'pending', attempts: 1, last_status: null })
  expect(d!.last_error).toContain('no answer')
})

test('Retry-After pushes the next attempt later (seconds and HTTP date)', async () => {
  const s = await setup()
  s.rx.answers = [{ status: 503, headers: { 'retry-after': '120' } }]
  s.event()
  await s.d.drain()
  expect(s.deliveries()[0]!.next_attempt_at! - s.deps.clock.now()).toBe(120_000)
  s.deps.clock.advance(120_000)
  const at = new Date(s.deps.clock.now() + 3600_000).toUTCString()
  s.rx.answers = [{ status: 429, headers: { 'retry-after': at } }]
  await s.d.drain()
  expect(s.deliveries()[0]!.next_attempt_at).toBe(Date.parse(at))
})

test('during a secret rotation both secrets sign, and a receiver with either verifies', async () => {
  const s = await setup()
  const old = s.hook.secret
  const res = await s.call('POST', `/api/v2/webhooks/${s.hook.id}/rotate-secret`, { key: s.key })
  expect(res.status).toBe(200)
  const fresh = res.body.data.secret as string
  expect(fresh).toStartWith('whsec_')
  expect(fresh).not.toBe(old)
  s.rx.secrets = [fresh]
  s.event()
  await s.d.drain()
  s.rx.secrets = [old]
  s.event()
  await s.d.drain()
  expect(s.rx.received.map((r) => r.verified)).toEqual([true, true])
  expect(s.rx.received[0]!.signature.split(' ')).toHaveLength(2)
  // After the grace period only the new secret signs.
  s.deps.clock.advance(24 * 3600_000 + 1000)
  s.rx.secrets = [old]
  s.event()
  await s.d.drain()
  expect(s.rx.received[2]!.verified).toBe(false)
  expect(s.rx.received[2]!.signature.split(' ')).toHaveLength(1)
})

test('connect time: a name that now resolves to a private address is refused without connecting', async () => {
  const s = await setup()
  // The name passed the check when the webhook was created; now it answers 127.0.0.1 (DNS rebinding).
  s.sql('UPDATE webhooks SET url = ? WHERE id = ?', `http://hooks.example.com:${s.rx.port}/hook`, s.hook.id)
  const strict = createWebhookDispatcher(
    { ...s.deps, config: { ...s.deps.config, webhooks_allow_private: false } },
    { lookup: async () => [{ address: '127.0.0.1', family: 4 }] },
  )
  open.push({ close: () => strict.stop() })
  s.event()
  await strict.drain()
  expect(s.rx.received).toHaveLength(0)
  expect(s.deliveries()[0]).toMatchObject({ state: 'pending', attempts: 1 })
  expect(s.deliveries()[0]!.last_error).toContain('127.0.0.1')
})

test('the events before a webhook existed are not delivered to it; the cursor moves once', async () => {
  const t = testApp({ webhooks_allow_private: true })
  emit(t.deps.db, t.deps.clock.now() - 1000, { kind: 'contact.subscribed', data: {} })
  const rx = await startWebhookReceiver()
  open.push(rx)
  const { key } = t.makeKey()
  await t.call('POST', '/api/v2/webhooks', { key, body: { endpoint: rx.url, events: ['message.sent'] } })
  emit(t.deps.db, t.deps.clock.now(), { kind: 'contact.subscribed', data: {} })
  emit(t.deps.db, t.deps.clock.now(), { kind: 'message.sent', data: {} })
  const d = createWebhookDispatcher(t.deps)
  open.push({ close: () => d.stop() })
  await d.fanOut()
  await d.fanOut()
  const rows = t.deps.db.$client.query('SELECT kind FROM webhook_deliveries').all()
  expect(rows).toEqual([{ kind: 'message.sent' }])
})

test('the requeue of expired leases reads the rows in flight through their index, not every delivery ever made', () => {
  const { deps } = testApp()
  const plan = (deps.db.$client.query(`EXPLAIN QUERY PLAN ${REQUEUE_EXPIRED_SQL}`).all(1) as Array<{ detail: string }>).map((r) => r.detail).join(' | ')
  expect(plan).toContain('USING INDEX webhook_deliveries_lease_idx')
})
