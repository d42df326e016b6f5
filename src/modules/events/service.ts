import { and, asc, desc, eq, gte, inArray, lt } from 'drizzle-orm'
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import { events } from '../../db/schema'
import { unionAll } from 'drizzle-orm/sqlite-core'
import { toIso } from '../../lib/clock'
import { invalidField } from '../../lib/errors'
import { pageMeta, pageRequest, pageWindow, type PageMeta } from '../../lib/pagination'
import type { EventView } from './model'

/** Subjects an event can be about; each is a filter of GET /api/v2/events. */
export interface EventSubjects {
  contact_id?: number | null
  list_id?: number | null
  message_id?: string | null
  recipient?: string | null
  broadcast_id?: number | null
  bridge_id?: number | null
  actor_key_id?: number | null
}

export interface NewEvent extends EventSubjects {
  kind: string
  data?: Record<string, unknown>
}

type EventDb = Pick<Deps['db'], 'insert'>

/**
 * Appends an event. Pass the transaction of the change the event describes as `db`, so the
 * event is committed together with it or not at all. Returns the event id.
 */
export function emit(db: EventDb, at: number, event: NewEvent): number {
  const { kind, data = {}, ...subjects } = event
  const row = db
    .insert(events)
    .values({ kind, created_at: at, data, ...subjects })
    .returning({ id: events.id })
    .get()
  return row.id
}

const eventStatements = preparedFor((db) =>
  db.$client.prepare<never, [string, number, string | null, string | null, number | null, number | null, number | null, number | null, string]>(
    'INSERT INTO events (kind, created_at, message_id, recipient, contact_id, list_id, bridge_id, broadcast_id, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ),
)

/**
 * `emit` for hot paths (the send queue writes several events per message): one prepared
 * statement instead of a query built per call. Call it inside the transaction of the change.
 * A message event of a message that came through a bridge passes its `bridge_id` (the
 * messages.bridge_id the writer already holds), so `GET /api/v2/events?bridge_id=` finds it;
 * a broadcast's events (broadcast.sent / opened / clicked, one per delivered message) pass
 * their `broadcast_id` likewise.
 */
export function emitPrepared(
  db: Db,
  at: number,
  event: Pick<NewEvent, 'kind' | 'data' | 'message_id' | 'recipient' | 'contact_id' | 'list_id' | 'bridge_id' | 'broadcast_id'>,
): void {
  eventStatements(db).run(
    event.kind,
    at,
    event.message_id ?? null,
    event.recipient ?? null,
    event.contact_id ?? null,
    event.list_id ?? null,
    event.bridge_id ?? null,
    event.broadcast_id ?? null,
    JSON.stringify(event.data ?? {}),
  )
}

/**
 * Every event kind, with whether something emits it today. Reserved kinds are named here so
 * that filters and webhook subscriptions can name them before the issue that emits them lands.
 */
export const EVENT_KINDS = [
  { kind: 'message.queued', emitted: true },
  { kind: 'message.scheduled', emitted: true },
  { kind: 'message.canceled', emitted: true },
  { kind: 'message.sent', emitted: true },
  { kind: 'message.deferred', emitted: true },
  { kind: 'message.delayed', emitted: true },
  { kind: 'message.bounced', emitted: true },
  { kind: 'message.failed', emitted: true },
  { kind: 'message.suppressed', emitted: true },
  { kind: 'message.complained', emitted: true },
  { kind: 'message.opened', emitted: true },
  { kind: 'message.clicked', emitted: true },
  { kind: 'message.unsubscribed', emitted: true },
  { kind: 'contact.subscribed', emitted: true },
  { kind: 'contact.confirmed', emitted: true },
  { kind: 'contact.unsubscribed', emitted: true },
  { kind: 'contact.bounced', emitted: true },
  { kind: 'contact.complained', emitted: true },
  // A custom event (POST /api/v2/track) on the contact's timeline; the automation engine reads it.
  { kind: 'event.tracked', emitted: true },
  { kind: 'broadcast.sent', emitted: true },
  { kind: 'broadcast.opened', emitted: true },
  { kind: 'broadcast.clicked', emitted: true },
  { kind: 'broadcast.started', emitted: true },
  { kind: 'broadcast.paused', emitted: true },
  { kind: 'broadcast.finished', emitted: true },
  { kind: 'domain.created', emitted: true },
  { kind: 'domain.updated', emitted: true },
  { kind: 'domain.deleted', emitted: true },
  { kind: 'webhook.disabled', emitted: true },
  { kind: 'deliverability.alert', emitted: true },
  { kind: 'doctor.changed', emitted: true },
] as const

export type EventKind = (typeof EVENT_KINDS)[number]['kind']
export const EVENT_KIND_NAMES: readonly string[] = EVENT_KINDS.map((k) => k.kind)

export interface EventFilter {
  page?: number
  per_page?: number
  /** One kind or several, comma-separated. */
  kind?: string
  message_id?: string
  recipient?: string
  contact_id?: number
  list_id?: number
  broadcast_id?: number
  bridge_id?: number
  /** Inclusive lower bound, ISO 8601. */
  from?: string
  /** Exclusive upper bound, ISO 8601. */
  to?: string
}

/** Splits and checks the kind filter: every name must be a known kind (a typo would silently match nothing). */
export function parseKinds(value: string | undefined, field = 'kind', allowed: readonly string[] = EVENT_KIND_NAMES): string[] | undefined {
  if (value === undefined) return undefined
  const kinds = [
    ...new Set(
      value
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean),
    ),
  ]
  if (kinds.length === 0) throw invalidField(field, 'must name at least one event kind')
  const unknown = kinds.filter((k) => !allowed.includes(k))
  if (unknown.length) throw invalidField(field, `unknown event kind ${unknown.map((k) => `"${k}"`).join(', ')}; see docs/api.md "Event kinds"`)
  return kinds
}

