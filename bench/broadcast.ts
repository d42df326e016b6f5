/**
 * Broadcast benchmark (issue 15): a broadcast to N contacts (1,000,000 by default) through a
 * real Mailroom server (the built executable, what users run, or `bun src/main.ts` with
 * --source; in its own process), delivered through a DNS
 * server on loopback to the counting SMTP sink in its own process; and, in the same run on the
 * same server and sink, N' transactional messages through POST /v1/send, the rate the
 * broadcast is compared with.
 *
 * Aims on a 2-core machine: every recipient row created within 60 s of scheduling, the first
 * message at the sink within 5 s, the server's peak RSS under 300 MB, and broadcast delivery
 * at least 90 % of the transactional rate.
 *
 *   bun bench/broadcast.ts [--contacts 1000000] [--transactional 20000] [--seed 1]
 *                          [--concurrency 64] [--profile DIR] [--keep] [--dry-run]
 *
 * The contacts are imported the way bench/audience.ts does (a generated CSV streamed to
 * POST /api/v2/imports); the server is then restarted on the same data directory so its peak
 * memory (VmHWM) covers the sends, not the import, and VmHWM is reset after the transactional
 * phase (Linux /proc/PID/clear_refs), so the aim's peak is the broadcast's own; the whole
 * run's peak is printed too.
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { buildBinary } from '../scripts/build'
import { startDnsServer, type Zones } from '../test/support/dns-server'
import { positiveInt } from './support/args'
import { writeAudienceCsv } from './support/audience-data'
import { fmtMiB, readProcCpuMs, readProcMemory, resetPeakMemory, sampleMemory } from './support/proc'
import { fmtInt, machineInfo, markdownTable, textTable, writeDocSection } from './support/report'
import {
  mailroomEnv,
  startCountingSink,
  startMailroom,
  startServer,
  stopAll,
  type CountingSink,
  type MailroomInstance,
  type ServerProcess,
} from './support/servers'

const AIMS = { rowsS: 60, firstS: 5, peakMB: 300, rateShare: 0.9 }
/** The generated audience's domains (bench/support/audience-data.ts); each gets an MX at the sink. */
const DOMAINS = ['example.com', 'example.org', 'example.net', 'mail.example', 'corp.example.com']
const FROM_DOMAIN = 'bench.example'
const HOSTNAME = 'mailroom.bench'
const POLL_MS = 50
/** Once the rows are in, the broadcast is polled this rarely: each GET costs the server CPU the sends compete for (the first message's time comes from the sink). */
const SENDING_POLL_MS = 1000

const HELP = `Usage: bun bench/broadcast.ts [options]   (or: npm run bench -- broadcast [options])

  --contacts N       audience size (default 1000000; run at most 20000 while others share the machine)
  --transactional N  messages through /v1/send for the comparison rate (default 20000, at most --contacts)
  --seed N           seed of the generated audience (default 1)
  --concurrency N    HTTP requests in flight for /v1/send (default 64)
  --timeout S        give up when the broadcast has not finished after S seconds (default 3600)
  --source          run the server from source (bun src/main.ts) instead of an executable built for the run
  --profile DIR      run the server under \`bun --cpu-prof-md\`, writing the profile (Markdown) to DIR
  --keep             keep the CSV and the server's data directory (paths printed)
  --dry-run          print the results without rewriting docs/benchmarks.md
`

/** About 5 KB of HTML, as in bench/delivery.ts; the broadcast adds a greeting with a merge tag. */
const HTML = `<html><body>${'<p>The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.</p>\n'.repeat(55)}</body></html>`

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

