import http from 'node:http'
import https from 'node:https'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import { hasResendForm, resendPayloadOf, svixHeaders } from '../resend/webhook-payloads'
import type { Lookup } from './address'
import { postWebhook, signatureHeaders, type PostResult } from './post'
import { autoDisable, messageId, payloadOf, signingSecrets, subscribes, type EventRow } from './service'

/**
 * Webhook dispatch: fan-out and sender, all state in the database.
 *
 * Fan-out tails the `events` table by id from a cursor kept in system_state. Each batch
 * inserts one `webhook_deliveries` row per (event, subscribed webhook) and moves the cursor
 * in the same transaction, so every event is fanned out exactly once, whatever crashes.
 * (Event ids are allocated inside write transactions and SQLite has one writer, so ids
 * become visible in order and a cursor never skips one.) Disabled webhooks get their rows
 * too, parked (no due time), so nothing is lost while they are off.
 *
 * The sender claims due rows by moving them to `sending` with a lease, POSTs them
 * (bounded concurrency), and commits each outcome with its `webhook_attempts` row through
 * the group committer. At start every `sending` row goes back to `pending`: a request that
 * was on the wire when the process died is sent again with the same `webhook-id`, so the
 * receiver can drop the duplicate.
 */

/** Delays before attempts 2..8 (attempt 1 is immediate), then the delivery fails. */
export const RETRY_SCHEDULE_MS = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3600_000, 5 * 3600_000, 10 * 3600_000, 10 * 3600_000]
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1
/** A Retry-After beyond this is not believed (a misconfigured endpoint must not stall a delivery for weeks). */
export const MAX_RETRY_AFTER_MS = 24 * 3600_000
export const CURSOR_KEY = 'webhooks.event_cursor'

/** Delay after the n-th failed attempt, +-10 % jitter; null when no attempt is left. */
export function retryDelayMs(failedAttempts: number, random: number): number | null {
  const base = RETRY_SCHEDULE_MS[failedAttempts - 1]
  if (base === undefined) return null
  return Math.round(base * (0.9 + 0.2 * random))
}

export interface DispatcherParts {
  lookup?: Lookup
  random?: () => number
  leaseMs?: number
  maxInFlight?: number
  fanOutBatch?: number
  /** Idle polling interval for new events. */
  pollMs?: number
}

interface Claimed {
  id: number
  webhook_id: number
  event_id: number
  kind: string
  attempts: number
}

interface WebhookRow {
  id: number
  url: string
  secret: string
  previous_secret: string | null
  previous_secret_until: number | null
  enabled: number
  format: 'mailroom' | 'resend'
}

/** Leases that ran out (a dispatcher that died mid-request) go back to pending; every 30 s, through webhook_deliveries_lease_idx (a partial index: the rows `sending` now). */
export const REQUEUE_EXPIRED_SQL = `UPDATE webhook_deliveries SET state = 'pending', lease_until = NULL, next_attempt_at = ?1, updated_at = ?1 WHERE state = 'sending' AND lease_until < ?1`

