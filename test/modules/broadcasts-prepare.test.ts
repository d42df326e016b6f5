import { expect, test } from 'bun:test'
import type { Deps } from '../../src/deps'
import { audienceSql, countAudience } from '../../src/modules/broadcasts/audience'
import { prepareStep } from '../../src/modules/broadcasts/prepare'
import { startBroadcasts } from '../../src/modules/broadcasts/runner'
import { broadcastRow, renderArchiveCopy, sendBroadcastTest } from '../../src/modules/broadcasts/render'
import { pauseBroadcast, resumeBroadcast } from '../../src/modules/broadcasts/service'
import { decideSplitTest } from '../../src/modules/broadcasts/split-test'
import { emit, emitPrepared } from '../../src/modules/events/service'
import { getMessage } from '../../src/modules/messages/service'
import { createSegment } from '../../src/modules/segments/service'
import { testDeps } from '../support/app'

/**
 * The audience snapshot, test sends and the archive copy, in process on the real migrations.
 * Rows are seeded and read with SQL: these tests are about the stored snapshot itself.
 */

function seed(deps: Deps, name: string, contacts: Array<[string, string, string?]>): number {
  const c = deps.db.$client
  const now = deps.clock.now()
  const listId = (c.query('INSERT INTO lists (name, created_at, updated_at) VALUES (?, ?, ?) RETURNING id').get(name, now, now) as { id: number }).id
  for (const [email, first, status] of contacts)
    c.run('INSERT INTO contacts (list_id, email, first_name, status, fields, created_at, updated_at) VALUES (?, ?, ?, ?, \'{"city":"Oslo"}\', ?, ?)', [
      listId,
      email,
      first,
      status ?? 'subscribed',
      now,
      now,
    ])
  return listId
}

function broadcast(deps: Deps, fields: Record<string, unknown>): number {
  const now = deps.clock.now()
  const cols = {
    name: 'B',
    status: 'preparing',
    from_address: 'News <news@example.com>',
    subject: 'Hi {{first_name}}',
    html: '<p>Hello {{first_name}} from {{city}}. <a href="{{web_view_url}}">Web</a></p>',
    archive_id: crypto.randomUUID(),
    created_at: now,
    updated_at: now,
    ...fields,
  }
  const names = Object.keys(cols)
  const values = Object.values(cols).map((v) => (Array.isArray(v) || (v && typeof v === 'object') ? JSON.stringify(v) : v)) as Array<string | number | null>
  return (
    deps.db.$client.query(`INSERT INTO broadcasts (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')}) RETURNING id`).get(...values) as {
      id: number
    }
  ).id
}

const rows = (deps: Deps, id: number) =>
  deps.db.$client.query('SELECT email, list_id, state, version_id FROM broadcast_recipients WHERE broadcast_id = ? ORDER BY email').all(id) as Array<{
    email: string
    list_id: number
    state: string
    version_id: number | null
  }>
const counts = (deps: Deps, id: number, version = 0) =>
  Object.fromEntries(
    (
      deps.db.$client.query('SELECT metric, n FROM broadcast_counts WHERE broadcast_id = ? AND version_id = ?').all(id, version) as Array<{
        metric: string
        n: number
      }>
    ).map((r) => [r.metric, r.n]),
  )

