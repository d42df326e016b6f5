/**
 * Delivery benchmark (issue 4): N messages of about 5 KB accepted through POST /v1/send of a
 * real Mailroom server and delivered through a real DNS lookup (a DNS server on loopback) to a
 * counting SMTP sink in its own process; once without DKIM (unverified domain allowed) and
 * once with DKIM (a verified sending domain), beside a plain SMTP client (nodemailer's pool)
 * blasting the same prebuilt messages at the same sink: the practical limit of one SMTP hop.
 *
 * Aim on a 2-core machine: at least 2,000 delivered/s end to end with DKIM. Issue 18 adds, in
 * the same run: Debian's Postfix relaying into the same sink (bench/peers.ts; "not installed"
 * without it) and the ratios against it and the plain client; Mailroom's own CPU per message
 * (the server's CPU time minus the signing); DNS queries per delivered message, counted at the
 * test DNS server. `--footprint N` instead queues N messages with the MX silent and prints the
 * server's memory, and its CPU while the queue waits.
 *
 *   bun bench/delivery.ts [--messages 20000] [--concurrency 64] [--no-postfix] [--dry-run]
 *   bun bench/delivery.ts --footprint 100000
 */
import { generateKeyPairSync } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { parseArgs } from 'node:util'
import nodemailer from 'nodemailer'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { createSignerPool } from '../src/delivery/signer-pool'
import { startDnsServer, type DnsServer } from '../test/support/dns-server'
import { POSTFIX_INSTALL_HINT, postfixAvailable, runPostfix, type PostfixRun } from './peers'
import { fmtMiB, readProcCpuMs, readProcMemory } from './support/proc'
import { fmtInt, machineInfo, markdownTable, textTable, writeDocSection } from './support/report'
import { startCountingSink, startMailroom, stopAll, type CountingSink, type MailroomInstance } from './support/servers'

const AIM_DKIM_PER_S = 2000
/** Issue 18's aims, as ratios in the same run. */
const AIM_DKIM_OVER_POSTFIX = 2.5
const AIM_UNSIGNED_OVER_PLAIN = 0.8
const AIM_OWN_CPU_MS = 0.2
const AIM_DNS_PER_MESSAGE = 0.01
const AIM_FOOTPRINT_MIB = 300
/** The recipients' domain of every delivery benchmark (its MX is the sink, in the benchmark's DNS). */
export const DOMAIN = 'bench.example'
/** Printed with the results: why the runs are warmed up. */
const WARMUP_NOTE =
  'So both sides are measured warm: the plain client (nodemailer, in this process) and each Mailroom server have had their hot paths compiled by the JIT before the clock starts (in a cold 10,000-message run the JIT threads of the server used 1.95 s of CPU against 9.6 s on its main thread). Postfix, native code, is not warmed.'

const HOSTNAME = 'mailroom.bench'

const HELP = `Usage: bun bench/delivery.ts [options]   (or: npm run bench -- delivery [options])

  --messages N      messages per run (default 20000)
  --concurrency N   HTTP requests in flight while accepting (default 64)
  --no-postfix      leave out the Postfix row even when Postfix is installed
  --footprint N     only queue N messages with the MX silent and print the server's memory
  --warmup N        unmeasured messages through the plain client and each Mailroom server
                    before its measured run (default 2000; 0 measures cold servers)
  --dry-run         print the results without rewriting docs/benchmarks.md
`

/** About 5 KB of HTML, the same for every message (the accept benchmark and transport-alone.ts send it too). */
export const HTML = `<html><body>${'<p>The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.</p>\n'.repeat(55)}</body></html>`

export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`gave up after ${timeoutMs / 1000} s waiting for ${what}`)
    await Bun.sleep(20)
  }
}

/** CPU milliseconds each process spent per message over a run (`pid` null: not part of it). */
interface CpuShare {
  server: number | null
  sink: number
  client: number
}

/** Starts CPU accounting of the benchmark's processes; `per(n)` gives each one's CPU ms per message since. */
function cpuMeter(sinkPid: number, serverPid: number | null) {
  const read = () => ({ server: serverPid === null ? null : readProcCpuMs(serverPid), sink: readProcCpuMs(sinkPid) ?? 0, client: readProcCpuMs('self') ?? 0 })
  const start = read()
  return {
    per(n: number): CpuShare {
      const end = read()
      return {
        server: end.server === null || start.server === null ? null : (end.server - start.server) / n,
        sink: (end.sink - start.sink) / n,
        client: (end.client - start.client) / n,
      }
    },
  }
}