const statements = preparedFor((db) => {
  const c = db.$client
  return {
    cursor: c.prepare<{ value: string }, [string]>('SELECT value FROM system_state WHERE key = ?'),
    setCursor: c.prepare<never, [string, string, number]>(
      'INSERT INTO system_state (key, value, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT(key) DO UPDATE SET value = ?2, updated_at = ?3',
    ),
    eventsAfter: c.prepare<{ id: number; kind: string; created_at: number }, [number, number]>(
      'SELECT id, kind, created_at FROM events WHERE id > ? ORDER BY id LIMIT ?',
    ),
    hooks: c.prepare<{ id: number; kinds: string; enabled: number; created_at: number; format: string }, []>(
      'SELECT id, kinds, enabled, created_at, format FROM webhooks',
    ),
    insert: c.prepare<never, [number, number, string, number | null, number]>(
      `INSERT INTO webhook_deliveries (webhook_id, event_id, kind, state, attempts, next_attempt_at, created_at, updated_at) VALUES (?1, ?2, ?3, 'pending', 0, ?4, ?5, ?5)`,
    ),
    // Walks the partial due index; the join keeps a disabled webhook's rows out even if one
    // got a due time (an outcome committed while it was being disabled).
    claim: c.prepare<Claimed, [number, number, number]>(
      `UPDATE webhook_deliveries SET state = 'sending', lease_until = ?1, updated_at = ?2
       WHERE id IN (SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
                    WHERE d.state = 'pending' AND d.next_attempt_at <= ?2 AND w.enabled = 1 ORDER BY d.next_attempt_at LIMIT ?3)
       RETURNING id, webhook_id, event_id, kind, attempts`,
    ),
    requeueAll: c.prepare<never, [number]>(
      `UPDATE webhook_deliveries SET state = 'pending', lease_until = NULL, next_attempt_at = ?1, updated_at = ?1 WHERE state = 'sending'`,
    ),
    requeueExpired: c.prepare<never, [number]>(REQUEUE_EXPIRED_SQL),
    nextDue: c.prepare<{ at: number | null }, []>(
      `SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at IS NOT NULL`,
    ),
    webhook: c.prepare<WebhookRow, [number]>('SELECT id, url, secret, previous_secret, previous_secret_until, enabled, format FROM webhooks WHERE id = ?'),
    event: c.prepare<Omit<EventRow, 'data'> & { data: string }, [number]>(
      'SELECT id, kind, created_at, contact_id, list_id, message_id, recipient, broadcast_id, bridge_id, data FROM events WHERE id = ?',
    ),
    attempt: c.prepare<never, [number, number, number, number | null, number | null, string | null, string | null]>(
      'INSERT INTO webhook_attempts (delivery_id, webhook_id, attempted_at, status, latency_ms, error, response_snippet) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    succeeded: c.prepare<never, [number, number | null, number]>(
      `UPDATE webhook_deliveries SET state = 'succeeded', attempts = attempts + 1, last_status = ?2, last_error = NULL, lease_until = NULL, next_attempt_at = NULL, updated_at = ?1, finished_at = ?1 WHERE id = ?3`,
    ),
    failed: c.prepare<never, [number, number | null, string | null, number]>(
      `UPDATE webhook_deliveries SET state = 'failed', attempts = attempts + 1, last_status = ?2, last_error = ?3, lease_until = NULL, next_attempt_at = NULL, updated_at = ?1, finished_at = ?1 WHERE id = ?4`,
    ),
    // A disabled webhook's retry is parked (NULL due time) until it is enabled again.
    retry: c.prepare<never, [number, number | null, string | null, number, number, number]>(
      `UPDATE webhook_deliveries SET state = 'pending', attempts = attempts + 1, last_status = ?2, last_error = ?3, lease_until = NULL,
         next_attempt_at = CASE WHEN (SELECT enabled FROM webhooks WHERE id = ?5) = 1 THEN ?4 ELSE NULL END, updated_at = ?1 WHERE id = ?6`,
    ),
    hookSuccess: c.prepare<never, [number, number]>('UPDATE webhooks SET consecutive_failures = 0, last_success_at = ? WHERE id = ?'),
    hookFailure: c.prepare<never, [number, number]>('UPDATE webhooks SET consecutive_failures = consecutive_failures + 1, last_failure_at = ? WHERE id = ?'),
  }
})

export type WebhookDispatcher = ReturnType<typeof createWebhookDispatcher>

