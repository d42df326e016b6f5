import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import { emitPrepared } from '../events/service'
import { bump } from './counts'

/**
 * Outcomes of broadcast messages (issue 15): tails the event log as the statistics rollup
 * does, and turns the delivery and engagement events of messages that belong to a broadcast
 * (found through broadcast_recipients.message_id) into recipient row states, counters and
 * the `broadcast.sent` / `broadcast.opened` / `broadcast.clicked` events naming the
 * broadcast, version and contact. The cursor (system_state 'broadcasts.cursor') moves in the
 * same transaction as the rows, so each event is applied exactly once across restarts;
 * tailing by id is safe for the reason given in stats/rollup.ts.
 */

export const OUTCOMES_CURSOR_KEY = 'broadcasts.cursor'
export const OUTCOMES_BATCH = 2000

const KINDS = [
  'message.sent',
  'message.bounced',
  'message.failed',
  'message.suppressed',
  'message.opened',
  'message.clicked',
  'message.complained',
  'message.unsubscribed',
]

interface Row {
  event_id: number
  kind: string
  data: string
  rid: number
  broadcast_id: number
  version_id: number | null
  contact_id: number
  list_id: number
  email: string
  state: string
  opened_at: number | null
  clicked_at: number | null
}

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    cursor: c.prepare<{ value: string }, [string]>('SELECT value FROM system_state WHERE key = ?'),
    saveCursor: c.prepare<never, [string, string, number]>(
      'INSERT INTO system_state (key, value, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
    ),
    batchEnd: c.prepare<{ hi: number | null }, [number, number]>('SELECT max(id) AS hi FROM (SELECT id FROM events WHERE id > ?1 ORDER BY id LIMIT ?2)'),
    // "+e.kind" keeps the kind index out: through it SQLite read every message.sent event ever
    // recorded for each batch (18 % of the server's CPU in a 50,000-recipient broadcast).
    rows: c.prepare<Row, [number, number]>(`
      SELECT e.id AS event_id, e.kind, e.data, r.id AS rid, r.broadcast_id, r.version_id, r.contact_id, r.list_id, r.email, r.state, r.opened_at, r.clicked_at
      FROM events e JOIN broadcast_recipients r ON r.message_id = e.message_id
      WHERE e.id > ?1 AND e.id <= ?2 AND e.message_id IS NOT NULL AND +e.kind IN (${KINDS.map((k) => `'${k}'`).join(', ')})
      ORDER BY e.id`),
    setState: c.prepare<never, [string, string | null, number, number]>(
      'UPDATE broadcast_recipients SET state = ?, reason = coalesce(?, reason), updated_at = ? WHERE id = ?',
    ),
    opened: c.prepare<never, [number, number]>('UPDATE broadcast_recipients SET opened_at = ? WHERE id = ? AND opened_at IS NULL'),
    clicked: c.prepare<never, [number, number]>(
      'UPDATE broadcast_recipients SET clicked_at = ?, opened_at = coalesce(opened_at, ?1) WHERE id = ?2 AND clicked_at IS NULL',
    ),
  }
})

/** The id of the last event applied (0 before the first batch). */
export function outcomesCursor(db: Db): number {
  const row = statements(db).cursor.get(OUTCOMES_CURSOR_KEY)
  return row ? Number(row.value) : 0
}

/**
 * Applies the next batch of events and moves the cursor; returns whether there was one. Runs
 * inside the caller's transaction: the runner's group commit (db/group-commit.ts), so the
 * batch shares the accepted mail's commit and its fsync off the thread. In a transaction of
 * its own, committed with synchronous=FULL on the server's thread, it was a blocking fsync
 * every 20 ms while sends were accepted (every accepted send rings the runner).
 */
export function outcomeBatch(deps: Pick<Deps, 'db' | 'clock'>, limit = OUTCOMES_BATCH): boolean {
  const st = statements(deps.db)
  const from = outcomesCursor(deps.db)
  const hi = st.batchEnd.get(from, limit)?.hi ?? null
  if (hi === null) return false
  const now = deps.clock.now()
  // A row met twice in one batch (sent, then opened) is seen with the state the first event left.
  const seen = new Map<number, Row>()
  for (const row of st.rows.all(from, hi)) {
    const r = seen.get(row.rid) ? { ...seen.get(row.rid)!, event_id: row.event_id, kind: row.kind, data: row.data } : row
    applyOutcome(deps.db, now, r)
    seen.set(r.rid, r)
  }
  st.saveCursor.run(OUTCOMES_CURSOR_KEY, String(hi), now)
  return true
}

function applyOutcome(db: Db, now: number, r: Row): void {
  const st = statements(db)
  const v = r.version_id
  const subject = { broadcast_id: r.broadcast_id, version_id: v, contact_id: r.contact_id, email: r.email }
  // Every delivered broadcast message writes one event here: the prepared insert, not emit()
  // (drizzle builds its query per call, ~0.25-0.35 ms on the 2-core VM against 15-30 us).
  const event = (kind: string, extra: Record<string, unknown> = {}) =>
    emitPrepared(db, now, {
      kind,
      broadcast_id: r.broadcast_id,
      contact_id: r.contact_id,
      list_id: r.list_id,
      recipient: r.email,
      data: { ...subject, ...extra },
    })
  /** A queued row reaching a final state leaves the in-flight window. */
  const finish = (state: string, reason: string | null = null) => {
    if (r.state === 'queued') bump(db, r.broadcast_id, v, 'queued', -1)
    st.setState.run(state, reason, now, r.rid)
    bump(db, r.broadcast_id, v, state)
    r.state = state
  }
  const data = JSON.parse(r.data) as Record<string, unknown>
  switch (r.kind) {
    case 'message.sent':
      if (r.state !== 'queued') return
      finish('sent')
      bump(db, r.broadcast_id, v, 'delivered')
      event('broadcast.sent')
      return
    case 'message.bounced':
      // Also after `sent`: an asynchronous bounce (DSN) of mail the MX had accepted.
      if (r.state !== 'queued' && r.state !== 'sent') return
      finish('bounced', typeof data.reason === 'string' ? data.reason : null)
      return
    case 'message.failed':
      if (r.state !== 'queued') return
      finish('failed', typeof data.reason === 'string' ? data.reason : 'delivery failed')
      return
    case 'message.suppressed':
      // A suppression added between the sender's check and the queueing commit.
      if (r.state !== 'queued') return
      finish('skipped', 'suppressed')
      return
    case 'message.opened':
      if (r.opened_at === null) {
        st.opened.run(now, r.rid)
        bump(db, r.broadcast_id, v, 'opened')
        r.opened_at = now
      }
      event('broadcast.opened', { first: data.first === true })
      return
    case 'message.clicked': {
      const url = typeof data.url === 'string' ? data.url : null
      if (r.clicked_at === null) {
        st.clicked.run(now, r.rid)
        bump(db, r.broadcast_id, v, 'clicked')
        // A click proves an open (images may be blocked): it counts as the unique open too.
        if (r.opened_at === null) bump(db, r.broadcast_id, v, 'opened')
        r.clicked_at = now
        r.opened_at ??= now
      }
      if (url) bump(db, r.broadcast_id, v, `link:${url}`)
      event('broadcast.clicked', { url })
      return
    }
    case 'message.complained':
      bump(db, r.broadcast_id, v, 'complained')
      return
    case 'message.unsubscribed':
      bump(db, r.broadcast_id, v, 'unsubscribed')
      return
  }
}
