import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import { toIso } from '../../lib/clock'
import { AppError } from '../../lib/errors'
import type { BridgeCounts } from './model'

/**
 * A bridge's quotas (hourly and daily, counted per clock hour in bridge_usage) and running
 * totals (bridge_counters). Taking quota and counting run inside the transaction that
 * commits the messages.
 */

const HOUR = 3_600_000
const DAY = 86_400_000

const COUNTER_FIELDS = ['accepted', 'delivered', 'bounced', 'complained'] as const
type CounterField = (typeof COUNTER_FIELDS)[number]

const statements = preparedFor((db: Db) => {
  const c = db.$client
  // Upserts through a SELECT on bridges, so a count for a bridge deleted meanwhile is a no-op
  // instead of a foreign-key failure that would fail the caller's whole write.
  const counter = (field: CounterField) =>
    c.prepare<never, [number, number]>(
      `INSERT INTO bridge_counters (bridge_id, ${field}) SELECT id, ?1 FROM bridges WHERE id = ?2
       ON CONFLICT (bridge_id) DO UPDATE SET ${field} = ${field} + excluded.${field}`,
    )
  return {
    quotas: c.prepare<{ name: string; hourly_quota: number | null; daily_quota: number | null }, [number]>(
      'SELECT name, hourly_quota, daily_quota FROM bridges WHERE id = ?',
    ),
    hourUsed: c.prepare<{ count: number }, [number, number]>('SELECT count FROM bridge_usage WHERE bridge_id = ? AND hour = ?'),
    dayUsed: c.prepare<{ n: number }, [number, number, number]>(
      'SELECT COALESCE(SUM(count), 0) AS n FROM bridge_usage WHERE bridge_id = ? AND hour >= ? AND hour < ?',
    ),
    addUsage: c.prepare<never, [number, number, number]>(
      'INSERT INTO bridge_usage (bridge_id, hour, count) VALUES (?, ?, ?) ON CONFLICT (bridge_id, hour) DO UPDATE SET count = count + excluded.count',
    ),
    prune: c.prepare<never, [number, number]>('DELETE FROM bridge_usage WHERE bridge_id = ? AND hour < ?'),
    counters: c.prepare<BridgeCounts, [number]>('SELECT accepted, delivered, bounced, complained FROM bridge_counters WHERE bridge_id = ?'),
    count: Object.fromEntries(COUNTER_FIELDS.map((f) => [f, counter(f)])) as Record<CounterField, ReturnType<typeof counter>>,
  }
})

/** A quota refusal as an error: 429 with when the quota resets (the HTTP route turns it into Retry-After). */
export class BridgeQuotaError extends AppError {
  constructor(
    readonly quota: 'hourly' | 'daily',
    readonly resets_at: number,
    limit: number,
    bridgeName: string,
    now: number,
  ) {
    super(
      'rate_limited',
      `The ${quota} quota of ${limit} messages of the bridge "${bridgeName}" is used up; it resets at ${toIso(resets_at)} (in ${Math.ceil((resets_at - now) / 1000)} s).`,
    )
  }
}

/**
 * Checks the bridge's hourly and daily quotas for `n` more messages and, when they fit,
 * counts them. Usage is kept per clock hour; the daily quota is the sum of the hours of the
 * current UTC day. Callers run it inside the transaction that writes the messages, so a
 * write that fails (or rolls back) never uses quota, and two writers cannot both take the
 * last slot. When both quotas are used up the daily one is reported: it resets later, so a
 * client that waits for `resets_at` is not refused again at once. An unknown bridge (deleted
 * meanwhile) is not limited.
 */
export function takeBridgeQuota(
  deps: Pick<Deps, 'db' | 'clock'>,
  bridgeId: number,
  n: number,
): { ok: true } | { ok: false; quota: 'hourly' | 'daily'; resets_at: number } {
  const s = statements(deps.db)
  const q = s.quotas.get(bridgeId)
  if (!q || n <= 0) return { ok: true }
  const now = deps.clock.now()
  const hour = Math.floor(now / HOUR) * HOUR
  const day = Math.floor(now / DAY) * DAY
  const hourRow = s.hourUsed.get(bridgeId, hour)
  if (q.daily_quota !== null && s.dayUsed.get(bridgeId, day, day + DAY)!.n + n > q.daily_quota) return { ok: false, quota: 'daily', resets_at: day + DAY }
  if (q.hourly_quota !== null && (hourRow?.count ?? 0) + n > q.hourly_quota) return { ok: false, quota: 'hourly', resets_at: hour + HOUR }
  // A new hour: drop rows before yesterday, which no quota or usage figure reads any more.
  if (!hourRow) s.prune.run(bridgeId, day - DAY)
  s.addUsage.run(bridgeId, hour, n)
  return { ok: true }
}

/**
 * takeBridgeQuota for the send path: throws BridgeQuotaError (429) when a quota is used up.
 * Inside the caller's transaction, like takeBridgeQuota.
 */
export function takeBridgeQuotaOrThrow(deps: Pick<Deps, 'db' | 'clock'>, bridgeId: number, n: number): void {
  const r = takeBridgeQuota(deps, bridgeId, n)
  if (r.ok) return
  const q = statements(deps.db).quotas.get(bridgeId)!
  throw new BridgeQuotaError(r.quota, r.resets_at, (r.quota === 'hourly' ? q.hourly_quota : q.daily_quota)!, q.name, deps.clock.now())
}

/**
 * Adds to one of a bridge's running totals, in the caller's transaction: `accepted` per
 * message committed, `delivered` and `bounced` per recipient outcome, `complained` per
 * complaint. A bridge that no longer exists is skipped.
 */
export function countBridge(db: Db, bridgeId: number, field: 'accepted' | 'delivered' | 'bounced' | 'complained', n = 1): void {
  if (n <= 0) return
  statements(db).count[field].run(n, bridgeId)
}

/** Messages counted against the quotas this clock hour and this UTC day. */
export function bridgeUsage(deps: Pick<Deps, 'db' | 'clock'>, bridgeId: number): { this_hour: number; today: number } {
  const s = statements(deps.db)
  const now = deps.clock.now()
  const hour = Math.floor(now / HOUR) * HOUR
  const day = Math.floor(now / DAY) * DAY
  return { this_hour: s.hourUsed.get(bridgeId, hour)?.count ?? 0, today: s.dayUsed.get(bridgeId, day, day + DAY)!.n }
}

/** The bridge's running totals (zeros before its first message). */
export function bridgeCounts(db: Db, bridgeId: number): BridgeCounts {
  const counts = statements(db).counters.get(bridgeId)
  return counts
    ? { accepted: counts.accepted, delivered: counts.delivered, bounced: counts.bounced, complained: counts.complained }
    : { accepted: 0, delivered: 0, bounced: 0, complained: 0 }
}
