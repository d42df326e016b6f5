/**
 * Guardrails: running broadcasts are paused (status `paused` with a `status_reason`), and
 * active automations (drips and triggers) paused the way their `/pause` does (wake-ups held,
 * with a `status_reason`), when the pool or sending domain they use shows a bounce or
 * complaint rate over the configured thresholds in the window, or when one of the pool's IPs
 * is listed (a blocklist reply seen by the shaper, or the doctor's DNSBL check). Each pause
 * raises `deliverability.alert`, which webhooks can subscribe to.
 */
import type { Db } from '../db/client'
import { preparedFor } from '../db/prepared'
import type { Deps } from '../deps'
import type { AutomationKind } from '../db/schema/automations'
import { automationSenders, pauseAutomation } from '../modules/automations/service'
import { emit } from '../modules/events/service'
import { findSendingDomain } from '../modules/sending-domains/service'

export interface AlertResult {
  /** Broadcasts moved from `sending` to `paused`. */
  paused: number[]
  /** Automations (drips and triggers) moved from `active` to `paused`. */
  paused_automations: number[]
}

interface Scope {
  kind: 'pool' | 'domain'
  id: number
  name: string
}

/** Ids of broadcasts sending (or sending while their snapshot is still being copied, `preparing`) that send over a pool (null = the default pool's) or from a sending domain. */
function runningBroadcasts(deps: Deps, scope: Scope): number[] {
  const c = deps.db.$client
  if (scope.kind === 'pool') {
    const isDefault = (c.query('SELECT is_default FROM ip_pools WHERE id = ?').get(scope.id) as { is_default: number } | null)?.is_default === 1
    return (
      c
        .query(`SELECT id FROM broadcasts WHERE status IN ('preparing', 'sending') AND (pool_id = ?1 OR (?2 = 1 AND pool_id IS NULL)) ORDER BY id`)
        .all(scope.id, isDefault ? 1 : 0) as Array<{ id: number }>
    ).map((r) => r.id)
  }
  // The From domain decides the sending domain (docs/api.md "Broadcasts").
  return (
    c
      .query(
        `SELECT id FROM broadcasts WHERE status IN ('preparing', 'sending') AND lower(rtrim(substr(from_address, instr(from_address, '@') + 1), '> ')) = lower(?) ORDER BY id`,
      )
      .all(scope.name) as Array<{ id: number }>
  ).map((r) => r.id)
}

/** The domain of a From address ("Name <a@b.example>" or a bare address), as the broadcasts' SQL above takes it. */
function fromDomain(from: string): string {
  return from
    .slice(from.lastIndexOf('@') + 1)
    .replace(/[>\s]+$/, '')
    .toLowerCase()
}

/**
 * Active automations whose send steps send from the scope's domain, or through the scope's
 * pool. Automation sends name no pool, so, as the accept service routes them, a From domain
 * that is a verified sending domain uses its pool, and everything else the default pool.
 */
function runningAutomations(deps: Deps, scope: Scope): Array<{ id: number; kind: AutomationKind }> {
  const c = deps.db.$client
  const active = c.query(`SELECT id, kind, current_version_id FROM automations WHERE status = 'active' ORDER BY id`).all() as Array<{
    id: number
    kind: AutomationKind
    current_version_id: number | null
  }>
  if (active.length === 0) return []
  const defaultPool = (c.query('SELECT id FROM ip_pools WHERE is_default = 1').get() as { id: number } | null)?.id ?? null
  const inScope = (from: string): boolean => {
    const domain = fromDomain(from)
    if (scope.kind === 'domain') return domain === scope.name.toLowerCase()
    const row = findSendingDomain(deps, domain)
    return ((row?.status === 'verified' ? row.pool_id : null) ?? defaultPool) === scope.id
  }
  return active.filter((a) => automationSenders(deps, a).some(inScope)).map(({ id, kind }) => ({ id, kind }))
}

