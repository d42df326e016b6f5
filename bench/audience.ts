/**
 * Audience benchmark (issue 3): a 1,000,000-row CSV imported through the HTTP API of a real
 * Mailroom server, then a 3-condition segment count and the first and last page of a
 * filtered contact listing over the million, and, in the same run, a plain bulk insert of
 * the same rows into bun:sqlite as the practical limit the import is compared with.
 *
 * Aims on a 2-core machine (AIMS below): import under 20 s and at most 1.1x the plain insert,
 * under 200 MiB peak memory (the server's VmHWM), segment count under 50 ms and at most 3x a
 * bare count of the table, any page under 50 ms.
 *
 *   bun bench/audience.ts [--rows 1000000] [--seed 1] [--runs 7] [--import-timeout 240]
 *                         [--keep] [--dry-run]
 *
 * The server is a child process (`mailroom serve` on a fresh data directory, access log off,
 * an Administrator key without a rate limit); the limit is another child, run after the
 * server has stopped, so neither competes with the other for the two cores. Every answer is
 * checked (row counts, the segment's count against the generator's, page sizes), or the
 * run fails.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Database } from 'bun:sqlite'
import { positiveInt } from './support/args'
import { CUSTOM_FIELDS, SEGMENT_RULES, writeAudienceCsv, type AudienceStats } from './support/audience-data'
import { IMPORT_BATCH_ROWS, IMPORT_CACHE_KIB, IMPORT_WAL_AUTOCHECKPOINT } from '../src/modules/imports/runner'
import type { LimitReport } from './support/audience-limit'
import { fmtMiB, readProcMemory, sampleMemory, waitUntilIdle, type ProcMemory } from './support/proc'
import { BENCHMARKS_DOC, codeRevision, fmtInt, fmtMs, machineInfo, markdownTable, median, textTable, writeDocSection, type MachineInfo } from './support/report'
import { ROOT, startMailroom, stopAll, type MailroomInstance } from './support/servers'

/**
 * The audience aims: issue 4's import under 20 s and pages under 50 ms, and issue 18 item 6's
 * raised ones (peak 200 MiB, at most 1.1x the plain insert's time, the segment count at most
 * 50 ms and at most 3x a bare count over the same table).
 */
const AIMS = { importS: 20, importRatio: 1.1, peakMiB: 200, segmentMs: 50, segmentToBare: 3, pageMs: 50 }
const PER_PAGE = 100
/** Rows per transaction of the plain insert: the import runner's batch size. */
const LIMIT_BATCH = IMPORT_BATCH_ROWS
/** One request may take this long before the run fails (the import has its own limit). */
const REQUEST_TIMEOUT_MS = 60_000

const HELP = `Usage: bun bench/audience.ts [options]   (or: npm run bench -- audience [options])

  --rows N            contacts in the CSV (default 1000000)
  --seed N            seed of the generated audience (default 1; the same seed, the same rows)
  --runs N            measured requests per query, after one unrecorded warm-up (default 7)
  --import-timeout S  fail if the import has not finished after S seconds (default 240)
  --keep              keep the CSV directory and the server's data directory (paths printed)
  --dry-run           print the results without rewriting docs/benchmarks.md
`

interface Answer {
  status: number
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any
  /** Client wall time: request sent to the whole body received, on loopback. */
  ms: number
}

