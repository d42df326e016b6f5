/**
 * Long run (issue 18 item 7): N minutes (default 15) of mixed load on one Mailroom server at
 * half the peak rate the same mix reached in a short closed-loop probe just before:
 * `POST /v1/send` (delivered through loopback DNS to a counting SMTP sink), API reads (a
 * contact page, a contact, the API key, the sending domain), SMTP submissions through a
 * bridge (STARTTLS + AUTH), webhooks (every event kind, signed POSTs to a receiver in its own
 * process) and one broadcast to a list, rate-limited so it sends during most of the run.
 * Every 10 s it samples the server's RSS and the p99 of the requests finished in that window;
 * at the end it fits a line to the second half of each series and says whether it is flat,
 * counts errors (non-2xx answers, SMTP refusals, server log errors, failed webhook deliveries,
 * messages the sink never got), and draws RSS and p99 over time as docs/soak.png.
 *
 *   bun bench/soak.ts [--minutes 15] [--rate R] [--probe-seconds 15] [--note TEXT] [--dry-run]
 *   npm run bench:soak -- --minutes 2
 *
 * The PNG is an SVG drawn here and screenshotted by Debian's Chromium through playwright-core
 * (CHROMIUM_PATH, default /usr/bin/chromium); without Chromium the SVG is written instead.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import nodemailer from 'nodemailer'
import { startDnsServer } from '../test/support/dns-server'
import { fmtMiB, readMachineTicks, readProcCpuSplitMs, readProcMemory, readProcWriteBytes, readRunQueueWaitMs } from './support/proc'
import { codeRevision, fmtInt, machineInfo, markdownTable, textTable, writeDocSection } from './support/report'
import { freePort, ROOT, startMailroom, startServer, stopAll, type MailroomInstance } from './support/servers'

const DOMAIN = 'soak.test'
const HOSTNAME = 'mail.soak.test'
const SAMPLE_S = 10
/** Requests in flight at most during the paced phase; past that a tick's requests are counted as "behind". */
const MAX_IN_FLIGHT = 256
const PROBE_CONCURRENCY = 32
const BROADCAST_CONTACTS = 3000
/** A series has a trend when the fitted line moves it over the second half by more than this share of its mean (or the absolute floor)... */
const FLAT_SHARE = 0.1
const FLAT_FLOOR = { rssMiB: 8, p99Ms: 5 }
/** ...and by more than this many standard errors of that change (about a 5 % chance for a series with no trend; decision 82). */
const FLAT_SE_MULTIPLE = 2
/** A file's size in MiB for the progress lines ("-" when it is not there). */
const fileMiB = (dir: string, name: string) => {
  try {
    return (statSync(join(dir, name)).size / 2 ** 20).toFixed(0)
  } catch {
    return '-'
  }
}
const HTML = `<html><body>${'<p>The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.</p>\n'.repeat(20)}</body></html>`
const RECEIVER = `let n = 0; const s = Bun.serve({ hostname: '127.0.0.1', port: 0, async fetch(r) { if (r.method === 'GET') return Response.json({ n }); await r.arrayBuffer(); n++; return new Response(null, { status: 204 }) } }); console.log('listening on http://127.0.0.1:' + s.port)`

let probeSink = 0
/**
 * The machine's own speed, apart from the load on it (this is a VM on a shared host): the time
 * a fixed loop takes, in µs. The progress lines give the least of a window's tries (one a
 * second): a local process taking the CPU slows single tries, not the least of ten; a slower
 * core slows them all.
 */
function probeUs(): number {
  const t = performance.now()
  let x = 1
  for (let i = 0; i < 200_000; i++) x = (Math.imul(x, 1103515245) + 12345) | 0
  probeSink ^= x
  return (performance.now() - t) * 1000
}

/** A window's integer-loop tries: the least (a core's speed) and the median (also any time the CPU was taken away mid-try). */
function probeText(tries: number[]): string {
  const sorted = [...tries].sort((a, b) => a - b)
  return `${quantile(sorted, 0).toFixed(0)} µs (median ${quantile(sorted, 0.5).toFixed(0)})`
}

