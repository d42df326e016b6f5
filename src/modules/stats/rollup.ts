import type { Db } from '../../db/client'
import type { Deps } from '../../deps'
import { preparedFor } from '../../db/prepared'
import { PROVIDER_GROUPS } from '../../delivery/providers'
import { DAY_SUFFIX, PROVIDER_KINDS, TLS_COUNTER } from './service'

/**
 * Statistics rollups: tails the event log by id and adds each event to the hourly counters
 * of `stats_hourly`, once per dimension ('all', 'domain', 'ip', 'pool', 'bridge', 'list',
 * 'broadcast', 'reason', 'provider'), and to the day counters ('<dim>.day', see DAY_SUFFIX). GET /api/v2/stats
 * reads only those counters, so a query over months of events sums a few thousand rows
 * instead of counting millions.
 *
 * Exactly once: the counters of a batch and the cursor (system_state 'stats.cursor', the last
 * event id counted) are written in one transaction, so a crash either keeps both or neither,
 * and a restart goes on from the cursor. Tailing by id is safe because SQLite has one writer
 * at a time and AUTOINCREMENT ids only grow: once event N is visible, every event below N
 * that will ever exist is already committed, so the cursor never skips a late commit.
 */

export const STATS_CURSOR_KEY = 'stats.cursor'
/**
 * Events per transaction. A batch holds the thread while it runs (about 17 µs an event on
 * the 2-core VM, docs/benchmarks.md), so 2,000 keeps each under about 40 ms and HTTP
 * requests are served between batches while a backlog is worked off; the fsync per batch
 * is then a small share.
 */
export const STATS_BATCH = 2000
/** How often an idle server looks for new events; one indexed lookup when there are none. */
const WAKE_INTERVAL_MS = 1000
const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS

const quote = (s: string) => `'${s.replace(/'/g, "''")}'`
/** The recipient's domain of an event (lower case), as SQL. */
const RCPT_DOMAIN = `lower(substr(e.recipient, instr(e.recipient, '@') + 1))`
/**
 * The provider group of the recipient's domain, as the delivery shaper and the queue view
 * name it (delivery/shaping.ts groupOf, deliverability/service.ts queueView): a built-in
 * group's own domain, else the group learned from the domain's MX hosts (provider_domains,
 * written by the shaper before the first delivery to it), else 'mx:<domain>'.
 */
