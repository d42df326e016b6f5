/**
 * Statistics over 5 million events: writes a realistic event log (90 days, several sending
 * domains, IPs, pools, bridges and lists) straight into a fresh data directory, runs the
 * rollup job over it (src/modules/stats/rollup.ts, in this process), then times
 * GET /api/v2/stats for 30-day ranges and GET /api/v2/events with each of its filters
 * against a real `mailroom serve` on that data directory.
 *
 *   bun bench/stats.ts [--events 5000000] [--runs 15] [--dry-run]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { openDatabase } from '../src/db/client'
import { drainStats, STATS_BATCH } from '../src/modules/stats/rollup'
import { systemClock } from '../src/lib/clock'
import { fmtInt, machineInfo, markdownTable, textTable, writeDocSection } from './support/report'
import { createBenchKey, mailroomEnv, ROOT, startServer, stopAll } from './support/servers'
import { prng } from './support/prng'

const HELP = `Usage: bun bench/stats.ts [--events N] [--runs N] [--dry-run]
  --events   events to generate (default 5,000,000)
  --runs     timed requests per query, the median is reported (default 15)
  --dry-run  do not write docs/benchmarks.md
`
const AIM_MS = 50
const DAY = 86_400_000
const HOUR = 3_600_000

/** Writes about `target` events (and the messages they are about) with prepared inserts in transactions of 50,000 rows. */
export function generate(dbPath: string, target: number, end: number) {
  const db = openDatabase(dbPath)
  const c = db.$client
  c.run('PRAGMA synchronous = OFF') // generation only; the rollup and the server run with the normal settings
  const now = end
  const pools = [1, 2, 3, 4]
  const signed = ['news.example.com', 'mail.example.org', 'shop.example.net', 'alerts.example.io', 'billing.example.com', 'app.example.dev']
  const unsigned = ['legacy.example.com', 'old.example.org']
  c.transaction(() => {
    for (const p of pools)
      c.run('INSERT INTO ip_pools (id, name, is_default, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [p, `pool-${p}`, p === 1, now, now])
    signed.forEach((name, i) =>
      c.run(
        "INSERT INTO sending_domains (id, name, status, dkim_selector, dkim_private_key, dkim_public_key, return_path_host, created_at, updated_at) VALUES (?, ?, 'verified', 'mr', '-', '-', ?, ?, ?)",
        [i + 1, name, `bounces.${name}`, now, now],
      ),
    )
  })()
  const ips = Array.from({ length: 16 }, (_, i) => `198.51.100.${10 + i}`)
  const insertMessage = c.prepare(
    "INSERT INTO messages (id, source, mail_from, from_address, subject, message_id_header, domain_id, pool_id, raw, size, created_at, bridge_id) VALUES (?, 'api', ?, ?, 'Hello', ?, ?, ?, X'00', 1, ?, ?)",
  )
  const insertEvent = c.prepare(
    'INSERT INTO events (kind, created_at, message_id, recipient, contact_id, list_id, bridge_id, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const random = prng(42)
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]!
  // Events per message average about 2.4 (queued + outcome + some deferrals, complaints, contact events).
  const messages = Math.round(target / 2.4)
  const start = end - 90 * DAY
  let events = 0
  let m = 0
  const chunk = 20_000
  while (events < target) {
    c.transaction(() => {
      for (let k = 0; k < chunk && events < target; k++, m++) {
        // Sending grows over the 90 days and follows the day: more by day than by night.
        const t = start + Math.floor(Math.sqrt((m + random()) / messages) * 90 * DAY)
        const id = `m${m.toString(36)}`
        const domainIndex = Math.floor(random() * (signed.length + unsigned.length))
        const domain = domainIndex < signed.length ? signed[domainIndex]! : unsigned[domainIndex - signed.length]!
        const bridge = random() < 0.3 ? 1 + Math.floor(random() * 3) : null
        insertMessage.run(
          id,
          `b@bounces.${domain}`,
          `hello@${domain}`,
          `<${id}@${domain}>`,
          domainIndex < signed.length ? domainIndex + 1 : null,
          pick(pools),
          t,
          bridge,
        )
        const rcpt = `user${Math.floor(random() * 200_000)}@example${Math.floor(random() * 50)}.test`
        const ip = pick(ips)
        const mx = 'mx.example.test'
        // Message events carry the message's bridge, as the send path and the engine write them.
        const ev = (kind: string, at: number, data: Record<string, unknown>) => {
          insertEvent.run(kind, at, id, rcpt, null, null, bridge, JSON.stringify(data))
          events++
        }
        const r = random()
        if (r < 0.02) {
          ev('message.suppressed', t, { kind: 'to', suppression: { reason: 'hard_bounce', scope: 'global' } })
          continue
        }
        ev('message.queued', t, { kind: 'to' })
        let at = t + 500 + Math.floor(random() * 3000)
        const detail = (code: number) => ({
          code,
          enhanced_code: code === 250 ? '2.0.0' : '5.1.1',
          response: `${code} ok`,
          rule: 'x',
          mx,
          source_ip: ip,
          attempt: 1,
        })
        if (r < 0.08) {
          ev('message.deferred', at, { ...detail(451), next_attempt_at: new Date(at + 300_000).toISOString() })
          at += 300_000
        }
        if (r < 0.1) ev('message.bounced', at, { ...detail(550), suppressed: true })
        else if (r < 0.105) ev('message.failed', at, { ...detail(451), reason: 'expired', max_age_seconds: 259200 })
        else {
          ev('message.sent', at, detail(250))
          if (random() < 0.002) ev('message.complained', at + HOUR, { source: 'arf', feedback_type: 'abuse', source_ip: ip, contacts_marked: 1 })
        }
        if (random() < 0.05) {
          const list = 1 + Math.floor(random() * 5)
          insertEvent.run(
            random() < 0.8 ? 'contact.subscribed' : 'contact.unsubscribed',
            t,
            null,
            rcpt,
            m,
            list,
            null,
            JSON.stringify({ email: rcpt, list_id: list }),
          )
          events++
        }
      }
    })()
  }
  c.run('PRAGMA synchronous = FULL')
  return { db, events, messages: m }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

export async function run(argv: string[], command: string): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { events: { type: 'string' }, runs: { type: 'string' }, 'dry-run': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  })
  if (values.help) return (process.stdout.write(HELP), 0)
  const target = Number(values.events ?? 5_000_000)
  const runs = Number(values.runs ?? 15)
  const machine = machineInfo()
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-bench-stats-'))
  try {
    const env = mailroomEnv({ MAILROOM_LOG_LEVEL: 'info' })
    // The database (migrated) and the key the timed requests use.
    const key = createBenchKey(dataDir, env, 'unlimited')

    const end = Math.floor(Date.now() / HOUR) * HOUR
    let t0 = performance.now()
    const gen = generate(join(dataDir, 'mailroom.db'), target, end)
    const genS = (performance.now() - t0) / 1000
    process.stdout.write(`generated ${fmtInt(gen.events)} events for ${fmtInt(gen.messages)} messages in ${genS.toFixed(1)} s\n`)

    t0 = performance.now()
    const batches = drainStats({ db: gen.db, clock: systemClock })
    const rollS = (performance.now() - t0) / 1000
    const statRows = gen.db.$client.query<{ n: number }, []>('SELECT count(*) AS n FROM stats_hourly').get()!.n
    process.stdout.write(`rollup: ${fmtInt(gen.events / rollS)} events/s (${rollS.toFixed(1)} s, ${fmtInt(batches)} batches, ${fmtInt(statRows)} stats rows)\n`)
    // Subjects for the event filters that the generated log really holds (a recipient from the last third of it).
    const picked = gen.db.$client
      .query<{ message_id: string; recipient: string }, [number]>('SELECT message_id, recipient FROM events WHERE id >= ? AND message_id IS NOT NULL LIMIT 1')
      .get(Math.floor(gen.events * 0.7))!
    gen.db.$client.close()

    const server = await startServer(
      'mailroom-stats',
      ['src/main.ts', 'serve', '--data-dir', dataDir, '--http-listen', '127.0.0.1:0', '--access-log', 'false'],
      {
        env,
        stderrFile: join(dataDir, 'stderr.log'),
        pattern: /listening on (http:\/\/\S+)/,
      },
    )
    const from = new Date(end - 30 * DAY).toISOString()
    const to = new Date(end).toISOString()
    const queries: Array<[string, string]> = [
      ['30 days by day, all', `bucket=day&group_by=all`],
      ['30 days by day, by domain', `bucket=day&group_by=domain`],
      ['30 days by day, by IP', `bucket=day&group_by=ip`],
      ['30 days by day, by pool', `bucket=day&group_by=pool`],
      ['30 days by day, by bridge', `bucket=day&group_by=bridge`],
      ['30 days by day, by list', `bucket=day&group_by=list`],
      ['30 days by hour, all', `bucket=hour&group_by=all`],
      ['30 days by day, by IP, CSV', `bucket=day&group_by=ip&format=csv`],
    ]
    /** `runs` timed GETs of a URL after two warm-up ones (client wall time, keep-alive), and the last answer's text. */
    const timedGets = async (url: string) => {
      const times: number[] = []
      let text = ''
      for (let i = 0; i < runs + 2; i++) {
        const s = performance.now()
        const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } })
        text = await res.text()
        const ms = performance.now() - s
        if (res.status !== 200) throw new Error(`${url}: ${res.status} ${text.slice(0, 300)}`)
        if (i >= 2) times.push(ms)
      }
      return { times, text }
    }
    const rows: string[][] = []
    let worst = 0
    for (const [label, q] of queries) {
      const csv = q.endsWith('&format=csv')
      const url = `${server.url}/api/v2/stats${csv ? '/export' : ''}?from=${from}&to=${to}&${q.replace('&format=csv', '')}`
      const { times, text } = await timedGets(url)
      const size = text.length
      const answerRows = csv ? text.trim().split('\n').length - 1 : JSON.parse(text).data.rows.length
      const med = median(times)
      worst = Math.max(worst, med)
      rows.push([label, fmtInt(answerRows), fmtInt(size), med.toFixed(1), Math.max(...times).toFixed(1)])
    }
    // GET /api/v2/events: the first page of each filter (the page and its exact total), and a deep page.
    const dayFrom = new Date(end - 11 * DAY).toISOString()
    const dayTo = new Date(end - 10 * DAY).toISOString()
    const eventQueries: Array<[string, string]> = [
      ['first page, no filter', ''],
      ['kind=message.sent', 'kind=message.sent'],
      ['message_id', `message_id=${picked.message_id}`],
      ['recipient', `recipient=${encodeURIComponent(picked.recipient)}`],
      ['bridge_id=2', 'bridge_id=2'],
      ['one day (from, to)', `from=${dayFrom}&to=${dayTo}`],
      ['page 1000, no filter', 'page=1000'],
    ]
    const eventRows: string[][] = []
    let worstEvents = 0
    for (const [label, q] of eventQueries) {
      const url = `${server.url}/api/v2/events?${q}`
      const { times, text } = await timedGets(url)
      const body = JSON.parse(text) as { data: unknown[]; meta: { total: number } }
      const total = body.meta.total
      const items = body.data.length
      if (items === 0) throw new Error(`${url}: found nothing; the generated data should match every filter`)
      const med = median(times)
      worstEvents = Math.max(worstEvents, med)
      eventRows.push([label, fmtInt(total), fmtInt(items), med.toFixed(1), Math.max(...times).toFixed(1)])
    }
    await server.stop()
    const head = ['query (GET /api/v2/stats, 30 days)', 'rows', 'bytes', 'median ms', 'max ms']
    process.stdout.write(`\n${textTable(head, rows)}\n`)
    const eventHead = ['query (GET /api/v2/events)', 'total', 'rows', 'median ms', 'max ms']
    process.stdout.write(`\n${textTable(eventHead, eventRows)}\n`)
    const met = worst < AIM_MS
    const eventsMet = worstEvents < AIM_MS
    if (!values['dry-run']) {
      writeDocSection(
        'stats',
        `## Statistics: ${fmtInt(gen.events)} events

Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${command}\` (bench/stats.ts).

- Rollup job (src/modules/stats/rollup.ts, batches of ${fmtInt(STATS_BATCH)} events, one transaction each with the cursor): **${fmtInt(gen.events / rollS)} events/s** (${rollS.toFixed(1)} s for the whole log, ${fmtInt(statRows)} rows in \`stats_hourly\`).

${markdownTable(head, rows)}

Aim: every query under ${AIM_MS} ms: **${met ? 'met' : 'not met'}** (slowest median ${worst.toFixed(1)} ms).

${markdownTable(eventHead, eventRows)}

Aim: every events query under ${AIM_MS} ms: **${eventsMet ? 'met' : 'not met'}** (slowest median ${worstEvents.toFixed(1)} ms).

- Data: ${fmtInt(gen.events)} events about ${fmtInt(gen.messages)} messages spread over 90 days (growing towards the end), written straight into a fresh database with prepared inserts (${genS.toFixed(0)} s): 8 From domains (6 signed sending domains, 2 unsigned), 16 source IPs, 4 pools, 3 bridges (30 % of messages), 5 lists (contact events on 5 % of messages); kinds queued, sent, deferred, bounced, failed, suppressed, complained, contact.subscribed / unsubscribed.
- Queries: ${runs} timed requests each after two warm-up ones, one at a time, with keep-alive, against \`mailroom serve\` in its own process on that data directory (access log off); "ms" is the whole HTTP round trip seen by the client.
- Events: 25 per page; each answer is the page and its exact \`meta.total\`. The page is one index walk; the total of an unfiltered, kind, time-range, list or broadcast filter is summed from the rollup counters plus a direct count of the part-hours at the range's ends and of the events not rolled up yet (src/modules/events/service.ts \`countEvents\`); message, recipient and bridge totals are counted in their index. Message events carry their bridge (30 % of messages), the recipient and message are picked from the generated log, the day is 10 days before the end.
- Machine: ${machine.nproc} CPUs, ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.kernel}, Bun ${machine.bun}; load average ${machine.loadAverage} at the start.`,
      )
    }
    return 0
  } finally {
    await stopAll()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (import.meta.main) process.exit(await run(process.argv.slice(2), 'bun bench/stats.ts'))
