import { unpackMessage } from '../../lib/stored-message'
import type { Db } from '../../db/client'

/** Raw SQL of the doctor (house rule: raw SQL lives in a module's queries.ts), portable to PostgreSQL. */

/** Events of `kind` since `since` (ms), through events_kind_created_idx. */
export function countEventsSince(db: Db, kind: string, since: number): number {
  return db.$client.query<{ n: number }, [string, number]>('SELECT count(*) AS n FROM events WHERE kind = ? AND created_at >= ?').get(kind, since)!.n
}

/**
 * The header section (the bytes before the first empty line, at most 16 KB) of the newest
 * `limit` broadcast messages since `since`: the marketing mail the bulk-sender rules are about.
 * Messages are stored compressed (lib/stored-message.ts), so each is read whole.
 */
export function recentBroadcastHeaders(db: Db, since: number, limit: number): Array<{ id: string; header: string }> {
  const rows = db.$client
    .query<{ id: string; raw: Uint8Array }, [number, number]>(
      'SELECT id, raw FROM messages WHERE broadcast_id IS NOT NULL AND created_at >= ? ORDER BY created_at DESC LIMIT ?',
    )
    .all(since, limit)
  return rows.map((r) => {
    const text = unpackMessage(r.raw).subarray(0, 16384).toString('latin1')
    const end = text.search(/\r?\n\r?\n/)
    return { id: r.id, header: end >= 0 ? text.slice(0, end) : text }
  })
}