/**
 * The same for the memory behind the caches: one dependent read after another through a
 * random cycle over 64 MiB (Sattolo's shuffle), ns a read. Most reads miss every cache, so
 * this time rises when the host's shared cache or memory bandwidth is taken by a neighbour,
 * which the integer loop above (all in registers) cannot see; it rises with the load on the
 * machine too, so it is read beside the machine's busy share. Made on the first call.
 */
let memoryCycle: Uint32Array | null = null
let memoryAt = 0
const MEMORY_READS = 8_000
function memoryProbeNs(): number {
  if (!memoryCycle) {
    const n = (64 * 2 ** 20) / 4
    memoryCycle = new Uint32Array(n)
    for (let i = 0; i < n; i++) memoryCycle[i] = i
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * i)
      const x = memoryCycle[i]!
      memoryCycle[i] = memoryCycle[j]!
      memoryCycle[j] = x
    }
  }
  const t = performance.now()
  let at = memoryAt
  for (let i = 0; i < MEMORY_READS; i++) at = memoryCycle[at]!
  memoryAt = at
  return ((performance.now() - t) * 1e6) / MEMORY_READS
}

const HELP = `Usage: bun bench/soak.ts [options]   (or: npm run bench:soak -- [options])

  --minutes N         length of the paced run (default 15)
  --rate R            operations/s for the paced run (default: half the probe's peak)
  --probe-seconds N   length of the closed-loop peak probe (default 15)
  --note TEXT         a line for the doc section (e.g. "taken under load")
  --dry-run           print the results without rewriting docs/benchmarks.md and docs/soak.png
`

type Kind = 'send' | 'read' | 'smtp'
/** The mix: of every 10 operations, 4 sends, 4 reads, 2 SMTP submissions. */
const MIX: Kind[] = ['send', 'read', 'send', 'read', 'smtp', 'send', 'read', 'send', 'read', 'smtp']

export interface Sample {
  t: number
  rssMiB: number
  ops: number
  p50: number
  p99: number
  errors: number
}

/** Least-squares slope and intercept of y over x, with y's mean and x's sum of squared deviations it used. */
export function linearFit(xs: number[], ys: number[]): { slope: number; intercept: number; meanY: number; sxx: number } {
  const n = xs.length
  const meanX = n ? xs.reduce((a, b) => a + b, 0) / n : 0
  const meanY = n ? ys.reduce((a, b) => a + b, 0) / n : 0
  let num = 0
  let sxx = 0
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - meanX) * (ys[i]! - meanY)
    sxx += (xs[i]! - meanX) ** 2
  }
  const slope = sxx === 0 ? 0 : num / sxx
  return { slope, intercept: meanY - slope * meanX, meanY, sxx }
}

