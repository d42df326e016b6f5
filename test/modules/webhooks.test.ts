import { afterEach, expect, test } from 'bun:test'
import { createWebhookDispatcher } from '../../src/modules/webhooks/dispatcher'
import { emit } from '../../src/modules/events/service'
import { createWebhook, listDeliveries } from '../../src/modules/webhooks/service'
import { testApp } from '../support/app'
import { runScenarios, type Scenario } from '../support/scenarios'
import { startWebhookReceiver } from '../support/webhook-receiver'

const open: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  for (const o of open.splice(0)) await o.close()
})

test("the spec's field names: endpoint and events in, endpoint and events out (issue 13 item 11)", async () => {
  const t = testApp({ webhooks_allow_private: true })
  const { key } = t.makeKey()
  const old = await t.call('POST', '/api/v2/webhooks', { key, body: { url: 'http://127.0.0.1:9/x', kinds: ['*'] } })
  expect(old.status).toBe(422)
  expect(Object.keys(old.body.error.details)).toEqual(expect.arrayContaining(['endpoint', 'events']))
  const c = await t.call('POST', '/api/v2/webhooks', { key, body: { endpoint: 'http://127.0.0.1:9/x', events: ['message.sent'] } })
  expect(c.status).toBe(201)
  expect(c.body.data).toMatchObject({ endpoint: 'http://127.0.0.1:9/x', events: ['message.sent'] })
  expect(c.body.data.url).toBeUndefined()
  expect(c.body.data.kinds).toBeUndefined()
  const changed = await t.call('PATCH', `/api/v2/webhooks/${c.body.data.id}`, { key, body: { endpoint: 'http://127.0.0.1:10/y', events: ['*'] } })
  expect(changed.body.data).toMatchObject({ endpoint: 'http://127.0.0.1:10/y', events: ['*'] })
})

test('GET /api/v2/webhooks/event-kinds: every kind a webhook accepts, each described; webhooks.read', async () => {
  const t = testApp({ webhooks_allow_private: true })
  const { key } = t.makeKey()
  const r = await t.call('GET', '/api/v2/webhooks/event-kinds', { key })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  const kinds = r.body.data.map((k: { kind: string }) => k.kind)
  expect(kinds).toContain('message.bounced')
  expect(kinds).not.toContain('*')
  expect(r.body.data.every((k: { description: string }) => k.description.length > 10)).toBe(true)
  // Each listed kind is one a webhook accepts.
  const c = await t.call('POST', '/api/v2/webhooks', { key, body: { endpoint: 'http://127.0.0.1:9/x', events: kinds } })
  expect(c.status).toBe(201)
  const { key: noRead } = t.makeKey({ permissions: ['webhooks.create'] })
  expect((await t.call('GET', '/api/v2/webhooks/event-kinds', { key: noRead })).status).toBe(403)
})

