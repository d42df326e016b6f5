import type { Db } from '../../db/client'
import type { Deps } from '../../deps'
import { preparedFor } from '../../db/prepared'
import { toIso } from '../../lib/clock'
import { invalidField } from '../../lib/errors'
import { EVENT_KIND_NAMES, parseKinds } from '../events/service'

export const STATS_BUCKETS = ['hour', 'day'] as const
export const STATS_GROUPS = ['all', 'domain', 'ip', 'pool', 'bridge', 'list', 'broadcast', 'reason', 'provider'] as const
export type StatsBucket = (typeof STATS_BUCKETS)[number]
export type StatsGroup = (typeof STATS_GROUPS)[number]

const HOUR_MS = 3_600_000
/**
 * Day totals are kept as rows of the dimension '<dim>.day' (hour = the UTC day's start), by
 * the rollup job (rollup.ts), so a 30-day query by day reads 30 rows per group and
 * kind instead of 720: summing hours measured 30-50 ms for 30 days by IP over 5 million
 * events on the 2-core VM, the day rows a few ms (docs/benchmarks.md).
 */
export const DAY_SUFFIX = '.day'
const DAY_MS = 24 * HOUR_MS
/** Longest range per bucket: a month of hours, two years of days (a bounded answer, and a bounded scan). */
const MAX_BUCKETS: Record<StatsBucket, number> = { hour: 31 * 24, day: 2 * 366 }
const DEFAULT_SPAN: Record<StatsBucket, number> = { hour: 24 * HOUR_MS, day: 30 * DAY_MS }

/**
 * Counters that are not event kinds: the first open and the first click of each message
 * (events with data.first true), counted by the rollup job besides every open and click.
 * The open and click rates are made of these, so a message read ten times is one open.
 */
export const UNIQUE_COUNTERS = ['message.opened.unique', 'message.clicked.unique']
/**
 * A counter that is not an event kind either: the message.sent events whose delivery used TLS
 * (data.tls set), so TLS_COUNTER / message.sent is the share of deliveries over TLS (issue 17).
 */
export const TLS_COUNTER = 'message.sent.tls'
/** What `kinds` may name: every event kind, the unique counters and the TLS counter. */
export const STATS_COUNTERS: readonly string[] = [...EVENT_KIND_NAMES, ...UNIQUE_COUNTERS, TLS_COUNTER]
/** The kinds counted by the recipient's provider group (group_by=provider): delivery outcomes, which have one recipient each. */
export const PROVIDER_KINDS: readonly string[] = ['message.sent', TLS_COUNTER, 'message.bounced', 'message.failed', 'message.deferred']

/** The counters the rates are computed from; always read, whatever `kinds` asks for. */
const RATE_KINDS = ['message.sent', 'message.bounced', 'message.failed', 'message.complained', ...UNIQUE_COUNTERS, 'message.unsubscribed']

export const RATE_NAMES = ['delivery_rate', 'bounce_rate', 'complaint_rate', 'open_rate', 'click_rate', 'unsubscribe_rate'] as const
export type Rates = Record<(typeof RATE_NAMES)[number], number | null>

export interface StatsQuery {
  from?: string
  to?: string
  bucket?: StatsBucket
  group_by?: StatsGroup
  /** Comma-separated kinds to count; all kinds when absent. */
  kinds?: string
}

export interface StatsRow {
  /** Start of the bucket, ISO 8601 UTC. */
  bucket_start: string
  /** The group value ('' is never used: null for group_by=all). */
  group: string | null
  counts: Record<string, number>
  rates: Rates
}

export interface StatsReport {
  from: string
  to: string
  bucket: StatsBucket
  group_by: StatsGroup
  kinds: string[]
  rows: StatsRow[]
  totals: Array<{ group: string | null; counts: Record<string, number>; rates: Rates }>
}

const round = (n: number) => Math.round(n * 10000) / 10000

/**
 * The rates of docs/api.md "Statistics". Each is null when its denominator is 0 (nothing to
 * measure), so "no mail" is not shown as a 0 % or 100 % rate. Sent means accepted by the
 * receiving server; a later asynchronous bounce (DSN) counts in `bounced` as well.
 */
export function ratesOf(c: Record<string, number>): Rates {
  const sent = c['message.sent'] ?? 0
  const bounced = c['message.bounced'] ?? 0
  const failed = c['message.failed'] ?? 0
  const outcomes = sent + bounced + failed
  const per = (n: number, d: number) => (d === 0 ? null : round(n / d))
  return {
    delivery_rate: per(sent, outcomes),
    bounce_rate: per(bounced, outcomes),
    complaint_rate: per(c['message.complained'] ?? 0, sent),
    open_rate: per(c['message.opened.unique'] ?? 0, sent),
    click_rate: per(c['message.clicked.unique'] ?? 0, sent),
    unsubscribe_rate: per(c['message.unsubscribed'] ?? 0, sent),
  }
}