function parseTime(value: string | undefined, field: string): number | undefined {
  if (value === undefined) return undefined
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) throw invalidField(field, 'must be an ISO 8601 time')
  return ms
}

const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS
/** Below this many events not yet rolled up, the rollups answer the page total; above, it is counted directly. */
const ROLLUP_TAIL_LIMIT = 50_000

/** A page total's WHERE clause in SQL, for the counts that drizzle cannot phrase (NOT INDEXED). */
interface CountFilter {
  kinds: string[] | undefined
  subjects: Array<[column: string, value: string | number]>
  from: number | undefined
  to: number | undefined
}

function countWhere(f: CountFilter, extra: Array<[string, number]> = []): { where: string; params: Array<string | number> } {
  const parts: string[] = []
  const params: Array<string | number> = []
  if (f.kinds) {
    parts.push(`kind IN (${f.kinds.map(() => '?').join(', ')})`)
    params.push(...f.kinds)
  }
  for (const [column, value] of f.subjects) {
    parts.push(`${column} = ?`)
    params.push(value)
  }
  for (const [clause, value] of extra) {
    parts.push(clause)
    params.push(value)
  }
  return { where: parts.length ? parts.join(' AND ') : 'true', params }
}

/** count(*) over the filter's kinds and subjects and the `extra` conditions (the caller passes the time bounds it wants). */
function countDirect(db: Db, f: CountFilter, extra: Array<[string, number]>): number {
  const { where, params } = countWhere(f, extra)
  return db.$client.query<{ n: number }, Array<string | number>>(`SELECT count(*) AS n FROM events WHERE ${where}`).get(...params)!.n
}

/**
 * The exact number of events a filter matches. Counting is linear in the matches (about 10
 * million index entries a second here: 250 ms for "every message.sent" over 5 million
 * events), while the page itself is one index walk. So when the filter is one the statistics
 * rollups can answer (kinds, time range, and at most one of list or broadcast, whose rollup
 * dimensions are the event's own list_id / broadcast_id), the total is assembled from them:
 *
 *   events up to the rollup cursor, in whole days (dimension '<dim>.day') and whole hours
 *   ('<dim>') of the range, from the counters; the part-hours at the range's ends counted
 *   directly (at most two hours of events); the events after the cursor (not counted yet)
 *   counted by id range.
 *
 * Exact because the rollup job counts each event once, with its cursor in the same
 * transaction (src/modules/stats/rollup.ts), and events are append-only (nothing updates or deletes
 * them; a retention job would have to take its events out of the counters too). Read in one
 * transaction so the cursor, the counters and the tail are one snapshot. When the rollup is
 * far behind (a restart working off a backlog), or for subjects the rollups do not key by
 * the event's own column (message, recipient, contact, bridge: the bridge dimension also
 * counts events of a bridge's messages that do not carry bridge_id), it counts directly.
 */