test('CRUD: the secret is shown on create only; bulk delete (refusals: the table)', async () => {
  const t = testApp({ webhooks_allow_private: true })
  const { key } = t.makeKey()
  const c = await t.call('POST', '/api/v2/webhooks', { key, body: { endpoint: 'http://127.0.0.1:9/x', events: ['contact.subscribed', 'contact.subscribed'] } })
  expect(c.status).toBe(201)
  expect(c.body.data.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
  expect(c.body.data.events).toEqual(['contact.subscribed'])
  const id = c.body.data.id
  const got = await t.call('GET', `/api/v2/webhooks/${id}`, { key })
  expect(got.body.data.secret).toBeUndefined()
  const list = await t.call('GET', '/api/v2/webhooks', { key })
  expect(list.body.data[0].secret).toBeUndefined()
  const own = await t.call('POST', '/api/v2/webhooks', {
    key,
    body: { endpoint: 'https://example.com/x', events: ['*'], secret: 'whsec_' + Buffer.alloc(32, 7).toString('base64') },
  })
  expect(own.status).toBe(201)
  const off = await t.call('PATCH', `/api/v2/webhooks/${id}`, { key, body: { enabled: false } })
  expect(off.body.data).toMatchObject({ enabled: false, disabled_reason: 'manual' })
  const del = await t.call('POST', '/api/v2/webhooks/bulk-delete', { key, body: { ids: [id, 999] } })
  expect(del.body.data).toEqual({ deleted: [id], not_found: [999] })
  expect((await t.call('GET', `/api/v2/webhooks/${id}`, { key })).status).toBe(404)
})

test('a name resolving to a private address is refused at create time', async () => {
  const t = testApp({ webhooks_allow_private: false })
  const { key } = t.makeKey()
  // Literal addresses: the table below. A name is judged by what it resolves to.
  await expect(
    createWebhook(t.deps, { endpoint: 'https://hooks.example.com/', events: ['*'] }, { lookup: async () => [{ address: '192.168.0.10', family: 4 }] }),
  ).rejects.toThrow()
  await expect(
    createWebhook(
      t.deps,
      { endpoint: 'https://hooks.example.com/', events: ['*'] },
      {
        lookup: async () => [
          { address: '93.184.216.34', family: 4 },
          { address: '::1', family: 6 },
        ],
      },
    ),
  ).rejects.toThrow()
  const okHook = await createWebhook(
    t.deps,
    { endpoint: 'https://hooks.example.com/', events: ['*'] },
    { lookup: async () => [{ address: '93.184.216.34', family: 4 }] },
  )
  expect(okHook.id).toBeGreaterThan(0)
  const literal = await t.call('POST', '/api/v2/webhooks', { key, body: { endpoint: 'https://93.184.216.34/hook', events: ['*'] } })
  expect(literal.status).toBe(201)
})

test('test operation, delivery log, attempts and replay', async () => {
  const t = testApp({ webhooks_allow_private: true })
  t.deps.clock.set(Math.floor(Date.now() / 1000) * 1000)
  const rx = await startWebhookReceiver({ now: () => t.deps.clock.now() })
  open.push(rx)
  const { key } = t.makeKey()
  const c = await t.call('POST', '/api/v2/webhooks', { key, body: { endpoint: rx.url, events: ['contact.subscribed'] } })
  rx.secrets.push(c.body.data.secret)
  const id = c.body.data.id

  rx.answers = [
    { status: 200, body: 'thanks' },
    { status: 500, body: 'boom' },
  ]
  const tested = await t.call('POST', `/api/v2/webhooks/${id}/test`, { key, body: { events: ['contact.subscribed', 'message.sent'] } })
  expect(tested.status).toBe(200)
  expect(tested.body.data).toHaveLength(2)
  expect(tested.body.data.map((r: { status: number }) => r.status).sort()).toEqual([200, 500])
  expect(tested.body.data.map((r: { response_snippet: string }) => r.response_snippet).sort()).toEqual(['boom', 'thanks'])
  expect(tested.body.data[0].headers['webhook-signature']).toStartWith('v1,')
  expect(rx.received.every((r) => r.verified)).toBe(true)
  // A test call is not logged as a delivery (this is the only webhook).
  expect(listDeliveries(t.deps, id, {}).meta.total).toBe(0)

  emit(t.deps.db, t.deps.clock.now(), { kind: 'contact.subscribed', data: {} })
  const d = createWebhookDispatcher(t.deps, { random: () => 0.5 })
  open.push({ close: () => d.stop() })
  rx.answers = [{ status: 500, body: 'x'.repeat(5000) }]
  await d.drain()
  t.deps.clock.advance(5_000)
  await d.drain()
  const deliveries = await t.call('GET', `/api/v2/webhooks/${id}/deliveries?state=succeeded`, { key })
  expect(deliveries.body.meta.total).toBe(1)
  const delivery = deliveries.body.data[0]
  expect(delivery).toMatchObject({ state: 'succeeded', attempts: 2, kind: 'contact.subscribed' })
  const attempts = await t.call('GET', `/api/v2/webhooks/${id}/deliveries/${delivery.id}/attempts`, { key })
  expect(attempts.body.data.map((a: { status: number }) => a.status)).toEqual([500, 204])
  expect(attempts.body.data[0].response_snippet.length).toBe(1024)

  const replay = await t.call('POST', `/api/v2/webhooks/${id}/deliveries/${delivery.id}/replay`, { key })
  expect(replay.status).toBe(201)
  expect(replay.body.data).toMatchObject({ state: 'pending', event_id: delivery.event_id, message_id: delivery.message_id })
  expect((await t.call('POST', `/api/v2/webhooks/${id}/deliveries/${replay.body.data.id}/replay`, { key })).status).toBe(409)
  await d.drain()
  expect(rx.received.filter((r) => r.id === delivery.message_id)).toHaveLength(3)
})

runScenarios(
  'webhooks: refused at create time',
  [
    {
      name: 'an unknown event kind',
      method: 'POST',
      url: '/api/v2/webhooks',
      body: { endpoint: 'http://127.0.0.1:9/x', events: ['contact.exploded'] },
      status: 422,
      after: (_, r) => expect(r.body.error.details.events[0]).toContain('unknown kind'),
    },
    { name: 'an ftp endpoint', method: 'POST', url: '/api/v2/webhooks', body: { endpoint: 'ftp://example.com/x', events: ['*'] }, status: 422 },
    {
      name: 'a weak secret',
      method: 'POST',
      url: '/api/v2/webhooks',
      body: { endpoint: 'https://example.com/x', events: ['*'], secret: 'hunter2' },
      status: 422,
    },
    {
      name: 'webhooks.read cannot create',
      method: 'POST',
      url: '/api/v2/webhooks',
      key: { permissions: ['webhooks.read'] },
      body: { endpoint: 'https://example.com/', events: ['*'] },
      status: 403,
    },
  ],
  { config: { webhooks_allow_private: true } },
)

runScenarios(
  'webhooks: private, loopback, link-local, unique-local, CGNAT, multicast and unspecified addresses are refused at create time',
  [
    'http://127.0.0.1/',
    'http://10.1.2.3/',
    'http://172.16.0.1/',
    'http://192.168.1.1/',
    'http://169.254.169.254/latest/meta-data',
    'http://100.64.0.1/',
    'http://0.0.0.0/',
    'http://224.0.0.1/',
    'http://[::1]/',
    'http://[fe80::1]/',
    'http://[fd00::1]/',
    'http://[::]/',
    'http://[ff02::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:10.0.0.1]/',
    'http://2130706433/',
  ].map((url): Scenario => ({
    name: url,
    method: 'POST',
    url: '/api/v2/webhooks',
    body: { endpoint: url, events: ['*'] },
    status: 422,
    after: (_, r) => expect(r.body.error.details.endpoint).toBeDefined(),
  })),
  { config: { webhooks_allow_private: false } },
)