test('the snapshot: lists minus exclusions, subscribed only, one row per address, step by step from the cursor', () => {
  const deps = testDeps()
  const a = seed(deps, 'A', [
    ['a@example.net', 'Ann'],
    ['b@example.net', 'Bob'],
    ['c@example.net', 'Cy', 'unsubscribed'],
    ['d@example.net', 'Di'],
  ])
  const b = seed(deps, 'B', [
    ['a@example.net', 'Ann'],
    ['e@example.net', 'Eve'],
  ])
  const x = seed(deps, 'X', [['d@example.net', 'Di', 'unsubscribed']])
  const id = broadcast(deps, { list_ids: [a, b], exclude_list_ids: [x] })
  // Two contacts per step: the third step finishes, and each step committed its cursor.
  expect(prepareStep(deps, id, 2)).toBe(false)
  expect((deps.db.$client.query('SELECT prepare_cursor FROM broadcasts WHERE id = ?').get(id) as { prepare_cursor: number }).prepare_cursor).toBe(2)
  expect(prepareStep(deps, id, 2)).toBe(false)
  expect(prepareStep(deps, id, 2)).toBe(false)
  expect(prepareStep(deps, id, 2)).toBe(true)
  expect(rows(deps, id).map((r) => [r.email, r.list_id, r.state])).toEqual([
    ['a@example.net', a, 'pending'],
    ['b@example.net', a, 'pending'],
    ['e@example.net', b, 'pending'],
  ])
  expect(counts(deps, id)).toEqual({ total: 3, pending: 3 })
  const b2 = deps.db.$client.query('SELECT status, started_at FROM broadcasts WHERE id = ?').get(id) as { status: string; started_at: number }
  expect(b2.status).toBe('sending')
  const started = deps.db.$client.query("SELECT count(*) AS n FROM events WHERE broadcast_id = ? AND kind = 'broadcast.started'").get(id) as { n: number }
  expect(started.n).toBe(1)
})

test('indexed segments (the audience, an exclusion) give the same recipients as the same rules unindexed, read through their member indexes', () => {
  const deps = testDeps()
  const names = ['Keep', 'Drop', 'Skip']
  const a = seed(
    deps,
    'A',
    Array.from({ length: 40 }, (_, i) => [`u${i}@example.net`, names[i % 3]!, i % 7 ? 'subscribed' : 'unsubscribed'] as [string, string, string]),
  )
  // Some of the same addresses on a second list: one message per address.
  seed(
    deps,
    'B',
    Array.from({ length: 10 }, (_, i) => [`u${i * 2}@example.net`, 'Keep'] as [string, string]),
  )
  const keep = {
    any: [
      { field: 'first_name', op: 'eq', value: 'Keep' },
      { field: 'email', op: 'starts_with', value: 'u1' },
    ],
  }
  const skip = { all: [{ field: 'first_name', op: 'eq', value: 'Skip' }] }
  const audiences = [true, false].map((indexed) => ({
    list_ids: [] as number[],
    segment_id: createSegment(deps, { name: `keep ${indexed}`, rules: keep, indexed }).id,
    exclude_list_ids: [] as number[],
    exclude_segment_ids: [createSegment(deps, { name: `skip ${indexed}`, rules: skip, indexed }).id],
  }))
  const [viaIndex, viaScan] = audiences.map((spec) => audienceSql(deps, spec))
  expect(viaIndex!.from).toBe(`contacts INDEXED BY segment_members_${audiences[0]!.segment_id}`)
  expect(viaIndex!.where).toContain(`FROM contacts INDEXED BY segment_members_${audiences[0]!.exclude_segment_ids[0]} WHERE`)
  expect(viaScan!.from).toBe('contacts')
  // With a list as well, SQLite chooses between the list's index and the segment's.
  expect(audienceSql(deps, { ...audiences[0]!, list_ids: [a] }).from).toBe('contacts')

  const prepared = audiences.map((spec) => {
    const id = broadcast(deps, spec)
    while (!prepareStep(deps, id, 7));
    return rows(deps, id).map((r) => r.email)
  })
  expect(prepared[0]!.length).toBeGreaterThan(10)
  expect(prepared[0]).toEqual(prepared[1]!)
  expect(new Set(prepared[0]).size).toBe(prepared[0]!.length)
  for (const spec of audiences) expect(countAudience(deps, spec)).toBe(prepared[0]!.length)
})

