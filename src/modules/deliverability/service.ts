import type { Deps } from '../../deps'
import { PROVIDER_GROUPS, groupOfDomain, limitsFor } from '../../delivery/providers'
import { capFor, checkSchedule, dayKey, defaultSchedule, scheduleLength, warmupDay, type WarmupStep } from '../../delivery/warmup'
import { toIso } from '../../lib/clock'
import { invalidField, notFound } from '../../lib/errors'
import { bumpPoolsVersion } from '../ip-pools/version'
import { TLS_COUNTER } from '../stats/service'
import type { QueueView, WarmupInput, WarmupView } from './model'

type PairState = 'normal' | 'throttled' | 'suspended'
/** The window of the queue view's per-provider deliveries and TLS share: the current hour and the 23 before it. */
export const TLS_WINDOW_HOURS = 24
const SEVERITY: Record<PairState, number> = { normal: 0, throttled: 1, suspended: 2 }
const worst = (a: PairState, b: PairState): PairState => (SEVERITY[b] > SEVERITY[a] ? b : a)

interface WarmupRow {
  ip_id: number
  address: string
  started_at: number | null
  schedule: string | null
}

function ipRow(deps: Deps, id: number): { id: number; address: string } {
  const row = deps.db.$client.query('SELECT id, address FROM ips WHERE id = ?').get(id) as { id: number; address: string } | null
  if (!row) throw notFound('ip', id)
  return row
}

function warmupOf(deps: Deps, row: WarmupRow): WarmupView {
  const now = deps.clock.now()
  const base = { ip_id: row.ip_id, address: row.address }
  if (row.started_at === null) return { ...base, active: false, started_at: null, day: null, days_total: null, schedule_kind: null, schedule: null, today: [] }
  const custom = row.schedule ? (JSON.parse(row.schedule) as WarmupStep[]) : null
  const schedule = custom ?? defaultSchedule()
  const day = warmupDay(row.started_at, now)
  const total = scheduleLength(schedule)
  const sent = deps.db.$client
    .query('SELECT provider, count FROM warmup_usage WHERE ip = ? AND day = ? ORDER BY provider')
    .all(row.address, dayKey(now)) as Array<{ provider: string; count: number }>
  const step = [...schedule].filter((s) => s.day <= day).sort((a, b) => b.day - a.day)[0]
  const groups = new Set<string>([...Object.keys(step?.caps ?? {}), ...sent.map((s) => s.provider)])
  const today = [...groups].sort().map((provider) => ({
    provider,
    cap: provider === '*' || provider === 'other' ? (day > total ? null : (step?.caps[provider] ?? 0)) : capFor(schedule, day, provider),
    sent: sent.find((s) => s.provider === provider)?.count ?? 0,
  }))
  return {
    ...base,
    active: day <= total,
    started_at: toIso(row.started_at),
    day,
    days_total: total,
    schedule_kind: custom ? 'custom' : 'default',
    schedule: custom,
    today,
  }
}

function readWarmup(deps: Deps, ip: { id: number; address: string }): WarmupView {
  const w = deps.db.$client.query('SELECT started_at, schedule FROM ip_warmups WHERE ip_id = ?').get(ip.id) as {
    started_at: number
    schedule: string | null
  } | null
  return warmupOf(deps, { ip_id: ip.id, address: ip.address, started_at: w?.started_at ?? null, schedule: w?.schedule ?? null })
}

/** The warm-up of an IP: schedule, day, today's caps and counts (404 when the IP does not exist). */
export function getWarmup(deps: Deps, ipId: number): WarmupView {
  return readWarmup(deps, ipRow(deps, ipId))
}

/** Starts a warm-up on an IP, or replaces its schedule (keeping its start unless one is given). */
export function setWarmup(deps: Deps, ipId: number, input: WarmupInput): WarmupView {
  const ip = ipRow(deps, ipId)
  const schedule = input.schedule ?? null
  if (schedule) {
    const why = checkSchedule(schedule)
    if (why) throw invalidField('schedule', why)
  }
  let startedAt: number | undefined
  if (input.started_at !== undefined) {
    startedAt = Date.parse(input.started_at)
    if (!Number.isFinite(startedAt)) throw invalidField('started_at', 'must be an ISO 8601 time such as 2026-03-01T00:00:00Z')
  }
  const now = deps.clock.now()
  deps.db.$client
    .prepare(
      `INSERT INTO ip_warmups (ip_id, started_at, schedule, updated_at) VALUES (?1, ?2, ?3, ?4)
       ON CONFLICT (ip_id) DO UPDATE SET started_at = coalesce(?5, started_at), schedule = ?3, updated_at = ?4`,
    )
    .run(ip.id, startedAt ?? now, schedule ? JSON.stringify(schedule) : null, now, startedAt ?? null)
  bumpPoolsVersion(deps.db)
  return readWarmup(deps, ip)
}

