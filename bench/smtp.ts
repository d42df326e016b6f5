/**
 * SMTP submission benchmark (issue 5): messages per second accepted through Mailroom's
 * submission listener, each one committed to disk before its 250, from many parallel
 * authenticated STARTTLS sessions of a real SMTP client (nodemailer's pooled transport);
 * beside the same client against a listener that does the same protocol work (STARTTLS,
 * AUTH, SIZE) and discards the message: the ceiling of the client, the TLS and smtp-server.
 *
 * Aim on a 2-core machine: at least half of the discarding listener's rate.
 *
 *   bun bench/smtp.ts [--messages 10000] [--connections 32,128] [--dry-run]
 */
import { createServer, type Server, type Socket } from 'node:net'
import { parseArgs } from 'node:util'
import nodemailer from 'nodemailer'
import { startDnsServer } from '../test/support/dns-server'
import { fmtInt, machineInfo, markdownTable, textTable, writeDocSection } from './support/report'
import { freePort, startMailroom, startServer, stopAll, type MailroomInstance } from './support/servers'

const AIM_SHARE = 0.5
const DOMAIN = 'bench.example'
const HOSTNAME = 'mailroom.bench'
const WARMUP = 500

const HELP = `Usage: bun bench/smtp.ts [options]   (or: npm run bench -- smtp [options])

  --messages N      messages per measured run (default 10000)
  --connections N,M parallel SMTP sessions of the client, one run per number (default 32,128)
  --dry-run         print the results without rewriting docs/benchmarks.md
`

/** About 5 KB of HTML, as in the delivery benchmark. */
const HTML = `<html><body>${'<p>The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.</p>\n'.repeat(55)}</body></html>`

interface Target {
  port: number
  user: string
  pass: string
}

/** Sends `n` copies of `raw` through a pool of `connections` sessions; resolves to the seconds until the last 250. */
async function blast(target: Target, n: number, connections: number, raw: string, offset: number): Promise<number> {
  const transport = nodemailer.createTransport({
    pool: true,
    host: '127.0.0.1',
    port: target.port,
    maxConnections: connections,
    maxMessages: Infinity,
    requireTLS: true,
    tls: { rejectUnauthorized: false },
    auth: { user: target.user, pass: target.pass },
  })
  try {
    const t0 = performance.now()
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const info = await transport.sendMail({ envelope: { from: `app@${DOMAIN}`, to: [`user${offset + i}@${DOMAIN}`] }, raw })
        if (!info.response.startsWith('250')) throw new Error(`unexpected reply: ${info.response}`)
      }),
    )
    return (performance.now() - t0) / 1000
  } finally {
    transport.close()
  }
}

/** Waits until the SMTP port greets and accepts the credentials (the listener starts just after HTTP). */
async function ready(target: Target): Promise<void> {
  const end = Date.now() + 30_000
  for (;;) {
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: target.port,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
      auth: { user: target.user, pass: target.pass },
    })
    try {
      await transport.verify()
      return
    } catch (e) {
      if (Date.now() > end) throw new Error(`the SMTP listener on port ${target.port} never became ready: ${(e as Error).message}`)
      await Bun.sleep(100)
    } finally {
      transport.close()
    }
  }
}