function quantile(sorted: number[], q: number): number {
  if (!sorted.length) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

async function api(server: MailroomInstance, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${server.key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  const json = (await res.json()) as { data: any }
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${JSON.stringify(json)}`)
  return json.data
}

/** The load client: one operation of a kind, resolving to its latency, throwing on any failure. */
function loadClient(
  server: MailroomInstance,
  smtp: { port: number; user: string; pass: string },
  ids: { contact: number; key: number; domain: number; list: number },
) {
  const transport = nodemailer.createTransport({
    pool: true,
    host: '127.0.0.1',
    port: smtp.port,
    maxConnections: 8,
    maxMessages: Infinity,
    requireTLS: true,
    tls: { rejectUnauthorized: false },
    auth: { user: smtp.user, pass: smtp.pass },
  })
  const reads = [
    `/api/v2/contacts?list_id=${ids.list}&per_page=50&page=2`,
    `/api/v2/contacts/${ids.contact}`,
    `/api/v2/api-keys/${ids.key}`,
    `/api/v2/sending-domains/${ids.domain}`,
  ]
  let n = 0
  const headers = { authorization: `Bearer ${server.key}` }
  const mailed = { count: 0 }
  return {
    /** Messages accepted (202 or 250): each must reach the sink. */
    mailed,
    async op(kind: Kind): Promise<number> {
      const i = n++
      const t0 = performance.now()
      if (kind === 'smtp') {
        const info = await transport.sendMail({
          from: `app@${DOMAIN}`,
          to: `smtp${i}@${DOMAIN}`,
          subject: `Soak submission ${i}`,
          html: HTML,
        })
        if (!info.response.startsWith('250')) throw new Error(`SMTP: ${info.response}`)
        mailed.count++
        return performance.now() - t0
      }
      const res =
        kind === 'send'
          ? await fetch(`${server.url}/v1/send`, {
              method: 'POST',
              headers: { ...headers, 'content-type': 'application/json' },
              body: JSON.stringify({ from: `Soak <app@${DOMAIN}>`, to: `user${i}@${DOMAIN}`, subject: `Soak message ${i}`, html: HTML }),
            })
          : await fetch(server.url + reads[i % reads.length]!, { headers })
      await res.arrayBuffer()
      if (res.status !== (kind === 'send' ? 202 : 200)) throw new Error(`${kind}: HTTP ${res.status}`)
      if (kind === 'send') mailed.count++
      return performance.now() - t0
    },
    close: () => transport.close(),
  }
}

/** A line chart of two series sharing the time axis, as standalone SVG. */
export function chartSvg(samples: Sample[], title: string): string {
  const W = 900
  const H = 420
  const pad = { l: 70, r: 70, t: 40, b: 50 }
  const tMax = Math.max(1, ...samples.map((s) => s.t))
  const rMax = Math.max(1, ...samples.map((s) => s.rssMiB)) * 1.1
  const pMax = Math.max(1, ...samples.map((s) => s.p99)) * 1.1
  const x = (t: number) => pad.l + (t / tMax) * (W - pad.l - pad.r)
  const yR = (v: number) => H - pad.b - (v / rMax) * (H - pad.t - pad.b)
  const yP = (v: number) => H - pad.b - (v / pMax) * (H - pad.t - pad.b)
  const path = (y: (v: number) => number, pick: (s: Sample) => number) =>
    samples.map((s, i) => `${i ? 'L' : 'M'}${x(s.t).toFixed(1)},${y(pick(s)).toFixed(1)}`).join(' ')
  const ticks = [0, 0.25, 0.5, 0.75, 1]
  const grid = ticks
    .map((f) => {
      const y = H - pad.b - f * (H - pad.t - pad.b)
      return `<line x1="${pad.l}" x2="${W - pad.r}" y1="${y}" y2="${y}" stroke="#ddd"/>
<text x="${pad.l - 6}" y="${y + 4}" text-anchor="end" fill="#1f5fbf">${(f * rMax).toFixed(0)}</text>
<text x="${W - pad.r + 6}" y="${y + 4}" fill="#c0392b">${(f * pMax).toFixed(1)}</text>
<text x="${x(f * tMax)}" y="${H - pad.b + 18}" text-anchor="middle">${((f * tMax) / 60).toFixed(1)}</text>`
    })
    .join('\n')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">
<rect width="${W}" height="${H}" fill="white"/>
<text x="${W / 2}" y="22" text-anchor="middle" font-size="14">${title}</text>
${grid}
<path d="${path(yR, (s) => s.rssMiB)}" fill="none" stroke="#1f5fbf" stroke-width="2"/>
<path d="${path(yP, (s) => s.p99)}" fill="none" stroke="#c0392b" stroke-width="2"/>
<text x="${W / 2}" y="${H - 12}" text-anchor="middle">minutes</text>
<text x="16" y="${H / 2}" fill="#1f5fbf" transform="rotate(-90 16 ${H / 2})" text-anchor="middle">server RSS (MiB)</text>
<text x="${W - 16}" y="${H / 2}" fill="#c0392b" transform="rotate(90 ${W - 16} ${H / 2})" text-anchor="middle">p99 latency per 10 s (ms)</text>
</svg>`
}

/** Renders the SVG to a PNG with Chromium; false when no Chromium can start. */
async function renderPng(svg: string, file: string): Promise<boolean> {
  try {
    const { chromium } = await import('playwright-core')
    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] })
    try {
      const page = await browser.newPage({ viewport: { width: 900, height: 420 } })
      await page.setContent(`<!doctype html><html><body style="margin:0">${svg}</body></html>`)
      await page.screenshot({ path: file, clip: { x: 0, y: 0, width: 900, height: 420 } })
      return true
    } finally {
      await browser.close()
    }
  } catch (e) {
    process.stderr.write(`soak: no PNG (${(e as Error).message.split('\n')[0]}); writing the SVG instead\n`)
    return false
  }
}