function countEvents(db: Db, f: CountFilter): number {
  const range: Array<[string, number]> = []
  if (f.from !== undefined) range.push(['created_at >= ?', f.from])
  if (f.to !== undefined) range.push(['created_at < ?', f.to])
  const dims = f.subjects.filter(([column]) => column === 'list_id' || column === 'broadcast_id')
  if (f.subjects.length !== dims.length || dims.length > 1) return countDirect(db, f, range)
  return db.$client
    .transaction(() => {
      // The rollup job's cursor (STATS_CURSOR_KEY of src/modules/stats/rollup.ts, not imported: stats imports events): the last event id counted.
      const cursor = Number(db.$client.query<{ value: string }, []>(`SELECT value FROM system_state WHERE key = 'stats.cursor'`).get()?.value ?? 0)
      const last = db.$client.query<{ id: number | null }, []>('SELECT max(id) AS id FROM events').get()?.id ?? 0
      if (last - cursor > ROLLUP_TAIL_LIMIT) return countDirect(db, f, range)
      // Not yet rolled up: by id (NOT INDEXED keeps SQLite on the rowid range rather than a kind or list index over every match).
      const tail = countWhere(f, [['id > ?', cursor], ...range])
      let n = db.$client.query<{ n: number }, Array<string | number>>(`SELECT count(*) AS n FROM events NOT INDEXED WHERE ${tail.where}`).get(...tail.params)!.n
      // Whole hours and days inside [from, to); the part-hours at either end are counted directly.
      const hourFrom = f.from === undefined ? -Infinity : Math.ceil(f.from / HOUR_MS) * HOUR_MS
      const hourTo = f.to === undefined ? Infinity : Math.floor(f.to / HOUR_MS) * HOUR_MS
      if (hourFrom >= hourTo) return n + countDirect(db, f, [['id <= ?', cursor], ...range])
      if (f.from !== undefined && f.from < hourFrom)
        n += countDirect(db, f, [
          ['id <= ?', cursor],
          ['created_at >= ?', f.from],
          ['created_at < ?', hourFrom],
        ])
      if (f.to !== undefined && hourTo < f.to)
        n += countDirect(db, f, [
          ['id <= ?', cursor],
          ['created_at >= ?', hourTo],
          ['created_at < ?', f.to],
        ])
      const dayFrom = hourFrom === -Infinity ? -Infinity : Math.ceil(hourFrom / DAY_MS) * DAY_MS
      const dayTo = hourTo === Infinity ? Infinity : Math.floor(hourTo / DAY_MS) * DAY_MS
      const [dim, value] = dims[0] ? [dims[0][0] === 'list_id' ? 'list' : 'broadcast', String(dims[0][1])] : ['all', '']
      if (dayFrom < dayTo) {
        n += sumRollup(db, `${dim}.day`, value, f.kinds, dayFrom, dayTo)
        if (hourFrom < dayFrom) n += sumRollup(db, dim, value, f.kinds, hourFrom, dayFrom)
        if (dayTo < hourTo) n += sumRollup(db, dim, value, f.kinds, dayTo, hourTo)
      } else n += sumRollup(db, dim, value, f.kinds, hourFrom, hourTo)
      return n
    })
    .deferred()
}

/** Sum of the rollup counters of one dimension value over [from, to) (bucket starts). */
function sumRollup(db: Db, dim: string, value: string, kinds: string[] | undefined, from: number, to: number): number {
  // Without a kind filter every counter but those that are not events: the unique-open/click ones
  // (stats UNIQUE_COUNTERS, '<kind>.unique') and the TLS deliveries (stats TLS_COUNTER, 'message.sent.tls').
  const kindClause = kinds ? `kind IN (${kinds.map(() => '?').join(', ')})` : `kind NOT LIKE '%.unique' AND kind != 'message.sent.tls'`
  const bound = (ms: number) => (ms === -Infinity ? Number.MIN_SAFE_INTEGER : ms === Infinity ? Number.MAX_SAFE_INTEGER : ms)
  return db.$client
    .query<{ n: number }, Array<string | number>>(
      `SELECT coalesce(sum(count), 0) AS n FROM stats_hourly WHERE dim = ? AND hour >= ? AND hour < ? AND dim_value = ? AND ${kindClause}`,
    )
    .get(dim, bound(from), bound(to), value, ...(kinds ?? []))!.n
}

