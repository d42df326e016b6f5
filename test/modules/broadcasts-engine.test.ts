import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Database } from 'bun:sqlite'
import { until } from '../support/server-process'
import { broadcastState, rcptOf, seedList, startBroadcastNow, startBroadcastWorld, startServerWithDb } from '../support/broadcasts'
import { tempDir } from '../support/temp-dirs'

/**
 * The broadcast engine (issue 15) in the real server process, mail to the loopback sink.
 * Broadcasts are inserted and their status changed with SQL, as bc-api's routes will do.
 */
const dataDir = tempDir('mailroom-broadcasts-')
let world: Awaited<ReturnType<typeof startBroadcastWorld>>
let server: Awaited<ReturnType<typeof startServerWithDb>>
let db: Database

beforeAll(async () => {
  world = await startBroadcastWorld()
  // A small minimum sample, so the bounce threshold applies within a test's few messages.
  server = await startServerWithDb([...world.flags(dataDir), '--broadcast-threshold-min-sample', '10'], dataDir)
  db = server.db
})
afterAll(async () => {
  server.proc.kill('SIGTERM')
  await server.proc.exited
  db.close()
  await world.close()
})

const to = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}@example.net`)
const sinkFor = (prefix: string) => world.sink.messages.filter((m) => rcptOf(m).startsWith(prefix))

test('a broadcast to two lists reaches every subscribed contact once, personalised; suppressed and unsubscribed are skipped and counted', async () => {
  const a = seedList(db, 'A', to('one', 20))
  // one0-one4 are on both lists: one message each.
  const b = seedList(db, 'B', [...to('one', 5), 'onetwo@example.net'])
  seedList(db, 'C', ['oneunsub@example.net'], 'unsubscribed')
  // A version due in an hour holds every row pending, so the test can change contacts between snapshot and send.
  const id = startBroadcastNow(db, { list_ids: [a, b] })
  db.run("INSERT INTO broadcast_versions (broadcast_id, name, weight, send_at, created_at, updated_at) VALUES (?, 'only', 1, ?, ?, ?)", [
    id,
    Date.now() + 3_600_000,
    Date.now(),
    Date.now(),
  ])
  await until('prepared', () => broadcastState(db, id).status === 'sending')
  expect(broadcastState(db, id).counts.total).toBe(21)
  expect(broadcastState(db, id).counts.pending).toBe(21)
  db.run("UPDATE contacts SET status = 'unsubscribed' WHERE email = 'one7@example.net'")
  db.run(
    "INSERT INTO suppressions (scope, scope_key, type, value, reason, created_at) VALUES ('global', 'global', 'email', 'one8@example.net', 'manual', ?), ('program', ?, 'email', 'one9@example.net', 'manual', ?)",
    [Date.now(), `program:broadcast:${id}`, Date.now()],
  )
  db.run('UPDATE broadcast_recipients SET due_at = NULL WHERE broadcast_id = ?', [id])
  await until('finished', () => broadcastState(db, id).status === 'sent')

  const got = sinkFor('one')
  const addresses = got.map(rcptOf).sort()
  expect(addresses).toEqual(
    [...to('one', 20).filter((e) => !['one7@example.net', 'one8@example.net', 'one9@example.net'].includes(e)), 'onetwo@example.net'].sort(),
  )
  for (const m of got) {
    const raw = m.raw.toString()
    expect(raw).toContain(`Name-${rcptOf(m).split('@')[0]}`)
    expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click/m)
  }
  const s = broadcastState(db, id)
  expect(s.counts).toMatchObject({ total: 21, pending: 0, queued: 0, sent: 18, delivered: 18, skipped: 3 })
  const reasons = db.query("SELECT email, reason FROM broadcast_recipients WHERE broadcast_id = ? AND state = 'skipped' ORDER BY email").all(id)
  expect(reasons).toEqual([
    { email: 'one7@example.net', reason: 'unsubscribed' },
    { email: 'one8@example.net', reason: 'suppressed (global, manual)' },
    { email: 'one9@example.net', reason: 'suppressed (program, manual)' },
  ])
  const kinds = db.query('SELECT kind, count(*) AS n FROM events WHERE broadcast_id = ? GROUP BY kind ORDER BY kind').all(id)
  expect(kinds).toEqual([
    { kind: 'broadcast.finished', n: 1 },
    { kind: 'broadcast.sent', n: 18 },
    { kind: 'broadcast.started', n: 1 },
  ])
  const messages = db.query("SELECT count(*) AS n FROM messages WHERE broadcast_id = ? AND source = 'broadcast'").get(id) as { n: number }
  expect(messages.n).toBe(18)

  // A click names the broadcast, version and contact.
  const first = got[0]!
  const link = /\/t\/c\/([A-Za-z0-9_=.-]+)/.exec(first.raw.toString().replace(/=\r\n/g, ''))![1]
  expect((await fetch(`${server.base}/t/c/${link}`, { redirect: 'manual' })).status).toBe(302)
  const contact = db.query('SELECT contact_id, version_id FROM broadcast_recipients WHERE broadcast_id = ? AND email = ?').get(id, rcptOf(first)) as {
    contact_id: number
    version_id: number
  }
  await until('click applied', () => broadcastState(db, id).counts.clicked === 1)
  const clicked = db.query("SELECT contact_id, data FROM events WHERE broadcast_id = ? AND kind = 'broadcast.clicked'").all(id) as Array<{
    contact_id: number
    data: string
  }>
  expect(clicked).toHaveLength(1)
  expect(clicked[0]!.contact_id).toBe(contact.contact_id)
  expect(JSON.parse(clicked[0]!.data)).toMatchObject({
    broadcast_id: id,
    version_id: contact.version_id,
    contact_id: contact.contact_id,
    email: rcptOf(first),
    url: 'https://example.org/read',
  })
  // A click is also the unique open (the image may have been blocked).
  expect(broadcastState(db, id).counts.opened).toBe(1)
}, 60_000)

test('pause stops sending: nothing reaches the sink beyond what was queued when the pause committed; resume finishes', async () => {
  const list = seedList(db, 'P', to('pause', 300))
  const id = startBroadcastNow(db, { list_ids: [list], send_rate_per_minute: 3000 })
  await until('some delivered', () => sinkFor('pause').length >= 50)
  db.run("UPDATE broadcasts SET status = 'paused' WHERE id = ?", [id])
  // The batch that queues re-reads the status in its transaction, so after this commit no row becomes queued.
  const inFlight = (db.query('SELECT count(*) AS n FROM broadcast_recipients WHERE broadcast_id = ? AND message_id IS NOT NULL').get(id) as { n: number }).n
  await until('in-flight delivered', () => broadcastState(db, id).counts.queued === 0)
  // A second of the runner's time passes while paused (two polls) before we look again.
  await Bun.sleep(2000)
  expect(sinkFor('pause').length).toBe(inFlight)
  expect(inFlight).toBeLessThan(300)
  expect(broadcastState(db, id).status).toBe('paused')

  db.run("UPDATE broadcasts SET status = 'sending' WHERE id = ?", [id])
  await until('finished', () => broadcastState(db, id).status === 'sent', 60_000)
  const addresses = sinkFor('pause').map(rcptOf)
  expect(addresses.length).toBe(300)
  expect(new Set(addresses).size).toBe(300)
}, 90_000)

test('a schedule missed by more than the lateness pauses with the reason instead of sending', async () => {
  const list = seedList(db, 'L', to('late', 3))
  const id = startBroadcastNow(db, { list_ids: [list], send_at: Date.now() - 2 * 3_600_000 })
  await until('paused', () => broadcastState(db, id).status === 'paused')
  expect(broadcastState(db, id).status_reason).toContain('was missed by')
  const paused = db.query("SELECT data FROM events WHERE broadcast_id = ? AND kind = 'broadcast.paused'").all(id) as Array<{ data: string }>
  expect(paused.map((e) => JSON.parse(e.data).code)).toEqual(['schedule_missed'])
  expect(sinkFor('late')).toHaveLength(0)
})

test('a split test sends the sample, picks the winner by open rate, and sends it to the rest', async () => {
  const list = seedList(db, 'S', to('split', 40))
  const now = Date.now()
  const id = startBroadcastNow(db, {
    list_ids: [list],
    status: 'draft',
    version_mode: 'split_test',
    split_test: { sample_percent: 50, metric: 'open_rate', wait_seconds: 3600, auto_send_winner: true },
  })
  const insertVersion = db.query(
    'INSERT INTO broadcast_versions (broadcast_id, name, subject, weight, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?) RETURNING id',
  )
  const va = (insertVersion.get(id, 'A', 'Subject A', now, now) as { id: number }).id
  const vb = (insertVersion.get(id, 'B', 'Subject B', now, now) as { id: number }).id
  db.run("UPDATE broadcasts SET status = 'scheduled' WHERE id = ?", [id])
  await until('sample sent, waiting', () => broadcastState(db, id).split_phase === 'waiting')
  const sample = sinkFor('split')
  expect(sample.length).toBe(20)
  // Readers of version B open it.
  let opens = 0
  for (const m of sample.filter((x) => x.raw.toString().includes('Subject B'))) {
    const token = /\/t\/o\/([A-Za-z0-9_=.-]+)/.exec(m.raw.toString().replace(/=\r\n/g, ''))![1]
    expect((await fetch(`${server.base}/t/o/${token}`)).status).toBe(200)
    opens++
  }
  expect(opens).toBeGreaterThan(0)
  await until(
    'opens counted',
    () =>
      (db.query("SELECT n FROM broadcast_counts WHERE broadcast_id = ? AND version_id = ? AND metric = 'opened'").get(id, vb) as { n: number } | null)?.n ===
      opens,
  )
  // The wait is over (instead of waiting an hour).
  db.run('UPDATE broadcasts SET split_decide_at = 0 WHERE id = ?', [id])
  await until('finished', () => broadcastState(db, id).status === 'sent')
  expect(broadcastState(db, id).winner_version_id).toBe(vb)
  const all = sinkFor('split')
  expect(new Set(all.map(rcptOf)).size).toBe(40)
  expect(all.length).toBe(40)
  const rest = all.slice(20)
  expect(rest.every((m) => m.raw.toString().includes('Subject B'))).toBe(true)
  expect(va).not.toBe(vb)
  const opened = db.query("SELECT count(*) AS n FROM events WHERE broadcast_id = ? AND kind = 'broadcast.opened'").get(id) as { n: number }
  expect(opened.n).toBe(opens)
}, 60_000)

test('the bounce rate over the threshold pauses the broadcast with the reason; nothing more is sent', async () => {
  const bad = Array.from({ length: 12 }, (_, i) => `permfail@d${i}.test`)
  for (let i = 0; i < bad.length; i++) world.zone.setZone(`d${i}.test`, { MX: [{ exchange: 'mx.example.net', priority: 10 }] })
  const list = seedList(db, 'T', [...bad, ...to('thr', 20)])
  const id = startBroadcastNow(db, { list_ids: [list] })
  db.run("UPDATE broadcasts SET max_bounce_rate = '0.2' WHERE id = ?", [id])
  db.run("INSERT INTO broadcast_versions (broadcast_id, name, weight, send_at, created_at, updated_at) VALUES (?, 'only', 1, ?, ?, ?)", [
    id,
    Date.now() + 3_600_000,
    Date.now(),
    Date.now(),
  ])
  await until('prepared', () => broadcastState(db, id).status === 'sending')
  // Only the bad addresses are due; the rest wait.
  db.run("UPDATE broadcast_recipients SET due_at = NULL WHERE broadcast_id = ? AND email LIKE 'permfail@%'", [id])
  await until('paused', () => broadcastState(db, id).status === 'paused')
  const s = broadcastState(db, id)
  expect(s.status_reason).toContain('Bounce rate')
  expect(s.counts.bounced).toBeGreaterThanOrEqual(10)
  const paused = db.query("SELECT data FROM events WHERE broadcast_id = ? AND kind = 'broadcast.paused'").all(id) as Array<{ data: string }>
  expect(paused.map((e) => JSON.parse(e.data).code)).toEqual(['bounce_rate'])
  // Now the rest is due, but the broadcast is paused: two polls later nothing was sent.
  db.run('UPDATE broadcast_recipients SET due_at = NULL WHERE broadcast_id = ?', [id])
  await Bun.sleep(2000)
  expect(sinkFor('thr')).toHaveLength(0)
  expect(broadcastState(db, id).counts.pending).toBe(20)
}, 60_000)