const PROVIDER_SQL = `coalesce(CASE ${RCPT_DOMAIN} ${PROVIDER_GROUPS.flatMap((g) => g.domains.map((d) => `WHEN ${quote(d)} THEN ${quote(g.id)}`)).join(' ')} END, pd.provider, 'mx:' || ${RCPT_DOMAIN})`
const PROVIDER_KIND_LIST = PROVIDER_KINDS.map(quote).join(', ')

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    cursor: c.prepare<{ value: string }, [string]>('SELECT value FROM system_state WHERE key = ?'),
    saveCursor: c.prepare<never, [string, string, number]>(
      'INSERT INTO system_state (key, value, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
    ),
    // The id that ends the next batch: the STATS_BATCH-th event after the cursor, or the last one.
    batchEnd: c.prepare<{ hi: number | null; n: number }, [number, number]>(
      'SELECT max(id) AS hi, count(*) AS n FROM (SELECT id FROM events WHERE id > ?1 ORDER BY id LIMIT ?2)',
    ),
    // One statement adds a whole batch: the events (with their message's domain, pool and
    // bridge) are read once, fanned out to one row per dimension, grouped, and upserted.
    // The sending domain is the DKIM signing domain of the message (sending_domains.name);
    // an unsigned message (no sending domain, or one since deleted) counts under the domain
    // of its From address. The IP is data.source_ip of delivery events (the address the
    // outcome came through) and of ARF complaints (the address the report names). The pool
    // is the one the delivery engine sends from: a direct node's pool, else the message's
    // (the request's, else its sending domain's); null (the default rotation) is not a group.
    rollup: c.prepare<never, [number, number]>(`
      WITH b AS MATERIALIZED (
        SELECT e.kind AS kind, (e.created_at / ${HOUR_MS}) * ${HOUR_MS} AS hour,
          coalesce(d.name, CASE WHEN m.id IS NOT NULL THEN lower(substr(m.from_address, instr(m.from_address, '@') + 1)) END) AS domain,
          json_extract(e.data, '$.source_ip') AS ip,
          CASE WHEN n.kind = 'direct' AND n.pool_id IS NOT NULL THEN n.pool_id ELSE m.pool_id END AS pool_id,
          coalesce(e.bridge_id, m.bridge_id) AS bridge_id,
          e.list_id AS list_id,
          e.broadcast_id AS broadcast_id,
          -- Why a delivery failed or waits (BOUNCE_REASONS, src/lib/smtp-replies.ts): the 'reason' dimension.
          CASE WHEN e.kind IN ('message.bounced', 'message.failed', 'message.deferred', 'message.delayed') THEN json_extract(e.data, '$.reason') END AS reason,
          -- The recipient's provider group, for delivery outcomes only (PROVIDER_KINDS): the 'provider' dimension.
          CASE WHEN e.kind IN (${PROVIDER_KIND_LIST}) AND e.recipient IS NOT NULL THEN ${PROVIDER_SQL} END AS provider
        FROM (
          SELECT id, kind, created_at, message_id, data, bridge_id, list_id, broadcast_id, recipient FROM events WHERE id > ?1 AND id <= ?2
          -- The first open and the first click of a message also count as unique ones (UNIQUE_COUNTERS).
          UNION ALL
          SELECT id, kind || '.unique', created_at, message_id, data, bridge_id, list_id, broadcast_id, recipient FROM events
          -- "+kind": by id range, not through the kind index (every open and click ever recorded, per batch).
          WHERE id > ?1 AND id <= ?2 AND +kind IN ('message.opened', 'message.clicked') AND json_extract(data, '$.first') = 1
          -- A delivery over TLS (data.tls is set: version, cipher, verified; null in plain text) also counts as TLS_COUNTER.
          -- "+kind" again: by id range, not through the kind index over every delivery ever recorded.
          UNION ALL
          SELECT id, '${TLS_COUNTER}', created_at, message_id, data, bridge_id, list_id, broadcast_id, recipient FROM events
          WHERE id > ?1 AND id <= ?2 AND +kind = 'message.sent' AND json_extract(data, '$.tls') IS NOT NULL
        ) e
        LEFT JOIN messages m ON e.message_id IS NOT NULL AND m.id = e.message_id
        LEFT JOIN sending_domains d ON d.id = m.domain_id
        LEFT JOIN sending_nodes n ON n.id = m.node_id
        LEFT JOIN provider_domains pd ON e.kind IN (${PROVIDER_KIND_LIST}) AND e.recipient IS NOT NULL AND pd.domain = ${RCPT_DOMAIN}
      )
      , f AS MATERIALIZED (
        SELECT 'all' AS dim, hour, '' AS dim_value, kind FROM b
        UNION ALL SELECT 'domain', hour, domain, kind FROM b WHERE domain IS NOT NULL AND domain != ''
        UNION ALL SELECT 'ip', hour, ip, kind FROM b WHERE ip IS NOT NULL AND ip != ''
        UNION ALL SELECT 'pool', hour, CAST(pool_id AS TEXT), kind FROM b WHERE pool_id IS NOT NULL
        UNION ALL SELECT 'bridge', hour, CAST(bridge_id AS TEXT), kind FROM b WHERE bridge_id IS NOT NULL
        UNION ALL SELECT 'list', hour, CAST(list_id AS TEXT), kind FROM b WHERE list_id IS NOT NULL
        UNION ALL SELECT 'broadcast', hour, CAST(broadcast_id AS TEXT), kind FROM b WHERE broadcast_id IS NOT NULL
        UNION ALL SELECT 'reason', hour, reason, kind FROM b WHERE reason IS NOT NULL AND reason != ''
        UNION ALL SELECT 'provider', hour, provider, kind FROM b WHERE provider IS NOT NULL AND provider != 'mx:'
      )
      INSERT INTO stats_hourly (dim, hour, dim_value, kind, count)
      SELECT dim, hour, dim_value, kind, count(*) FROM (
        SELECT dim, hour, dim_value, kind FROM f
        UNION ALL SELECT dim || '${DAY_SUFFIX}', hour - hour % ${DAY_MS}, dim_value, kind FROM f
      ) WHERE true
      GROUP BY dim, hour, dim_value, kind
      ON CONFLICT (dim, hour, dim_value, kind) DO UPDATE SET count = count + excluded.count`),
  }
})

