import { and, asc, count, desc, eq, gte, inArray, lt } from 'drizzle-orm'
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import { events } from '../../db/schema'
import { unionAll } from 'drizzle-orm/sqlite-core'
import { toIso } from '../../lib/clock'
import { invalidField } from '../../lib/errors'
import { pageMeta, pageRequest, pageWindow, type PageMeta } from '../../lib/pagination'

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
  db.$client.prepare<never, [string, number, string | null, string | null, number | null, number | null, string]>(
    'INSERT INTO events (kind, created_at, message_id, recipient, contact_id, list_id, data) VALUES (?, ?, ?, ?, ?, ?, ?)',
  ),
)

/**
 * `emit` for hot paths (the send queue writes several events per message): one prepared
 * statement instead of a query built per call. Call it inside the transaction of the change.
 */
export function emitPrepared(db: Db, at: number, event: Pick<NewEvent, 'kind' | 'data' | 'message_id' | 'recipient' | 'contact_id' | 'list_id'>): void {
  eventStatements(db).run(
    event.kind,
    at,
    event.message_id ?? null,
    event.recipient ?? null,
    event.contact_id ?? null,
    event.list_id ?? null,
    JSON.stringify(event.data ?? {}),
  )
}

/**
 * Every event kind, with whether something emits it today. Reserved kinds are named here so
 * that filters and webhook subscriptions can name them before the issue that emits them lands.
 */
export const EVENT_KINDS = [
  { kind: 'message.queued', emitted: true },
  { kind: 'message.sent', emitted: true },
  { kind: 'message.deferred', emitted: true },
  { kind: 'message.delayed', emitted: true },
  { kind: 'message.bounced', emitted: true },
  { kind: 'message.failed', emitted: true },
  { kind: 'message.suppressed', emitted: true },
  { kind: 'message.complained', emitted: true },
  { kind: 'message.opened', emitted: false },
  { kind: 'message.clicked', emitted: false },
  { kind: 'message.unsubscribed', emitted: false },
  { kind: 'contact.subscribed', emitted: true },
  { kind: 'contact.unsubscribed', emitted: true },
  { kind: 'contact.bounced', emitted: true },
  { kind: 'contact.complained', emitted: true },
  { kind: 'broadcast.sent', emitted: false },
  { kind: 'broadcast.opened', emitted: false },
  { kind: 'broadcast.clicked', emitted: false },
  { kind: 'webhook.disabled', emitted: true },
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

export interface EventView {
  id: number
  kind: string
  created_at: string
  message_id: string | null
  recipient: string | null
  contact_id: number | null
  list_id: number | null
  broadcast_id: number | null
  bridge_id: number | null
  data: Record<string, unknown>
}

/** Splits and checks the kind filter: every name must be a known kind (a typo would silently match nothing). */
export function parseKinds(value: string | undefined, field = 'kind'): string[] | undefined {
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
  const unknown = kinds.filter((k) => !EVENT_KIND_NAMES.includes(k))
  if (unknown.length) throw invalidField(field, `unknown event kind ${unknown.map((k) => `"${k}"`).join(', ')}; see docs/api.md "Event kinds"`)
  return kinds
}

function parseTime(value: string | undefined, field: string): number | undefined {
  if (value === undefined) return undefined
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) throw invalidField(field, 'must be an ISO 8601 time')
  return ms
}

/**
 * A page of events, newest first (created_at, then id). Every filter is an index lookup:
 * kind (events_kind_created_idx), message_id (events_message_idx), the time range
 * (events_created_idx), and recipient, contact, list, broadcast and bridge (their partial
 * `(col, created_at)` indexes, migration 0008).
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
  const total = deps.db.select({ n: count() }).from(events).where(where).get()!.n
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