/**
 * A page of events, newest first (created_at, then id). Every filter is an index lookup:
 * kind (events_kind_created_idx), message_id (events_message_idx), the time range
 * (events_created_idx), and recipient, contact, list, broadcast and bridge (their partial
 * `(col, created_at)` indexes, migration 0008). The total comes from countEvents.
 */
export function listEvents(deps: Pick<Deps, 'db'>, filter: EventFilter): { items: EventView[]; meta: PageMeta } {
  const req = pageRequest(filter)
  const kinds = parseKinds(filter.kind)
  const from = parseTime(filter.from, 'from')
  const to = parseTime(filter.to, 'to')
  if (from !== undefined && to !== undefined && to <= from) throw invalidField('to', 'must be after from')
  const subjects = [
    filter.message_id !== undefined ? eq(events.message_id, filter.message_id) : undefined,
    filter.recipient !== undefined ? eq(events.recipient, filter.recipient.trim().toLowerCase()) : undefined,
    filter.contact_id !== undefined ? eq(events.contact_id, filter.contact_id) : undefined,
    filter.list_id !== undefined ? eq(events.list_id, filter.list_id) : undefined,
    filter.broadcast_id !== undefined ? eq(events.broadcast_id, filter.broadcast_id) : undefined,
    filter.bridge_id !== undefined ? eq(events.bridge_id, filter.bridge_id) : undefined,
    from !== undefined ? gte(events.created_at, from) : undefined,
    to !== undefined ? lt(events.created_at, to) : undefined,
  ]
  const where = and(kinds ? (kinds.length === 1 ? eq(events.kind, kinds[0]!) : inArray(events.kind, kinds)) : undefined, ...subjects)
  const subjectValues: CountFilter['subjects'] = []
  for (const column of ['message_id', 'contact_id', 'list_id', 'broadcast_id', 'bridge_id'] as const) {
    const value = filter[column]
    if (value !== undefined) subjectValues.push([column, value])
  }
  if (filter.recipient !== undefined) subjectValues.push(['recipient', filter.recipient.trim().toLowerCase()])
  const total = countEvents(deps.db, { kinds, subjects: subjectValues, from, to })
  const window = pageWindow(req, total)
  if (!window) return { items: [], meta: pageMeta(req, total) }
  // Deep pages are read from the far end (pageWindow) so they cost what the middle one does.
  const order = window.descending ? [asc(events.created_at), asc(events.id)] : [desc(events.created_at), desc(events.id)]
  // Several kinds: one arm per kind, each walking (kind, created_at) in order, merged by
  // SQLite (MERGE (UNION ALL)); "kind IN (...)" would sort every matching row for one page.
  const arms = (kinds ?? []).map((k) =>
    deps.db
      .select()
      .from(events)
      .where(and(eq(events.kind, k), ...subjects)),
  )
  const rows =
    arms.length > 1
      ? unionAll(arms[0]!, arms[1]!, ...arms.slice(2))
          .orderBy(...order)
          .limit(window.limit)
          .offset(window.offset)
          .all()
      : deps.db
          .select()
          .from(events)
          .where(where)
          .orderBy(...order)
          .limit(window.limit)
          .offset(window.offset)
          .all()
  if (window.descending) rows.reverse()
  return { items: rows.map(eventView), meta: pageMeta(req, total) }
}

function eventView(r: typeof events.$inferSelect): EventView {
  return {
    id: r.id,
    kind: r.kind,
    created_at: toIso(r.created_at)!,
    message_id: r.message_id,
    recipient: r.recipient,
    contact_id: r.contact_id,
    list_id: r.list_id,
    broadcast_id: r.broadcast_id,
    bridge_id: r.bridge_id,
    data: r.data,
  }
}