function apiClient(url: string, key: string) {
  return async function call(method: string, path: string, expect: number, body?: { json: unknown } | { raw: BodyInit; type: string }): Promise<Json> {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` }
    let payload: BodyInit | undefined
    if (body && 'json' in body) {
      headers['content-type'] = 'application/json'
      payload = JSON.stringify(body.json)
    } else if (body) {
      headers['content-type'] = body.type
      payload = body.raw
    }
    const res = await fetch(url + path, { method, headers, body: payload, signal: AbortSignal.timeout(60_000) })
    const text = await res.text()
    if (res.status !== expect) throw new Error(`${method} ${path}: expected HTTP ${expect}, got ${res.status}: ${text.slice(0, 500)}`)
    return JSON.parse(text)
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

interface DbSize {
  /** mailroom.db + its WAL, as on disk. */
  fileBytes: number
  walBytes: number
  /** Pages in use (page_count - freelist_count) x page_size, read through a read-only connection (sees the WAL). */
  usedBytes: number
}

function dbSize(dataDir: string): DbSize {
  const path = join(dataDir, 'mailroom.db')
  const db = new Database(path, { readonly: true })
  try {
    const n = (sql: string) => Object.values(db.query(sql).get() as Record<string, number>)[0]!
    const used = (n('PRAGMA page_count') - n('PRAGMA freelist_count')) * n('PRAGMA page_size')
    return { fileBytes: fileSize(path) + fileSize(`${path}-wal`), walBytes: fileSize(`${path}-wal`), usedBytes: used }
  } finally {
    db.close()
  }
}

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | null>): Promise<T> {
  const end = performance.now() + timeoutMs
  for (;;) {
    const got = await probe()
    if (got !== null) return got
    if (performance.now() > end) throw new Error(`gave up after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`)
    await Bun.sleep(POLL_MS)
  }
}

/** Imports the CSV through the API (as bench/audience.ts does) and waits for it to complete. */
async function importContacts(call: ReturnType<typeof apiClient>, csv: string, listId: number, rows: number): Promise<number> {
  const t0 = performance.now()
  const upload = await call('POST', `/api/v2/imports?list_id=${listId}`, 202, { raw: Bun.file(csv), type: 'text/csv' })
  const id = upload.data.id as number
  const rec = await waitFor('the import', 600_000, async () => {
    const r = (await call('GET', `/api/v2/imports/${id}`, 200)).data
    return r.status === 'completed' || r.status === 'failed' ? r : null
  })
  if (rec.status !== 'completed' || rec.created !== rows)
    throw new Error(`the import ended ${rec.status} with ${rec.created} of ${rows} created: ${rec.error ?? ''}`)
  return (performance.now() - t0) / 1000
}

interface TransactionalRun {
  n: number
  /** First request to the last message at the sink. */
  endToEndS: number
  /** First to last message at the sink. */
  sinkS: number
}

/** `n` messages through /v1/send, `concurrency` in flight, to the audience's domains in turn. */
async function transactional(
  call: ReturnType<typeof apiClient>,
  url: string,
  key: string,
  sink: CountingSink,
  n: number,
  concurrency: number,
): Promise<TransactionalRun> {
  await sink.reset()
  const startWall = Date.now()
  let next = 0
  const worker = async () => {
    while (next < n) {
      const i = next++
      const res = await fetch(`${url}/v1/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          from: `Bench <ada@${FROM_DOMAIN}>`,
          to: `tx${i}@${DOMAINS[i % DOMAINS.length]}`,
          subject: `Benchmark message ${i}`,
          html: HTML,
        }),
      })
      if (res.status !== 202) throw new Error(`POST /v1/send: HTTP ${res.status} ${await res.text()}`)
      await res.arrayBuffer()
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  const done = await waitFor(`${n} transactional deliveries`, 600_000, async () => {
    const c = await sink.count()
    return c.messages >= n ? c : null
  })
  if (done.messages !== n) throw new Error(`the sink counted ${done.messages} transactional messages, expected ${n}`)
  void call
  return { n, endToEndS: (done.last_at! - startWall) / 1000, sinkS: (done.last_at! - done.first_at!) / 1000 }
}

interface BroadcastRun {
  rowsS: number
  firstS: number
  /** Schedule request to the last message at the sink. */
  endToEndS: number
  /** First to last message at the sink. */
  sinkS: number
  /** Schedule request to status `sent`, as seen by polling. */
  sentS: number
  counts: Record<string, number>
}

