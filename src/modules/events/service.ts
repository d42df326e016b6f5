import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import { events } from '../../db/schema'

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