/**
 * Whether a series is flat over its second half (decision 82). The fitted line's change there
 * is a trend when it is both larger than the floor (`FLAT_SHARE` of the mean, or `floor`) and
 * more than `FLAT_SE_MULTIPLE` times its standard error, the change that the scatter of the
 * windows around the line makes by itself. Without the second test a p99 series with no trend
 * at all, whose standard error (4-7 ms) is about the floor, was called "not flat" in a third
 * to a half of the runs. `beyondFloor` keeps the first test's answer for the report.
 */
export function trend(samples: Sample[], pick: (s: Sample) => number, floor: number) {
  const half = samples.slice(Math.floor(samples.length / 2))
  const xs = half.map((s) => s.t / 60)
  const ys = half.map(pick)
  const { slope, intercept, meanY, sxx } = linearFit(xs, ys)
  const span = (xs.at(-1) ?? 0) - (xs[0] ?? 0)
  const change = slope * span
  const squares = ys.reduce((a, y, i) => a + (y - intercept - slope * xs[i]!) ** 2, 0)
  const changeSe = ys.length > 2 && sxx > 0 ? Math.sqrt(squares / (ys.length - 2) / sxx) * span : 0
  const beyondFloor = Math.abs(change) > Math.max(FLAT_SHARE * meanY, floor)
  const beyondNoise = Math.abs(change) > FLAT_SE_MULTIPLE * changeSe
  return { slope, change, changeSe, mean: meanY, beyondFloor, flat: !(beyondFloor && beyondNoise) }
}

const signed = (n: number) => `${n >= 0 ? '+' : ''}${n.toFixed(1)}`
/** A trend's verdict in the report; a change beyond the floor that the noise could make says so. */
const verdict = (t: ReturnType<typeof trend>, notFlat: string) =>
  !t.flat ? notFlat : t.beyondFloor ? `flat (beyond the floor, within ${FLAT_SE_MULTIPLE} standard errors)` : 'flat'