/** Pauses the running broadcasts and active automations of a scope and raises one `deliverability.alert`; done in one transaction. */
function pauseScope(deps: Deps, scope: Scope, reason: string, data: Record<string, unknown>): AlertResult {
  const now = deps.clock.now()
  return deps.db.transaction((tx) => {
    const ids = runningBroadcasts(deps, scope)
    const update = deps.db.$client.prepare(
      `UPDATE broadcasts SET status = 'paused', status_reason = ?, updated_at = ? WHERE id = ? AND status IN ('preparing', 'sending')`,
    )
    for (const id of ids) update.run(reason, now, id)
    // The service function /pause uses: wake-ups are held, runs keep their place; /resume goes on.
    const automationIds = runningAutomations(deps, scope).map((a) => pauseAutomation(deps, a.kind, a.id, reason).id)
    emit(tx, now, {
      kind: 'deliverability.alert',
      data: {
        ...data,
        scope: scope.kind,
        scope_id: scope.id,
        scope_name: scope.name,
        reason,
        paused_broadcast_ids: ids,
        paused_automation_ids: automationIds,
      },
    })
    return { paused: ids, paused_automations: automationIds }
  })
}

/** Pauses the running broadcasts and automations of every pool holding a listed address (called by the shaper on a blocklist reply, and for the doctor's DNSBL findings). */
export function pauseForListedIp(deps: Deps, address: string, evidence: string): AlertResult {
  const pools = deps.db.$client
    .query('SELECT p.id, p.name FROM ip_pool_members m JOIN ips i ON i.id = m.ip_id JOIN ip_pools p ON p.id = m.pool_id WHERE i.address = ? ORDER BY p.id')
    .all(address) as Array<{ id: number; name: string }>
  const out: AlertResult = { paused: [], paused_automations: [] }
  for (const p of pools) {
    const r = pauseScope(deps, { kind: 'pool', id: p.id, name: p.name }, `IP ${address} is listed: ${evidence}`.slice(0, 500), {
      type: 'ip_listed',
      ip: address,
      evidence,
    })
    out.paused.push(...r.paused)
    out.paused_automations.push(...r.paused_automations)
  }
  return out
}

interface Counts {
  outcomes: number
  delivered: number
  bounced: number
  complained: number
}

/** A pool's or sending domain's outcomes in the window: per second of the events' time, and their sum. */
interface ScopeTally {
  kind: Scope['kind']
  id: number
  total: Counts
  seconds: Map<number, Counts>
}

/** What has been counted so far: the last event id read, and the scopes' tallies (keyed "pool:1", "domain:3"). */
interface Tally {
  cursor: number
  scopes: Map<string, ScopeTally>
}

const OUTCOME_KINDS = "('message.sent', 'message.bounced', 'message.complained')"
const tallies = new WeakMap<object, Tally>()

const tallyStatements = preparedFor((db: Db) => {
  const c = db.$client
  const select = `SELECT e.kind AS kind, e.created_at AS at,
      coalesce(m.pool_id, (SELECT id FROM ip_pools WHERE is_default = 1)) AS pool_id, m.domain_id AS domain_id
    FROM events e JOIN messages m ON m.id = e.message_id`
  type Row = { kind: string; at: number; pool_id: number | null; domain_id: number | null }
  return {
    lastId: c.prepare<{ id: number | null }, []>('SELECT max(id) AS id FROM events'),
    // The first sweep reads the whole window through the kind index...
    window: c.prepare<Row, [number, number]>(`${select} WHERE e.kind IN ${OUTCOME_KINDS} AND e.created_at >= ?1 AND e.id <= ?2`),
    // ...later ones only the events recorded since, by id range ("+kind": not through the kind
    // index, which would read every outcome ever recorded).
    since: c.prepare<Row, [number, number]>(`${select} WHERE e.id > ?1 AND e.id <= ?2 AND +e.kind IN ${OUTCOME_KINDS}`),
    poolName: c.prepare<{ name: string }, [number]>('SELECT name FROM ip_pools WHERE id = ?'),
    domainName: c.prepare<{ name: string }, [number]>('SELECT name FROM sending_domains WHERE id = ?'),
  }
})

const noCounts = (): Counts => ({ outcomes: 0, delivered: 0, bounced: 0, complained: 0 })

function add(to: Counts, from: Counts, sign: 1 | -1): void {
  to.outcomes += sign * from.outcomes
  to.delivered += sign * from.delivered
  to.bounced += sign * from.bounced
  to.complained += sign * from.complained
}

/**
 * Brings the window's tallies up to date: adds the outcomes recorded since the last sweep and
 * drops the seconds that left the window. A sweep used to count the whole window again (the
 * events joined to their messages): with 400 messages a second that held the thread for half
 * a second every minute (issue 18's long run). Counted to the second: the window's oldest
 * second is kept whole.
 */
