/**
 * HTTP benchmark: requests per second of an authenticated, rate-limited, logged Mailroom GET
 * against a bare `Bun.serve` hello-world, both measured in the same run on the same machine
 * with wrk. The aim is at least half the bare server's rate.
 *
 * Both servers are child processes; wrk is a third process. Targets are measured
 * alternately (round 1: A B, round 2: A B, ...) with the same settings and the median of the
 * rounds is reported, so the noise of a shared machine falls on both. Every measured request
 * must get its expected status (200; 401 and 404 for two profile targets), or the run fails.
 *
 *   bun bench/http.ts [--rounds 3] [--duration 10] [--warmup 2] [--threads 2]
 *                     [--connections 50] [--timeout 10] [--profile] [--dry-run]
 *
 * --profile adds targets that show where Mailroom's time goes (a bare Elysia app, /health, a
 * 401, an authenticated 404 that runs the key check but no handler, a route with one DB read,
 * the access log off) and writes its own section of docs/benchmarks.md; --dry-run leaves
 * docs/benchmarks.md alone.
 */
import { parseArgs } from 'node:util'
import { positiveInt } from './support/args'
import { BENCHMARKS_DOC, fmtInt, fmtMs, machineInfo, markdownTable, median, textTable, writeDocSection, type MachineInfo } from './support/report'
import { startBare, startElysia, startMailroom, stopAll, type MailroomInstance, type ServerProcess } from './support/servers'
import { findWrk, runWrk, WRK_INSTALL_HINT, wrkVersion, type WrkResult, type WrkSettings } from './support/wrk'

/** Requests per minute for the benchmark key: the limiter counts every request and refuses none. */
const RATE_LIMIT = 100_000_000
/** The authenticated GET of the headline figure: reads the benchmark key's own row. */
const MAILROOM_PATH = '/api/v2/api-keys/1'
const AIM = 0.5

interface Target {
  id: string
  label: string
  server: ServerProcess
  path: string
  headers: Record<string, string>
  expectStatus: number
  /** In the headline comparison (the rest only with --profile). */
  headline: boolean
}

interface TargetResult {
  target: Target
  runs: WrkResult[]
  rps: number
  p50: number
  p99: number
}

const HELP = `Usage: bun bench/http.ts [options]   (or: npm run bench -- http [options])

  --rounds N        measured runs per target, alternating targets (default 3)
  --duration S      seconds per measured run (default 10; 5 with --profile)
  --warmup S        seconds of unrecorded load before each measured run (default 2; 1 with --profile)
  --threads N       wrk threads (default 2)
  --connections N   wrk connections, kept open (default 50)
  --timeout S       wrk request timeout; a timeout fails the run (default 10)
  --profile         also measure a bare Elysia app, /health, a 401, an authenticated 404,
                    /api/v2/roles/1, the access log off and validate_responses on
                    (about 4 min); writes its own
                    doc section (the headline section is left as it is)
  --dry-run         print the results without rewriting docs/benchmarks.md
`

/** Sends one request and checks its status (and envelope) before any load is applied. */
async function preflight(t: Target): Promise<void> {
  const res = await fetch(t.server.url + t.path, { headers: t.headers })
  const body = await res.text()
  if (res.status !== t.expectStatus) throw new Error(`${t.label}: expected HTTP ${t.expectStatus} from GET ${t.path}, got ${res.status}: ${body.slice(0, 300)}`)
  if (t.server.name.startsWith('mailroom') && t.expectStatus === 200 && !body.startsWith('{"success":true'))
    throw new Error(`${t.label}: 200 without the success envelope: ${body.slice(0, 300)}`)
}

/** Fails loudly unless every response had the target's status and no socket failed. */
function checkRun(t: Target, r: WrkResult, phase: string): void {
  const e = r.errors
  const problems: string[] = []
  if (r.requests === 0) problems.push('no request completed')
  if (e.connect || e.read || e.write || e.timeout) problems.push(`socket errors: connect ${e.connect}, read ${e.read}, write ${e.write}, timeout ${e.timeout}`)
  // wrk counts a response as a status error when its status is above 399.
  if (t.expectStatus < 400 && e.status !== 0) problems.push(`${e.status} of ${r.requests} responses were not 2xx (status >= 400)`)
  if (t.expectStatus >= 400 && e.status !== r.requests)
    problems.push(`${r.requests - e.status} of ${r.requests} responses were not the expected ${t.expectStatus}`)
  if (problems.length)
    throw new Error(`${t.label} (${phase}): ${problems.join('; ')}. The figures would be meaningless; fix the server or the settings and run again.`)
}

/**
 * Reads a Mailroom log file and counts its access-log lines by status, streaming (the log of a
 * fast target runs to hundreds of MB).
 */