/** Runs the benchmark; resolves to the process exit code. */
export async function run(argv: string[], command = 'bun bench/soak.ts'): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      minutes: { type: 'string' },
      rate: { type: 'string' },
      'probe-seconds': { type: 'string' },
      note: { type: 'string' },
      'dry-run': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return (process.stdout.write(HELP), 0)
  const minutes = Number(values.minutes ?? 15)
  const probeS = Number(values['probe-seconds'] ?? 15)
  if (!(minutes > 0) || !(probeS > 0)) throw new Error('--minutes and --probe-seconds take positive numbers')
  const machine = machineInfo()
  const started = new Date()

  const dns = await startDnsServer({
    ttl: 60,
    zones: { [DOMAIN]: { MX: [{ exchange: `mx.${DOMAIN}`, priority: 10 }] }, [`mx.${DOMAIN}`]: { A: ['127.0.0.1'] }, [HOSTNAME]: { A: ['127.0.0.1'] } },
  })
  const sinkProc = await startServer('sink', ['bench/support/counting-sink.ts'], { pattern: /listening on (http:\/\/\S+ smtp=\d+)/ })
  const [sinkHttp, sinkSmtp] = sinkProc.url.split(' smtp=') as [string, string]
  const sinkCount = async () => ((await (await fetch(sinkHttp)).json()) as { messages: number }).messages
  const receiver = await startServer('receiver', ['-e', RECEIVER], { pattern: /listening on (http:\/\/\S+)/ })
  const hookCount = async () => ((await (await fetch(receiver.url)).json()) as { n: number }).n
  const smtpPort = await freePort()
  let server: MailroomInstance | null = null
  try {
    server = await startMailroom('mailroom-soak', {
      rateLimit: 'unlimited',
      settings: {
        MAILROOM_SMTP_LISTEN: `127.0.0.1:${smtpPort}`,
        MAILROOM_MX_PORT: sinkSmtp,
        MAILROOM_DNS_SERVERS: dns.server,
        MAILROOM_HOSTNAME: HOSTNAME,
        MAILROOM_ALLOW_UNVERIFIED_DOMAINS: 'true',
        MAILROOM_WEBHOOKS_ALLOW_PRIVATE: 'true',
        MAILROOM_LOG_LEVEL: 'warn',
      },
      serveArgs: ['--access-log', 'false'],
    })
    const srv = server
    process.stdout.write(`mailroom ${srv.url} (pid ${srv.pid}, data ${srv.dataDir})\n`)

    // Setup: a sending domain, a bridge, a webhook for every event, a list with contacts.
    const domain = await api(srv, 'POST', '/api/v2/sending-domains', { name: DOMAIN })
    const bridge = await api(srv, 'POST', '/api/v2/bridges', { name: 'soak', domains: [DOMAIN] })
    const webhook = await api(srv, 'POST', '/api/v2/webhooks', { endpoint: `${receiver.url}/hook`, events: ['*'] })
    const list = await api(srv, 'POST', '/api/v2/lists', { name: 'soak' })
    for (let i = 0; i < BROADCAST_CONTACTS; i += 1000) {
      const contacts = Array.from({ length: Math.min(1000, BROADCAST_CONTACTS - i) }, (_, j) => ({ email: `reader${i + j}@${DOMAIN}`, first_name: 'Reader' }))
      await api(srv, 'POST', '/api/v2/contacts/batch', { list_id: list.id, mode: 'skip', contacts })
    }
    const contact = (await api(srv, 'GET', `/api/v2/contacts?list_id=${list.id}&per_page=1`))[0]
    const keys = await api(srv, 'GET', '/api/v2/api-keys')
    const smtp = { port: smtpPort, user: bridge.smtp.username as string, pass: bridge.smtp.password as string }
    const client = loadClient(srv, smtp, { contact: contact.id, key: keys[0].id, domain: domain.id, list: list.id })
    let opsIssued = 0
    const nextKind = () => MIX[opsIssued++ % MIX.length]!

    // 1. The peak: closed loop, PROBE_CONCURRENCY operations in flight, for probeS seconds.
    let probeOps = 0
    const probeEnd = performance.now() + probeS * 1000
    await Promise.all(
      Array.from({ length: PROBE_CONCURRENCY }, async () => {
        while (performance.now() < probeEnd) {
          await client.op(nextKind())
          probeOps++
        }
      }),
    )
    const peak = probeOps / probeS
    const rate = values.rate ? Number(values.rate) : peak / 2
    process.stdout.write(
      `peak of the mix: ${fmtInt(peak)} ops/s over ${probeS} s at ${PROBE_CONCURRENCY} in flight; paced run at ${fmtInt(rate)} ops/s for ${minutes} min\n`,
    )

    // 2. The broadcast, paced to send during about 80 % of the run.
    const perMinute = Math.max(1, Math.ceil(BROADCAST_CONTACTS / (minutes * 0.8)))
    const broadcast = await api(srv, 'POST', '/api/v2/broadcasts', {
      name: 'soak',
      from: `News <news@${DOMAIN}>`,
      subject: 'Soak broadcast',
      html: HTML,
      list_ids: [list.id],
      send_rate_per_minute: perMinute,
    })
    await api(srv, 'POST', `/api/v2/broadcasts/${broadcast.id}/schedule`, {})

    // 3. The paced run: open loop, ops issued on a 10 ms tick whatever the answers do.
    const samples: Sample[] = []
    // The latencies finished in this window, by kind (which part of the mix a slow window comes
    // from), and the server's CPU time and bytes written to storage at the window's start.
    let window = new Map<Kind, number[]>()
    let cpuAt = readProcCpuSplitMs(srv.pid) ?? { user: 0, system: 0 }
    let mainAt = readProcCpuSplitMs(srv.pid, srv.pid) ?? { user: 0, system: 0 }
    let ticksAt = readMachineTicks()
    let probeTries: number[] = []
    let memoryMin = Number.POSITIVE_INFINITY
    // Time the server's main thread and the load client's waited for a CPU the guest gave to others.
    let serverWaitAt = readRunQueueWaitMs(srv.pid, srv.pid) ?? 0
    let clientWaitAt = readRunQueueWaitMs('self') ?? 0
    let nextProbe = 0
    // Messages reaching the sink and webhook POSTs reaching the receiver per window: a rate
    // above the offered one is a backlog being caught up.
    let sinkAt = await sinkCount()
    let hooksAt = await hookCount()
    let writtenAt = readProcWriteBytes(srv.pid) ?? 0
    let windowErrors = 0
    let errors = 0
    let behind = 0
    let inFlight = 0
    let done = 0
    const errorKinds = new Map<string, number>()
    memoryProbeNs() // makes its 64 MiB cycle (about 0.4 s) before the clock starts
    const t0 = performance.now()
    const end = t0 + minutes * 60_000
    let due = 0
    const issue = () => {
      const kind = nextKind()
      inFlight++
      client
        .op(kind)
        .then((ms) => {
          const list = window.get(kind)
          if (list) list.push(ms)
          else window.set(kind, [ms])
        })
        .catch((e: Error) => {
          errors++
          windowErrors++
          const k = `${kind}: ${e.message.slice(0, 80)}`
          errorKinds.set(k, (errorKinds.get(k) ?? 0) + 1)
        })
        .finally(() => {
          inFlight--
          done++
        })
    }
    let nextSample = t0 + SAMPLE_S * 1000
    while (performance.now() < end) {
      await Bun.sleep(10)
      const now = performance.now()
      const target = ((now - t0) / 1000) * rate
      while (due < target) {
        due++
        if (inFlight >= MAX_IN_FLIGHT) behind++
        else issue()
      }
      if (now >= nextProbe) {
        nextProbe = now + 1000
        probeTries.push(probeUs())
        memoryMin = Math.min(memoryMin, memoryProbeNs())
      }
      if (now >= nextSample) {
        nextSample += SAMPLE_S * 1000
        const ascending = (ms: number[]) => ms.sort((a, b) => a - b)
        const sorted = ascending([...window.values()].flat())
        const mem = readProcMemory(srv.pid)
        const s: Sample = {
          t: (now - t0) / 1000,
          rssMiB: (mem?.vmRssKiB ?? 0) / 1024,
          ops: sorted.length,
          p50: quantile(sorted, 0.5),
          p99: quantile(sorted, 0.99),
          errors: windowErrors,
        }
        samples.push(s)
        const kinds = (['send', 'read', 'smtp'] as const).map((k) => `${k} ${quantile(ascending(window.get(k) ?? []), 0.99).toFixed(0)}`).join(' ')
        const cpu = readProcCpuSplitMs(srv.pid) ?? cpuAt
        const main = readProcCpuSplitMs(srv.pid, srv.pid) ?? mainAt
        const ticks = readMachineTicks()
        const serverWait = readRunQueueWaitMs(srv.pid, srv.pid) ?? serverWaitAt
        const clientWait = readRunQueueWaitMs('self') ?? clientWaitAt
        const pct = (ms: number) => (ms / (SAMPLE_S * 10)).toFixed(0)
        const cpuText = `server CPU ${pct(cpu.user + cpu.system - cpuAt.user - cpuAt.system)} % (kernel ${pct(cpu.system - cpuAt.system)} %, main thread ${pct(main.user + main.system - mainAt.user - mainAt.system)} %)  machine ${(((ticks.busy - ticksAt.busy) / Math.max(1, ticks.total - ticksAt.total)) * 100 * machine.nproc).toFixed(0)} % (of ${machine.nproc * 100} %)  probe ${probeText(probeTries)}, memory ${memoryMin.toFixed(0)} ns  waited ${(serverWait - serverWaitAt).toFixed(0)} / ${(clientWait - clientWaitAt).toFixed(0)} ms`
        const written = readProcWriteBytes(srv.pid) ?? writtenAt
        window = new Map()
        windowErrors = 0
        // Asked after the window is reset: what finishes meanwhile counts in the next one.
        const progress = ((await api(srv, 'GET', `/api/v2/broadcasts/${broadcast.id}`)) as { counts?: { sent?: number } }).counts?.sent ?? 0
        const [atSink, hooks] = await Promise.all([sinkCount(), hookCount()])
        process.stdout.write(
          `  ${(s.t / 60).toFixed(1).padStart(5)} min  RSS ${s.rssMiB.toFixed(1)} MiB  ${fmtInt(s.ops / SAMPLE_S)} ops/s  p50 ${s.p50.toFixed(1)} ms  p99 ${s.p99.toFixed(1)} ms (${kinds})  ${cpuText}  disk ${((written - writtenAt) / 1024 / Math.max(1, s.ops)).toFixed(1)} KiB/op  db ${fileMiB(srv.dataDir, 'mailroom.db')} + WAL ${fileMiB(srv.dataDir, 'mailroom.db-wal')} MiB  broadcast ${progress} sent  sink ${fmtInt((atSink - sinkAt) / SAMPLE_S)}/s  hooks ${fmtInt((hooks - hooksAt) / SAMPLE_S)}/s  errors ${s.errors}\n`,
        )
        cpuAt = cpu
        mainAt = main
        ticksAt = ticks
        probeTries = []
        memoryMin = Number.POSITIVE_INFINITY
        serverWaitAt = serverWait
        clientWaitAt = clientWait
        sinkAt = atSink
        hooksAt = hooks
        writtenAt = written
      }
    }
    while (inFlight > 0) await Bun.sleep(20)
    client.close()

    // 4. Everything accepted must arrive at the sink (the broadcast's sent ones too), within 2 minutes.
    const drainEnd = Date.now() + 120_000
    let b = await api(srv, 'GET', `/api/v2/broadcasts/${broadcast.id}`)
    let sinkMessages = await sinkCount()
    let expected = client.mailed.count + (b.counts?.sent ?? 0)
    while (sinkMessages < expected && Date.now() < drainEnd) {
      await Bun.sleep(1000)
      b = await api(srv, 'GET', `/api/v2/broadcasts/${broadcast.id}`)
      sinkMessages = await sinkCount()
      expected = client.mailed.count + (b.counts?.sent ?? 0)
    }
    const missing = Math.max(0, expected - sinkMessages)
    const deliveriesFailed = (await api(srv, 'GET', `/api/v2/webhooks/${webhook.id}/deliveries?state=failed`)) as unknown[]
    const hooksReceived = await hookCount()
    const logErrors = readFileSync(srv.logFile, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"level":"error"'))
    const rssTrend = trend(samples, (s) => s.rssMiB, FLAT_FLOOR.rssMiB)
    const p99Trend = trend(samples, (s) => s.p99, FLAT_FLOOR.p99Ms)
    const totalErrors = errors + behind + logErrors.length + deliveriesFailed.length + missing
    const ops = samples.reduce((a, s) => a + s.ops, 0)

    const head = ['measure', 'result']
    const rows = [
      ['peak of the mix (closed loop)', `${fmtInt(peak)} ops/s (${PROBE_CONCURRENCY} in flight, ${probeS} s)`],
      ['paced rate', `${fmtInt(rate)} ops/s for ${minutes} min (${fmtInt(ops)} operations finished in the samples)`],
      [
        'server RSS, second half',
        `mean ${rssTrend.mean.toFixed(1)} MiB, fitted change ${signed(rssTrend.change)} MiB (standard error ${rssTrend.changeSe.toFixed(1)}): ${verdict(rssTrend, 'GROWING')}`,
      ],
      [
        'p99 latency per 10 s, second half',
        `mean ${p99Trend.mean.toFixed(1)} ms, fitted change ${signed(p99Trend.change)} ms (standard error ${p99Trend.changeSe.toFixed(1)}): ${verdict(p99Trend, 'NOT flat')}`,
      ],
      [
        'server RSS first / last sample / peak (VmHWM)',
        `${samples[0]?.rssMiB.toFixed(1)} / ${samples.at(-1)?.rssMiB.toFixed(1)} / ${fmtMiB(readProcMemory(srv.pid)?.vmHwmKiB ?? 0)} MiB`,
      ],
      [
        'errors',
        `${totalErrors} (failed operations ${errors}, issued late ${behind}, server log errors ${logErrors.length}, failed webhook deliveries ${deliveriesFailed.length}, messages missing at the sink ${missing})`,
      ],
      ['messages at the sink', `${fmtInt(sinkMessages)} of ${fmtInt(expected)} accepted; broadcast ${b.status}, counts ${JSON.stringify(b.counts)}`],
      ['webhook POSTs received', fmtInt(hooksReceived)],
    ]
    process.stdout.write(`\n${textTable(head, rows)}\n`)
    for (const [k, n] of errorKinds) process.stdout.write(`  ${n} x ${k}\n`)
    for (const l of logErrors.slice(0, 5)) process.stdout.write(`  log: ${l.slice(0, 300)}\n`)
    const verdictOk = rssTrend.flat && p99Trend.flat && totalErrors === 0
    process.stdout.write(verdictOk ? 'RSS flat, p99 flat, no errors.\n' : 'NOT every aim met.\n')

    if (!values['dry-run']) {
      const svg = chartSvg(samples, `Mailroom soak: ${minutes} min at ${fmtInt(rate)} ops/s (RSS blue, p99 red)`)
      const png = await renderPng(svg, join(ROOT, 'docs', 'soak.png'))
      if (!png) writeFileSync(join(ROOT, 'docs', 'soak.svg'), svg)
      const when = started.toISOString().slice(0, 16).replace('T', ' ')
      writeDocSection(
        'soak',
        `## Long run: ${minutes} minutes of mixed load at half the peak

Measured ${when} UTC with \`${[command, ...argv].join(' ')}\` (bench/soak.ts), code at ${codeRevision()}.${values.note ? `\n\n**${values.note}**` : ''}

${markdownTable(head, rows)}

![RSS and p99 over the run](${png ? 'soak.png' : 'soak.svg'})

- Mix, in turn: of every 10 operations 4 \`POST /v1/send\`, 4 API reads (a contact page, a contact, the API key, the sending domain), 2 SMTP
  submissions through a bridge (nodemailer pool of 8 STARTTLS sessions); a webhook for every event kind (\`*\`) posting to a receiver in its own process;
  one broadcast to ${fmtInt(BROADCAST_CONTACTS)} contacts at ${fmtInt(perMinute)} a minute. Mail goes through a loopback DNS server to a counting SMTP sink.
- Peak: the same mix closed-loop with ${PROBE_CONCURRENCY} operations in flight for ${probeS} s just before; the run is open-loop at half of it
  (at most ${MAX_IN_FLIGHT} in flight; an operation due while that many are open counts as an error, "issued late").
- Samples every ${SAMPLE_S} s: the server's RSS (/proc), the p99 of the operations finished in the window (client wall time); the progress lines also give each kind's p99, the server's CPU (its kernel share and its main thread's), the whole machine's busy share (of ${machine.nproc} CPUs), a speed probe (the least and the median time of a fixed loop in the load client, one try a second: the least rises when the cores themselves are slower, not when they are busy) and a memory probe (the least time, of one try a second, of a read that misses the caches: dependent reads through 64 MiB; it rises when a neighbour on the host takes the shared cache or memory bandwidth), the time the server's main thread and the load client waited runnable for a CPU (schedstat), the messages reaching the sink and the webhook POSTs reaching the receiver a second (above the offered rate: a backlog caught up), the bytes it wrote to storage per operation (/proc/PID/io) and the sizes of the database and its WAL.
  Flat (decision 82): a least-squares line over the second half moves by at most ${FLAT_SHARE * 100} % of the mean
  (or ${FLAT_FLOOR.rssMiB} MiB, ${FLAT_FLOOR.p99Ms} ms), or by no more than ${FLAT_SE_MULTIPLE} standard errors of its change: the change the scatter of the
  windows around the line makes by itself, so a change within it is not told apart from noise.
- Machine: ${machine.nproc} CPUs, ${machine.cpuModel}, ${machine.memoryGiB} GiB, load average ${machine.loadAverage} at the start; the load
  client, sink, receiver and DNS server share the machine with the server.
`,
      )
      process.stdout.write(`wrote the soak section of docs/benchmarks.md and docs/${png ? 'soak.png' : 'soak.svg'}\n`)
    }
    return verdictOk ? 0 : 1
  } finally {
    await stopAll()
    await dns.close()
    if (server) await server.dispose()
  }
}

if (import.meta.main) {
  try {
    process.exit(await run(process.argv.slice(2)))
  } catch (e) {
    process.stderr.write(`bench/soak: ${(e as Error).message}\n`)
    await stopAll()
    process.exit(1)
  }
}