export function createWebhookDispatcher(deps: Deps, parts: DispatcherParts = {}) {
  const st = statements(deps.db)
  const commits = deps.commits
  const random = parts.random ?? Math.random
  const leaseMs = parts.leaseMs ?? Math.max(60_000, deps.config.webhook_timeout_ms * 4)
  const maxInFlight = parts.maxInFlight ?? 64
  const batch = parts.fanOutBatch ?? 1000
  const pollMs = parts.pollMs ?? 250
  const agents = { http: new http.Agent({ keepAlive: true, maxSockets: maxInFlight }), https: new https.Agent({ keepAlive: true, maxSockets: maxInFlight }) }
  let running = false
  let inFlight = 0
  const jobs = new Set<Promise<void>>()
  let timer: ReturnType<typeof setTimeout> | null = null
  let pumping: Promise<void> | null = null
  let lastSweep = 0

  function readCursor(): number {
    const r = st.cursor.get(CURSOR_KEY)
    return r ? Number(r.value) : 0
  }

  /** Fans out one batch of events after the cursor; returns how many events it consumed. */
  async function fanOutOnce(): Promise<number> {
    return commits.run(() => {
      const after = readCursor()
      const evs = st.eventsAfter.all(after, batch)
      if (evs.length === 0) return 0
      const now = deps.clock.now()
      const hooks = st.hooks.all().map((h) => ({ ...h, kinds: JSON.parse(h.kinds) as string[] }))
      for (const e of evs) {
        for (const h of hooks) {
          // A webhook receives the events from its creation on, not the log's past.
          if (e.created_at < h.created_at || !subscribes(h.kinds, e.kind)) continue
          // A Resend-format webhook gets only the kinds Resend has a name for (a '*' subscription too).
          if (h.format === 'resend' && !hasResendForm(e.kind)) continue
          st.insert.run(h.id, e.id, e.kind, h.enabled ? now : null, now)
        }
      }
      st.setCursor.run(CURSOR_KEY, String(evs[evs.length - 1]!.id), now)
      return evs.length
    })
  }

  async function fanOut(): Promise<number> {
    let total = 0
    for (;;) {
      const n = await fanOutOnce()
      total += n
      if (n < batch) return total
    }
  }

  async function attempt(d: Claimed): Promise<void> {
    const w = st.webhook.get(d.webhook_id)
    const ev = st.event.get(d.event_id)
    const now = deps.clock.now()
    if (!w) return // deleted meanwhile: the delivery went with it
    let result: PostResult
    if (!ev) {
      // The event was pruned from the log: nothing to send, ever.
      await commits.run(() => {
        st.attempt.run(d.id, d.webhook_id, now, null, null, 'the event no longer exists', null)
        st.failed.run(now, null, 'the event no longer exists', d.id)
      })
      return
    }
    const event = { ...ev, data: JSON.parse(ev.data) as Record<string, unknown> }
    // Resend's body for a `resend` webhook (fan-out only queued kinds that have one), signed the same way under Svix's header names.
    const body = (w.format === 'resend' ? resendPayloadOf(deps, event) : null) ?? payloadOf(event)
    const signed = signatureHeaders(signingSecrets(w, now).map(deps.secrets.open), messageId(d.event_id, d.webhook_id), Math.floor(now / 1000), body)
    const headers = w.format === 'resend' ? svixHeaders(signed) : signed
    try {
      result = await postWebhook({
        url: w.url,
        headers,
        body,
        timeoutMs: deps.config.webhook_timeout_ms,
        allowPrivate: deps.config.webhooks_allow_private,
        lookup: parts.lookup,
        now,
        agents,
      })
    } catch (e) {
      deps.log.error('webhook post failed unexpectedly', { delivery_id: d.id, error: e instanceof Error ? (e.stack ?? e.message) : String(e) })
      result = { status: null, ok: false, latency_ms: 0, error: 'internal error', snippet: null, retry_after_ms: null }
    }
    await commits.run(() => record(d, result))
  }

  function record(d: Claimed, r: PostResult): void {
    const now = deps.clock.now()
    st.attempt.run(d.id, d.webhook_id, now, r.status, r.latency_ms, r.error, r.snippet)
    if (r.ok) {
      st.succeeded.run(now, r.status, d.id)
      st.hookSuccess.run(now, d.webhook_id)
      return
    }
    st.hookFailure.run(now, d.webhook_id)
    const failedAttempts = d.attempts + 1
    const delay = retryDelayMs(failedAttempts, random())
    if (delay === null) st.failed.run(now, r.status, r.error, d.id)
    else {
      // Retry-After (RFC 9110 10.2.3) can push the next attempt later, never earlier, and at most a day.
      const wait = r.retry_after_ms !== null ? Math.max(delay, Math.min(r.retry_after_ms, MAX_RETRY_AFTER_MS)) : delay
      st.retry.run(now, r.status, r.error, now + wait, d.webhook_id, d.id)
    }
    // 410 Gone: the receiver says the endpoint is no more (Standard Webhooks recommends disabling).
    if (r.status === 410) autoDisable(deps, d.webhook_id, 'gone', now)
    autoDisable(deps, d.webhook_id, 'failures', now)
  }

  /** Claims what is due (up to the free room) and starts the requests; returns how many it claimed. */
  async function claimAndStart(): Promise<number> {
    const room = maxInFlight - inFlight
    if (room <= 0) return 0
    const now = deps.clock.now()
    const claimed = await commits.run(() => {
      if (now - lastSweep > 30_000) {
        lastSweep = now
        st.requeueExpired.run(now)
      }
      return st.claim.all(now + leaseMs, now, room)
    })
    for (const d of claimed) {
      inFlight++
      const job = attempt(d)
        .catch((e) => deps.log.error('webhook delivery failed unexpectedly', { delivery_id: d.id, error: String(e) }))
        .finally(() => {
          inFlight--
          jobs.delete(job)
          if (running) wake()
        })
      jobs.add(job)
    }
    return claimed.length
  }

  /**
   * Runs until nothing is due: fans out new events, sends every due delivery and waits for
   * the answers. Tests call it after moving the fake clock; the loop calls the same steps.
   */
  async function drain(): Promise<void> {
    for (;;) {
      await fanOut()
      const n = await claimAndStart()
      if (n === 0 && jobs.size === 0) return
      if (n === 0 || inFlight >= maxInFlight) await Promise.race(jobs)
    }
  }

  async function pump(): Promise<void> {
    try {
      await fanOut()
      while (running && (await claimAndStart()) > 0) await fanOut()
    } catch (e) {
      deps.log.error('webhook dispatcher cycle failed', { error: e instanceof Error ? (e.stack ?? e.message) : String(e) })
    }
    if (!running) return
    const next = st.nextDue.get()?.at ?? null
    const wait = next === null ? pollMs : Math.min(pollMs, Math.max(0, next - deps.clock.now()))
    if (timer) clearTimeout(timer)
    timer = setTimeout(wake, wait)
  }

  function wake(): void {
    if (!running) return
    if (pumping) return
    pumping = pump().finally(() => (pumping = null))
  }

  return {
    fanOut,
    drain,
    wake,
    /** Puts rows left `sending` by a previous process back in the queue (call before start). */
    recover(): void {
      st.requeueAll.run(deps.clock.now())
    },
    start(): void {
      if (running) return
      this.recover()
      running = true
      wake()
    },
    async stop(): Promise<void> {
      running = false
      if (timer) clearTimeout(timer)
      await pumping
      await Promise.allSettled([...jobs])
      agents.http.destroy()
      agents.https.destroy()
    },
  }
}

/** Starts the dispatcher of the server process. */
export function startWebhooks(deps: Deps, parts: DispatcherParts = {}): WebhookDispatcher {
  const d = createWebhookDispatcher(deps, parts)
  d.start()
  return d
}