test('a segment narrows the lists; rotation spreads versions by weight; a paused broadcast is not prepared', () => {
  const deps = testDeps()
  const emails = Array.from({ length: 30 }, (_, i) => [`u${i}@example.net`, i < 20 ? 'Keep' : 'Drop'] as [string, string])
  const a = seed(deps, 'A', emails)
  const segment = createSegment(deps, { name: 'keep', rules: { all: [{ field: 'first_name', op: 'eq', value: 'Keep' }] } })
  const id = broadcast(deps, { list_ids: [a], segment_id: segment.id })
  const now = deps.clock.now()
  const v1 = (
    deps.db.$client
      .query("INSERT INTO broadcast_versions (broadcast_id, name, weight, created_at, updated_at) VALUES (?, 'one', 1, ?, ?) RETURNING id")
      .get(id, now, now) as { id: number }
  ).id
  const v2 = (
    deps.db.$client
      .query("INSERT INTO broadcast_versions (broadcast_id, name, weight, created_at, updated_at) VALUES (?, 'two', 3, ?, ?) RETURNING id")
      .get(id, now, now) as { id: number }
  ).id
  while (!prepareStep(deps, id, 7));
  const r = rows(deps, id)
  expect(r).toHaveLength(20)
  expect(r.every((x) => x.version_id === v1 || x.version_id === v2)).toBe(true)
  expect(counts(deps, id, v1).total! + counts(deps, id, v2).total!).toBe(20)
  expect(counts(deps, id, v2).total).toBe(15)

  const paused = broadcast(deps, { list_ids: [a], status: 'paused' })
  expect(prepareStep(deps, paused)).toBe(true)
  expect(rows(deps, paused)).toHaveLength(0)
})

test('test sends are queued per version, marked as tests and counted nowhere; the archive copy has no personal data', async () => {
  const deps = testDeps({ allow_unverified_domains: true })
  const a = seed(deps, 'A', [['a@example.net', 'Ann']])
  const id = broadcast(deps, { list_ids: [a], status: 'draft' })
  const ids = await sendBroadcastTest(deps, id, ['qa@example.org', 'boss@example.org'])
  expect(ids).toHaveLength(2)
  for (const mid of ids) {
    const m = getMessage(deps, mid)
    expect(m.tags).toEqual(['test'])
    expect(m.subject).toBe('[Test] Hi Subscriber')
    expect(m.source).toBe('broadcast')
  }
  const stored = deps.db.$client.query('SELECT count(*) AS n FROM messages WHERE broadcast_id IS NOT NULL').get() as { n: number }
  expect(stored.n).toBe(0)
  expect(rows(deps, id)).toHaveLength(0)

  const copy = renderArchiveCopy(deps, { id })
  expect(copy.subject).toBe('Hi Subscriber')
  expect(copy.html).toContain(`/archive/`)
  expect(copy.html).not.toContain('/t/')
})

test('resend to non-openers: the source broadcast recipients that were sent, have no open and are still subscribed', () => {
  const deps = testDeps()
  const a = seed(deps, 'A', [
    ['a@example.net', 'Ann'],
    ['b@example.net', 'Bob'],
    ['c@example.net', 'Cy'],
    ['d@example.net', 'Di'],
    ['e@example.net', 'Eve'],
  ])
  const source = broadcast(deps, { list_ids: [a] })
  while (!prepareStep(deps, source));
  const c = deps.db.$client
  // a opened, b bounced, c unsubscribed since, d and e sent without an open.
  c.run("UPDATE broadcast_recipients SET state = 'sent' WHERE broadcast_id = ? AND email != 'b@example.net'", [source])
  c.run("UPDATE broadcast_recipients SET state = 'bounced' WHERE broadcast_id = ? AND email = 'b@example.net'", [source])
  c.run("UPDATE broadcast_recipients SET opened_at = 1 WHERE broadcast_id = ? AND email = 'a@example.net'", [source])
  c.run("UPDATE contacts SET status = 'unsubscribed' WHERE email = 'c@example.net'")
  const resend = broadcast(deps, { source_broadcast_id: source, list_ids: [] })
  while (!prepareStep(deps, resend, 2));
  expect(rows(deps, resend).map((r) => r.email)).toEqual(['d@example.net', 'e@example.net'])
  expect(counts(deps, resend)).toEqual({ total: 2, pending: 2 })
})