async function accessLogStatuses(file: string): Promise<Map<number, number>> {
  const counts = new Map<number, number>()
  const decoder = new TextDecoder()
  let rest = ''
  const take = (line: string) => {
    if (!line.includes('"msg":"request"')) return
    const m = /"status":(\d+)/.exec(line)
    const status = m ? Number(m[1]) : 0
    counts.set(status, (counts.get(status) ?? 0) + 1)
  }
  for await (const chunk of Bun.file(file).stream()) {
    const text = rest + decoder.decode(chunk, { stream: true })
    const lines = text.split('\n')
    rest = lines.pop()!
    for (const line of lines) take(line)
  }
  take(rest)
  return counts
}

/** Resolves once `file` has stopped growing for a second (at most 15 s). */
async function waitUntilSettled(file: string): Promise<void> {
  let last = -1
  for (let waited = 0, still = 0; waited < 15_000 && still < 4; waited += 250) {
    const size = Bun.file(file).size
    still = size === last ? still + 1 : 0
    last = size
    await Bun.sleep(250)
  }
}

function summarize(target: Target, runs: WrkResult[]): TargetResult {
  return {
    target,
    runs,
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.latencyMs.p50)),
    p99: median(runs.map((r) => r.latencyMs.p99)),
  }
}

function resultRows(results: TargetResult[], bare: TargetResult): string[][] {
  return results.map((r) => [
    r.target.label,
    fmtInt(r.rps),
    r.runs.map((x) => fmtInt(x.rps)).join(' / '),
    r === bare ? '1' : (r.rps / bare.rps).toFixed(3),
    fmtMs(r.p50),
    fmtMs(r.p99),
  ])
}

const HEAD = ['target', 'req/s (median)', 'req/s per round', 'ratio to bare', 'p50 ms', 'p99 ms']

function settingsText(s: WrkSettings & { warmupS: number; rounds: number }, wrk: string): string {
  return `${wrk}; ${s.threads} threads, ${s.connections} connections (keep-alive), ${s.durationS} s measured after ${s.warmupS} s of unrecorded warm-up per run, timeout ${s.timeoutS} s; ${s.rounds} rounds, targets alternating in each round; median of the rounds`
}

function machineText(m: MachineInfo): string {
  return `${m.nproc} CPUs (nproc), ${m.cpuModel}, ${m.memoryGiB} GiB, ${m.kernel}, Bun ${m.bun}; load average ${m.loadAverage} at the start`
}