/** The id of the last event counted (0 before the first batch). */
export function statsCursor(db: Db): number {
  const row = statements(db).cursor.get(STATS_CURSOR_KEY)
  return row ? Number(row.value) : 0
}

/** Counts the next batch of events and moves the cursor, inside the caller's transaction; returns how many it counted. */
function countBatch(deps: Pick<Deps, 'db' | 'clock'>, limit: number): number {
  const st = statements(deps.db)
  // Read inside the transaction: the cursor and the counters move together.
  const from = statsCursor(deps.db)
  const { hi, n } = st.batchEnd.get(from, limit)!
  if (hi === null) return 0
  st.rollup.run(from, hi)
  st.saveCursor.run(STATS_CURSOR_KEY, String(hi), deps.clock.now())
  return n
}

/**
 * Counts the next batch of events, in one transaction with the cursor. Returns how many
 * events it counted (0 when the log holds nothing new).
 */
export function rollupBatch(deps: Pick<Deps, 'db' | 'clock'>, limit = STATS_BATCH): number {
  return deps.db.$client.transaction(() => countBatch(deps, limit)).immediate()
}

/** Counts every event not yet counted, batch after batch; returns how many batches ran. For tests and the benchmark. */
export function drainStats(deps: Pick<Deps, 'db' | 'clock'>, limit = STATS_BATCH): number {
  let batches = 0
  while (rollupBatch(deps, limit) > 0) batches++
  return batches
}

export interface StatsRollup {
  /** Look for new events now instead of at the next tick. */
  wake(): void
  /** Counts everything outstanding, synchronously. */
  drain(): number
  /** Stops ticking and waits for the batch in progress. */
  stop(): Promise<void>
}

/**
 * Starts the rollup job for `mailroom serve`: a tick every second, and while there is a
 * backlog (after a restart, or a burst of sending) one batch per event-loop turn, so HTTP
 * requests are served between batches. Idle, a tick costs one indexed lookup.
 */
export function startStatsRollup(deps: Pick<Deps, 'db' | 'clock' | 'log' | 'commits'>, opts: { intervalMs?: number; batch?: number } = {}): StatsRollup {
  const batch = opts.batch ?? STATS_BATCH
  const hasNew = deps.db.$client.prepare<{ id: number }, [number]>('SELECT id FROM events WHERE id > ? LIMIT 1')
  let known = statsCursor(deps.db)
  let running: Promise<void> | null = null
  let stopped = false

  // Each batch joins the group commit (db/group-commit.ts): in a transaction of its own it
  // committed with synchronous=FULL, a blocking fsync on the server's thread per batch.
  const step = async (): Promise<boolean> => {
    try {
      const n = await deps.commits.run(() => countBatch(deps, batch))
      known = statsCursor(deps.db)
      return n > 0
    } catch (e) {
      // A busy or full disk: the batch rolled back whole; the next tick tries again.
      deps.log.error('statistics rollup failed', { error: (e as Error).message })
      return false
    }
  }

  const run = () => {
    if (running || stopped) return
    if (!hasNew.get(known)) return
    running = (async () => {
      while (!stopped && (await step())) await new Promise((r) => setImmediate(r))
      running = null
    })()
  }

  const timer = setInterval(run, opts.intervalMs ?? WAKE_INTERVAL_MS)
  run()
  return {
    wake: run,
    drain: () => drainStats(deps, batch),
    async stop() {
      stopped = true
      clearInterval(timer)
      await running
    },
  }
}