test('a From domain that is not a verified sending domain fails the broadcast once, with the reason, and queues nothing', async () => {
  const deps = testDeps({ allow_unverified_domains: false })
  const a = seed(deps, 'A', [
    ['a@example.net', 'Ann'],
    ['b@example.net', 'Bob'],
  ])
  const id = broadcast(deps, { list_ids: [a], status: 'scheduled', send_at: deps.clock.now() })
  const runner = startBroadcasts(deps, { pollMs: 5 })
  try {
    for (let i = 0; i < 2000 && (deps.db.$client.query('SELECT status FROM broadcasts WHERE id = ?').get(id) as { status: string }).status !== 'failed'; i++)
      await Bun.sleep(5)
  } finally {
    await runner.stop()
  }
  const b = deps.db.$client.query('SELECT status, status_reason FROM broadcasts WHERE id = ?').get(id) as { status: string; status_reason: string }
  expect(b.status).toBe('failed')
  expect(b.status_reason).toContain('example.com')
  expect(counts(deps, id)).toEqual({ total: 2, pending: 2 })
  expect((deps.db.$client.query('SELECT count(*) AS n FROM messages').get() as { n: number }).n).toBe(0)
})

test('a full queue window is refilled as its messages are delivered, with no doorbell and no idle poll in reach', async () => {
  // Deliveries ring nothing: the runner must look again by itself while its window is full.
  const deps = testDeps({ allow_unverified_domains: true, broadcast_queue_window: 2 })
  const a = seed(
    deps,
    'A',
    ['a', 'b', 'c', 'd', 'e'].map((x) => [`${x}@example.net`, x]),
  )
  const id = broadcast(deps, { list_ids: [a], status: 'scheduled', send_at: deps.clock.now() })
  const c = deps.db.$client
  const queued = () =>
    (
      c.query("SELECT message_id FROM broadcast_recipients WHERE broadcast_id = ? AND state = 'queued' ORDER BY id").all(id) as Array<{ message_id: string }>
    ).map((r) => r.message_id)
  const withMessage = () =>
    (c.query('SELECT count(*) AS n FROM broadcast_recipients WHERE broadcast_id = ? AND message_id IS NOT NULL').get(id) as { n: number }).n
  const waitFor = async (what: string, check: () => boolean) => {
    for (let i = 0; i < 2000 && !check(); i++) await Bun.sleep(5)
    if (!check()) throw new Error(`gave up waiting for: ${what}`)
  }
  // An idle poll far beyond the test's patience.
  const runner = startBroadcasts(deps, { pollMs: 600_000 })
  try {
    await waitFor('the first window', () => queued().length === 2)
    expect(withMessage()).toBe(2)
    // The delivery engine's outcomes for the window, as it writes them: events only.
    for (const message_id of queued()) emit(deps.db, deps.clock.now(), { kind: 'message.sent', message_id })
    await waitFor('the second window', () => withMessage() === 4)
    expect(counts(deps, id)).toMatchObject({ total: 5, sent: 2, queued: 2, pending: 1, delivered: 2 })
  } finally {
    await runner.stop()
  }
})

