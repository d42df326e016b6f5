import { expect, test } from 'bun:test'
import { createBusyLines } from '../../src/delivery/busy-line'
import { testApp } from '../support/app'

/** Recipient rows postponed as the engine postpones them (deferred, no attempt spent) to `at`. */
async function setup(count: number, at: number) {
  const t = testApp({ allow_unverified_domains: true })
  const admin = t.makeKey()
  const ids: number[] = []
  const db = t.deps.db.$client
  for (let i = 0; i < count; i++) {
    const r = await t.call('POST', '/v1/emails', { key: admin.key, body: { from: 'ada@example.com', to: [`r${i}@example.net`], subject: 'Hi', text: 'Hi' } })
    expect(r.status).toBe(202)
    ids.push((db.query('SELECT id FROM message_recipients WHERE message_id = ?').get(r.body.data.id) as { id: number }).id)
  }
  db.run(`UPDATE message_recipients SET state = 'deferred', next_attempt_at = ${at}`)
  const dueAt = (id: number) => (db.query('SELECT next_attempt_at AS at FROM message_recipients WHERE id = ?').get(id) as { at: number }).at
  return { t, ids, db, dueAt }
}

test('a pull makes the earliest rows of the line due now, in line order, and only rows still deferred to the time the line gave them', async () => {
  const now = 1_000_000
  const { t, ids, db, dueAt } = await setup(5, now + 2000)
  const lines = createBusyLines(t.deps)
  lines.add('pair', ids.slice(0, 2), now + 2000, now)
  lines.add('pair', ids.slice(2), now + 3000, now)
  for (const id of ids.slice(2)) db.run(`UPDATE message_recipients SET next_attempt_at = ${now + 3000} WHERE id = ${id}`)
  // Since it was postponed, the first row was claimed and deferred by a reply to another time.
  db.run(`UPDATE message_recipients SET next_attempt_at = ${now + 60_000} WHERE id = ${ids[0]}`)
  expect(lines.ahead('pair', now)).toBe(5)
  expect(lines.ahead('other', now)).toBe(0)

  expect(await lines.pull('pair', 3, now)).toEqual({ moved: 2, empty: false })
  expect(ids.map(dueAt)).toEqual([now + 60_000, now, now, now + 3000, now + 3000])
  expect(lines.ahead('pair', now)).toBe(2)
  expect(await lines.pull('pair', 10, now)).toEqual({ moved: 2, empty: true })
  expect(ids.map(dueAt)).toEqual([now + 60_000, now, now, now, now])
  expect(await lines.pull('pair', 10, now)).toEqual({ moved: 0, empty: true })
})

test('rows that have come due leave the line; past the tracking limit rows keep their time and the line is not empty until it passes', async () => {
  const now = 1_000_000
  const { t, ids, dueAt } = await setup(4, now + 1000)
  const lines = createBusyLines(t.deps, { maxTracked: 3 })
  lines.add('pair', ids, now + 1000, now)
  expect(lines.ahead('pair', now)).toBe(3)
  // At their time the tracked rows are the claim's, not the line's.
  expect(lines.ahead('pair', now + 1000)).toBe(0)
  expect(await lines.pull('pair', 10, now + 1000)).toEqual({ moved: 0, empty: true })
  expect(ids.map(dueAt)).toEqual(ids.map(() => now + 1000))

  lines.add('pair', ids.slice(0, 2), now + 5000, now + 1000)
  lines.add('pair', ids.slice(2), now + 9000, now + 1000)
  // Two tracked (the limit counts only rows ahead), the third tracked, the fourth not: the line is not empty after a full pull.
  expect(lines.ahead('pair', now + 1000)).toBe(3)
  expect((await lines.pull('pair', 10, now + 1000)).empty).toBe(false)
  expect((await lines.pull('pair', 10, now + 9000)).empty).toBe(true)
})

test('near the tracking limit, rows come due in a line whose pair no longer asks make room for another line', async () => {
  const now = 1_000_000
  const { t, ids } = await setup(4, now + 1000)
  const lines = createBusyLines(t.deps, { maxTracked: 3 })
  lines.add('quiet', ids.slice(0, 3), now + 1000, now)
  lines.add('busy', [ids[3]!], now + 5000, now)
  expect(lines.ahead('busy', now)).toBe(0)
  lines.add('busy', [ids[3]!], now + 5000, now + 2000)
  expect(lines.ahead('busy', now + 2000)).toBe(1)
})