async function api(server: MailroomInstance, path: string, body: unknown) {
  const res = await fetch(server.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const json = (await res.json()) as { data: Record<string, any> }
  if (!res.ok) throw new Error(`POST ${path}: HTTP ${res.status} ${JSON.stringify(json)}`)
  return json.data
}

export async function run(argv: string[], command: string): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { messages: { type: 'string' }, connections: { type: 'string' }, 'dry-run': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  })
  if (values.help) return (process.stdout.write(HELP), 0)
  const n = Number(values.messages ?? 10000)
  const sessions = String(values.connections ?? '32,128')
    .split(',')
    .map(Number)
  const machine = machineInfo()

  // The recipients' MX accepts TCP and never answers: the delivery engine runs but stays
  // idle, so the figure is the listener's and not shared with delivery (bench/delivery.ts
  // measures that).
  const held: Socket[] = []
  const blackHole: Server = createServer((s) => held.push(s))
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve))
  const dns = await startDnsServer({
    ttl: 60,
    zones: { [DOMAIN]: { MX: [{ exchange: `mx.${DOMAIN}`, priority: 10 }] }, [`mx.${DOMAIN}`]: { A: ['127.0.0.1'] }, [HOSTNAME]: { A: ['127.0.0.1'] } },
  })
  try {
    const sample = await nodemailer
      .createTransport({ streamTransport: true, buffer: true })
      .sendMail({ from: `Bench <app@${DOMAIN}>`, to: `user@${DOMAIN}`, subject: 'Benchmark message', html: HTML })
    const raw = (sample.message as Buffer).toString()
    process.stdout.write(`message size ${fmtInt(raw.length)} bytes; ${fmtInt(n)} messages per run; ${sessions.join(', ')} sessions\n`)

    // The ceiling: the discarding listener in its own process.
    const discard = await startServer('discard', ['bench/support/discard-submission.ts'], { pattern: /listening smtp=(\d+)/ })
    const ceilingTarget = { port: Number(discard.url), user: 'bench', pass: 'bench' }
    const ceilingS: number[] = []
    await ready(ceilingTarget)
    for (const c of sessions) {
      await blast(ceilingTarget, WARMUP, c, raw, 0)
      ceilingS.push(await blast(ceilingTarget, n, c, raw, 0))
      process.stdout.write(`discarding listener, ${c} sessions: ${fmtInt(n / ceilingS.at(-1)!)}/s\n`)
    }
    await discard.stop()

    const smtpPort = await freePort()
    const server = await startMailroom('mailroom-smtp', {
      rateLimit: 'unlimited',
      settings: {
        MAILROOM_SMTP_LISTEN: `127.0.0.1:${smtpPort}`,
        MAILROOM_MX_PORT: String((blackHole.address() as { port: number }).port),
        MAILROOM_DNS_SERVERS: dns.server,
        MAILROOM_HOSTNAME: HOSTNAME,
        MAILROOM_ALLOW_UNVERIFIED_DOMAINS: 'true',
        MAILROOM_LOG_LEVEL: 'warn',
      },
      serveArgs: ['--access-log', 'false'],
    })
    const mailroomS: number[] = []
    let accepted: number
    try {
      await api(server, '/api/v2/sending-domains', { name: DOMAIN })
      const bridge = await api(server, '/api/v2/bridges', { name: 'bench', domains: [DOMAIN] })
      const target = { port: smtpPort, user: bridge.smtp.username as string, pass: bridge.smtp.password as string }
      await ready(target)
      let sent = 0
      for (const c of sessions) {
        await blast(target, WARMUP, c, raw, sent)
        mailroomS.push(await blast(target, n, c, raw, sent + WARMUP))
        sent += WARMUP + n
        process.stdout.write(`mailroom, ${c} sessions: ${fmtInt(n / mailroomS.at(-1)!)}/s\n`)
      }
      const view = await (await fetch(`${server.url}/api/v2/bridges/${bridge.id}`, { headers: { authorization: `Bearer ${server.key}` } })).json()
      accepted = (view as { data: { counts: { accepted: number } } }).data.counts.accepted
    } finally {
      await server.dispose()
    }
    const expected = sessions.length * (n + WARMUP)
    if (accepted !== expected) throw new Error(`the bridge counted ${accepted} accepted messages, expected ${expected}`)

    const rows = sessions.flatMap((c, i) => [
      [`${c}`, 'discarding listener (the ceiling)', `${fmtInt(n / ceilingS[i]!)}/s`, `${ceilingS[i]!.toFixed(2)} s`, '1.00'],
      [
        `${c}`,
        'Mailroom (checked, committed before each 250)',
        `${fmtInt(n / mailroomS[i]!)}/s`,
        `${mailroomS[i]!.toFixed(2)} s`,
        (ceilingS[i]! / mailroomS[i]!).toFixed(2),
      ],
    ])
    // Judged at the most sessions: the aim is about throughput under load.
    const share = ceilingS.at(-1)! / mailroomS.at(-1)!
    const head = ['sessions', 'listener', 'accepted', 'time', 'share of the ceiling']
    process.stdout.write(`\n${textTable(head, rows)}\n`)
    if (!values['dry-run']) {
      writeDocSection(
        'smtp',
        `## SMTP submission: ${fmtInt(n)} messages per run over ${sessions.join(' and ')} authenticated STARTTLS sessions

Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${command}\` (bench/smtp.ts).

${markdownTable(head, rows)}

Aim: at least ${AIM_SHARE * 100} % of the discarding listener's rate with ${sessions.at(-1)} sessions: **${share >= AIM_SHARE ? 'met' : 'not met'}** (${Math.round(share * 100)} %).

- Why the session count matters: a session waits for each 250, and Mailroom answers only after the group commit that holds the message has reached the disk (\`synchronous=FULL\`; commits are paced at least 4 ms apart and at least twice as long as the last one took, src/db/group-commit.ts). With few sessions the rate is bound by that latency (sessions / commit round trip), not by CPU; with more sessions each commit carries more messages. The discarding listener answers at once, so its rate depends on the client alone.
- Client: nodemailer's pooled SMTP transport in the benchmark process, one pool per run with as many connections as sessions, STARTTLS (self-signed certificate, not verified), AUTH PLAIN, each session reused for every message; the same prebuilt ${fmtInt(raw.length)}-byte message (HTML body) with one recipient each. ${fmtInt(WARMUP)} messages of warm-up (connections, TLS, JIT) first, not counted.
- Mailroom: \`mailroom serve\` in its own process on a fresh data directory; a bridge created over the API; every message parsed, checked against the bridge (domains, quota, suppressions) and committed (message, recipient row, event; group commit, \`synchronous=FULL\`) before its 250. The bridge's \`accepted\` count is checked against the number sent. The delivery engine runs, but the recipients' MX accepts TCP and never answers, so delivery takes no share of the machine (bench/delivery.ts measures delivery).
- Ceiling: smtp-server in its own process with the same options (STARTTLS, AUTH, SIZE, enhanced status codes), any credentials accepted, messages read and discarded (bench/support/discard-submission.ts).
- Postfix's \`smtp-source\` was not used so that the benchmark needs nothing outside the repository; nodemailer's pool plays the load client for both listeners.
- Machine: ${machine.nproc} CPUs, ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.kernel}, Bun ${machine.bun}; load average ${machine.loadAverage} at the start.`,
      )
    }
    return 0
  } finally {
    await stopAll()
    await dns.close()
    for (const s of held) s.destroy()
    blackHole.close()
  }
}

if (import.meta.main) process.exit(await run(process.argv.slice(2), 'bun bench/smtp.ts'))