test('a report-only split test by one link picks the winner, gives it the waiting rows and pauses with the reason', () => {
  const deps = testDeps()
  const a = seed(
    deps,
    'A',
    Array.from({ length: 20 }, (_, i) => [`s${i}@example.net`, 'S'] as [string, string]),
  )
  const id = broadcast(deps, {
    list_ids: [a],
    version_mode: 'split_test',
    split_test: { sample_percent: 50, metric: 'link_click_rate', link_url: 'https://example.org/x', wait_seconds: 60, auto_send_winner: false },
  })
  const now = deps.clock.now()
  const c = deps.db.$client
  const insert = c.query('INSERT INTO broadcast_versions (broadcast_id, name, weight, created_at, updated_at) VALUES (?, ?, 1, ?, ?) RETURNING id')
  const v1 = (insert.get(id, 'one', now, now) as { id: number }).id
  const v2 = (insert.get(id, 'two', now, now) as { id: number }).id
  while (!prepareStep(deps, id));
  const waiting = (c.query('SELECT count(*) AS n FROM broadcast_recipients WHERE broadcast_id = ? AND version_id IS NULL').get(id) as { n: number }).n
  expect(waiting).toBeGreaterThan(0)
  expect(waiting).toBeLessThan(20)
  // Outcomes as the tail would count them: both delivered 5; v1's clicks are on another link.
  const counter = c.query('INSERT INTO broadcast_counts (broadcast_id, version_id, metric, n) VALUES (?, ?, ?, ?)')
  for (const [v, metric, n] of [
    [v1, 'delivered', 5],
    [v2, 'delivered', 5],
    [v1, 'clicked', 4],
    [v1, 'link:https://example.org/other', 4],
    [v2, 'clicked', 1],
    [v2, 'link:https://example.org/x', 1],
  ] as const)
    counter.run(id, v, metric, n)
  c.run("UPDATE broadcasts SET split_phase = 'waiting' WHERE id = ?", [id])
  const b = broadcastRow(deps, id)
  expect(c.transaction(() => decideSplitTest(deps, b)).immediate()).toBe(v2)
  const after = c.query('SELECT status, status_reason, winner_version_id, split_phase FROM broadcasts WHERE id = ?').get(id) as Record<string, unknown>
  expect(after).toMatchObject({ status: 'paused', winner_version_id: v2, split_phase: 'decided' })
  expect(after.status_reason).toContain('resume')
  expect((c.query('SELECT count(*) AS n FROM broadcast_recipients WHERE broadcast_id = ? AND version_id IS NULL').get(id) as { n: number }).n).toBe(0)
  expect(counts(deps, id, v2).total).toBe(20 - counts(deps, id, v1).total!)
})

/** `n` subscribed contacts on a new list, in one transaction (the snapshot tests below need many). */
function seedMany(deps: Deps, name: string, n: number): number {
  const c = deps.db.$client
  const now = deps.clock.now()
  return c
    .transaction(() => {
      const listId = (c.query('INSERT INTO lists (name, created_at, updated_at) VALUES (?, ?, ?) RETURNING id').get(name, now, now) as { id: number }).id
      const insert = c.prepare(
        "INSERT INTO contacts (list_id, email, first_name, status, fields, created_at, updated_at) VALUES (?, ?, 'M', 'subscribed', '{}', ?, ?)",
      )
      for (let i = 0; i < n; i++) insert.run(listId, `m${i}@example.net`, now, now)
      return listId
    })
    .immediate()
}

/** The delivery engine's outcome for every queued message of the broadcast, written as it writes them: events only. */
function deliverQueued(deps: Deps, id: number): number {
  const c = deps.db.$client
  const ids = c.query("SELECT message_id FROM broadcast_recipients WHERE broadcast_id = ? AND state = 'queued'").all(id) as Array<{ message_id: string }>
  c.transaction(() => {
    for (const r of ids) emitPrepared(deps.db, deps.clock.now(), { kind: 'message.sent', message_id: r.message_id })
  }).immediate()
  return ids.length
}

const statusOf = (deps: Deps, id: number) => (deps.db.$client.query('SELECT status FROM broadcasts WHERE id = ?').get(id) as { status: string }).status
const eventId = (deps: Deps, sql: string, ...args: Array<string | number>) =>
  (deps.db.$client.query(`SELECT min(id) AS id FROM events WHERE ${sql}`).get(...args) as { id: number | null }).id

/** Each address's number of queued messages of the broadcast (one message per contact). */
const messagesPerAddress = (deps: Deps, id: number) =>
  deps.db.$client
    .query(
      "SELECT e.recipient AS email, count(*) AS n FROM events e JOIN broadcast_recipients r ON r.message_id = e.message_id WHERE r.broadcast_id = ? AND e.kind = 'message.queued' GROUP BY e.recipient",
    )
    .all(id) as Array<{ email: string; n: number }>

async function waitFor(what: string, check: () => boolean, tries = 4000): Promise<void> {
  for (let i = 0; i < tries && !check(); i++) await Bun.sleep(2)
  if (!check()) throw new Error(`gave up waiting for: ${what}`)
}