/** A Mailroom API client that times each call and fails on any status but the expected one. */
function apiClient(server: MailroomInstance) {
  return async function call(method: string, path: string, expect: number, body?: { json: unknown } | { raw: BodyInit; type: string }): Promise<Answer> {
    const headers: Record<string, string> = { authorization: `Bearer ${server.key}` }
    let payload: BodyInit | undefined
    if (body && 'json' in body) {
      headers['content-type'] = 'application/json'
      payload = JSON.stringify(body.json)
    } else if (body) {
      headers['content-type'] = body.type
      payload = body.raw
    }
    const t0 = performance.now()
    const res = await fetch(server.url + path, { method, headers, body: payload, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    const text = await res.text()
    const ms = performance.now() - t0
    if (res.status !== expect) throw new Error(`${method} ${path}: expected HTTP ${expect}, got ${res.status}: ${text.slice(0, 500)}`)
    return { status: res.status, body: JSON.parse(text), ms }
  }
}

type Call = ReturnType<typeof apiClient>

interface ImportResult {
  uploadMs: number
  /** Upload start to the import's finished_at (same machine, same clock). */
  importMs: number
  /** The runner's own time: started_at to finished_at. */
  runMs: number
  record: Record<string, unknown>
  /** The server's VmHWM when the import was seen completed. */
  peak: ProcMemory
  /** The largest values sampled every 100 ms from the upload to completion. */
  sampled: ProcMemory
  samples: number
}

/** Uploads the CSV (streamed from disk) and polls until the import completes, sampling the server's memory. */
async function runImport(call: Call, server: MailroomInstance, csv: string, listId: number, expectRows: number, timeoutS: number): Promise<ImportResult> {
  const sampler = sampleMemory(server.pid, 100)
  try {
    const startWall = Date.now()
    const t0 = performance.now()
    const upload = await call('POST', `/api/v2/imports?list_id=${listId}`, 202, { raw: Bun.file(csv), type: 'text/csv' })
    const uploadMs = performance.now() - t0
    const id = upload.body.data.id as number
    process.stdout.write(`  uploaded in ${(uploadMs / 1000).toFixed(2)} s (import ${id}, ${fmtInt(upload.body.data.file_bytes)} bytes); importing\n`)
    const deadline = performance.now() + timeoutS * 1000
    let lastNote = performance.now()
    for (;;) {
      const r = await call('GET', `/api/v2/imports/${id}`, 200)
      const rec = r.body.data
      if (rec.status === 'completed' || rec.status === 'failed') {
        const peak = readProcMemory(server.pid)
        const sampled = { ...sampler.stop() }
        if (rec.status === 'failed') throw new Error(`the import failed: ${rec.error}`)
        if (rec.created !== expectRows || rec.invalid !== 0 || rec.rows_done !== expectRows) {
          throw new Error(
            `the import completed with created ${rec.created}, updated ${rec.updated}, skipped ${rec.skipped}, invalid ${rec.invalid} of ${rec.rows_done} rows; expected ${expectRows} created`,
          )
        }
        const finished = Date.parse(rec.finished_at)
        const startedAt = Date.parse(rec.started_at)
        return {
          uploadMs,
          importMs: finished - startWall,
          runMs: finished - startedAt,
          record: rec,
          peak: peak ?? sampled,
          sampled,
          samples: sampler.samples,
        }
      }
      if (performance.now() > deadline)
        throw new Error(
          `the import had not finished after ${timeoutS} s (${rec.status}, ${fmtInt(rec.rows_done)} of ${fmtInt(rec.total_rows ?? 0)} rows); see --import-timeout`,
        )
      if (performance.now() - lastNote > 5000) {
        lastNote = performance.now()
        const m = sampler.last
        process.stdout.write(
          `  ${((Date.now() - startWall) / 1000).toFixed(0).padStart(4)} s  ${fmtInt(rec.rows_done).padStart(9)} rows  server RSS ${m ? fmtMiB(m.vmRssKiB) : '?'} MiB\n`,
        )
      }
      await Bun.sleep(100)
    }
  } finally {
    sampler.stop()
  }
}

interface QueryTimes {
  label: string
  path: string
  /** A POST's body (a read sent as POST); a GET without. */
  json?: unknown
  runs: number[]
  median: number
}

/**
 * Runs the limit child and parses its report; kills it after `timeoutMs`. Its database is
 * `DIR/limit.db`. With `indexedSegment`, the benchmark segment's member index is on the table
 * while it fills: what an indexed segment costs every insert.
 */
export async function runLimit(dir: string, rows: number, seed: number, timeoutMs: number, indexedSegment = false): Promise<LimitReport> {
  const proc = Bun.spawn(
    [
      process.execPath,
      join(ROOT, 'bench', 'support', 'audience-limit.ts'),
      '--dir',
      dir,
      '--rows',
      String(rows),
      '--seed',
      String(seed),
      '--batch',
      String(LIMIT_BATCH),
      ...(indexedSegment ? ['--indexed-segment'] : []),
    ],
    {
      cwd: ROOT,
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    },
  )
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    const line = stdout.split('\n').find((l) => l.startsWith('LIMIT_REPORT '))
    if (code !== 0 || !line)
      throw new Error(
        `the plain insert failed (exit ${code}${proc.signalCode ? `, ${proc.signalCode}: over ${timeoutMs / 1000} s?` : ''}):\n${stdout}${stderr}`,
      )
    return JSON.parse(line.slice('LIMIT_REPORT '.length)) as LimitReport
  } finally {
    clearTimeout(timer)
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

const fmtS = (ms: number) => (ms / 1000).toFixed(2)
const fmtMB = (bytes: number) => (bytes / 2 ** 20).toFixed(1)
const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met')

/**
 * A digest of every file under src/ and migrations/. The server and the limit are separate
 * processes started a minute apart, each loading the code as it is then: if someone edits
 * or commits in between, they run different code (a schema with other indexes, say) and the
 * comparison means nothing, so the run checks that the digest has not moved.
 */
function codeDigest(): string {
  const hasher = new Bun.CryptoHasher('sha1')
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile()) hasher.update(path).update(readFileSync(path))
    }
  }
  for (const dir of ['src', 'migrations']) walk(join(ROOT, dir))
  return hasher.digest('hex')
}

