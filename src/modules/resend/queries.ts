import { asc, desc, eq, gt, lt, min, sql } from 'drizzle-orm'
import type { DbOrTx } from '../../db/crud'
import { contacts, customEvents } from '../../db/schema'
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