const statements = preparedFor((db: Db) => {
  const c = db.$client
  // Rows come in primary-key order (dim, hour, dim_value, kind): a range walk of one index.
  return {
    range: c.prepare<[number, string, string, number], [string, number, number]>(
      'SELECT hour, dim_value, kind, count FROM stats_hourly WHERE dim = ?1 AND hour >= ?2 AND hour < ?3',
    ),
  }
})

function parseTime(value: string | undefined, field: string): number | undefined {
  if (value === undefined) return undefined
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) throw invalidField(field, 'must be an ISO 8601 time')
  return ms
}

/**
 * Counts per bucket and group, with rates, from the hourly rollups only (never the event
 * log). `from` is rounded down and `to` up to whole buckets (days in UTC); the answer gives
 * the range it covers. Rows are sparse: a bucket and group with no events has no row.
 */
export function queryStats(deps: Pick<Deps, 'db' | 'clock'>, q: StatsQuery): StatsReport {
  const bucket = q.bucket ?? 'day'
  const group = q.group_by ?? 'all'
  const size = bucket === 'day' ? DAY_MS : HOUR_MS
  const requested = parseKinds(q.kinds, 'kinds', STATS_COUNTERS)
  const kinds = requested ?? [...STATS_COUNTERS]
  const toRaw = parseTime(q.to, 'to') ?? deps.clock.now()
  const fromRaw = parseTime(q.from, 'from') ?? toRaw - DEFAULT_SPAN[bucket]
  if (toRaw <= fromRaw) throw invalidField('to', 'must be after from')
  const from = Math.floor(fromRaw / size) * size
  const to = Math.ceil(toRaw / size) * size
  if ((to - from) / size > MAX_BUCKETS[bucket])
    throw invalidField('to', `the range is at most ${MAX_BUCKETS[bucket]} ${bucket}s with bucket=${bucket}; ask for a shorter range or bucket=day`)

  const wanted = new Set([...kinds, ...RATE_KINDS])
  // bucket start -> group value -> kind -> count
  const cells = new Map<number, Map<string, Record<string, number>>>()
  const totals = new Map<string, Record<string, number>>()
  // Day buckets read the day rows the job keeps (rollup.ts, DAY_SUFFIX), not 24 hours each.
  const dim = bucket === 'day' ? `${group}${DAY_SUFFIX}` : group
  for (const row of statements(deps.db).range.values(dim, from, to)) {
    const [hour, value, kind, n] = row as unknown as [number, string, string, number]
    if (!wanted.has(kind)) continue
    const start = hour - (hour % size)
    let byGroup = cells.get(start)
    if (!byGroup) cells.set(start, (byGroup = new Map()))
    let counts = byGroup.get(value)
    if (!counts) byGroup.set(value, (counts = {}))
    counts[kind] = (counts[kind] ?? 0) + n
    let total = totals.get(value)
    if (!total) totals.set(value, (total = {}))
    total[kind] = (total[kind] ?? 0) + n
  }
  const shape = (c: Record<string, number>) => Object.fromEntries(kinds.map((k) => [k, c[k] ?? 0]))
  const label = (v: string) => (group === 'all' ? null : v)
  const rows: StatsRow[] = []
  for (const start of [...cells.keys()].sort((a, b) => a - b)) {
    const byGroup = cells.get(start)!
    for (const value of [...byGroup.keys()].sort()) {
      const c = byGroup.get(value)!
      rows.push({ bucket_start: toIso(start)!, group: label(value), counts: shape(c), rates: ratesOf(c) })
    }
  }
  return {
    from: toIso(from)!,
    to: toIso(to)!,
    bucket,
    group_by: group,
    kinds,
    rows,
    totals: [...totals.keys()].sort().map((v) => ({ group: label(v), counts: shape(totals.get(v)!), rates: ratesOf(totals.get(v)!) })),
  }
}

const csvCell = (v: string | number | null) => {
  if (v === null) return ''
  const s = String(v)
  // RFC 4180 section 2: quote fields holding a comma, quote or line break; double inner quotes.
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s
}

/** The rows of a report as CSV (RFC 4180, CRLF line ends, a header line): one line per bucket and group. */
export function statsCsv(report: StatsReport): string {
  const header = ['bucket_start', 'group', ...report.kinds, ...RATE_NAMES]
  const lines = [header.map(csvCell).join(',')]
  for (const r of report.rows)
    lines.push([r.bucket_start, r.group, ...report.kinds.map((k) => r.counts[k]!), ...RATE_NAMES.map((n) => r.rates[n])].map(csvCell).join(','))
  return lines.join('\r\n') + '\r\n'
}