async function broadcast(
  call: ReturnType<typeof apiClient>,
  sink: CountingSink,
  listId: number,
  n: number,
  timeoutS: number,
  rssMiB: () => string,
): Promise<BroadcastRun> {
  const created = await call('POST', '/api/v2/broadcasts', 201, {
    json: {
      name: 'benchmark broadcast',
      from: `Bench <news@${FROM_DOMAIN}>`,
      subject: 'News for {{first_name}}',
      html: HTML.replace('<body>', '<body><p>Hello {{first_name}},</p>'),
      list_ids: [listId],
      // Tracking off: /v1/send does not track either, so both paths build the same work.
      track_opens: false,
      track_clicks: false,
    },
  })
  const id = created.data.id as number
  await sink.reset()
  const startWall = Date.now()
  const t0 = performance.now()
  await call('POST', `/api/v2/broadcasts/${id}/schedule`, 200, { json: {} })
  let rowsS: number | null = null
  let lastNote = t0
  const deadline = t0 + timeoutS * 1000
  let b: Json
  for (;;) {
    b = (await call('GET', `/api/v2/broadcasts/${id}`, 200)).data
    const now = performance.now()
    if (rowsS === null && b.status !== 'scheduled' && b.status !== 'preparing') {
      rowsS = (now - t0) / 1000
      if (b.counts.total !== n) throw new Error(`the broadcast has ${b.counts.total} recipient rows after preparing, expected ${n}`)
      process.stdout.write(`  ${fmtInt(n)} recipient rows in ${rowsS.toFixed(2)} s (status ${b.status})\n`)
    }
    if (b.status === 'sent') break
    if (b.status !== 'scheduled' && b.status !== 'preparing' && b.status !== 'sending')
      throw new Error(`the broadcast is ${b.status}: ${b.status_reason ?? ''}`)
    if (now > deadline) throw new Error(`the broadcast had not finished after ${timeoutS} s (${b.status}, ${JSON.stringify(b.counts)})`)
    if (now - lastNote > 5000) {
      lastNote = now
      const c = await sink.count()
      process.stdout.write(
        `  ${((now - t0) / 1000).toFixed(0).padStart(5)} s  ${b.status.padEnd(9)} rows ${fmtInt(b.counts.total)}  sent ${fmtInt(b.counts.sent)}  at the sink ${fmtInt(c.messages)}  server RSS ${rssMiB()} MiB\n`,
      )
    }
    await Bun.sleep(rowsS === null ? POLL_MS : SENDING_POLL_MS)
  }
  const sentS = (performance.now() - t0) / 1000
  const done = await waitFor(`${n} broadcast messages at the sink`, 60_000, async () => {
    const c = await sink.count()
    return c.messages >= n ? c : null
  })
  if (done.messages !== n) throw new Error(`the sink counted ${done.messages} broadcast messages, expected ${n}`)
  if (b.counts.sent !== n) throw new Error(`the broadcast finished with counts ${JSON.stringify(b.counts)}, expected ${n} sent`)
  return {
    rowsS: rowsS ?? sentS,
    firstS: (done.first_at! - startWall) / 1000,
    endToEndS: (done.last_at! - startWall) / 1000,
    sinkS: (done.last_at! - done.first_at!) / 1000,
    sentS,
    counts: b.counts,
  }
}

const fmtMB = (bytes: number) => (bytes / 1e6).toFixed(1)
const mark = (ok: boolean) => (ok ? 'PASS' : 'MISS')

