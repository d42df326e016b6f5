import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { Database } from 'bun:sqlite'
import { sql } from 'drizzle-orm'
import { buildApp } from '../../src/app'
import { openDatabase } from '../../src/db/client'
import { contacts, customFields, lists, type ContactStatus } from '../../src/db/schema'
import type { Deps } from '../../src/deps'
import { createApiKey } from '../../src/modules/api-keys/service'
import { CLI_ACTOR, findRoleByName } from '../../src/modules/roles/service'
import { countScansAllContacts, rangeCountSql, rowidRanges, segmentCountPool, stopSegmentCountPool } from '../../src/modules/segments/count-pool'
import { compileRules, type CompiledRules } from '../../src/modules/segments/rules'
import { countSegment, createSegment, previewSegment, segmentContacts } from '../../src/modules/segments/service'
import { testDeps } from '../support/app'
import { tempDir } from '../support/temp-dirs'

const DAY = 86_400_000
/** Above the pool's threshold below (MIN), far below the production one: the test stays small. */
const CONTACTS = 5_000
const MIN = 1_000
const STATUSES: ContactStatus[] = ['subscribed', 'subscribed', 'subscribed', 'subscribed', 'subscribed', 'subscribed', 'unsubscribed', 'bounced']
const PLANS = ['free', 'pro', 'team']

/**
 * A file database in a temp directory (WAL, so the workers' read-only connections can read
 * beside the test's own): CONTACTS contacts on list 1, contact i having status
 * STATUSES[i % 8], plan PLANS[i % 3], seats i % 40, a `city` on every fifth, created i hours
 * ago; contacts 1..50 are also on list 2.
 */
function fileAudience(dir: string) {
  const path = join(dir, 'mailroom.db')
  const deps = testDeps({}, path)
  const now = deps.clock.now()
  deps.db
    .insert(lists)
    .values([
      { name: 'news', created_at: now, updated_at: now },
      { name: 'vip', created_at: now, updated_at: now },
    ])
    .run()
  deps.db
    .insert(customFields)
    .values([
      { key: 'plan', name: 'Plan', type: 'one_of', options: PLANS, created_at: now, updated_at: now },
      { key: 'seats', name: 'Seats', type: 'number', created_at: now, updated_at: now },
      { key: 'city', name: 'City', type: 'text', created_at: now, updated_at: now },
    ])
    .run()
  deps.db.transaction((tx) => {
    for (let i = 1; i <= CONTACTS; i++) {
      const fields: Record<string, unknown> = { plan: PLANS[i % 3], seats: i % 40 }
      if (i % 5 === 0) fields.city = i % 2 ? 'Lisbon' : 'Porto'
      const at = now - i * (DAY / 24)
      tx.insert(contacts)
        .values({ list_id: 1, email: `c${i}@example.com`, status: STATUSES[i % 8]!, fields, created_at: at, updated_at: at })
        .run()
      if (i <= 50)
        tx.insert(contacts)
          .values({ list_id: 2, email: `c${i}@example.com`, status: 'subscribed', created_at: at, updated_at: at })
          .run()
    }
    // Rows written past the contact writer: their counts (which choose the parallel path) by hand.
    tx.run(sql`INSERT INTO contact_counts (list_id, status, n) SELECT list_id, status, count(*) FROM contacts GROUP BY list_id, status`)
  })
  return { path, deps }
}

/** Another connection to the same file whose pool never counts in parallel: the single-connection reference. */
function singlePathDeps(deps: Deps, path: string): Deps {
  const other = { ...deps, db: openDatabase(path) }
  segmentCountPool(other, { minContacts: Number.MAX_SAFE_INTEGER })
  return other
}

function compiled(deps: Deps, rules: unknown): CompiledRules {
  const c = compileRules(rules, {
    now: deps.clock.now(),
    checkReferences: false,
    catalog: {
      customField: (key) => ({ key, type: key === 'seats' ? 'number' : key === 'plan' ? 'one_of' : 'text', options: key === 'plan' ? PLANS : [] }),
      listExists: () => true,
      statusShare: (s) => (s.includes('subscribed') ? 0.75 : 0.125),
    },
  })
  if (!c.ok) throw new Error(`compile failed: ${JSON.stringify(c.errors)}`)
  return c
}

