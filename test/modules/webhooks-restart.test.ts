import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createAdminKey, startMailroom } from '../support/server-process'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver'
import { tempDir } from '../support/temp-dirs'

/**
 * A SIGKILL in the middle of a retry schedule loses no event: the deliveries are rows, the
 * fan-out cursor moves with them, and the next process sends what was left, with the same
 * webhook-ids (the receiver deduplicates by them).
 */
const dataDir = tempDir('mailroom-webhooks-restart-')
let rx: WebhookReceiver

beforeAll(async () => {
  rx = await startWebhookReceiver()
})
afterAll(async () => {
  await rx.close()
})

const flags = () => [
  '--data-dir',
  dataDir,
  '--hostname',
  'mailroom.test',
  '--access-log',
  'false',
  '--smtp-listen',
  '127.0.0.1:0',
  '--webhooks-allow-private',
  'true',
]

test('SIGKILL while deliveries are failing and pending: after a restart every event reaches the receiver', async () => {
  const key = await createAdminKey(flags(), 'hooks')
  const first = await startMailroom(flags())
  const call = (base: string, method: string, path: string, body?: unknown) =>
    fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
  const hook = await call(first.base, 'POST', '/api/v2/webhooks', { endpoint: rx.url, events: ['contact.subscribed'] })
  expect(hook.status).toBe(201)
  rx.secrets.push(hook.body.data.secret)
  const list = await call(first.base, 'POST', '/api/v2/lists', { name: 'hooks' })
  // The endpoint fails for now: every delivery goes on the retry schedule (5 s, then 5 min).
  rx.fallback = { status: 503 }
  // Fewer events than the 10 consecutive failures that disable a webhook: the restart, not
  // an auto-disable, is what this test is about.
  const n = 8
  for (let i = 0; i < n; i++)
    expect((await call(first.base, 'POST', '/api/v2/contacts', { email: `c${i}@example.com`, list_id: list.body.data.id })).status).toBe(201)
  while (rx.received.length < n) await Bun.sleep(20)
  first.proc.kill('SIGKILL')
  await first.proc.exited
  expect(rx.ids.size).toBe(0)

  rx.fallback = { status: 204 }
  const second = await startMailroom(flags())
  try {
    // Pending rows are due after 5 s; the restarted server sends them then.
    const deadline = Date.now() + 30_000
    while (rx.ids.size < n && Date.now() < deadline) await Bun.sleep(100)
    expect(rx.ids.size).toBe(n)
    expect(rx.received.every((r) => r.verified)).toBe(true)
  } finally {
    second.proc.kill('SIGTERM')
    await second.proc.exited
  }
}, 60_000)