/** Runs the benchmark; resolves to the process exit code. `command` is how it was invoked, for the doc. */
export async function run(argv: string[], command = 'bun bench/broadcast.ts'): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      contacts: { type: 'string' },
      transactional: { type: 'string' },
      seed: { type: 'string' },
      concurrency: { type: 'string' },
      timeout: { type: 'string' },
      profile: { type: 'string' },
      source: { type: 'boolean' },
      keep: { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return (process.stdout.write(HELP), 0)
  const contacts = positiveInt('contacts', values.contacts, 1_000_000)
  const txN = Math.min(contacts, positiveInt('transactional', values.transactional, 20_000))
  const seed = positiveInt('seed', values.seed, 1)
  const concurrency = positiveInt('concurrency', values.concurrency, 64)
  const timeoutS = positiveInt('timeout', values.timeout, 3600)
  const machine = machineInfo()
  const work = mkdtempSync(join(tmpdir(), 'mailroom-broadcast-'))
  const zones: Zones = { [`mx.${FROM_DOMAIN}`]: { A: ['127.0.0.1'] }, [HOSTNAME]: { A: ['127.0.0.1'] } }
  for (const d of [...DOMAINS, FROM_DOMAIN]) zones[d] = { MX: [{ exchange: `mx.${FROM_DOMAIN}`, priority: 10 }] }
  // TTL 60: the engine caches MX answers for their TTL, as it would against a real resolver.
  // The executable users run: its bundle holds less memory than the source transpiled at start.
  if (!values.source && !process.env.BENCH_BINARY) process.env.BENCH_BINARY = (await buildBinary(join(work, 'mailroom'))).outfile
  const dns = await startDnsServer({ ttl: 60, zones })
  const sink = await startCountingSink()
  let first: MailroomInstance | null = null
  let server: ServerProcess | null = null
  try {
    const csv = join(work, 'audience.csv')
    await writeAudienceCsv(csv, contacts, seed)
    const settings = {
      MAILROOM_MX_PORT: String(sink.smtpPort),
      MAILROOM_DNS_SERVERS: dns.server,
      MAILROOM_HOSTNAME: HOSTNAME,
      MAILROOM_ALLOW_UNVERIFIED_DOMAINS: 'true',
      MAILROOM_LOG_LEVEL: 'warn',
    }
    first = await startMailroom('mailroom-import', { rateLimit: 'unlimited', settings, serveArgs: ['--access-log', 'false'] })
    const dataDir = first.dataDir
    const key = first.key
    let call = apiClient(first.url, key)
    await call('POST', '/api/v2/custom-fields', 201, { json: { key: 'plan', name: 'Plan', type: 'one_of', options: ['free', 'pro', 'team'] } })
    await call('POST', '/api/v2/custom-fields', 201, { json: { key: 'seats', name: 'Seats', type: 'number' } })
    const listId = (await call('POST', '/api/v2/lists', 201, { json: { name: 'broadcast benchmark' } })).data.id as number
    const importS = await importContacts(call, csv, listId, contacts)
    process.stdout.write(`imported ${fmtInt(contacts)} contacts in ${importS.toFixed(2)} s (${dataDir})\n`)
    await first.stop()

    // The same data directory, a fresh process: its VmHWM is the sends' peak, not the import's.
    if (values.profile) process.env.BENCH_CPU_PROFILE = values.profile
    server = await startServer('mailroom', ['src/main.ts', 'serve', '--data-dir', dataDir, '--http-listen', '127.0.0.1:0', '--access-log', 'false'], {
      env: mailroomEnv(settings),
      stderrFile: join(dataDir, 'stderr.log'),
      pattern: /listening on (http:\/\/\S+)/,
    })
    call = apiClient(server.url, key)
    const baseline = readProcMemory(server.pid)
    const sampler = sampleMemory(server.pid, 100)

    const cpu = () => readProcCpuMs(server!.pid) ?? 0
    let cpu0 = cpu()
    const tx = await transactional(call, server.url, key, sink, txN, concurrency)
    const txRate = tx.n / tx.sinkS
    process.stdout.write(`transactional: ${fmtInt(tx.n)} messages, ${fmtInt(txRate)}/s at the sink (${fmtInt(tx.n / tx.endToEndS)}/s from the first request)\n`)

    const txCpuMs = (cpu() - cpu0) / tx.n
    const txPeak = readProcMemory(server.pid)
    // The broadcast's own peak: VmHWM starts again from the current RSS (the transactional
    // phase's HTTP load has its own peak, reported apart and in bench/delivery.ts --footprint).
    const peakReset = resetPeakMemory(server.pid)
    const before = dbSize(dataDir)
    cpu0 = cpu()
    const bc = await broadcast(call, sink, listId, contacts, timeoutS, () => fmtMiB(sampler.last?.vmRssKiB ?? 0))
    const bcCpuMs = (cpu() - cpu0) / contacts
    const peak = readProcMemory(server.pid)
    const sampled = sampler.stop()
    const after = dbSize(dataDir)
    const bcRate = contacts / bc.sinkS
    const share = bcRate / txRate
    const peakMB = ((peak?.vmHwmKiB ?? sampled.vmHwmKiB) * 1024) / 1e6
    const runPeakMB = (Math.max(peak?.vmHwmKiB ?? sampled.vmHwmKiB, txPeak?.vmHwmKiB ?? 0) * 1024) / 1e6
    const peakLabel = peakReset
      ? 'server peak RSS during the broadcast (VmHWM reset after the transactional phase)'
      : 'server peak RSS (VmHWM, transactional + broadcast)'

    const rows: string[][] = [
      ['all recipient rows created (schedule to status sending)', `${bc.rowsS.toFixed(2)} s`, `<= ${AIMS.rowsS} s`, mark(bc.rowsS <= AIMS.rowsS)],
      ['first message at the sink (from schedule)', `${bc.firstS.toFixed(2)} s`, `<= ${AIMS.firstS} s`, mark(bc.firstS <= AIMS.firstS)],
      [peakLabel, `${peakMB.toFixed(1)} MB`, `< ${AIMS.peakMB} MB`, mark(peakMB < AIMS.peakMB)],
      ['server peak RSS over the whole run (transactional + broadcast)', `${runPeakMB.toFixed(1)} MB`, '', ''],
      [
        'broadcast rate / transactional rate (at the sink)',
        `${(share * 100).toFixed(1)} % (${fmtInt(bcRate)}/s vs ${fmtInt(txRate)}/s)`,
        `>= ${AIMS.rateShare * 100} %`,
        mark(share >= AIMS.rateShare),
      ],
      [
        'database growth, pages in use',
        `${fmtMB(after.usedBytes - before.usedBytes)} MB (${fmtInt((after.usedBytes - before.usedBytes) / contacts)} B/recipient)`,
        '',
        '',
      ],
      ['database growth, files (db + WAL)', `${fmtMB(after.fileBytes - before.fileBytes)} MB (WAL now ${fmtMB(after.walBytes)} MB)`, '', ''],
      ['server CPU per message: broadcast / transactional', `${bcCpuMs.toFixed(3)} / ${txCpuMs.toFixed(3)} ms`, '', ''],
      ['broadcast end to end (schedule to last message)', `${bc.endToEndS.toFixed(2)} s (${fmtInt(contacts / bc.endToEndS)}/s)`, '', ''],
      ['transactional end to end (first request to last message)', `${tx.endToEndS.toFixed(2)} s (${fmtInt(tx.n / tx.endToEndS)}/s)`, '', ''],
      ['server VmHWM after the transactional phase', `${(((txPeak?.vmHwmKiB ?? 0) * 1024) / 1e6).toFixed(1)} MB`, '', ''],
      [
        'server RSS before / sampled max anon / file',
        `${fmtMiB(baseline?.vmRssKiB ?? 0)} / ${fmtMiB(sampled.rssAnonKiB)} / ${fmtMiB(sampled.rssFileKiB)} MiB`,
        '',
        '',
      ],
    ]
    const head = ['figure', 'result', 'aim', '']
    process.stdout.write(`\n${textTable(head, rows)}\n`)
    const misses = rows.filter((r) => r[3] === 'MISS').length
    process.stdout.write(`\n${misses ? `${misses} aim(s) missed` : 'every aim met'}\n`)
    if (values.profile) process.stdout.write(`CPU profile of the server in ${values.profile}\n`)

    if (!values['dry-run']) {
      writeDocSection(
        'broadcast',
        `## Broadcast: ${fmtInt(contacts)} contacts to an SMTP sink, beside /v1/send

Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${command}\` (bench/broadcast.ts).

${markdownTable(head, rows)}

Aims: ${rows
          .filter((r) => r[3])
          .map((r) => `${r[0]}: ${r[3] === 'PASS' ? 'met' : '**not met**'}`)
          .join('; ')}.

- Audience: ${fmtInt(contacts)} generated contacts (bench/support/audience-data.ts, seed ${seed}; five domains) imported into one list through \`POST /api/v2/imports\` (${importS.toFixed(1)} s), then the server restarted on the same data directory, so its peak memory covers the sends only.
- Server: \`${process.env.BENCH_BINARY ? 'mailroom serve' : 'bun src/main.ts serve'}\` (${process.env.BENCH_BINARY ? 'the executable \`npm run build\` makes, built for the run' : 'from source'}) in its own process, access log off, \`allow_unverified_domains\` (no DKIM on either path), default \`broadcast_queue_window\` and delivery settings.
- Transactional: ${fmtInt(tx.n)} messages through \`POST /v1/send\` (${concurrency} in flight), the same 5 KB HTML, to the audience's five domains in turn, before the broadcast on the same server.
- Broadcast: the same HTML with a \`{{first_name}}\` greeting and subject, opens and clicks not tracked (as /v1/send), \`POST /api/v2/broadcasts/{id}/schedule\` with no time; the broadcast polled every ${POLL_MS} ms until its rows are in, then every ${SENDING_POLL_MS} ms until \`sent\`, its counters checked (${JSON.stringify(bc.counts)}).
- Rates: messages over the time from the first to the last message the sink counted (its own clock), for both paths; "end to end" adds the time before the first message.
- CPU: the server's user + system time (all threads, /proc/PID/stat) over each phase, divided by its messages; on a shared machine this moves less than the rates.
- DNS on loopback (test/support/dns-server.ts): the five domains' MX points at the sink (bench/support/counting-sink.ts, smtp-server in its own process). Database growth: pages in use, read through a read-only connection, before and after the broadcast.
- Machine: ${machine.nproc} CPUs, ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.kernel}, Bun ${machine.bun}; load average ${machine.loadAverage} at the start.`,
      )
    }
    return 0
  } finally {
    await stopAll()
    await dns.close()
    if (values.keep) process.stdout.write(`kept ${work} and ${first?.dataDir}\n`)
    else {
      rmSync(work, { recursive: true, force: true })
      if (first) rmSync(first.dataDir, { recursive: true, force: true })
    }
  }
}

if (import.meta.main) {
  try {
    process.exit(await run(process.argv.slice(2)))
  } catch (e) {
    process.stderr.write(`bench/broadcast: ${(e as Error).message}\n`)
    process.exit(1)
  }
}