/** The practical limit: nodemailer's pooled SMTP client sending prebuilt messages straight to the sink. */
async function plainClient(sink: CountingSink, n: number, raw: string, warmup: number): Promise<{ s: number; cpu: CpuShare }> {
  const transport = nodemailer.createTransport({
    pool: true,
    host: '127.0.0.1',
    port: sink.smtpPort,
    maxConnections: 8,
    maxMessages: Infinity,
    ignoreTLS: true,
  })
  const sendMany = (count: number) =>
    Promise.all(Array.from({ length: count }, (_, i) => transport.sendMail({ envelope: { from: `ada@${DOMAIN}`, to: [`user${i}@${DOMAIN}`] }, raw })))
  await sendMany(warmup)
  const before = (await sink.count()).messages
  const meter = cpuMeter(sink.pid, null)
  const t0 = performance.now()
  await sendMany(n)
  const s = (performance.now() - t0) / 1000
  const cpu = meter.per(n)
  transport.close()
  const after = (await sink.count()).messages
  if (after - before !== n) throw new Error(`plain client: the sink counted ${after - before} messages, expected ${n}`)
  return { s, cpu }
}

/**
 * The ceiling DKIM alone puts on this machine: the server's own signer pool (one thread per
 * core, src/delivery/signer-pool.ts) signing `n` copies of the message with a fresh RSA-2048
 * key, 64 in flight, with nothing else running. Returns the time and this process's CPU per signature.
 */
async function signingAlone(n: number, raw: Buffer): Promise<{ s: number; cpuMs: number; threads: number }> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const key = { domain: DOMAIN, selector: 'bench', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string }
  const threads = Math.max(1, availableParallelism())
  const pool = createSignerPool({ size: threads })
  try {
    await Promise.all(Array.from({ length: threads * 4 }, () => pool.sign(raw, key))) // threads started, key parsed
    const cpu0 = readProcCpuMs('self') ?? 0
    const t0 = performance.now()
    let next = 0
    const worker = async () => {
      while (next++ < n) await pool.sign(raw, key)
    }
    await Promise.all(Array.from({ length: 64 }, worker))
    return { s: (performance.now() - t0) / 1000, cpuMs: ((readProcCpuMs('self') ?? 0) - cpu0) / n, threads }
  } finally {
    await pool.close()
  }
}

interface MailroomRun {
  acceptS: number
  deliverS: number
  cpu: CpuShare
  /** DNS queries the test DNS server answered during the run (after the domain was verified). */
  dnsQueries: number
}

async function api(server: MailroomInstance, method: string, path: string, body?: unknown) {
  const res = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const json = (await res.json()) as { data: Record<string, unknown> }
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${JSON.stringify(json)}`)
  return json.data
}

/** Creates the sending domain, publishes its records in the test DNS and verifies it. */
async function verifyDomain(server: MailroomInstance, dns: DnsServer): Promise<void> {
  const created = await api(server, 'POST', '/api/v2/sending-domains', { name: DOMAIN })
  const byName = new Map<string, { TXT?: string[]; CNAME?: string; MX?: { exchange: string; priority: number }[] }>()
  for (const r of created.dns_records as Array<{ type: string; name: string; value: string }>) {
    const e = byName.get(r.name) ?? {}
    if (r.type === 'TXT') (e.TXT ??= []).push(r.value)
    if (r.type === 'CNAME') e.CNAME = r.value
    byName.set(r.name, e)
  }
  for (const [name, rr] of byName) {
    // Keep the domain's MX beside the SPF record published at the same name.
    dns.setZone(name, name === DOMAIN ? { ...rr, MX: [{ exchange: `mx.${DOMAIN}`, priority: 10 }] } : rr)
  }
  const verified = await api(server, 'POST', `/api/v2/sending-domains/${created.id}/verify`)
  if (verified.status !== 'verified') throw new Error(`the sending domain did not verify: ${JSON.stringify(verified.dns_records)}`)
}

/** POSTs `n` messages to /v1/send, `concurrency` in flight; each must be answered 202. */
export async function sendAll(server: MailroomInstance, n: number, concurrency: number): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < n) {
      const i = next++
      const res = await fetch(`${server.url}/v1/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from: `Bench <ada@${DOMAIN}>`, to: `user${i}@${DOMAIN}`, subject: `Benchmark message ${i}`, html: HTML }),
      })
      if (res.status !== 202) throw new Error(`POST /v1/send: HTTP ${res.status} ${await res.text()}`)
      await res.arrayBuffer()
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

