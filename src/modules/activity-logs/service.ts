import { and, count, desc, eq, gte, lt, type SQL } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { activityLogs } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { pageMeta, pageRequest, type PageMeta } from '../../lib/pagination'
import type { ActivityView } from './model'

export interface ActivityEntry {
  actor_key_id: number | null
  actor_name: string
  action: string
  target_type: string | null
  target_id: string | null
  method: string | null
  path: string | null
  ip: string | null
  status: number
  outcome: 'success' | 'failure'
}

/** Appends one entry (spec "Authentication" 8: actions are recorded with the key as actor). */
export function recordActivity(deps: Deps, entry: ActivityEntry): void {
  deps.db
    .insert(activityLogs)
    .values({ ...entry, created_at: deps.clock.now() })
    .run()
}

export interface ActivityFilter {
  page?: number
  per_page?: number
  key_id?: number
  action?: string
  target_type?: string
  target_id?: string
  outcome?: 'success' | 'failure'
  /** Inclusive lower bound, ISO 8601. */
  since?: string
  /** Exclusive upper bound, ISO 8601. */
  until?: string
}

/** A page of entries, newest first. */
export function listActivity(deps: Deps, filter: ActivityFilter): { items: ActivityView[]; meta: PageMeta } {
  const req = pageRequest(filter)
  const conditions: Array<SQL | undefined> = [
    filter.key_id !== undefined ? eq(activityLogs.actor_key_id, filter.key_id) : undefined,
    filter.action ? eq(activityLogs.action, filter.action) : undefined,
    filter.target_type ? eq(activityLogs.target_type, filter.target_type) : undefined,
    filter.target_id ? eq(activityLogs.target_id, filter.target_id) : undefined,
    filter.outcome ? eq(activityLogs.outcome, filter.outcome) : undefined,
    filter.since ? gte(activityLogs.created_at, Date.parse(filter.since)) : undefined,
    filter.until ? lt(activityLogs.created_at, Date.parse(filter.until)) : undefined,
  ]
  const where = and(...conditions)
  const total = deps.db.select({ n: count() }).from(activityLogs).where(where).get()!.n
  const rows = deps.db
    .select()
    .from(activityLogs)
    .where(where)
    .orderBy(desc(activityLogs.created_at), desc(activityLogs.id))
    .limit(req.per_page)
    .offset(req.offset)
    .all()
  return {
    items: rows.map((r) => ({
      id: r.id,
      created_at: toIso(r.created_at)!,
      actor: { type: r.actor_key_id === null ? 'cli' : 'api_key', key_id: r.actor_key_id, name: r.actor_name },
      action: r.action,
      target: r.target_type ? { type: r.target_type, id: r.target_id } : null,
      method: r.method,
      path: r.path,
      ip: r.ip,
      status: r.status,
      outcome: r.outcome,
    })),
    meta: pageMeta(req, total),
  }
}
