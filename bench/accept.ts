/**
 * Send accept (issue 18): `POST /v1/send` alone, with the MX silent so delivery takes no CPU
 * from it, against a reference doing the least a durable accept can do ("Elysia + one
 * bun:sqlite insert per request with group commit, 202 after commit",
 * bench/support/accept-reference.ts), in the same run, alternating, with wrk at 64
 * connections. Aims: Mailroom at least 0.8 of the reference; p99 under 20 ms.
 *
 *   bun bench/accept.ts [--rounds 3] [--duration 10] [--connections 64] [--dry-run]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { DOMAIN, HTML, startBenchDns, startSilentMx } from './delivery'
import { fmtInt, fmtMs, machineInfo, markdownTable, median, textTable, writeDocSection } from './support/report'
import { startMailroom, startServer, stopAll, type MailroomInstance, type ServerProcess } from './support/servers'
import { findWrk, requestScript, runWrk, WRK_INSTALL_HINT, wrkVersion, type WrkResult } from './support/wrk'

const AIM_RATIO = 0.8
const AIM_P99_MS = 20

const HELP = `Usage: bun bench/accept.ts [options]   (or: npm run bench -- accept [options])

  --rounds N        measured runs per target, alternating (default 3)
  --duration S      seconds per measured run (default 10), after 2 s of unrecorded warm-up
  --connections N   wrk connections (default 64)
  --dry-run         print the results without rewriting docs/benchmarks.md
`

export const ACCEPT_BODY = JSON.stringify({ from: `Bench <ada@${DOMAIN}>`, to: `user@${DOMAIN}`, subject: 'Benchmark message', html: HTML })

/**
 * How the accept benchmarks start Mailroom: its DNS the benchmark's (startBenchDns), whose MX
 * for the benchmark domain is the silent listener on `mxPort`; access log off. Without a DNS
 * server every lookup failed, so each message was deferred for DNS after one attempt (and
 * under Bun's resolver the event loop spun meanwhile: docs/benchmarks.md, ninth round).
 */
export function acceptServerOptions(mxPort: number, dnsServer: string) {
  return {
    rateLimit: 'unlimited' as const,
    settings: {
      MAILROOM_MX_PORT: String(mxPort),
      MAILROOM_DNS_SERVERS: dnsServer,
      MAILROOM_HOSTNAME: 'mailroom.bench',
      MAILROOM_ALLOW_UNVERIFIED_DOMAINS: 'true',
      MAILROOM_LOG_LEVEL: 'warn',
      MAILROOM_SMTP_LISTEN: 'off',
    },
    serveArgs: ['--access-log', 'false'],
  }
}