/** An MX that accepts connections and never says a word: deliveries wait at the greeting, the rest stays queued. */
export async function startSilentMx(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

/** How long the footprint run watches the server's CPU with the queue waiting. */
const IDLE_CPU_WINDOW_MS = 10_000

/**
 * Footprint (issue 18): `n` messages accepted with the MX silent, so they all stay in the
 * queue (a few hundred wait at the MX's greeting); then the server's resident memory, and its
 * CPU while the queue waits.
 */
async function footprint(dns: DnsServer, n: number, concurrency: number): Promise<number> {
  const mx = await startSilentMx()
  const server = await startMailroom('mailroom-footprint', deliveryServerOptions(mx.port, dns.server, false))
  try {
    const idle = readProcMemory(server.pid)
    const t0 = performance.now()
    await sendAll(server, n, concurrency)
    const acceptS = (performance.now() - t0) / 1000
    await Bun.sleep(2000) // let the engine claim what it will and the checkpointer settle
    const mem = readProcMemory(server.pid)
    if (!mem || !idle) throw new Error('could not read the server memory from /proc')
    const rssMiB = mem.vmRssKiB / 1024
    const verdict = rssMiB <= AIM_FOOTPRINT_MIB ? 'met' : 'NOT met'
    const mib = (kib: number) => `${fmtMiB(kib)} MiB`
    // What the queue costs while nothing else happens: the engine's turns over the jobs its busy MX holds back.
    const cpu0 = readProcCpuMs(server.pid)
    await Bun.sleep(IDLE_CPU_WINDOW_MS)
    const cpu1 = readProcCpuMs(server.pid)
    const idleCpu = cpu0 === null || cpu1 === null ? 'unknown' : `${(((cpu1 - cpu0) / IDLE_CPU_WINDOW_MS) * 100).toFixed(1)} % of a core`
    process.stdout.write(
      `footprint: ${fmtInt(n)} messages queued (accepted ${fmtInt(n / acceptS)}/s), MX silent\n` +
        `  server RSS ${mib(mem.vmRssKiB)} (anonymous ${mib(mem.rssAnonKiB)}, file ${mib(mem.rssFileKiB)}); peak ${mib(mem.vmHwmKiB)}; idle before ${mib(idle.vmRssKiB)}\n` +
        `  server CPU with the queue waiting, over ${IDLE_CPU_WINDOW_MS / 1000} s: ${idleCpu}\n` +
        `  aim: RSS under ${AIM_FOOTPRINT_MIB} MiB: ${verdict}\n`,
    )
    return 0
  } finally {
    await server.dispose()
    await mx.close()
  }
}

/** How each Mailroom of the delivery runs is started: its MX the sink, its DNS the test server, access log off. */
export function deliveryServerOptions(sinkPort: number, dnsServer: string, dkim: boolean) {
  return {
    rateLimit: 'unlimited' as const,
    settings: {
      MAILROOM_MX_PORT: String(sinkPort),
      MAILROOM_DNS_SERVERS: dnsServer,
      MAILROOM_HOSTNAME: HOSTNAME,
      MAILROOM_ALLOW_UNVERIFIED_DOMAINS: dkim ? 'false' : 'true',
      MAILROOM_LOG_LEVEL: 'warn',
      // No submission listener: its fixed default port may be taken on a shared machine.
      MAILROOM_SMTP_LISTEN: 'off',
    },
    serveArgs: ['--access-log', 'false'],
  }
}

/** The loopback DNS server of the delivery runs: the benchmark domain's MX and the hosts' addresses (TTL 60 s, as a real resolver's answers would be cached). */
export function startBenchDns(): Promise<DnsServer> {
  return startDnsServer({
    ttl: 60,
    zones: { [DOMAIN]: { MX: [{ exchange: `mx.${DOMAIN}`, priority: 10 }] }, [`mx.${DOMAIN}`]: { A: ['127.0.0.1'] }, [HOSTNAME]: { A: ['127.0.0.1'] } },
  })
}

async function mailroomRun(sink: CountingSink, dns: DnsServer, n: number, concurrency: number, dkim: boolean, warmup: number): Promise<MailroomRun> {
  const server = await startMailroom(dkim ? 'mailroom-dkim' : 'mailroom-unsigned', deliveryServerOptions(sink.smtpPort, dns.server, dkim))
  try {
    if (dkim) await verifyDomain(server, dns)
    if (warmup > 0) {
      // Unmeasured: the same messages through the same server first, so the run measures a
      // server whose hot paths the JIT has compiled, not the compiling (WARMUP_NOTE).
      const start = (await sink.count()).messages
      await sendAll(server, warmup, concurrency)
      await waitUntil(`${warmup} warm-up deliveries`, async () => (await sink.count()).messages - start >= warmup, 600_000)
    }
    const before = (await sink.count()).messages
    const dnsBefore = dns.queries.length
    const meter = cpuMeter(sink.pid, server.pid)
    const t0 = performance.now()
    await sendAll(server, n, concurrency)
    const acceptS = (performance.now() - t0) / 1000
    await waitUntil(`${n} deliveries`, async () => (await sink.count()).messages - before >= n, 600_000)
    const deliverS = (performance.now() - t0) / 1000
    const cpu = meter.per(n)
    const delivered = (await sink.count()).messages - before
    if (delivered !== n) throw new Error(`the sink counted ${delivered} messages, expected ${n}`)
    return { acceptS, deliverS, cpu, dnsQueries: dns.queries.length - dnsBefore }
  } finally {
    await server.dispose()
  }
}

export async function run(argv: string[], command: string): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      messages: { type: 'string' },
      concurrency: { type: 'string' },
      'no-postfix': { type: 'boolean' },
      footprint: { type: 'string' },
      warmup: { type: 'string' },
      'dry-run': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return (process.stdout.write(HELP), 0)
  const n = Number(values.messages ?? 20000)
  const warmup = Number(values.warmup ?? 2000)
  const concurrency = Number(values.concurrency ?? 64)
  const machine = machineInfo()
  const dns = await startBenchDns()
  if (values.footprint !== undefined) {
    try {
      return await footprint(dns, Number(values.footprint), concurrency)
    } finally {
      await stopAll()
      await dns.close()
    }
  }
  const sink = await startCountingSink()
  try {
    const sample = await nodemailer
      .createTransport({ streamTransport: true, buffer: true })
      .sendMail({ from: `ada@${DOMAIN}`, to: `user@${DOMAIN}`, subject: 'Benchmark message', html: HTML })
    const raw = (sample.message as Buffer).toString()
    process.stdout.write(`message size ${fmtInt(raw.length)} bytes; ${fmtInt(n)} messages per run, after ${fmtInt(warmup)} unmeasured ones\n`)
    const plain = await plainClient(sink, n, raw, warmup)
    const plainS = plain.s
    process.stdout.write(`plain SMTP client: ${fmtInt(n / plainS)}/s\n`)
    let postfix: PostfixRun | null = null
    const available = postfixAvailable()
    let postfixNote = values['no-postfix'] ? 'left out (--no-postfix)' : available.ok ? '' : available.why
    if (!values['no-postfix'] && available.ok) {
      postfix = await runPostfix(sink, n, raw.length)
      process.stdout.write(`Postfix relay (unsigned): ${fmtInt(n / postfix.s)}/s\n`)
    } else if (!available.ok && !values['no-postfix']) process.stdout.write(`Postfix: ${postfixNote}\n${POSTFIX_INSTALL_HINT}\n`)
    const unsigned = await mailroomRun(sink, dns, n, concurrency, false, warmup)
    process.stdout.write(`mailroom without DKIM: accepted ${fmtInt(n / unsigned.acceptS)}/s, delivered ${fmtInt(n / unsigned.deliverS)}/s\n`)
    const signed = await mailroomRun(sink, dns, n, concurrency, true, warmup)
    process.stdout.write(`mailroom with DKIM: accepted ${fmtInt(n / signed.acceptS)}/s, delivered ${fmtInt(n / signed.deliverS)}/s\n`)
    const signing = await signingAlone(n, Buffer.from(raw))
    process.stdout.write(`DKIM signing alone: ${fmtInt(n / signing.s)}/s, ${signing.cpuMs.toFixed(3)} CPU ms a signature\n`)
    // What two cores allow once the signatures and the harness (sink, load client) are paid, with Mailroom's own work at zero.
    const harnessMs = signed.cpu.sink + signed.cpu.client
    const ceiling = 2000 / (signing.cpuMs + harnessMs)

    const ms = (v: number | null) => (v === null ? '' : v.toFixed(3))
    const cpuCells = (c: CpuShare) => [ms(c.server), ms(c.sink), ms(c.client), ms((c.server ?? 0) + c.sink + c.client)]
    // Mailroom's own CPU a message: the server's CPU time, less the signatures in the signed run.
    const ownUnsigned = unsigned.cpu.server ?? 0
    const ownSigned = (signed.cpu.server ?? 0) - signing.cpuMs
    const dkimOverPostfix = postfix ? postfix.s / signed.deliverS : null
    const unsignedOverPlain = plainS / unsigned.deliverS
    const dnsPerMessage = (unsigned.dnsQueries + signed.dnsQueries) / (2 * n)
    const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met')
    const aims = [
      [
        'Mailroom with DKIM / Postfix unsigned',
        dkimOverPostfix === null ? `Postfix ${postfixNote || 'not run'}` : dkimOverPostfix.toFixed(2),
        `>= ${AIM_DKIM_OVER_POSTFIX}`,
        dkimOverPostfix === null ? '' : verdict(dkimOverPostfix >= AIM_DKIM_OVER_POSTFIX),
      ],
      [
        'Mailroom unsigned / plain client',
        unsignedOverPlain.toFixed(2),
        `>= ${AIM_UNSIGNED_OVER_PLAIN}`,
        verdict(unsignedOverPlain >= AIM_UNSIGNED_OVER_PLAIN),
      ],
      ['Mailroom own CPU ms/msg, unsigned', ownUnsigned.toFixed(3), `<= ${AIM_OWN_CPU_MS}`, verdict(ownUnsigned <= AIM_OWN_CPU_MS)],
      ['Mailroom own CPU ms/msg, DKIM run less signing', ownSigned.toFixed(3), `<= ${AIM_OWN_CPU_MS}`, verdict(ownSigned <= AIM_OWN_CPU_MS)],
      [
        'DNS queries per delivered message (warm cache)',
        `${dnsPerMessage.toFixed(4)} (${unsigned.dnsQueries} + ${signed.dnsQueries})`,
        `<= ${AIM_DNS_PER_MESSAGE}`,
        verdict(dnsPerMessage <= AIM_DNS_PER_MESSAGE),
      ],
    ]
    const aimHead = ['measure (same run)', 'value', 'aim', '']
    const postfixRow = postfix
      ? [
          'Postfix relay, unsigned (smtp-source, 10 sessions)',
          `${fmtInt(n / postfix.acceptS)}/s`,
          `${fmtInt(n / postfix.s)}/s (${postfix.s.toFixed(2)} s)`,
          `${(plainS / postfix.s).toFixed(2)}`,
          '',
          '',
          '',
          '',
        ]
      : ['Postfix relay, unsigned', '', postfixNote, '', '', '', '', '']
    const rows = [
      ['plain SMTP client to the sink (the limit)', '', `${fmtInt(n / plainS)}/s (${plainS.toFixed(2)} s)`, '', ...cpuCells(plain.cpu)],
      postfixRow,
      [
        'Mailroom, no DKIM',
        `${fmtInt(n / unsigned.acceptS)}/s`,
        `${fmtInt(n / unsigned.deliverS)}/s (${unsigned.deliverS.toFixed(2)} s)`,
        `${(plainS / unsigned.deliverS).toFixed(2)}`,
        ...cpuCells(unsigned.cpu),
      ],
      [
        'Mailroom, DKIM rsa-sha256 2048',
        `${fmtInt(n / signed.acceptS)}/s`,
        `${fmtInt(n / signed.deliverS)}/s (${signed.deliverS.toFixed(2)} s)`,
        `${(plainS / signed.deliverS).toFixed(2)}`,
        ...cpuCells(signed.cpu),
      ],
      [
        `DKIM signing alone (signer pool, ${signing.threads} threads)`,
        '',
        `${fmtInt(n / signing.s)}/s signed (${signing.s.toFixed(2)} s)`,
        '',
        ms(signing.cpuMs),
        '',
        '',
        ms(signing.cpuMs),
      ],
    ]
    const head = ['path', 'accepted (HTTP 202)', 'delivered end to end', 'share of the limit', 'CPU ms/msg: Mailroom', 'sink', 'load client', 'all']
    process.stdout.write(`\n${textTable(head, rows)}\n\n${textTable(aimHead, aims)}\n`)
    const met = n / signed.deliverS >= AIM_DKIM_PER_S
    if (!values['dry-run']) {
      writeDocSection(
        'delivery',
        `## Delivery: ${fmtInt(n)} messages through /v1/send to an SMTP sink

Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${command}\` (bench/delivery.ts).

${markdownTable(head, rows)}

Issue 18's aims, as ratios of this run:

${markdownTable(aimHead, aims)}

Aim: at least ${fmtInt(AIM_DKIM_PER_S)} delivered/s end to end with DKIM: **${met ? 'met' : 'not met'}**.

Ceiling in this run: a signature cost ${signing.cpuMs.toFixed(3)} ms of CPU and the harness (sink and load client) ${harnessMs.toFixed(3)} ms a message, so two cores
(2,000 CPU ms a second) could deliver at most **${fmtInt(ceiling)} signed messages a second** if Mailroom's own work (HTTP, queue, commits, SMTP client) cost nothing.

- Warm-up: ${warmup > 0 ? `${fmtInt(warmup)} messages through the plain client and through each Mailroom server before its measured run, unmeasured. ${WARMUP_NOTE}` : 'none (\`--warmup 0\`): cold servers, their JIT compiling included.'}
- Messages: ${fmtInt(raw.length)} bytes (HTML body), one recipient each, all at \`${DOMAIN}\` (one destination, so the per-destination connection limit applies: \`destination_concurrency\` 20 by default).
- Mailroom: \`mailroom serve\` in its own process on a fresh data directory, access log off; ${concurrency} HTTP requests in flight, keep-alive. "Accepted" is the rate of 202 answers (each committed to disk); "delivered" is from the first request to the sink counting the last message, so it includes the accepting.
- DNS: a DNS server on loopback (test/support/dns-server.ts) answers the MX and A lookups (TTL 60 s, cached by the engine); with DKIM, the sending domain was created, its records published there and verified over the API first.
- CPU: user + system time of each process over the run (all its threads; /proc/PID/stat), divided by the messages. "Mailroom" is the server with its signing and checkpoint threads; "load client" is this benchmark process (the HTTP requests, or the plain SMTP client, and polling the sink's count). Two cores give at most 2,000 ms of CPU a second, so "all" bounds the rate at 2,000 / all messages a second.
- Signing alone: the server's signer pool (\`src/delivery/signer-pool.ts\`, one worker thread per core) in this process, signing the same message with a fresh RSA-2048 key, 64 in flight; CPU is this process's over that loop.
- Postfix: Debian's package run by bench/peers.ts from a directory of its own under /tmp, one smtpd on 127.0.0.1 only, relaying everything to the same sink (\`relayhost = [127.0.0.1]:SINK\`, 20 connections per destination as Mailroom), queue fsync'd as shipped; fed by \`smtp-source -s 10\` with messages of the same size; its "delivered" is from smtp-source's start to the sink counting the last message. Stopped and removed afterwards.
- Mailroom's own CPU: the server's CPU per message in the unsigned run, and in the DKIM run less the CPU a signature cost in "signing alone". DNS queries: counted at the test DNS server during both Mailroom runs (after verifying the domain), divided by the messages delivered.
- Sink: smtp-server in its own process, no TLS, discards the bytes and counts (bench/support/counting-sink.ts). The plain client is nodemailer's pooled SMTP transport with 8 connections sending the same prebuilt message.
- Machine: ${machine.nproc} CPUs, ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.kernel}, Bun ${machine.bun}; load average ${machine.loadAverage} at the start.`,
      )
    }
    return 0
  } finally {
    await stopAll()
    await dns.close()
  }
}

if (import.meta.main) process.exit(await run(process.argv.slice(2), 'bun bench/delivery.ts'))
