/**
 * The segment count's SQL on its own (issue 18 item 6, decision 75): a million-contact
 * database made by the plain insert of bench/audience.ts, then the benchmark's three
 * conditions compiled by the real rule compiler, counted on one connection with reads
 * through read() and through a memory mapping, beside a bare `SELECT count(*)`, the floor of
 * a scan (a status test on every row), and json_extract in place of the number read as text;
 * then the compiled count cut in two halves on two worker threads, as the server's count
 * workers do. Medians of `--rounds` after one warm-up. Not part of `npm run bench`: it
 * measures levers, not the product.
 *
 *   bun bench/segment-sql.ts [--rows 1000000] [--rounds 5]
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { compileRules } from '../src/modules/segments/rules'
import { COUNT_MMAP_BYTES } from '../src/modules/segments/count-worker'
import { runLimit } from './audience'
import { CUSTOM_FIELDS, SEGMENT_RULES } from './support/audience-data'
import { fmtMs, median, textTable } from './support/report'

const { values } = parseArgs({ args: process.argv.slice(2), options: { rows: { type: 'string' }, rounds: { type: 'string' } } })
const rows = Number(values.rows ?? 1_000_000)
const rounds = Number(values.rounds ?? 5)

const dir = mkdtempSync(join(tmpdir(), 'mailroom-segment-sql-'))
try {
  await runLimit(dir, rows, 1, 180_000)
  const path = join(dir, 'limit.db')

  const compiled = compileRules(SEGMENT_RULES, {
    now: Date.now(),
    checkReferences: false,
    catalog: { customField: (key) => CUSTOM_FIELDS.find((f) => f.key === key), listExists: () => true, statusShare: () => 1 },
  })
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.errors))
  const asJson = compiled.where.replace(/CAST\(substr\(contacts\.fields, [^)]*\), 0\) \+ \d+, 32\) AS NUMERIC\)/, "json_extract(contacts.fields, '$.seats')")
  const queries: Array<[string, string, unknown[]]> = [
    ['bare SELECT count(*)', 'SELECT count(*) AS n FROM contacts', []],
    ["+status = 'subscribed' on every row", "SELECT count(*) AS n FROM contacts WHERE +status = 'subscribed'", []],
    ['the compiled count', `SELECT count(*) AS n FROM contacts WHERE ${compiled.where}`, compiled.params],
    ['the same with json_extract for seats', `SELECT count(*) AS n FROM contacts WHERE ${asJson}`, compiled.params],
  ]
  const time = (db: Database, sql: string, params: unknown[]) => {
    const stmt = db.prepare<{ n: number }, never[]>(sql)
    stmt.get(...(params as never[]))
    const runs: number[] = []
    for (let i = 0; i < rounds; i++) {
      const t = performance.now()
      stmt.get(...(params as never[]))
      runs.push(performance.now() - t)
    }
    return median(runs)
  }
  const plain = new Database(path, { readonly: true })
  const mapped = new Database(path, { readonly: true })
  mapped.run(`PRAGMA mmap_size = ${COUNT_MMAP_BYTES}`)
  const table = queries.map(([label, sql, params]) => [label, `${fmtMs(time(plain, sql, params))} ms`, `${fmtMs(time(mapped, sql, params))} ms`])

  // Two threads, each counting one half by rowid with its own mapped connection.
  const source = `import { Database } from 'bun:sqlite'
const db = new Database(${JSON.stringify(path)}, { readonly: true })
db.run('PRAGMA mmap_size = ${COUNT_MMAP_BYTES}')
const stmt = db.prepare(${JSON.stringify(`SELECT count(*) AS n FROM contacts WHERE rowid BETWEEN ? AND ? AND (${compiled.where})`)})
self.onmessage = (e) => postMessage(stmt.get(...e.data).n)
postMessage('ready')`
  const workerFile = join(dir, 'half.ts')
  await Bun.write(workerFile, source)
  // Asked only once each has said it is ready: a message sent before a worker's handler is
  // set can be lost (a run once waited forever for its answer).
  const workers = await Promise.all(
    [0, 1].map(
      () =>
        new Promise<Worker>((resolve, reject) => {
          const w = new Worker(workerFile)
          w.onmessage = () => resolve(w)
          w.onerror = (e) => reject(new Error(`a counting thread failed: ${e.message}`))
        }),
    ),
  )
  const ask = (w: Worker, args: unknown[]) =>
    new Promise<number>((resolve, reject) => {
      w.onmessage = (e) => resolve(e.data as number)
      w.onerror = (e) => reject(new Error(`a counting thread failed: ${e.message}`))
      w.postMessage(args)
    })
  const half = Math.floor(rows / 2)
  const both = () => Promise.all([ask(workers[0]!, [1, half, ...compiled.params]), ask(workers[1]!, [half + 1, rows, ...compiled.params])])
  await both()
  const split: number[] = []
  for (let i = 0; i < rounds; i++) {
    const t = performance.now()
    await both()
    split.push(performance.now() - t)
  }
  workers.forEach((w) => w.terminate())
  table.push(['the compiled count, two threads (halves)', '', `${fmtMs(median(split))} ms`])
  plain.close()
  mapped.close()
  process.stdout.write(`${textTable(['query', 'read()', 'memory-mapped'], table)}\n\n${rows.toLocaleString('en')} contacts; medians of ${rounds}.\n`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