function updateTally(deps: Deps, since: number): Tally {
  const st = tallyStatements(deps.db)
  const hi = st.lastId.get()?.id ?? 0
  let tally = tallies.get(deps.db)
  const rows = tally ? st.since.all(tally.cursor, hi) : st.window.all(since, hi)
  if (!tally) tallies.set(deps.db, (tally = { cursor: hi, scopes: new Map() }))
  tally.cursor = Math.max(tally.cursor, hi)
  const oldest = Math.floor(since / 1000)
  for (const r of rows) {
    const second = Math.floor(r.at / 1000)
    if (second < oldest) continue
    const one: Counts = {
      outcomes: r.kind === 'message.complained' ? 0 : 1,
      delivered: r.kind === 'message.sent' ? 1 : 0,
      bounced: r.kind === 'message.bounced' ? 1 : 0,
      complained: r.kind === 'message.complained' ? 1 : 0,
    }
    for (const [kind, id] of [
      ['pool', r.pool_id],
      ['domain', r.domain_id],
    ] as const) {
      if (id === null) continue
      const key = `${kind}:${id}`
      let scope = tally.scopes.get(key)
      if (!scope) tally.scopes.set(key, (scope = { kind, id, total: noCounts(), seconds: new Map() }))
      let bucket = scope.seconds.get(second)
      if (!bucket) scope.seconds.set(second, (bucket = noCounts()))
      add(bucket, one, 1)
      add(scope.total, one, 1)
    }
  }
  for (const [key, scope] of tally.scopes) {
    for (const [second, bucket] of scope.seconds)
      if (second < oldest) {
        add(scope.total, bucket, -1)
        scope.seconds.delete(second)
      }
    if (scope.seconds.size === 0) tally.scopes.delete(key)
  }
  return tally
}

/**
 * Measures each pool's and sending domain's bounce rate (bounced / sent + bounced) and
 * complaint rate (complaints / delivered, as Gmail's and Yahoo's sender rules count it) over
 * the window, from the event log (message.sent/bounced/complained of the message's pool and
 * domain, counted as they are recorded: updateTally), and pauses the running broadcasts and
 * active automations of those over a threshold. A scope is judged only with at least
 * `guardrail_min_sent` outcomes, so one early bounce does not stop a campaign. Once per
 * crossing: a scope with nothing left running raises no alert, so a sweep every few seconds
 * while the rate stays high stays quiet.
 */
export function checkGuardrails(deps: Deps): AlertResult {
  const cfg = deps.config
  const tally = updateTally(deps, deps.clock.now() - cfg.guardrail_window_minutes * 60_000)
  const st = tallyStatements(deps.db)
  const scopes = [...tally.scopes.values()].sort((a, b) => (a.kind === b.kind ? a.id - b.id : a.kind === 'pool' ? -1 : 1))
  const out: AlertResult = { paused: [], paused_automations: [] }
  for (const { kind, id, total: r } of scopes) {
    if (r.outcomes < cfg.guardrail_min_sent) continue
    const bounceRate = r.bounced / r.outcomes
    const complaintRate = r.delivered > 0 ? r.complained / r.delivered : 0
    let why: string | null = null
    if (bounceRate > cfg.guardrail_bounce_rate) why = `bounce rate ${(bounceRate * 100).toFixed(1)} % over ${(cfg.guardrail_bounce_rate * 100).toFixed(1)} %`
    else if (complaintRate > cfg.guardrail_complaint_rate)
      why = `complaint rate ${(complaintRate * 100).toFixed(2)} % over ${(cfg.guardrail_complaint_rate * 100).toFixed(2)} %`
    if (!why) continue
    // A pool or domain deleted since its mail was sent is not judged.
    const name = (kind === 'pool' ? st.poolName : st.domainName).get(id)?.name
    if (name === undefined) continue
    const scope: Scope = { kind, id, name }
    // Nothing to pause: no alert storm every sweep.
    if (runningBroadcasts(deps, scope).length === 0 && runningAutomations(deps, scope).length === 0) continue
    const paused = pauseScope(deps, scope, `${kind} ${name}: ${why} in the last ${cfg.guardrail_window_minutes} minutes`, {
      type: bounceRate > cfg.guardrail_bounce_rate ? 'bounce_rate' : 'complaint_rate',
      outcomes: r.outcomes,
      delivered: r.delivered,
      complaints: r.complained,
      bounce_rate: bounceRate,
      complaint_rate: complaintRate,
      window_minutes: cfg.guardrail_window_minutes,
    })
    out.paused.push(...paused.paused)
    out.paused_automations.push(...paused.paused_automations)
  }
  return out
}
