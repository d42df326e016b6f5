import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * The append-only event log. Every contact, message and engagement event is one row,
 * written in the same transaction as the change it describes; webhooks and statistics
 * read from here. The subject columns are nullable so that one table serves every kind
 * and the filters of GET /api/v2/events stay index lookups.
 */
export const events = sqliteTable(
  'events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    kind: text('kind').notNull(),
    created_at: integer('created_at').notNull(),
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
    index('events_recipient_idx')
      .on(t.recipient, t.created_at)
      .where(sql`recipient IS NOT NULL`),
    index('events_contact_idx')
      .on(t.contact_id, t.created_at)
      .where(sql`contact_id IS NOT NULL`),
    index('events_list_idx')
      .on(t.list_id, t.created_at)
      .where(sql`list_id IS NOT NULL`),
    index('events_broadcast_idx')
      .on(t.broadcast_id, t.created_at)
      .where(sql`broadcast_id IS NOT NULL`),
    index('events_bridge_idx')
      .on(t.bridge_id, t.created_at)
      .where(sql`bridge_id IS NOT NULL`),
  ],
)
