import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { createAdminKey, stalledMxSuite, startMailroom, until } from '../support/server-process'

/**
 * Stopping with deliveries hanging on a server that never greets: SIGTERM ends the process
 * after the grace (STOP_GRACE_MS) instead of waiting out the 5-minute greeting timeout, and the
 * rows left `sending` are delivered by the next process.
 */
const { dataDir, world, flags } = stalledMxSuite('stop-grace', '127.0.0.6')

test('SIGTERM with deliveries stuck on a silent MX stops the server; the next start delivers them', async () => {
  const key = await createAdminKey(flags(), 'stop-grace')
  const first = await startMailroom(flags())
  const r = await fetch(`${first.base}/v1/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ from: 'ada@example.com', to: 'stuck@example.net', subject: 'Stuck', text: 'hello' }),
  })
  expect(r.status).toBe(202)
  const db = new Database(join(dataDir, 'mailroom.db'), { readonly: true })
  const state = () => (db.query('SELECT state FROM message_recipients').get() as { state: string }).state
  await until('the delivery is on the wire', () => state() === 'sending')

  first.proc.kill('SIGTERM')
  // Without the grace this waits for the greeting timeout (5 minutes): past the test's own timeout.
  expect(await first.proc.exited).toBe(0)
  expect(state()).toBe('sending')

  world().release()
  const second = await startMailroom(flags())
  try {
    await world().sink.waitFor(1, 20_000)
    await until('recorded as sent', () => state() === 'sent')
  } finally {
    second.proc.kill('SIGTERM')
    await second.proc.exited
    db.close()
  }
}, 60_000)
