import { and, asc, count, desc, eq, gt, inArray, isNotNull, like, lt, min, or, sql, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../../db/crud'
import { broadcastRecipients, contacts, customEvents, events } from '../../db/schema'
import { AppError } from '../../lib/errors'
import { decodeId, type Pagination } from './ids'

/** Raw SQL of the Resend surface, kept here (CONVENTIONS.md "Storage"); portable to PostgreSQL. */

/**
 * A Resend contact is listed once, by its oldest Mailroom contact. The NOT EXISTS walks the
 * unique (list_id, email) index list by list (there is no index on the address alone).
 */
export const OLDEST_OF_ITS_ADDRESS = sql`NOT EXISTS (SELECT 1 FROM contacts AS c2 WHERE c2.list_id IN (SELECT id FROM lists) AND c2.email = ${contacts.email} AND c2.id < ${contacts.id})`

/** A custom event name as Resend's events show one: the id and time of its first event. */
export type EventName = { id: number; name: string; created_at: number }

const firstOfName = (db: DbOrTx) =>
  db.select({ id: min(customEvents.id).mapWith(Number), name: customEvents.name, created_at: min(customEvents.created_at).mapWith(Number) }).from(customEvents)

/**
 * One page of the distinct event names received, newest first (by each name's first event),
 * with Resend's cursors on those first-event ids. A GROUP BY over custom_events: there is no
 * index on the name alone, so this reads the table (an index on name would make it a walk).
 */
export function eventNamePage(db: DbOrTx, q: Pagination): { rows: EventName[]; has_more: boolean } {
  if (q.after !== undefined && q.before !== undefined)
    throw new AppError('validation_failed', 'Use `after` or `before`, not both.', { before: ['cannot be used with after'] })
  const limit = q.limit ?? 20
  const back = q.before !== undefined
  const cursor = q.after ?? q.before
  const from = cursor === undefined ? undefined : decodeId('event', cursor)
  const first = min(customEvents.id)
  const rows = firstOfName(db)
    .groupBy(customEvents.name)
    .having(from === undefined ? undefined : back ? gt(first, from) : lt(first, from))
    .orderBy(back ? asc(first) : desc(first))
    .limit(limit + 1)
    .all() as EventName[]
  const page = rows.slice(0, limit)
  return { rows: back ? page.reverse() : page, has_more: rows.length > limit }
}

/** The event name whose first event has this id, or null. */
export function eventNameById(db: DbOrTx, id: number): EventName | null {
  const row = db.select({ name: customEvents.name }).from(customEvents).where(eq(customEvents.id, id)).get()
  const found = row ? eventNameByName(db, row.name) : null
  return found && found.id === id ? found : null
}

/** The event name with the id and time of its first event, or null when none was received. */
export function eventNameByName(db: DbOrTx, name: string): EventName | null {
  const row = firstOfName(db).where(eq(customEvents.name, name)).groupBy(customEvents.name).get() as EventName | undefined
  return row ?? null
}

/** Resend's broadcast recipient event types (resend SDK 6.38, `BroadcastRecipientEventType`). */
export const RECIPIENT_TYPES = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed', 'suppressed'] as const
export type RecipientType = (typeof RECIPIENT_TYPES)[number]
export const BOUNCE_TYPES = ['permanent', 'transient', 'undetermined'] as const
export type BounceType = (typeof BOUNCE_TYPES)[number]

/** Whether the recipient row's message has an event of this kind (events_message_idx: one probe per row). */
const messageHad = (kind: string) => sql`EXISTS (SELECT 1 FROM events AS e WHERE e.message_id = ${broadcastRecipients.message_id} AND e.kind = ${kind})`

/**
 * The broadcast_recipients rows Resend lists under `type`. Mailroom's `sent` state is "the
 * receiving server accepted it", Resend's `delivered`; Resend's `sent` (handed over) is
 * `sent` plus `bounced` (the native stats' `sent`). A permanent bounce is the `bounced`
 * state (message.bounced: refused for good); a transient one is a `failed` row whose message
 * was queued (message.failed: retries of temporary refusals ran out). Mailroom always knows
 * which, so `undetermined` matches nothing. Opens and clicks are the rows' first-open and
 * first-click times (a click counts as an open, as natively); complaints and unsubscribes are
 * the events of the row's message; `suppressed` is a row skipped for a suppression.
 */
export function recipientTypeWhere(type: RecipientType, bounce?: BounceType): SQL | undefined {
  const r = broadcastRecipients
  switch (type) {
    case 'sent':
      return inArray(r.state, ['sent', 'bounced'])
    case 'delivered':
      return eq(r.state, 'sent')
    case 'opened':
      return isNotNull(r.opened_at)
    case 'clicked':
      return isNotNull(r.clicked_at)
    case 'bounced': {
      const permanent = eq(r.state, 'bounced')
      const transient = and(eq(r.state, 'failed'), isNotNull(r.message_id))
      if (bounce === 'permanent') return permanent
      if (bounce === 'transient') return transient
      if (bounce === 'undetermined') return sql`0`
      return or(permanent, transient)
    }
    case 'complained':
      return and(isNotNull(r.message_id), messageHad('message.complained'))
    case 'unsubscribed':
      return and(isNotNull(r.message_id), messageHad('message.unsubscribed'))
    case 'suppressed':
      return and(eq(r.state, 'skipped'), like(r.reason, 'suppressed%'))
  }
}

/** Opens and clicks (per URL) of these messages, from their events. */
export function engagementOf(db: DbOrTx, messageIds: string[]): Map<string, { opens: number; links: Map<string, number> }> {
  const out = new Map<string, { opens: number; links: Map<string, number> }>()
  if (!messageIds.length) return out
  const url = sql<string | null>`json_extract(${events.data}, '$.url')`
  const rows = db
    .select({ message_id: events.message_id, kind: events.kind, url, n: count() })
    .from(events)
    .where(and(inArray(events.message_id, messageIds), inArray(events.kind, ['message.opened', 'message.clicked'])))
    .groupBy(events.message_id, events.kind, url)
    .all()
  for (const row of rows) {
    let m = out.get(row.message_id!)
    if (!m) out.set(row.message_id!, (m = { opens: 0, links: new Map() }))
    if (row.kind === 'message.opened') m.opens += row.n
    else if (row.url !== null) m.links.set(row.url, (m.links.get(row.url) ?? 0) + row.n)
  }
  return out
}

/** Which of these contact ids still exist. */
export function existingContacts(db: DbOrTx, ids: number[]): Set<number> {
  if (!ids.length) return new Set()
  return new Set(
    db
      .select({ id: contacts.id })
      .from(contacts)
      .where(inArray(contacts.id, ids))
      .all()
      .map((r) => r.id),
  )
}