test('a broadcast that is not a split test sends the rows already copied while its snapshot continues, and reaches everyone once', async () => {
  const deps = testDeps({ allow_unverified_domains: true })
  const a = seedMany(deps, 'A', 60)
  const id = broadcast(deps, { list_ids: [a], status: 'scheduled', send_at: deps.clock.now() })
  const now = deps.clock.now()
  const insert = deps.db.$client.query(
    'INSERT INTO broadcast_versions (broadcast_id, name, weight, subject, created_at, updated_at) VALUES (?, ?, 1, ?, ?, ?) RETURNING id',
  )
  const v1 = (insert.get(id, 'one', 'One', now, now) as { id: number }).id
  const v2 = (insert.get(id, 'two', 'Two', now, now) as { id: number }).id
  // Three contacts a chunk: twenty chunks before the snapshot is whole.
  const runner = startBroadcasts(deps, { pollMs: 5, prepareChunk: 3 })
  try {
    await waitFor('all queued', () => counts(deps, id).queued === 60)
    expect(statusOf(deps, id)).toBe('sending')
    // The first message was queued before the snapshot was complete (`broadcast.started`).
    const started = eventId(deps, "kind = 'broadcast.started' AND broadcast_id = ?", id)!
    const firstQueued = eventId(deps, "kind = 'message.queued'")!
    expect(started).not.toBeNull()
    expect(firstQueued).toBeLessThan(started)
    deliverQueued(deps, id)
    await waitFor('sent', () => statusOf(deps, id) === 'sent')
  } finally {
    await runner.stop()
  }
  const per = messagesPerAddress(deps, id)
  expect(per.length).toBe(60)
  expect(per.every((p) => p.n === 1)).toBe(true)
  expect(counts(deps, id)).toMatchObject({ total: 60, pending: 0, queued: 0, sent: 60, delivered: 60 })
  // Rotation still splits the early rows evenly.
  expect(counts(deps, id, v1).total).toBe(30)
  expect(counts(deps, id, v2).total).toBe(30)
  expect(deps.db.$client.query("SELECT count(*) AS n FROM events WHERE kind = 'broadcast.finished' AND broadcast_id = ?").get(id)).toEqual({ n: 1 })
})

test('a split test sends nothing before its snapshot is whole: the sample needs the whole audience', async () => {
  const deps = testDeps({ allow_unverified_domains: true })
  const a = seedMany(deps, 'A', 40)
  const id = broadcast(deps, {
    list_ids: [a],
    status: 'scheduled',
    send_at: deps.clock.now(),
    version_mode: 'split_test',
    split_test: { sample_percent: 50, metric: 'open_rate', wait_seconds: 60, auto_send_winner: true },
  })
  const now = deps.clock.now()
  const insert = deps.db.$client.query('INSERT INTO broadcast_versions (broadcast_id, name, weight, created_at, updated_at) VALUES (?, ?, 1, ?, ?)')
  insert.run(id, 'one', now, now)
  insert.run(id, 'two', now, now)
  const runner = startBroadcasts(deps, { pollMs: 5, prepareChunk: 3 })
  try {
    await waitFor('the sample queued', () => (counts(deps, id).queued ?? 0) > 0 && statusOf(deps, id) === 'sending')
  } finally {
    await runner.stop()
  }
  expect(eventId(deps, "kind = 'message.queued'")!).toBeGreaterThan(eventId(deps, "kind = 'broadcast.started' AND broadcast_id = ?", id)!)
})