/** Runs the benchmark; resolves to the process exit code. `command` is how it was invoked, for the doc. */
export async function run(argv: string[], command = 'bun bench/http.ts'): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      rounds: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      threads: { type: 'string' },
      connections: { type: 'string' },
      timeout: { type: 'string' },
      profile: { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return (process.stdout.write(HELP), 0)
  const profile = values.profile ?? false
  // The profile has many targets: shorter runs keep it to a few minutes.
  const settings = {
    rounds: positiveInt('rounds', values.rounds, 3),
    durationS: positiveInt('duration', values.duration, profile ? 5 : 10),
    warmupS: values.warmup === '0' ? 0 : positiveInt('warmup', values.warmup, profile ? 1 : 2),
    threads: positiveInt('threads', values.threads, 2),
    connections: positiveInt('connections', values.connections, 50),
    timeoutS: positiveInt('timeout', values.timeout, 10),
  }
  if (settings.connections < settings.threads) throw new Error('--connections must be at least --threads (wrk gives each thread its share)')

  const wrk = findWrk()
  if (!wrk) {
    process.stderr.write(WRK_INSTALL_HINT + '\n')
    return 1
  }
  const wrkName = wrkVersion(wrk)
  const machine = machineInfo()
  const started = new Date()

  const servers: Array<ServerProcess | MailroomInstance> = []
  try {
    const bare = await startBare()
    servers.push(bare)
    const mailroom = await startMailroom('mailroom', { rateLimit: RATE_LIMIT, settings: { MAILROOM_ACCESS_LOG: 'true' } })
    servers.push(mailroom)
    const auth = { authorization: `Bearer ${mailroom.key}` }

    const targets: Target[] = [
      { id: 'bare', label: 'bare Bun.serve hello-world', server: bare, path: '/', headers: {}, expectStatus: 200, headline: true },
      {
        id: 'mailroom',
        label: `Mailroom GET ${MAILROOM_PATH} (auth, limit, access log)`,
        server: mailroom,
        path: MAILROOM_PATH,
        headers: auth,
        expectStatus: 200,
        headline: true,
      },
    ]
    let quiet: MailroomInstance | null = null
    if (profile) {
      const elysia = await startElysia()
      servers.push(elysia)
      quiet = await startMailroom('mailroom-no-access-log', { rateLimit: RATE_LIMIT, settings: { MAILROOM_ACCESS_LOG: 'false' } })
      servers.push(quiet)
      const quietAuth = { authorization: `Bearer ${quiet.key}` }
      // Issue 18: the same route with the runtime response check on (validate_responses=true; off by default, decision 68).
      const checked = await startMailroom('mailroom-response-check', {
        rateLimit: RATE_LIMIT,
        settings: { MAILROOM_ACCESS_LOG: 'true', MAILROOM_VALIDATE_RESPONSES: 'true' },
      })
      servers.push(checked)
      targets.push(
        { id: 'elysia', label: 'bare Elysia hello-world (framework floor)', server: elysia, path: '/', headers: {}, expectStatus: 200, headline: false },
        { id: 'health', label: 'Mailroom GET /health (public)', server: mailroom, path: '/health', headers: {}, expectStatus: 200, headline: false },
        {
          id: 'unauth',
          label: `Mailroom GET ${MAILROOM_PATH} without key -> 401`,
          server: mailroom,
          path: MAILROOM_PATH,
          headers: {},
          expectStatus: 401,
          headline: false,
        },
        // Authenticated, then no route: the whole key check and rate limiter, but no handler.
        {
          id: 'auth-404',
          label: 'Mailroom GET /api/v2/no-such-route with key -> 404',
          server: mailroom,
          path: '/api/v2/no-such-route',
          headers: auth,
          expectStatus: 404,
          headline: false,
        },
        {
          id: 'role',
          label: 'Mailroom GET /api/v2/roles/1 (auth, one DB read)',
          server: mailroom,
          path: '/api/v2/roles/1',
          headers: auth,
          expectStatus: 200,
          headline: false,
        },
        { id: 'health-nolog', label: 'Mailroom GET /health, access log off', server: quiet, path: '/health', headers: {}, expectStatus: 200, headline: false },
        {
          id: 'check',
          label: `Mailroom GET ${MAILROOM_PATH}, validate_responses on`,
          server: checked,
          path: MAILROOM_PATH,
          headers: { authorization: `Bearer ${checked.key}` },
          expectStatus: 200,
          headline: false,
        },
        {
          id: 'nolog',
          label: `Mailroom GET ${MAILROOM_PATH}, access log off`,
          server: quiet,
          path: MAILROOM_PATH,
          headers: quietAuth,
          expectStatus: 200,
          headline: false,
        },
      )
    }

    for (const t of targets) await preflight(t)
    const perRun = settings.warmupS + settings.durationS
    process.stdout.write(
      `http${profile ? ' --profile' : ''}: ${targets.length} targets x ${settings.rounds} rounds x ${perRun} s = about ${Math.ceil((targets.length * settings.rounds * perRun) / 60)} min\n` +
        `  ${settingsText(settings, wrkName)}\n` +
        servers.map((s) => `  ${s.name} ${s.url} (pid ${s.pid}${'logFile' in s ? `, stderr -> ${s.logFile}` : ''})\n`).join(''),
    )

    const runs = new Map<string, WrkResult[]>(targets.map((t) => [t.id, []]))
    const completed = new Map<ServerProcess, number>()
    const count = (t: Target, r: WrkResult) => completed.set(t.server, (completed.get(t.server) ?? 0) + r.requests)
    for (let round = 1; round <= settings.rounds; round++) {
      for (const t of targets) {
        const url = t.server.url + t.path
        if (settings.warmupS > 0) {
          const w = await runWrk(wrk, url, { ...settings, durationS: settings.warmupS }, t.headers)
          checkRun(t, w, `round ${round} warm-up`)
          count(t, w)
        }
        const r = await runWrk(wrk, url, settings, t.headers)
        checkRun(t, r, `round ${round}`)
        count(t, r)
        runs.get(t.id)!.push(r)
        process.stdout.write(
          `  round ${round}/${settings.rounds}  ${t.id.padEnd(12)} ${fmtInt(r.rps).padStart(8)} req/s  p50 ${fmtMs(r.latencyMs.p50)} ms  p99 ${fmtMs(r.latencyMs.p99)} ms\n`,
        )
      }
    }

    // The access log must have been on: at least one line per completed request, none with a
    // status no target expects. Lines are written after each response, so the server may still
    // be catching up when wrk ends; let it settle before stopping it.
    await waitUntilSettled(mailroom.logFile)
    await mailroom.stop()
    const statuses = await accessLogStatuses(mailroom.logFile)
    const expected = new Set(targets.filter((t) => t.server === mailroom).map((t) => t.expectStatus))
    const logged = [...statuses.values()].reduce((a, b) => a + b, 0)
    const seen = completed.get(mailroom) ?? 0
    const unexpected = [...statuses].filter(([s]) => !expected.has(s))
    if (unexpected.length) throw new Error(`Mailroom's access log shows unexpected statuses: ${unexpected.map(([s, n]) => `${n} x ${s}`).join(', ')}`)
    if (logged < seen) throw new Error(`Mailroom's access log has ${logged} lines for ${seen} completed requests: was the access log on?`)
    const logNote = `the access log has ${fmtInt(logged)} lines for the ${fmtInt(seen)} requests wrk saw completed (${[...statuses].map(([s, n]) => `status ${s}: ${fmtInt(n)}`).join(', ')})`

    const results = targets.map((t) => summarize(t, runs.get(t.id)!))
    const bareResult = results.find((r) => r.target.id === 'bare')!
    const mailroomResult = results.find((r) => r.target.id === 'mailroom')!
    const ratio = mailroomResult.rps / bareResult.rps
    const shown = profile ? results : results.filter((r) => r.target.headline)
    const verdict = ratio >= AIM ? 'met' : 'NOT met'

    process.stdout.write(`\n${textTable(HEAD, resultRows(shown, bareResult))}\n\nratio ${ratio.toFixed(3)} (aim >= ${AIM}: ${verdict})\n${logNote}\n`)
    if (!profile && ratio < AIM) process.stdout.write(`\nThe ratio is below ${AIM}: \`${command} --profile\` shows where the time goes.\n`)

    if (!values['dry-run']) {
      const when = started
        .toISOString()
        .replace(/:\d\d\.\d+Z$/, ' UTC')
        .replace('T', ' ')
      if (!profile) {
        writeDocSection(
          'http',
          `## HTTP: authenticated API against a bare \`Bun.serve\`

Measured ${when} with \`${command}\` (bench/http.ts).

${markdownTable(HEAD, resultRows(shown, bareResult))}

**Ratio ${ratio.toFixed(3)}** (Mailroom / bare, medians); the aim is at least ${AIM}: **${verdict.toLowerCase()}**.

- Bare: \`bench/support/bare-server.ts\`, \`Bun.serve\` answering \`Hello, world!\` (text/plain), in its own process.
- Mailroom: \`mailroom serve\` in its own process on a fresh temporary data directory,
  \`MAILROOM_ACCESS_LOG=true\` (the default) at log level info, stderr (the JSON log, the access
  log among it) written to a regular file in the data directory, not /dev/null. One
  Administrator key with a limit of ${fmtInt(RATE_LIMIT)} requests/minute, so the rate limiter
  counts every request and refuses none.
- Endpoint: \`GET ${MAILROOM_PATH}\` with \`Authorization: Bearer <key>\`, which reads the
  benchmark key's own row: bearer parse, key lookup (indexed SQLite read, SHA-256,
  constant-time compare), IP allowlist, role permission \`api_keys.read\`, rate limiter,
  key-usage recording; then the handler reads the key's row and its role, and the response
  is serialized and logged (not checked against its schema: \`validate_responses\` is off by
  default, decision 68). A GET writes no activity log.
- Load: ${settingsText(settings, wrkName)}. wrk runs in a third process; all traffic is on 127.0.0.1.
- Checks: each target answered exactly the expected status before the load; in every run
  wrk reported no response with a status of 400 or more and no socket error or timeout;
  ${logNote}.
- Machine: ${machineText(machine)}.
`,
        )
      } else {
        writeDocSection(
          'http-profile',
          `### Where Mailroom's time goes (\`--profile\`)

Measured ${when} with \`${command} --profile\`: ${settingsText(settings, wrkName)}.
Every row is a target of the same alternating rounds, so the rows compare with each other
(the headline figures above come from the longer default runs). The 401 row is refused at
the first auth step; the 404 row sends the key to a path with no route, so the whole key
check and the rate limiter run but no handler does. Rows marked "access log off" are a
second Mailroom instance started with \`MAILROOM_ACCESS_LOG=false\`; the others share the
instance of the headline route. Machine: ${machineText(machine)}.

${markdownTable(HEAD, resultRows(shown, bareResult))}
`,
        )
      }
      process.stdout.write(`\nwrote the ${profile ? 'http-profile' : 'http'} section of ${BENCHMARKS_DOC}\n`)
    }
    return 0
  } finally {
    await stopAll()
    for (const s of servers) if ('dispose' in s) await s.dispose()
  }
}

if (import.meta.main) {
  try {
    process.exit(await run(process.argv.slice(2)))
  } catch (e) {
    process.stderr.write(`bench/http: ${(e as Error).message}\n`)
    process.exit(1)
  }
}
