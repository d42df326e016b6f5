/**
 * Automations benchmark (issue 16), in one process on a database file with the real
 * migrations and the real group committer:
 *
 *   1. N contacts (default 1,000,000; inserted by plain SQL, not measured) enrolled into a
 *      drip through the enroll service (`list_id`: chunked INSERTs into runs and wake-ups);
 *   2. every run's first wake-up (entering a 1-hour wait), then, the clock moved past the
 *      wait, every second wake-up (leaving it, to the end): wake-ups processed per second;
 *   3. POST /api/v2/track over HTTP on loopback (C requests in flight, from wrk in its own
 *      process for --track-seconds; from this process for --events without wrk) with an
 *      active trigger on the event and the engine running beside it: tracked events per second.
 *
 * Peak RSS is sampled every 100 ms. Aims: enrol a million within 60 s, >= 10,000 wake-ups/s,
 * >= 5,000 tracked events/s, peak RSS < 300 MB.
 *
 *   bun bench/automations.ts [--contacts 1000000] [--track-seconds 15] [--events 50000] [--concurrency 64] [--keep]
 *
 * It prints its figures; it does not rewrite docs/benchmarks.md.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { buildApp } from '../src/app'
import { loadConfig } from '../src/config'
import { openDatabase } from '../src/db/client'
import { migrate } from '../src/db/migrate'
import { createDeps } from '../src/deps'
import { fixedClock } from '../src/lib/clock'
import { createLogger } from '../src/lib/logger'
import { createSecretBox, generateSecretKey } from '../src/lib/secret-box'
import { createApiKey } from '../src/modules/api-keys/service'
import { createAutomationRunner } from '../src/modules/automations/runner'
import { createAutomation, enrollContacts } from '../src/modules/automations/service'
import { CLI_ACTOR, ensureBuiltinRoles, findRoleByName } from '../src/modules/roles/service'
import { dynamicRequestScript, findWrk, runWrk } from './support/wrk'

const AIMS = { enrollS: 60, wakeupsPerS: 10_000, eventsPerS: 5_000, rssMiB: 300 }

const { values } = parseArgs({
  options: {
    contacts: { type: 'string', default: '1000000' },
    events: { type: 'string', default: '50000' },
    'track-seconds': { type: 'string', default: '15' },
    concurrency: { type: 'string', default: '64' },
    keep: { type: 'boolean', default: false },
  },
})
const N = Number(values.contacts)
const EVENTS = Number(values.events)
const CONCURRENCY = Number(values.concurrency)
const TRACK_SECONDS = Number(values['track-seconds'])

let peakRss = 0
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100)
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0)
const line = (what: string, value: string, aim: string, ok: boolean) =>
  console.log(`${what.padEnd(34)} ${value.padStart(14)}   aim ${aim.padEnd(10)} ${ok ? 'met' : 'NOT MET'}`)

const dir = mkdtempSync(join(tmpdir(), 'mailroom-bench-automations-'))
const clock = fixedClock(Date.now())
const db = openDatabase(join(dir, 'mailroom.db'))
migrate(db, { now: clock.now() })
const config = loadConfig({ env: {}, flags: { hostname: 'bench.test', 'access-log': 'false', 'data-dir': dir, 'allow-unverified-domains': 'true' } })
const deps = createDeps({ db, clock, log: createLogger('warn', clock), config, secrets: createSecretBox(generateSecretKey()) })
ensureBuiltinRoles(deps)

// Set-up (not measured): a list of N subscribed contacts, in transactions of 50,000.
const now = clock.now()
db.$client.run("INSERT INTO lists (name, description, created_at, updated_at) VALUES ('bench', '', ?, ?)", [now, now])
const insert = db.$client.prepare("INSERT INTO contacts (list_id, email, status, fields, created_at, updated_at) VALUES (1, ?, 'subscribed', '{}', ?, ?)")
for (let start = 0; start < N; start += 50_000)
  db.$client.transaction(() => {
    for (let i = start; i < Math.min(N, start + 50_000); i++) insert.run(`c${i}@bench.test`, now, now)
  })()
db.$client.run("INSERT INTO contact_counts (list_id, status, n) VALUES (1, 'subscribed', ?)", [N])
console.log(`${N.toLocaleString('en')} contacts ready in ${dir}`)

const runner = createAutomationRunner(deps)
runner.prepare()
const drip = createAutomation(deps, 'drip', {
  name: 'bench drip',
  status: 'active',
  graph: { steps: [{ id: 'hold', kind: 'wait', settings: { duration_seconds: 3600 } }] },
})

// 1. Enrolment.
let t0 = performance.now()
const enrolled = await enrollContacts(deps, drip.id, { list_id: 1 })
const enrollS = (performance.now() - t0) / 1000
if (enrolled.enrolled !== N) throw new Error(`enrolled ${enrolled.enrolled} of ${N}`)

// 2. Wake-ups: every run enters its wait, then (an hour later) leaves it.
t0 = performance.now()
await runner.drain()
const enterS = (performance.now() - t0) / 1000
clock.advance(3600_000 + 1)
t0 = performance.now()
await runner.drain()
const leaveS = (performance.now() - t0) / 1000
const finished = (db.$client.query("SELECT COUNT(*) AS n FROM automation_enrollments WHERE state = 'finished'").get() as { n: number }).n
if (finished !== N) throw new Error(`finished ${finished} of ${N}`)

// 3. Custom events over HTTP with a trigger attached and the engine running.
createAutomation(deps, 'trigger', {
  name: 'bench trigger',
  status: 'active',
  event_name: 'bench.event',
  reentry: 'always',
  graph: { steps: [{ id: 'hold', kind: 'wait', settings: { duration_seconds: 3600 } }] },
})
const { key } = createApiKey(deps, CLI_ACTOR, { name: 'bench', role_id: findRoleByName(deps, 'Administrator')!.id, rate_limit: null })
const { app } = buildApp(deps)
const server = app.listen({ hostname: '127.0.0.1', port: 0 })
const url = `http://127.0.0.1:${server.server!.port}/api/v2/track`
runner.start()
// The load comes from wrk in its own process, as in the HTTP and accept benchmarks, so the
// client's work does not share the server's thread; without wrk, from this process.
let tracked: number
let trackS: number
// This process is the server and the engine (wrk is another): its CPU over the phase, a core's share of the wall time.
const cpuBefore = process.cpuUsage()
const wrk = findWrk()
if (wrk) {
  const lua = `wrk.method = "POST"
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, string.format('{"event":"bench.event","email":"c%d@bench.test","properties":{"i":%d}}', n % ${N}, n))
end`
  const r = await runWrk(
    wrk,
    url,
    { threads: 1, connections: CONCURRENCY, durationS: TRACK_SECONDS, timeoutS: 10 },
    {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
    },
    dynamicRequestScript(lua),
  )
  const failed = Object.values(r.errors).reduce((a, b) => a + b, 0)
  if (failed) throw new Error(`track: ${failed} failed requests (${JSON.stringify(r.errors)})`)
  tracked = r.requests
  trackS = r.durationUs / 1e6
} else {
  let next = 0
  t0 = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < EVENTS) {
        const i = next++
        const res = await fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ event: 'bench.event', email: `c${i % N}@bench.test`, properties: { i } }),
        })
        if (res.status !== 202) throw new Error(`track answered ${res.status}: ${await res.text()}`)
        await res.arrayBuffer()
      }
    }),
  )
  tracked = EVENTS
  trackS = (performance.now() - t0) / 1000
}
const trackCpu = process.cpuUsage(cpuBefore)
const trackCpuMs = (trackCpu.user + trackCpu.system) / 1000
// Requests wrk left in flight at its deadline finish before the engine and the database close.
await app.stop()
await deps.commits.run(() => undefined)
await runner.stop()
clearInterval(sampler)
peakRss = Math.max(peakRss, process.memoryUsage().rss)

console.log('')
line(`enrol ${N.toLocaleString('en')} runs`, `${enrollS.toFixed(1)} s`, `${AIMS.enrollS} s`, enrollS <= AIMS.enrollS * (N / 1_000_000))
line('wake-ups/s (entering the wait)', `${Math.round(N / enterS).toLocaleString('en')}`, AIMS.wakeupsPerS.toLocaleString('en'), N / enterS >= AIMS.wakeupsPerS)
line('wake-ups/s (wait ending)', `${Math.round(N / leaveS).toLocaleString('en')}`, AIMS.wakeupsPerS.toLocaleString('en'), N / leaveS >= AIMS.wakeupsPerS)
line(
  `tracked events/s (${CONCURRENCY} in flight, ${wrk ? 'wrk' : 'fetch in this process'})`,
  `${Math.round(tracked / trackS).toLocaleString('en')}`,
  AIMS.eventsPerS.toLocaleString('en'),
  tracked / trackS >= AIMS.eventsPerS,
)
console.log(
  `${'server CPU per tracked event'.padEnd(34)} ${`${((trackCpuMs / tracked) * 1000).toFixed(0)} µs`.padStart(14)}   (${((trackCpuMs / 1000 / trackS) * 100).toFixed(0)} % of one core over the phase)`,
)
line('peak RSS', `${mib(peakRss)} MiB`, `${AIMS.rssMiB} MiB`, peakRss / 1024 / 1024 < AIMS.rssMiB)
db.$client.close()
if (!values.keep) rmSync(dir, { recursive: true, force: true })