/** Runs the benchmark; resolves to the process exit code. */
export async function run(argv: string[], command = 'bun bench/accept.ts'): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      rounds: { type: 'string' },
      duration: { type: 'string' },
      connections: { type: 'string' },
      'dry-run': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return (process.stdout.write(HELP), 0)
  const wrk = findWrk()
  if (!wrk) return (process.stderr.write(WRK_INSTALL_HINT + '\n'), 1)
  const rounds = Number(values.rounds ?? 3)
  const settings = { threads: 2, connections: Number(values.connections ?? 64), durationS: Number(values.duration ?? 10), timeoutS: 10 }
  const machine = machineInfo()
  const refDir = mkdtempSync(join(tmpdir(), 'mailroom-bench-reference-'))
  const mx = await startSilentMx()
  const dns = await startBenchDns()
  const script = requestScript('POST', ACCEPT_BODY)
  try {
    const reference: ServerProcess = await startServer('reference', ['bench/support/accept-reference.ts', refDir], { pattern: /listening on (http:\/\/\S+)/ })
    const mailroom: MailroomInstance = await startMailroom('mailroom-accept', acceptServerOptions(mx.port, dns.server))
    const targets: Array<{ id: string; label: string; server: ServerProcess; headers: Record<string, string> }> = [
      {
        id: 'reference',
        label: 'reference: Elysia + bun:sqlite insert, group commit, 202',
        server: reference,
        headers: { 'content-type': 'application/json' },
      },
      {
        id: 'mailroom',
        label: 'Mailroom POST /v1/send (MX silent)',
        server: mailroom,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${mailroom.key}` },
      },
    ]
    for (const t of targets) {
      const res = await fetch(`${t.server.url}/v1/send`, { method: 'POST', headers: t.headers, body: ACCEPT_BODY })
      if (res.status !== 202) throw new Error(`${t.id}: POST /v1/send answered ${res.status}: ${await res.text()}`)
    }
    const runs = new Map<string, WrkResult[]>(targets.map((t) => [t.id, []]))
    for (let round = 1; round <= rounds; round++) {
      for (const t of targets) {
        await runWrk(wrk, `${t.server.url}/v1/send`, { ...settings, durationS: 2 }, t.headers, script)
        const r = await runWrk(wrk, `${t.server.url}/v1/send`, settings, t.headers, script)
        const errors = Object.values(r.errors).reduce((a, b) => a + b, 0)
        if (errors > 0) throw new Error(`${t.id}: wrk reported errors ${JSON.stringify(r.errors)}`)
        runs.get(t.id)!.push(r)
        process.stdout.write(
          `  round ${round}/${rounds}  ${t.id.padEnd(10)} ${fmtInt(r.rps).padStart(7)} req/s  p50 ${fmtMs(r.latencyMs.p50)} ms  p99 ${fmtMs(r.latencyMs.p99)} ms\n`,
        )
      }
    }
    const summary = targets.map((t) => {
      const rs = runs.get(t.id)!
      return { t, rps: median(rs.map((r) => r.rps)), p99: median(rs.map((r) => r.latencyMs.p99)), per: rs.map((r) => fmtInt(r.rps)).join(' / ') }
    })
    const [ref, mr] = summary as [(typeof summary)[0], (typeof summary)[0]]
    const ratio = mr.rps / ref.rps
    const head = ['target', 'accepted/s (median)', 'per round', 'ratio to reference', 'p99 ms (median)']
    const rows = summary.map((s) => [s.t.label, fmtInt(s.rps), s.per, (s.rps / ref.rps).toFixed(3), fmtMs(s.p99)])
    const verdict = `ratio ${ratio.toFixed(3)} (aim >= ${AIM_RATIO}: ${ratio >= AIM_RATIO ? 'met' : 'NOT met'}); Mailroom p99 ${fmtMs(mr.p99)} ms (aim < ${AIM_P99_MS}: ${mr.p99 < AIM_P99_MS ? 'met' : 'NOT met'})`
    process.stdout.write(`\n${textTable(head, rows)}\n\n${verdict}\n`)
    if (!values['dry-run']) {
      writeDocSection(
        'accept',
        `## Send accept: POST /v1/send against a minimal durable accept

Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${command}\` (bench/accept.ts).

${markdownTable(head, rows)}

${verdict}.

- Body: the same ${fmtInt(ACCEPT_BODY.length)}-byte JSON send (about 5 KB of HTML) every request; no idempotency key, so each is a new message.
- Mailroom: \`mailroom serve\`, access log off, unverified domains allowed, its MX (answered by a DNS server on loopback) a listener that accepts and never answers (so the engine holds a hundred deliveries at the greeting and the rest stays queued).
- Reference: bench/support/accept-reference.ts, Elysia with one \`INSERT\` of the body per request into bun:sqlite (WAL, synchronous=FULL), group commit, 202 after the commit.
- Load: ${wrkVersion(wrk)}, ${settings.threads} threads, ${settings.connections} connections, ${settings.durationS} s measured after 2 s of warm-up, ${rounds} rounds alternating; medians.
- Machine: ${machine.nproc} CPUs, ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.kernel}, Bun ${machine.bun}; load average ${machine.loadAverage} at the start.
`,
      )
    }
    return 0
  } finally {
    await stopAll()
    await mx.close()
    await dns.close()
    rmSync(refDir, { recursive: true, force: true })
  }
}

if (import.meta.main) process.exit(await run(process.argv.slice(2)))