/** Rule sets that SQLite counts by reading every contact: the parallel path takes them. */
const SCANS: Array<[string, unknown]> = [
  [
    'status, a one_of and a number field (the benchmark shape)',
    {
      all: [
        { field: 'status', op: 'eq', value: 'subscribed' },
        { field: 'fields.plan', op: 'eq', value: 'pro' },
        { field: 'fields.seats', op: 'gte', value: 10 },
      ],
    },
  ],
  ['a text field', { all: [{ field: 'fields.city', op: 'contains', value: 'lis' }] }],
  ['a field that is not set', { all: [{ field: 'fields.city', op: 'is_not_set' }] }],
  [
    'nested any/all with creation time and a list',
    {
      any: [
        {
          all: [
            { field: 'fields.plan', op: 'in', value: ['team', 'pro'] },
            { field: 'created_at', op: 'gte', value: { days_ago: 30 } },
          ],
        },
        { all: [{ field: 'fields.seats', op: 'between', value: [3, 5] }, { in_list: 2 }] },
        { field: 'fields.city', op: 'eq', value: 'Porto' },
      ],
    },
  ],
  ['no match at all', { all: [{ field: 'fields.seats', op: 'gt', value: 1_000_000 }] }],
]

/** Rule sets an index narrows (a rare status, a creation window): they stay on the server's connection. */
const INDEXED: Array<[string, unknown]> = [
  ['a rare status', { all: [{ field: 'status', op: 'eq', value: 'bounced' }] }],
  ['a creation window', { all: [{ field: 'created_at', op: 'between', value: ['2026-02-27', '2026-02-28'] }] }],
]