test('a restart mid-preparation with messages in flight: the snapshot continues from its cursor and everyone gets the message once', async () => {
  const deps = testDeps({ allow_unverified_domains: true, broadcast_queue_window: 20 })
  const n = 1000
  const a = seedMany(deps, 'A', n)
  const id = broadcast(deps, { list_ids: [a], status: 'scheduled', send_at: deps.clock.now() })
  const cursor = () => (deps.db.$client.query('SELECT prepare_cursor FROM broadcasts WHERE id = ?').get(id) as { prepare_cursor: number | null }).prepare_cursor
  // Two contacts a chunk: 500 chunks, and nothing delivers the first window.
  const first = startBroadcasts(deps, { pollMs: 5, prepareChunk: 2 })
  try {
    await waitFor('a full window while preparing', () => counts(deps, id).queued === 20, 20_000)
  } finally {
    await first.stop()
  }
  expect(statusOf(deps, id)).toBe('preparing')
  const stoppedAt = cursor()!
  expect(stoppedAt).toBeLessThan(n)
  expect(counts(deps, id).total).toBe(stoppedAt)
  // The messages in flight at the restart are delivered meanwhile.
  expect(deliverQueued(deps, id)).toBe(20)

  const second = startBroadcasts(deps, { pollMs: 5, prepareChunk: 2 })
  try {
    await waitFor(
      'sent',
      () => {
        deliverQueued(deps, id)
        return statusOf(deps, id) === 'sent'
      },
      60_000,
    )
  } finally {
    await second.stop()
  }
  const per = messagesPerAddress(deps, id)
  expect(per.length).toBe(n)
  expect(per.every((p) => p.n === 1)).toBe(true)
  expect(counts(deps, id)).toMatchObject({ total: n, pending: 0, queued: 0, sent: n })
}, 120_000)

test('paused while preparing with messages already queued, resumed: it prepares on, and is sent only once the snapshot is whole', async () => {
  const deps = testDeps({ allow_unverified_domains: true, broadcast_queue_window: 20 })
  const n = 1000
  const a = seedMany(deps, 'A', n)
  const id = broadcast(deps, { list_ids: [a], status: 'scheduled', send_at: deps.clock.now() })
  const runner = startBroadcasts(deps, { pollMs: 5, prepareChunk: 2 })
  try {
    await waitFor('a full window while preparing', () => counts(deps, id).queued === 20, 20_000)
    pauseBroadcast(deps, id, 'test')
    expect(counts(deps, id).total).toBeLessThan(n)
    // Every message queued so far is delivered while it is paused: nothing is pending in flight.
    deliverQueued(deps, id)
    await waitFor('outcomes applied', () => counts(deps, id).queued === 0)
    expect(resumeBroadcast(deps, id).status).toBe('preparing')
    await waitFor(
      'sent',
      () => {
        deliverQueued(deps, id)
        return statusOf(deps, id) === 'sent'
      },
      60_000,
    )
  } finally {
    await runner.stop()
  }
  expect(messagesPerAddress(deps, id).length).toBe(n)
  expect(counts(deps, id)).toMatchObject({ total: n, pending: 0, queued: 0, sent: n })
}, 120_000)

test('the bounce threshold pauses a broadcast that sends while it prepares; resumed, it prepares on', async () => {
  const deps = testDeps({ allow_unverified_domains: true, broadcast_queue_window: 20, broadcast_threshold_min_sample: 10 })
  const n = 1000
  const a = seedMany(deps, 'A', n)
  const id = broadcast(deps, { list_ids: [a], status: 'scheduled', send_at: deps.clock.now() })
  const runner = startBroadcasts(deps, { pollMs: 5, prepareChunk: 2 })
  try {
    await waitFor('a full window while preparing', () => counts(deps, id).queued === 20, 20_000)
    const c = deps.db.$client
    const queued = c.query("SELECT message_id FROM broadcast_recipients WHERE broadcast_id = ? AND state = 'queued'").all(id) as Array<{ message_id: string }>
    c.transaction(() => {
      for (const r of queued)
        emitPrepared(deps.db, deps.clock.now(), { kind: 'message.bounced', message_id: r.message_id, data: { reason: '550 no such user' } })
    }).immediate()
    await waitFor('paused', () => statusOf(deps, id) === 'paused')
  } finally {
    await runner.stop()
  }
  const b = deps.db.$client.query('SELECT status_reason FROM broadcasts WHERE id = ?').get(id) as { status_reason: string }
  expect(b.status_reason).toContain('Bounce rate')
  const paused = deps.db.$client.query("SELECT data FROM events WHERE kind = 'broadcast.paused' AND broadcast_id = ?").get(id) as { data: string }
  expect(JSON.parse(paused.data)).toMatchObject({ code: 'bounce_rate', from_status: 'preparing' })
  expect(counts(deps, id).total).toBeLessThan(n)
  expect(resumeBroadcast(deps, id).status).toBe('preparing')
})
