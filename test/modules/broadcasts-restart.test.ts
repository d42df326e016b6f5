import { afterAll, beforeAll, expect, test } from 'bun:test'
import { until } from '../support/server-process'
import { broadcastState, rcptOf, seedList, startBroadcastNow, startBroadcastWorld, startServerWithDb } from '../support/broadcasts'
import { tempDir } from '../support/temp-dirs'

/**
 * Crash safety of a broadcast (issue 15): kill -9 of the server in the middle of a
 * 2,000-recipient broadcast, then a restart on the same data directory. Every recipient gets
 * the message; duplicates are at most the messages in flight at the kill (rows queued but not
 * yet recorded as delivered).
 */
const dataDir = tempDir('mailroom-broadcast-restart-')
let world: Awaited<ReturnType<typeof startBroadcastWorld>>

beforeAll(async () => {
  world = await startBroadcastWorld()
})
afterAll(() => world.close())

test('kill -9 mid-broadcast, restart: every recipient gets it, duplicates at most the in-flight messages', async () => {
  const first = await startServerWithDb(world.flags(dataDir), dataDir)
  const emails = Array.from({ length: 2000 }, (_, i) => `crash${i}@example.net`)
  const list = seedList(first.db, 'Crash', emails)
  const id = startBroadcastNow(first.db, { list_ids: [list] })
  await until('some delivered', () => world.sink.messages.length >= 300, 60_000)
  first.proc.kill('SIGKILL')
  await first.proc.exited
  // What was in flight at the kill: queued rows not yet recorded as delivered.
  const inFlight = (first.db.query("SELECT count(*) AS n FROM broadcast_recipients WHERE broadcast_id = ? AND state = 'queued'").get(id) as { n: number }).n
  expect(broadcastState(first.db, id).status).toBe('sending')
  expect(world.sink.messages.length).toBeLessThan(2000)
  first.db.close()

  const second = await startServerWithDb(world.flags(dataDir), dataDir)
  try {
    await until('finished', () => broadcastState(second.db, id).status === 'sent', 120_000)
    const received = world.sink.messages.map(rcptOf)
    expect(new Set(received)).toEqual(new Set(emails))
    expect(received.length - emails.length).toBeLessThanOrEqual(inFlight)
    const s = broadcastState(second.db, id)
    expect(s.counts).toMatchObject({ total: 2000, pending: 0, queued: 0, sent: 2000 })
  } finally {
    second.proc.kill('SIGTERM')
    await second.proc.exited
    second.db.close()
  }
}, 240_000)
