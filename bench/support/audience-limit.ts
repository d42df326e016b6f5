/**
 * The practical limit for bench/audience.ts, run as its own process: the same rows the
 * import got, generated in memory in batches (no CSV, no parsing, no checks), inserted
 * straight into `contacts` of a fresh database with Mailroom's own settings and migrations,
 * with one prepared INSERT in transactions of `--batch` rows, with the import runner's
 * SQLite settings (one count update per transaction, its checkpoint interval and page cache). Prints one line,
 * `LIMIT_REPORT {json}`, with the times and this process's peak memory.
 *
 * With --indexed-segment, the benchmark segment's member index (an indexed segment,
 * src/modules/segments/service.ts) is created on the empty table first, so every insert keeps it.
 *
 *   bun bench/support/audience-limit.ts --dir DIR --rows N --seed S [--batch 5000] [--indexed-segment]
 */
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { openDatabase } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { IMPORT_CACHE_KIB, IMPORT_WAL_AUTOCHECKPOINT } from '../../src/modules/imports/runner'
import { compileRules, inlineParams } from '../../src/modules/segments/rules'
import { memberIndexSql } from '../../src/modules/segments/service'
import { audienceBatches, CUSTOM_FIELDS, SEGMENT_RULES } from './audience-data'
import { readProcMemory } from './proc'

export interface LimitReport {
  rows: number
  batch: number
  /** Wall time of the whole loop: generating the batches and inserting them. */
  totalMs: number
  /** Time inside the transactions only (the inserts and commits). */
  insertMs: number
  /** The database file after closing (which checkpoints the WAL into it). */
  dbBytes: number
  /** VmHWM of this process when the last batch was committed. */
  peakRssKiB: number
}

const { values } = parseArgs({
  args: process.argv.slice(2),
  strict: true,
  options: {
    dir: { type: 'string' },
    rows: { type: 'string' },
    seed: { type: 'string' },
    batch: { type: 'string' },
    'indexed-segment': { type: 'boolean' },
  },
})
if (!values.dir || !values.rows || !values.seed) throw new Error('usage: audience-limit.ts --dir DIR --rows N --seed S [--batch 5000]')
const rows = Number(values.rows)
const seed = Number(values.seed)
const batch = Number(values.batch ?? 5000)

const file = join(values.dir, 'limit.db')
const db = openDatabase(file)
migrate(db, { now: Date.now() })
const client = db.$client
const now = Date.now()
if (values['indexed-segment']) {
  const catalog = { customField: (key: string) => CUSTOM_FIELDS.find((f) => f.key === key), listExists: () => true }
  const compiled = compileRules(SEGMENT_RULES, { now, catalog, checkReferences: false, forIndex: true })
  const where = compiled.ok ? inlineParams(compiled.where, compiled.params) : null
  if (where === null) throw new Error('the benchmark segment does not compile for an index')
  client.run(memberIndexSql(1, where))
}
const listId = Number(
  (client.query('INSERT INTO lists (name, description, created_at, updated_at) VALUES (?, ?, ?, ?) RETURNING id').get('limit', '', now, now) as { id: number })
    .id,
)
const insert = client.prepare<unknown, [number, string, string, string, string, string, number, number]>(
  'INSERT INTO contacts (list_id, email, first_name, last_name, status, fields, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
)
// The SQLite side of the import as the runner does it: contact_counts moved once per
// transaction, a long WAL between checkpoints, a smaller page cache.
client.run(`PRAGMA wal_autocheckpoint = ${IMPORT_WAL_AUTOCHECKPOINT}`)
client.run(`PRAGMA cache_size = ${-IMPORT_CACHE_KIB}`)
const addCount = client.prepare<unknown, [number, number]>(
  "INSERT INTO contact_counts (list_id, status, n) VALUES (?, 'subscribed', ?) ON CONFLICT (list_id, status) DO UPDATE SET n = n + excluded.n",
)
const commit = client.transaction((items: ReturnType<typeof audienceBatches> extends Generator<infer B> ? B : never, at: number) => {
  for (const r of items) insert.run(listId, r.email, r.first_name, r.last_name, 'subscribed', JSON.stringify({ plan: r.plan, seats: r.seats }), at, at)
  addCount.run(listId, items.length)
})

let done = 0
let insertMs = 0
const started = performance.now()
for (const items of audienceBatches(rows, seed, batch)) {
  const t0 = performance.now()
  commit(items, Date.now())
  insertMs += performance.now() - t0
  done += items.length
}
const totalMs = performance.now() - started
// Before the check below, whose full index scan maps more of the file in.
const peakRssKiB = readProcMemory('self')?.vmHwmKiB ?? 0
const count = (client.query('SELECT count(*) AS n FROM contacts').get() as { n: number }).n
if (count !== rows || done !== rows) throw new Error(`inserted ${done} rows, the table has ${count}, expected ${rows}`)
client.close()

const size = (p: string) => {
  try {
    return statSync(p).size
  } catch {
    return 0
  }
}
const report: LimitReport = { rows, batch, totalMs, insertMs, dbBytes: size(file), peakRssKiB }
process.stdout.write(`LIMIT_REPORT ${JSON.stringify(report)}\n`)
