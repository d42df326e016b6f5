import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import { emit } from '../events/service'

/**
 * The counters of `broadcast_counts`, moved in the transactions that change recipient rows,
 * per broadcast (version 0 = all versions together) and per version.
 */

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    bump: c.prepare<never, [number, number, string, number]>(
      'INSERT INTO broadcast_counts (broadcast_id, version_id, metric, n) VALUES (?, ?, ?, ?) ON CONFLICT (broadcast_id, version_id, metric) DO UPDATE SET n = n + excluded.n',
    ),
    get: c.prepare<{ n: number }, [number, number, string]>('SELECT n FROM broadcast_counts WHERE broadcast_id = ? AND version_id = ? AND metric = ?'),
    setStatus: c.prepare<never, [string, string | null, number, number, string]>(
      'UPDATE broadcasts SET status = ?, status_reason = ?, updated_at = ? WHERE id = ? AND status = ?',
    ),
  }
})

/** Adds `delta` to a metric of the broadcast and of the version (when it has one). Inside the caller's transaction. */
export function bump(db: Db, broadcastId: number, versionId: number | null, metric: string, delta = 1): void {
  if (delta === 0) return
  const st = statements(db)
  st.bump.run(broadcastId, 0, metric, delta)
  if (versionId !== null) st.bump.run(broadcastId, versionId, metric, delta)
}

/** A counter's value (version 0 = the whole broadcast). */
export function countOf(db: Db, broadcastId: number, metric: string, versionId = 0): number {
  return statements(db).get.get(broadcastId, versionId, metric)?.n ?? 0
}

/**
 * Moves a broadcast from `from` to `to` when it is still in `from` (bc-api may have changed it
 * meanwhile: its change wins); with an event when `event` is given. True when it moved.
 */
export function moveStatus(
  deps: Pick<Deps, 'db' | 'clock'>,
  broadcastId: number,
  from: string,
  to: string,
  reason: string | null,
  event?: { kind: string; data?: Record<string, unknown> },
): boolean {
  const now = deps.clock.now()
  const changed = statements(deps.db).setStatus.run(to, reason, now, broadcastId, from).changes > 0
  if (changed && event) emit(deps.db, now, { kind: event.kind, broadcast_id: broadcastId, data: { broadcast_id: broadcastId, ...event.data } })
  return changed
}