describe('parallel segment count on a file database', () => {
  let dir: string
  let deps: Deps
  let single: Deps
  let path: string

  beforeAll(() => {
    dir = tempDir('mailroom-segcount-')
    ;({ path, deps } = fileAudience(dir))
    single = singlePathDeps(deps, path)
    segmentCountPool(deps, { minContacts: MIN })
  })

  afterAll(async () => {
    await stopSegmentCountPool(deps)
    await stopSegmentCountPool(single)
    single.db.$client.close()
    deps.db.$client.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('the rowid ranges cover every id once, none empty', () => {
    expect(rowidRanges(1, 10, 4)).toEqual([
      [1, 3],
      [4, 6],
      [7, 9],
      [10, 10],
    ])
    expect(rowidRanges(5, 5, 8)).toEqual([[5, 5]])
    expect(rowidRanges(1, 3, 8)).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
    ])
    const ranges = rowidRanges(17, 1_000_003, 8)
    expect(ranges.length).toBe(8)
    expect(ranges[0]![0]).toBe(17)
    expect(ranges.at(-1)![1]).toBe(1_000_003)
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).toBe(ranges[i - 1]![1] + 1)
  })

  test('a range count searches the primary key and keeps the rules; indexed rules are not scans (EXPLAIN QUERY PLAN)', () => {
    for (const [name, rules] of SCANS) {
      const c = compiled(deps, rules)
      expect({ name, scan: countScansAllContacts(deps.db, c) }).toEqual({ name, scan: true })
      const plan = deps.db.$client
        .prepare<{ detail: string }, Array<string | number>>(`EXPLAIN QUERY PLAN ${rangeCountSql(c)}`)
        .all(1, 100, ...c.params)
        .map((r) => r.detail)
      expect({ name, plan: plan[0] }).toEqual({ name, plan: 'SEARCH contacts USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)' })
    }
    for (const [name, rules] of INDEXED) expect({ name, scan: countScansAllContacts(deps.db, compiled(deps, rules)) }).toEqual({ name, scan: false })
  })

  test('saved segments: the parallel count equals the single-connection count', async () => {
    const pool = segmentCountPool(deps)
    for (const [name, rules] of SCANS) {
      const segment = createSegment(deps, { name, rules })
      const before = pool.stats.parallel
      const parallel = await countSegment(deps, segment.id)
      expect({ name, parallelRuns: pool.stats.parallel - before }).toEqual({ name, parallelRuns: 1 })
      expect({ name, count: parallel.count }).toEqual({ name, count: (await countSegment(single, segment.id)).count })
    }
    expect(pool.stats.alive).toBe(2)
    // The benchmark shape by hand: subscribed (i % 8 < 6), pro (i % 3 == 1), seats (i % 40) >= 10.
    let expected = 0
    for (let i = 1; i <= CONTACTS; i++) if (i % 8 < 6 && i % 3 === 1 && i % 40 >= 10) expected++
    const first = createSegment(deps, { name: 'by hand', rules: SCANS[0]![1] })
    expect(await countSegment(deps, first.id)).toEqual({ count: expected })
    expect((await previewSegment(deps, SCANS.at(-1)![1])).count).toBe(0)
  })

  test.if(process.platform === 'linux')('the workers read the database file through a memory mapping', async () => {
    const mapped = () =>
      readFileSync('/proc/self/maps', 'utf8')
        .split('\n')
        .some((line) => line.endsWith(` ${path}`))
    // The test's own connections read with read() calls: any mapping of the file (not its -shm) is a worker's.
    // Checkpointed first (on a connection of its own): SQLite maps the file, and the contacts are in the WAL until then.
    const checkpointer = new Database(path)
    checkpointer.run('PRAGMA wal_checkpoint(PASSIVE)')
    checkpointer.close()
    expect(mapped()).toBe(false)
    const segment = createSegment(deps, { name: 'mapped', rules: SCANS[0]![1] })
    await countSegment(deps, segment.id)
    expect(segmentCountPool(deps).stats.alive).toBe(2)
    expect(mapped()).toBe(true)
  })

  test('previews and several counts at once share the workers and agree', async () => {
    const pool = segmentCountPool(deps)
    const before = pool.stats.parallel
    const answers = await Promise.all([...SCANS, ...SCANS].map(([, rules]) => previewSegment(deps, rules)))
    expect(pool.stats.parallel - before).toBe(SCANS.length * 2)
    const reference = await Promise.all(SCANS.map(([, rules]) => previewSegment(single, rules)))
    expect(answers).toEqual([...reference, ...reference])
  })

  test('rules an index serves, a scan of a covering index and the page total stay on the server connection', async () => {
    const pool = segmentCountPool(deps)
    const before = { ...pool.stats }
    const cases = [...INDEXED, ['status alone (a covering index scan)', { all: [{ field: 'status', op: 'eq', value: 'subscribed' }] }] as [string, unknown]]
    for (const [name, rules] of cases) {
      const n = (await previewSegment(deps, rules)).count
      expect({ name, n }).toEqual({ name, n: (await previewSegment(single, rules)).count })
      expect(n).toBeGreaterThan(0)
    }
    expect(pool.stats.parallel).toBe(before.parallel)
    expect(pool.stats.single - before.single).toBe(cases.length)
    const segment = createSegment(deps, { name: 'page total', rules: SCANS[0]![1] })
    const page = segmentContacts(deps, segment.id, { per_page: 5 })
    expect(page.meta.total).toBe((await countSegment(single, segment.id)).count)
    expect(pool.stats.parallel).toBe(before.parallel)
  })

  test('the HTTP routes answer from the workers', async () => {
    const { app } = buildApp(deps)
    const { key } = createApiKey(deps, CLI_ACTOR, { name: 'test', role_id: findRoleByName(deps, 'Administrator')!.id, rate_limit: null })
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const segment = createSegment(deps, { name: 'http', rules: SCANS[3]![1] })
    const expected = (await countSegment(single, segment.id)).count
    const pool = segmentCountPool(deps)
    const before = pool.stats.parallel
    const counted = await app.handle(new Request(`http://mailroom.test/api/v2/segments/${segment.id}/count`, { headers }))
    expect(counted.status).toBe(200)
    expect(await counted.json()).toEqual({ success: true, data: { count: expected } })
    const previewed = await app.handle(
      new Request('http://mailroom.test/api/v2/segments/preview', { method: 'POST', headers, body: JSON.stringify({ rules: SCANS[3]![1] }) }),
    )
    expect(await previewed.json()).toEqual({ success: true, data: { count: expected } })
    expect(pool.stats.parallel - before).toBe(2)
  })

  test('a count sees contacts committed before it', async () => {
    const rules = { all: [{ field: 'fields.city', op: 'eq', value: 'Faro' }] }
    expect(await previewSegment(deps, rules)).toEqual({ count: 0 })
    const now = deps.clock.now()
    deps.db
      .insert(contacts)
      .values(
        [1, 2, 3].map((i) => ({
          list_id: 2,
          email: `faro${i}@example.com`,
          status: 'subscribed' as const,
          fields: { city: 'Faro' },
          created_at: now,
          updated_at: now,
        })),
      )
      .run()
    expect(await previewSegment(deps, rules)).toEqual({ count: 3 })
  })

  test('workers that cannot start: the same answers on the server connection, logged once', async () => {
    const other: Deps & { log: ReturnType<typeof testDeps>['log'] } = { ...deps, db: openDatabase(path), log: testDeps().log }
    const pool = segmentCountPool(other, { minContacts: MIN, workerUrl: new URL('./no-such-count-worker.ts', import.meta.url) })
    try {
      for (const [name, rules] of SCANS.slice(0, 3)) {
        expect({ name, n: (await previewSegment(other, rules)).count }).toEqual({ name, n: (await previewSegment(single, rules)).count })
      }
      expect(pool.stats).toEqual({ parallel: 0, single: 3, alive: 0 })
      expect(other.log.lines.filter((l) => l.msg.includes('could not start')).length).toBe(1)
    } finally {
      await stopSegmentCountPool(other)
      other.db.$client.close()
    }
  })

  test('idle workers do not keep a process alive', async () => {
    const script = join(dir, 'count-and-exit.ts')
    const src = (file: string) => JSON.stringify(join(import.meta.dir, '../../src', file))
    await Bun.write(
      script,
      `import { openDatabase } from ${src('db/client')}
import { memoryLogger } from ${src('lib/logger')}
import { segmentCountPool } from ${src('modules/segments/count-pool')}
import { previewSegment } from ${src('modules/segments/service')}
const deps = { db: openDatabase(${JSON.stringify(path)}), clock: { now: () => ${deps.clock.now()} }, log: memoryLogger(), config: {} }
const pool = segmentCountPool(deps as never, { minContacts: ${MIN} })
const { count } = await previewSegment(deps as never, ${JSON.stringify(SCANS[0]![1])})
console.log(JSON.stringify({ count, ...pool.stats }))
`,
    )
    // No stop: the process must end on its own once the count is answered.
    const child = Bun.spawn([process.execPath, script], { stdout: 'pipe', stderr: 'pipe' })
    const [out, code] = await Promise.all([new Response(child.stdout).text(), child.exited])
    expect(code).toBe(0)
    expect(JSON.parse(out)).toEqual({ count: (await previewSegment(single, SCANS[0]![1])).count, parallel: 1, single: 0, alive: 2 })
  })

  test('stopping ends the workers; a later count runs on the server connection', async () => {
    const other = { ...deps, db: openDatabase(path) }
    const pool = segmentCountPool(other, { minContacts: MIN })
    const rules = SCANS[0]![1]
    const expected = (await previewSegment(single, rules)).count
    try {
      expect(await previewSegment(other, rules)).toEqual({ count: expected })
      expect(pool.stats).toMatchObject({ parallel: 1, alive: 2 })
      await stopSegmentCountPool(other)
      expect(pool.stats.alive).toBe(0)
      expect(await pool.ready()).toBe(false)
      // A new pool with the production threshold (100,000 contacts): this audience is counted on the server connection.
      expect(await previewSegment(other, rules)).toEqual({ count: expected })
      expect(segmentCountPool(other).stats).toEqual({ parallel: 0, single: 1, alive: 0 })
    } finally {
      await stopSegmentCountPool(other)
      other.db.$client.close()
    }
  })
})

describe('count on an in-memory database', () => {
  test('stays on the server connection and starts no worker', async () => {
    const deps = testDeps()
    const pool = segmentCountPool(deps, { minContacts: 0 })
    expect(await previewSegment(deps, { all: [{ field: 'email', op: 'contains', value: 'x' }] })).toEqual({ count: 0 })
    expect(pool.stats).toEqual({ parallel: 0, single: 1, alive: 0 })
  })
})
