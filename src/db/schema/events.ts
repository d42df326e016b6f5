import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, type SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { createdAt, serialId } from './columns'

/** `events_<subject>_idx` on (column, created_at), partial on `column IS NOT NULL`. */
function subjectIndex(subject: string, column: SQLiteColumn, createdAt: SQLiteColumn) {
  return index(`events_${subject}_idx`)
    .on(column, createdAt)
    .where(sql`${sql.raw(column.name)} IS NOT NULL`)
}

/**
 * The append-only event log. Every contact, message and engagement event is one row,
 * written in the same transaction as the change it describes; webhooks and statistics
 * read from here. The subject columns are nullable so that one table serves every kind
 * and the filters of GET /api/v2/events stay index lookups.
 */
export const events = sqliteTable(
  'events',
  {
    id: serialId(),
    kind: text('kind').notNull(),
    created_at: createdAt(),
    contact_id: integer('contact_id'),
    list_id: integer('list_id'),
    message_id: text('message_id'),
    recipient: text('recipient'),
    broadcast_id: integer('broadcast_id'),
    bridge_id: integer('bridge_id'),
    actor_key_id: integer('actor_key_id'),
    data: text('data', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
  },
  (t) => [
    index('events_kind_created_idx').on(t.kind, t.created_at),
    index('events_created_idx').on(t.created_at),
    // A message's timeline (GET /api/v2/messages/{id}) and the message filter of GET /api/v2/events.
    index('events_message_idx').on(t.message_id),
    // The other subject filters of GET /api/v2/events, newest first. Partial: most events have
    // no list, broadcast or bridge, and `col = ?` implies `col IS NOT NULL`, so SQLite uses them.
    subjectIndex('recipient', t.recipient, t.created_at),
    subjectIndex('contact', t.contact_id, t.created_at),
    subjectIndex('list', t.list_id, t.created_at),
    subjectIndex('broadcast', t.broadcast_id, t.created_at),
    subjectIndex('bridge', t.bridge_id, t.created_at),
  ],
)