/** Stops an IP's warm-up: it sends at the shaping limits alone from now on. */
export function stopWarmup(deps: Deps, ipId: number): WarmupView {
  const ip = ipRow(deps, ipId)
  deps.db.$client.prepare('DELETE FROM ip_warmups WHERE ip_id = ?').run(ip.id)
  bumpPoolsVersion(deps.db)
  return readWarmup(deps, ip)
}

/**
 * The queue view: waiting recipients per provider group and per source IP, with the shaper's
 * state of each (group, IP) pair, what left in the last minute, and per group the deliveries
 * of the last 24 hours and the share of them made over TLS (issue 17). Read-only and cheap:
 * one GROUP BY over the waiting rows, the message.sent events of the last minute (by their
 * index on kind and time), the statistics rollup's hourly 'provider' counters of the
 * TLS_WINDOW_HOURS (stats/rollup.ts) and the small shaping tables.
 */
export function queueView(deps: Deps): QueueView {
  const HOUR_MS = 3_600_000
  const c = deps.db.$client
  const now = deps.clock.now()
  const learned = new Map(
    (c.query('SELECT domain, provider FROM provider_domains').all() as Array<{ domain: string; provider: string }>).map((r) => [r.domain, r.provider]),
  )
  const providerOf = (domain: string) => groupOfDomain(domain) ?? learned.get(domain.toLowerCase()) ?? `mx:${domain.toLowerCase()}`

  const providers = new Map<string, QueueView['providers'][number]>()
  const providerEntry = (provider: string) => {
    let p = providers.get(provider)
    if (!p) {
      p = {
        provider,
        name: PROVIDER_GROUPS.find((g) => g.id === provider)?.name ?? provider.replace(/^mx:/, ''),
        queued: 0,
        deferred: 0,
        sending: 0,
        oldest_at: null,
        state: 'normal',
        sent_last_minute: 0,
        sent_24h: 0,
        tls_share: null,
        limits: limitsFor(deps.config.shaping_limits, provider, null),
      }
      providers.set(provider, p)
    }
    return p
  }
  let total = 0
  const waiting = c
    .query(
      `SELECT domain, state, count(*) AS n, min(created_at) AS oldest FROM message_recipients WHERE state IN ('queued', 'deferred', 'sending') GROUP BY domain, state`,
    )
    .all() as Array<{ domain: string; state: 'queued' | 'deferred' | 'sending'; n: number; oldest: number }>
  const oldest = new Map<string, number>()
  for (const w of waiting) {
    const provider = providerOf(w.domain)
    const p = providerEntry(provider)
    p[w.state] += w.n
    total += w.n
    oldest.set(provider, Math.min(oldest.get(provider) ?? Infinity, w.oldest))
  }
  for (const [provider, at] of oldest) providerEntry(provider).oldest_at = toIso(at)

  // What left in the last minute, per (group, IP), from the message.sent events.
  const sentRows = c
    .query(
      `SELECT recipient, json_extract(data, '$.source_ip') AS ip, count(*) AS n FROM events WHERE kind = 'message.sent' AND created_at >= ? GROUP BY recipient, ip`,
    )
    .all(now - 60_000) as Array<{ recipient: string | null; ip: string | null; n: number }>
  const sentByPair = new Map<string, number>()
  const sentByIp = new Map<string, number>()
  for (const r of sentRows) {
    const domain = (r.recipient ?? '').split('@').pop() ?? ''
    const provider = providerOf(domain)
    providerEntry(provider).sent_last_minute += r.n
    const key = `${provider}\n${r.ip ?? ''}`
    sentByPair.set(key, (sentByPair.get(key) ?? 0) + r.n)
    sentByIp.set(r.ip ?? '', (sentByIp.get(r.ip ?? '') ?? 0) + r.n)
  }

  // Deliveries and TLS deliveries per group over the window, from the rollup's hourly counters.
  const windowStart = Math.floor(now / HOUR_MS) * HOUR_MS - (TLS_WINDOW_HOURS - 1) * HOUR_MS
  const delivered = c
    .query(
      `SELECT dim_value AS provider, kind, sum(count) AS n FROM stats_hourly WHERE dim = 'provider' AND hour >= ? AND kind IN ('message.sent', ?) GROUP BY dim_value, kind`,
    )
    .all(windowStart, TLS_COUNTER) as Array<{ provider: string; kind: string; n: number }>
  const overTls = new Map<string, number>()
  for (const d of delivered) {
    if (d.kind === 'message.sent') providerEntry(d.provider).sent_24h = d.n
    else overTls.set(d.provider, d.n)
  }
  for (const p of providers.values()) p.tls_share = p.sent_24h ? Math.round(((overTls.get(p.provider) ?? 0) / p.sent_24h) * 10000) / 10000 : null

  const states = c
    .query('SELECT provider, ip, state, rate_per_minute, hold_until, reason, updated_at FROM shaping_states ORDER BY provider, ip')
    .all() as Array<{
    provider: string
    ip: string
    state: PairState
    rate_per_minute: number | null
    hold_until: number | null
    reason: string | null
    updated_at: number
  }>
  const pairs: QueueView['pairs'] = []
  const ipState = new Map<string, PairState>()
  const seen = new Set<string>()
  for (const s of states) {
    const key = `${s.provider}\n${s.ip}`
    seen.add(key)
    const limits = limitsFor(deps.config.shaping_limits, s.provider, null)
    // A hold that ran out is shown as what it becomes on the next delivery.
    const state: PairState = s.state === 'suspended' && s.hold_until !== null && s.hold_until <= now ? 'throttled' : s.state
    const sent = sentByPair.get(key) ?? 0
    if (state === 'normal' && sent === 0) continue
    pairs.push({
      provider: s.provider,
      ip: s.ip || null,
      state,
      rate_per_minute: s.rate_per_minute === null ? limits.per_minute : Math.floor(s.rate_per_minute),
      ceiling_per_minute: limits.per_minute,
      hold_until: s.hold_until !== null && s.hold_until > now ? toIso(s.hold_until) : null,
      reason: s.reason,
      sent_last_minute: sent,
      updated_at: toIso(s.updated_at),
    })
    providerEntry(s.provider).state = worst(providerEntry(s.provider).state, state)
    ipState.set(s.ip, worst(ipState.get(s.ip) ?? 'normal', state))
  }
  for (const [key, sent] of sentByPair) {
    if (seen.has(key)) continue
    const [provider, ip] = key.split('\n') as [string, string]
    const limits = limitsFor(deps.config.shaping_limits, provider, null)
    pairs.push({
      provider,
      ip: ip || null,
      state: 'normal',
      rate_per_minute: limits.per_minute,
      ceiling_per_minute: limits.per_minute,
      hold_until: null,
      reason: null,
      sent_last_minute: sent,
      updated_at: null,
    })
  }

  const deferredByIp = new Map(
    (
      c
        .query(
          `SELECT last_ip, count(*) AS n, min(created_at) AS oldest FROM message_recipients WHERE state = 'deferred' AND last_ip IS NOT NULL GROUP BY last_ip`,
        )
        .all() as Array<{ last_ip: string; n: number; oldest: number }>
    ).map((r) => [r.last_ip, r]),
  )
  const ipRows = c
    .query('SELECT i.id, i.address, i.hostname, w.started_at, w.schedule FROM ips i LEFT JOIN ip_warmups w ON w.ip_id = i.id ORDER BY i.id')
    .all() as Array<{ id: number; address: string; hostname: string; started_at: number | null; schedule: string | null }>
  const ips: QueueView['ips'] = ipRows.map((r) => {
    const w = warmupOf(deps, { ip_id: r.id, address: r.address, started_at: r.started_at, schedule: r.schedule })
    const d = deferredByIp.get(r.address)
    return {
      ip_id: r.id,
      address: r.address,
      hostname: r.hostname,
      deferred: d?.n ?? 0,
      oldest_at: d ? toIso(d.oldest) : null,
      state: ipState.get(r.address) ?? 'normal',
      sent_last_minute: sentByIp.get(r.address) ?? 0,
      warmup: w.active ? { day: w.day!, days_total: w.days_total!, today: w.today } : null,
    }
  })
  // The host's default address (pools without IPs) when it has anything to show.
  const hostDeferred = [...deferredByIp.values()].filter((d) => !ipRows.some((r) => r.address === d.last_ip))
  if (ipState.has('') || sentByIp.has('') || hostDeferred.length) {
    ips.push({
      ip_id: null,
      address: null,
      hostname: deps.config.hostname,
      deferred: hostDeferred.reduce((n, d) => n + d.n, 0),
      oldest_at: hostDeferred.length ? toIso(Math.min(...hostDeferred.map((d) => d.oldest))) : null,
      state: ipState.get('') ?? 'normal',
      sent_last_minute: sentByIp.get('') ?? 0,
      warmup: null,
    })
  }

  return {
    total,
    providers: [...providers.values()].sort(
      (a, b) => b.queued + b.deferred + b.sending - (a.queued + a.deferred + a.sending) || a.provider.localeCompare(b.provider),
    ),
    ips,
    pairs,
  }
}