function assertCodeUnchanged(digest: string, when: string): void {
  if (codeDigest() !== digest) {
    throw new Error(
      `src/ or migrations/ changed during the run (${when}): the server and the plain insert may have run different code, so the figures do not compare. Run again when the tree is quiet.`,
    )
  }
}

function machineText(m: MachineInfo): string {
  return `${m.nproc} CPUs (nproc), ${m.cpuModel}, ${m.memoryGiB} GiB, ${m.kernel}, Bun ${m.bun}; load average ${m.loadAverage} at the start`
}

/** Runs the benchmark; resolves to the process exit code. `command` is how it was invoked, for the doc. */
export async function run(argv: string[], command = 'bun bench/audience.ts'): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      rows: { type: 'string' },
      seed: { type: 'string' },
      runs: { type: 'string' },
      'import-timeout': { type: 'string' },
      keep: { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return (process.stdout.write(HELP), 0)
  const settings = {
    rows: positiveInt('rows', values.rows, 1_000_000),
    seed: positiveInt('seed', values.seed, 1),
    runs: positiveInt('runs', values.runs, 7),
    importTimeoutS: positiveInt('import-timeout', values['import-timeout'], 240),
  }
  const keep = values.keep ?? false
  const machine = machineInfo()
  const revision = codeRevision()
  const digest = codeDigest()
  const started = new Date()
  const work = mkdtempSync(join(tmpdir(), 'mailroom-audience-'))
  let server: MailroomInstance | null = null

  try {
    // 1. The CSV.
    const csv = join(work, 'audience.csv')
    let t = performance.now()
    const stats: AudienceStats = await writeAudienceCsv(csv, settings.rows, settings.seed)
    const generateMs = performance.now() - t
    process.stdout.write(`audience: ${fmtInt(stats.rows)} rows, ${fmtMB(stats.bytes)} MiB of CSV written in ${fmtS(generateMs)} s (${csv})\n`)

    // 2. The server, its custom fields and a list.
    // No SMTP listener: the benchmark does not use it, and the default port may be taken by another Mailroom on the machine.
    server = await startMailroom('mailroom', { rateLimit: 'unlimited', settings: { MAILROOM_SMTP_LISTEN: 'off' }, serveArgs: ['--access-log', 'false'] })
    process.stdout.write(`  mailroom ${server.url} (pid ${server.pid}, data ${server.dataDir})\n`)
    const call = apiClient(server)
    const baseline = readProcMemory(server.pid)
    for (const f of CUSTOM_FIELDS)
      await call('POST', '/api/v2/custom-fields', 201, { json: f.type === 'one_of' ? f : { key: f.key, name: f.name, type: f.type } })
    const listId = (await call('POST', '/api/v2/lists', 201, { json: { name: 'audience benchmark' } })).body.data.id as number

    // 3. The import.
    const imp = await runImport(call, server, csv, listId, stats.rows, settings.importTimeoutS)
    const dbBytes = fileSize(join(server.dataDir, 'mailroom.db'))
    const walBytes = fileSize(join(server.dataDir, 'mailroom.db-wal'))
    process.stdout.write(
      `  imported in ${fmtS(imp.importMs)} s (upload ${fmtS(imp.uploadMs)} s, runner ${fmtS(imp.runMs)} s); server VmHWM ${fmtMiB(imp.peak.vmHwmKiB)} MiB\n`,
    )

    // 4. Segment count and listing pages, round-robin so the noise falls on all of them.
    const rules = SEGMENT_RULES
    const segmentId = (await call('POST', '/api/v2/segments', 201, { json: { name: 'pro with 10+ seats', rules } })).body.data.id as number
    // The same rules as an indexed segment (opt-in): its members in a partial index, built
    // by this request from every contact.
    const indexedSegment = await call('POST', '/api/v2/segments', 201, { json: { name: 'pro with 10+ seats (indexed)', rules, indexed: true } })
    const indexBuildMs = indexedSegment.ms
    process.stdout.write(`  indexed segment created (its index built) in ${fmtMs(indexBuildMs)} ms\n`)
    const countCheck = (a: Answer) => {
      if (a.body.data.count !== stats.segmentMatches)
        throw new Error(`the segment counted ${a.body.data.count}; the generator made ${stats.segmentMatches} matching rows`)
    }
    const listPath = (page: number) => `/api/v2/contacts?list_id=${listId}&status=subscribed&per_page=${PER_PAGE}&page=${page}`
    const first = await call('GET', listPath(1), 200)
    const lastPage = first.body.meta.last_page as number
    if (first.body.meta.total !== stats.rows || first.body.data.length !== Math.min(PER_PAGE, stats.rows)) {
      throw new Error(
        `the first page has ${first.body.data.length} contacts and meta.total ${first.body.meta.total}; expected ${Math.min(PER_PAGE, stats.rows)} and ${stats.rows}`,
      )
    }
    const queries: Array<QueryTimes & { check: (a: Answer) => void }> = [
      {
        label: `segment count (3 conditions, ${fmtInt(stats.segmentMatches)} match)`,
        path: `/api/v2/segments/${segmentId}/count`,
        runs: [],
        median: 0,
        check: countCheck,
      },
      {
        label: 'indexed segment count (the same rules, indexed: true)',
        path: `/api/v2/segments/${indexedSegment.body.data.id}/count`,
        runs: [],
        median: 0,
        check: countCheck,
      },
      ...[segmentId, indexedSegment.body.data.id as number].map((id, k) => ({
        label: `broadcast audience count, the ${k ? 'indexed ' : ''}segment alone`,
        path: '/api/v2/broadcasts/audience-count',
        json: { segment_id: id },
        runs: [],
        median: 0,
        check: (a: Answer) => {
          if (a.body.data.total !== stats.segmentMatches)
            throw new Error(`the audience counted ${a.body.data.total}; the generator made ${stats.segmentMatches}`)
        },
      })),
      {
        label: `listing, first page (page 1 of ${fmtInt(lastPage)})`,
        path: listPath(1),
        runs: [],
        median: 0,
        check: (a) => {
          if (a.body.data.length !== Math.min(PER_PAGE, stats.rows) || a.body.meta.total !== stats.rows)
            throw new Error(`page 1 has ${a.body.data.length} contacts, total ${a.body.meta.total}`)
        },
      },
      {
        label: `listing, last page (page ${fmtInt(lastPage)})`,
        path: listPath(lastPage),
        runs: [],
        median: 0,
        check: (a) => {
          const expect = stats.rows - (lastPage - 1) * PER_PAGE
          if (a.body.data.length !== expect || a.body.meta.total !== stats.rows)
            throw new Error(`page ${lastPage} has ${a.body.data.length} contacts (expected ${expect}), total ${a.body.meta.total}`)
        },
      },
    ]
    // The bare count the segment count is held against: SQLite's own count of the table, on
    // a read-only connection of this process to the server's file (no HTTP around it).
    const reader = new Database(join(server.dataDir, 'mailroom.db'), { readonly: true })
    const bareCount = reader.prepare<{ n: number }, []>('SELECT count(*) AS n FROM contacts')
    const bare: QueryTimes = { label: 'bare SELECT count(*) FROM contacts (a connection of the benchmark)', path: '', runs: [], median: 0 }
    const countBare = () => {
      const t = performance.now()
      const n = bareCount.get()!.n
      if (n !== stats.rows) throw new Error(`the bare count says ${n} contacts, not ${stats.rows}`)
      return performance.now() - t
    }
    // The queries are measured on a server at rest: right after an import it is still busy
    // (its collector threads, the checkpoint worker), which took a core from the count's workers.
    await waitUntilIdle(server.pid)
    const ask = (q: QueryTimes) => (q.json === undefined ? call('GET', q.path, 200) : call('POST', q.path, 200, { json: q.json }))
    for (const q of queries) q.check(await ask(q)) // warm-up, unrecorded
    countBare()
    for (let round = 0; round < settings.runs; round++) {
      for (const q of queries) {
        const a = await ask(q)
        q.check(a)
        q.runs.push(a.ms)
      }
      bare.runs.push(countBare())
    }
    reader.close()
    for (const q of [...queries, bare]) q.median = median(q.runs)
    const segmentToBare = queries[0]!.median / bare.median
    const indexedToBare = queries[1]!.median / bare.median
    const end = readProcMemory(server.pid)
    for (const q of [...queries, bare]) process.stdout.write(`  ${q.label}: median ${fmtMs(q.median)} ms (${q.runs.map(fmtMs).join(' / ')})\n`)
    const serverErrors = readFileSync(server.logFile, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"level":"error"')).length
    if (serverErrors) throw new Error(`the server logged ${serverErrors} error(s); see ${server.logFile}`)

    // 5. The practical limit, with the server stopped.
    await server.stop()
    assertCodeUnchanged(digest, 'before the plain insert')
    process.stdout.write(`  plain bulk insert of the same rows (batches of ${fmtInt(LIMIT_BATCH)})...\n`)
    const limit = await runLimit(work, stats.rows, settings.seed, 180_000)
    assertCodeUnchanged(digest, 'during the plain insert')
    process.stdout.write('  the same insert with the indexed segment on the table...\n')
    mkdirSync(join(work, 'indexed'))
    const indexedLimit = await runLimit(join(work, 'indexed'), stats.rows, settings.seed, 180_000, true)
    assertCodeUnchanged(digest, 'during the insert with an indexed segment')
    const ratio = imp.importMs / limit.insertMs
    const runRatio = imp.runMs / limit.insertMs

    // 6. Report.
    const peakMiB = imp.peak.vmHwmKiB / 1024
    const checks = {
      import: imp.importMs < AIMS.importS * 1000,
      importRatio: ratio <= AIMS.importRatio,
      memory: peakMiB < AIMS.peakMiB,
      segment: queries[0]!.median < AIMS.segmentMs,
      segmentToBare: segmentToBare <= AIMS.segmentToBare,
      indexedSegment: queries[1]!.median < AIMS.segmentMs,
      indexedToBare: indexedToBare <= AIMS.segmentToBare,
      first: queries[4]!.median < AIMS.pageMs,
      last: queries[5]!.median < AIMS.pageMs,
    }
    const rps = (rows: number, ms: number) => fmtInt(rows / (ms / 1000))
    const head = ['measure', 'result', 'aim', 'aim met']
    const rowsOut: string[][] = [
      ['import: upload start to completed', `${fmtS(imp.importMs)} s (${rps(stats.rows, imp.importMs)} rows/s)`, `< ${AIMS.importS} s`, verdict(checks.import)],
      ['import: upload (request to 202)', `${fmtS(imp.uploadMs)} s`, '', ''],
      ['import: runner (started to finished)', `${fmtS(imp.runMs)} s (${rps(stats.rows, imp.runMs)} rows/s)`, '', ''],
      ['server peak memory (VmHWM at completion)', `${fmtMiB(imp.peak.vmHwmKiB)} MiB`, `< ${AIMS.peakMiB} MiB`, verdict(checks.memory)],
      ['server memory: sampled max anonymous / file-backed', `${fmtMiB(imp.sampled.rssAnonKiB)} / ${fmtMiB(imp.sampled.rssFileKiB)} MiB`, '', ''],
      ['server memory before the import (RSS)', `${baseline ? fmtMiB(baseline.vmRssKiB) : '?'} MiB`, '', ''],
      [queries[0]!.label, `${fmtMs(queries[0]!.median)} ms`, `< ${AIMS.segmentMs} ms`, verdict(checks.segment)],
      [bare.label, `${fmtMs(bare.median)} ms`, '', ''],
      ['ratio segment count / bare count', `${segmentToBare.toFixed(1)}x`, `<= ${AIMS.segmentToBare}x`, verdict(checks.segmentToBare)],
      ['indexed segment: creating it (building its index), one request', `${fmtMs(indexBuildMs)} ms`, '', ''],
      [queries[1]!.label, `${fmtMs(queries[1]!.median)} ms`, `< ${AIMS.segmentMs} ms`, verdict(checks.indexedSegment)],
      ['ratio indexed segment count / bare count', `${indexedToBare.toFixed(1)}x`, `<= ${AIMS.segmentToBare}x`, verdict(checks.indexedToBare)],
      [queries[2]!.label, `${fmtMs(queries[2]!.median)} ms`, '', ''],
      [queries[3]!.label, `${fmtMs(queries[3]!.median)} ms`, '', ''],
      [queries[4]!.label, `${fmtMs(queries[4]!.median)} ms`, `< ${AIMS.pageMs} ms`, verdict(checks.first)],
      [queries[5]!.label, `${fmtMs(queries[5]!.median)} ms`, `< ${AIMS.pageMs} ms`, verdict(checks.last)],
      [
        `plain bulk insert (limit), ${fmtInt(LIMIT_BATCH)} rows/transaction`,
        `${fmtS(limit.insertMs)} s (${rps(limit.rows, limit.insertMs)} rows/s); peak ${fmtMiB(limit.peakRssKiB)} MiB`,
        '',
        '',
      ],
      ['ratio import / limit', `${ratio.toFixed(2)}x (runner alone ${runRatio.toFixed(2)}x)`, `<= ${AIMS.importRatio}x`, verdict(checks.importRatio)],
      [
        'the plain insert with the indexed segment on the table',
        `${fmtS(indexedLimit.insertMs)} s: ${(indexedLimit.insertMs / limit.insertMs).toFixed(2)}x the plain insert`,
        '',
        '',
      ],
    ]
    const runsText = [...queries, bare].map((q) => `${q.label}: ${q.runs.map(fmtMs).join(' / ')} ms`)
    process.stdout.write(`\n${textTable(head, rowsOut)}\n\n`)
    const missed = Object.entries(checks).filter(([, ok]) => !ok).length
    process.stdout.write(missed ? `${missed} of ${Object.keys(checks).length} aims not met.\n` : 'Every aim met.\n')

    if (!values['dry-run']) {
      const when = started
        .toISOString()
        .replace(/:\d\d\.\d+Z$/, ' UTC')
        .replace('T', ' ')
      const metList = (ok: boolean) => (ok ? 'met' : '**not met**')
      writeDocSection(
        'audience',
        `## Audience: a million contacts (import, segment count, listing)

Measured ${when} with \`${command}\` (bench/audience.ts), code at ${revision}.

${markdownTable(head, rowsOut)}

Aims: import under ${AIMS.importS} s: ${metList(checks.import)}; at most ${AIMS.importRatio}x the plain insert: ${metList(checks.importRatio)}; under ${AIMS.peakMiB} MiB peak memory: ${metList(checks.memory)}; segment count under ${AIMS.segmentMs} ms: ${metList(checks.segment)} (indexed: ${metList(checks.indexedSegment)}); at most ${AIMS.segmentToBare}x the bare count: ${metList(checks.segmentToBare)} (indexed: ${metList(checks.indexedToBare)}); first page under ${AIMS.pageMs} ms: ${metList(checks.first)}; last page under ${AIMS.pageMs} ms: ${metList(checks.last)}.

- Data: ${fmtInt(stats.rows)} rows generated with seed ${settings.seed} (the same seed gives the same rows), streamed to a CSV of ${fmtMB(stats.bytes)} MiB:
  \`${'email,first_name,last_name,plan,seats'}\`; unique lower-case addresses, names including non-ASCII ones and a quoted
  \`"Smith, Jr."\`; \`plan\` a one_of custom field (free ${fmtInt(stats.plans.free)}, pro ${fmtInt(stats.plans.pro)}, team ${fmtInt(stats.plans.team)}), \`seats\` a number
  field. The CSV has no status column, so every contact is imported \`subscribed\`: the status filters below keep every row (the worst case for them).
- Server: \`mailroom serve --access-log false\` (SMTP listener off) in its own process on a fresh data directory under ${tmpdir()} (the same disk as the
  repository, not tmpfs), log level info to a file; one Administrator key without a rate limit. Custom fields and list created over the API.
- Import: \`POST /api/v2/imports?list_id=ID\`, \`Content-Type: text/csv\`, the body streamed from the file (\`Bun.file\`); then
  \`GET /api/v2/imports/{id}\` every 100 ms until completed. Import time is from the upload request's start to the import's \`finished_at\`
  (same machine clock); the import must report ${fmtInt(stats.rows)} created and 0 invalid. Database file after the import: ${fmtMB(dbBytes)} MiB (WAL file ${fmtMB(walBytes)} MiB).
- Memory: the server's \`VmHWM\` (peak resident set, kept by the kernel) from /proc/PID/status, read when the import was seen
  completed (${fmtMiB(end?.vmHwmKiB ?? 0)} MiB at the end of the run, after the queries); \`RssAnon\` / \`RssFile\` sampled every 100 ms
  (${imp.samples} samples). File-backed pages are mostly the Bun executable itself; the database is memory-mapped only by the segment count's workers, after this reading.
- Segment: \`GET /api/v2/segments/{id}/count\` for \`${JSON.stringify(rules)}\`; the answer must equal the generator's count. The
  indexed segment has the same rules and \`indexed: true\` (its members in a partial index, kept by SQLite on every write to contacts); the
  time to create it is the \`POST /api/v2/segments\` request, which builds the index from every contact. The bare count is
  \`SELECT count(*) FROM contacts\` on a read-only connection of the benchmark to the server's database file, once per round after the requests (no HTTP: the ratio is the stricter for it).
- Broadcast audience: \`POST /api/v2/broadcasts/audience-count\` with \`{"segment_id": ID}\` for each of the two segments (the distinct
  subscribed addresses, over the query the broadcast engine copies recipients with); the answer must equal the generator's count.
- Listing: \`GET /api/v2/contacts?list_id=ID&status=subscribed&per_page=${PER_PAGE}&page=N\` for page 1 and \`meta.last_page\`; page sizes and \`meta.total\` checked.
- Query times: client wall time per request (sent to body received) on 127.0.0.1, keep-alive; one unrecorded warm-up each, then ${settings.runs} rounds
  of the six requests and the bare count in turn, once the server has used under 5 ms of CPU in 250 ms after the import; medians. Runs: ${runsText.join('; ')}.
- Limit: a separate process, after the server stopped: a fresh database with Mailroom's \`openDatabase\` (WAL, synchronous=FULL) and migrations,
  the same rows generated in memory in batches, one prepared \`INSERT INTO contacts\` in transactions of ${fmtInt(LIMIT_BATCH)} rows with the runner's SQLite
  settings (\`contact_counts\` moved once per transaction, \`wal_autocheckpoint\` ${fmtInt(IMPORT_WAL_AUTOCHECKPOINT)}, a ${fmtInt(IMPORT_CACHE_KIB / 1024)} MiB page cache); time inside the
  transactions ${fmtS(limit.insertMs)} s (${fmtS(limit.totalMs)} s with generating the rows); database ${fmtMB(limit.dbBytes)} MiB. The ratio divides the import time by that.
  Then the same insert again (\`--indexed-segment\`) with the benchmark segment's member index created on the empty table, so every insert
  keeps it: ${fmtS(indexedLimit.insertMs)} s inside the transactions, what one indexed segment costs the writes (one run each, in one sitting).
- CSV generation ${fmtS(generateMs)} s (not part of any figure).
- Machine: ${machineText(machine)}.
`,
      )
      process.stdout.write(`\nwrote the audience section of ${BENCHMARKS_DOC}\n`)
    }
    return 0
  } finally {
    await stopAll()
    if (keep) process.stdout.write(`kept: ${work}${server ? ` and ${server.dataDir}` : ''}\n`)
    else {
      if (server) await server.dispose()
      rmSync(work, { recursive: true, force: true })
    }
  }
}

if (import.meta.main) {
  try {
    process.exit(await run(process.argv.slice(2)))
  } catch (e) {
    process.stderr.write(`bench/audience: ${(e as Error).message}\n`)
    process.exit(1)
  }
}
