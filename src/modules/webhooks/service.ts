import { and, asc, count, desc, eq } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { bulkDeleteByIds, pageOfTable, type BulkDeleteOutcome, findById, timestampsOf } from '../../db/crud'
import { events, webhookAttempts, webhookDeliveries, webhooks } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { AppError, invalidField, notFound } from '../../lib/errors'
import { pageMeta, pageRequest } from '../../lib/pagination'
import { recordActivity } from '../activity-logs/service'
import { emit } from '../events/service'
import { resolveEndpoint, urlProblem, type Lookup } from './address'
import { WEBHOOK_EVENT_KINDS, type TestResult, type WebhookInput, type WebhookView } from './model'
import { generateSecret, postWebhook, secretProblem, signatureHeaders } from './post'

/** Consecutive failed attempts after which a webhook is disabled (spec "Events" 4). */
export const MAX_CONSECUTIVE_FAILURES = 10
/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_GRACE_MS = 24 * 3600_000
/** Name of the actor of automatic actions in the activity log (no key, no person). */
export const SYSTEM_ACTOR_NAME = 'system'

type Row = typeof webhooks.$inferSelect

function toView(deps: Deps, r: Row): WebhookView {
  const rotating = r.previous_secret && r.previous_secret_until !== null && r.previous_secret_until > deps.clock.now()
  return {
    id: r.id,
    endpoint: r.url,
    description: r.description,
    events: r.kinds,
    enabled: r.enabled,
    disabled_reason: r.disabled_reason as WebhookView['disabled_reason'],
    disabled_at: toIso(r.disabled_at),
    consecutive_failures: r.consecutive_failures,
    last_success_at: toIso(r.last_success_at),
    last_failure_at: toIso(r.last_failure_at),
    previous_secret_expires_at: rotating ? toIso(r.previous_secret_until) : null,
    format: r.format,
    ...timestampsOf(r),
  }
}

/** The secrets that sign a request now: the current one, and the previous one during its grace period. */
export function signingSecrets(r: { secret: string; previous_secret: string | null; previous_secret_until: number | null }, now: number): string[] {
  return r.previous_secret && r.previous_secret_until !== null && r.previous_secret_until > now ? [r.secret, r.previous_secret] : [r.secret]
}

/** True when a webhook with these kinds receives events of `kind`. */
export function subscribes(kinds: readonly string[], kind: string): boolean {
  return kinds.includes('*') || kinds.includes(kind)
}

function checkKinds(kinds: string[]): string[] {
  const unknown = kinds.filter((k) => k !== '*' && !(WEBHOOK_EVENT_KINDS as readonly string[]).includes(k))
  if (unknown.length) throw invalidField('events', `unknown kind(s): ${unknown.join(', ')}; known: *, ${WEBHOOK_EVENT_KINDS.join(', ')}`)
  return kinds.includes('*') ? ['*'] : [...new Set(kinds)]
}

export interface WebhookOptions {
  /** Resolver for the address check (tests pass their own). */
  lookup?: Lookup
}

async function checkUrl(deps: Deps, text: string, opts: WebhookOptions): Promise<string> {
  const problem = urlProblem(text)
  if (problem) throw invalidField('endpoint', problem)
  // With private addresses allowed there is nothing to check in the answer, and a name that
  // does not resolve yet is the operator's business.
  if (deps.config.webhooks_allow_private) return text
  const r = await resolveEndpoint(new URL(text), false, opts.lookup)
  if (!r.ok) throw invalidField('endpoint', r.error)
  return text
}

function row(deps: Deps, id: number): Row {
  return findById(deps.db, webhooks, id, 'webhook')
}

export function getWebhook(deps: Deps, id: number): WebhookView {
  return toView(deps, row(deps, id))
}

/** The current signing secret in clear (Resend's API shows it on every read; Mailroom's own API only at creation and rotation). */
export function currentSecret(deps: Deps, id: number): string {
  return deps.secrets.open(row(deps, id).secret)
}

export function listWebhooks(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, webhooks, query, (rows: Row[]) => rows.map((r) => toView(deps, r)))
}

/** Creates a webhook; the answer is the only one that carries the secret. */
export async function createWebhook(deps: Deps, input: WebhookInput, opts: WebhookOptions = {}): Promise<WebhookView & { secret: string }> {
  const kinds = checkKinds(input.events)
  if (input.secret !== undefined) {
    const p = secretProblem(input.secret)
    if (p) throw invalidField('secret', p)
  }
  const url = await checkUrl(deps, input.endpoint, opts)
  const now = deps.clock.now()
  const enabled = input.enabled ?? true
  const secret = input.secret ?? generateSecret()
  const r = deps.db
    .insert(webhooks)
    .values({
      url,
      description: input.description ?? '',
      kinds,
      secret: deps.secrets.seal(secret),
      enabled,
      disabled_reason: enabled ? null : 'manual',
      disabled_at: enabled ? null : now,
      format: input.format ?? 'mailroom',
      created_at: now,
      updated_at: now,
    })
    .returning()
    .get()
  return { ...toView(deps, r), secret }
}

/**
 * Updates a webhook. `enabled: false` disables it by hand (reason `manual`); its pending
 * deliveries are parked, not dropped. `enabled: true` on a disabled webhook resets the
 * failure count and makes every pending delivery due at once.
 */
export async function updateWebhook(deps: Deps, id: number, input: Partial<Omit<WebhookInput, 'secret'>>, opts: WebhookOptions = {}): Promise<WebhookView> {
  const current = row(deps, id)
  const kinds = input.events !== undefined ? checkKinds(input.events) : undefined
  const url = input.endpoint !== undefined ? await checkUrl(deps, input.endpoint, opts) : undefined
  const now = deps.clock.now()
  deps.db.transaction((tx) => {
    tx.update(webhooks)
      .set({
        ...(url !== undefined && { url }),
        ...(kinds !== undefined && { kinds }),
        ...(input.description !== undefined && { description: input.description }),
        ...(input.format !== undefined && { format: input.format }),
        updated_at: now,
      })
      .where(eq(webhooks.id, id))
      .run()
    if (input.enabled === true && !current.enabled) {
      tx.update(webhooks).set({ enabled: true, disabled_reason: null, disabled_at: null, consecutive_failures: 0 }).where(eq(webhooks.id, id)).run()
      deps.db.$client.run(`UPDATE webhook_deliveries SET next_attempt_at = ?1, updated_at = ?1 WHERE webhook_id = ?2 AND state = 'pending'`, [now, id])
    } else if (input.enabled === false && current.enabled) {
      tx.update(webhooks).set({ enabled: false, disabled_reason: 'manual', disabled_at: now }).where(eq(webhooks.id, id)).run()
      parkPending(deps.db.$client, id, now)
    }
  })
  return getWebhook(deps, id)
}

/**
 * The pending deliveries of a disabled webhook stay `pending` with no due time, so the
 * sender's due-index scan never sees them; re-enabling gives them a due time again.
 */
function parkPending(client: Deps['db']['$client'], webhookId: number, now: number): void {
  client.run(`UPDATE webhook_deliveries SET next_attempt_at = NULL, updated_at = ?1 WHERE webhook_id = ?2 AND state = 'pending'`, [now, webhookId])
}

/** Deletes webhooks with their deliveries and attempts. */
export function deleteWebhooks(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return bulkDeleteByIds(deps.db, webhooks, ids)
}

/** New secret, returned once; the previous one keeps signing for ROTATION_GRACE_MS. */
export function rotateSecret(deps: Deps, id: number, input: { secret?: string } = {}): WebhookView & { secret: string } {
  const current = row(deps, id)
  if (input.secret !== undefined) {
    const p = secretProblem(input.secret)
    if (p) throw invalidField('secret', p)
    if (input.secret === deps.secrets.open(current.secret)) throw invalidField('secret', 'must differ from the current secret')
  }
  const now = deps.clock.now()
  const secret = input.secret ?? generateSecret()
  deps.db
    .update(webhooks)
    .set({ secret: deps.secrets.seal(secret), previous_secret: current.secret, previous_secret_until: now + ROTATION_GRACE_MS, updated_at: now })
    .where(eq(webhooks.id, id))
    .run()
  return { ...getWebhook(deps, id), secret }
}

/**
 * Disables a webhook automatically (too many failures, or HTTP 410 Gone), at most once: the
 * UPDATE only matches an enabled webhook (and, for failures, one at the limit), so when many
 * deliveries fail at the same time only the first outcome makes the transition, emits
 * `webhook.disabled` and writes the activity log. Call it inside the outcome's transaction.
 * Returns true when this call disabled it.
 */
export function autoDisable(deps: Deps, webhookId: number, reason: 'failures' | 'gone', now: number): boolean {
  const client = deps.db.$client
  const changed =
    reason === 'failures'
      ? client.run(
          `UPDATE webhooks SET enabled = 0, disabled_reason = 'failures', disabled_at = ?1, updated_at = ?1 WHERE id = ?2 AND enabled = 1 AND consecutive_failures >= ?3`,
          [now, webhookId, MAX_CONSECUTIVE_FAILURES],
        ).changes
      : client.run(`UPDATE webhooks SET enabled = 0, disabled_reason = 'gone', disabled_at = ?1, updated_at = ?1 WHERE id = ?2 AND enabled = 1`, [
          now,
          webhookId,
        ]).changes
  if (changed === 0) return false
  parkPending(client, webhookId, now)
  const w = client.query<{ url: string; consecutive_failures: number }, [number]>('SELECT url, consecutive_failures FROM webhooks WHERE id = ?').get(webhookId)!
  emit(deps.db, now, { kind: 'webhook.disabled', data: { webhook_id: webhookId, url: w.url, reason, consecutive_failures: w.consecutive_failures } })
  recordActivity(deps, {
    actor_key_id: null,
    actor_name: SYSTEM_ACTOR_NAME,
    action: 'webhooks.disable',
    target_type: 'webhooks',
    target_id: String(webhookId),
    method: null,
    path: null,
    ip: null,
    status: 200,
    outcome: 'success',
  })
  deps.log.warn('webhook disabled', { webhook_id: webhookId, reason, consecutive_failures: w.consecutive_failures })
  return true
}

// ---------------------------------------------------------------------------------------
// Payloads
// ---------------------------------------------------------------------------------------

export interface EventRow {
  id: number
  kind: string
  created_at: number
  contact_id: number | null
  list_id: number | null
  message_id: string | null
  recipient: string | null
  broadcast_id: number | null
  bridge_id: number | null
  data: Record<string, unknown>
}

/** The `webhook-id` of one event for one webhook: the same on every retry and replay. */
export function messageId(eventId: number, webhookId: number): string {
  return `evt_${eventId}_${webhookId}`
}

/** The JSON body: `type`, `timestamp` (of the event) and `data`, the event itself. */
export function payloadOf(e: EventRow): string {
  return JSON.stringify({
    type: e.kind,
    timestamp: new Date(e.created_at).toISOString(),
    data: {
      id: e.id,
      kind: e.kind,
      created_at: new Date(e.created_at).toISOString(),
      contact_id: e.contact_id,
      list_id: e.list_id,
      message_id: e.message_id,
      recipient: e.recipient,
      broadcast_id: e.broadcast_id,
      bridge_id: e.bridge_id,
      data: e.data,
    },
  })
}

// ---------------------------------------------------------------------------------------
// Test sends
// ---------------------------------------------------------------------------------------

function sampleEvent(kind: string, at: number): EventRow {
  const base = { id: 0, kind, created_at: at, contact_id: null, list_id: null, message_id: null, recipient: null, broadcast_id: null, bridge_id: null }
  const [group] = kind.split('.')
  if (group === 'contact')
    return { ...base, contact_id: 1, list_id: 1, recipient: 'jane@example.com', data: { email: 'jane@example.com', list_id: 1, test: true } }
  if (group === 'message') return { ...base, message_id: '00000000-0000-0000-0000-000000000000', recipient: 'jane@example.com', data: { test: true } }
  if (group === 'broadcast') return { ...base, broadcast_id: 1, recipient: 'jane@example.com', data: { test: true } }
  return { ...base, data: { webhook_id: 0, reason: 'failures', test: true } }
}

/**
 * Sends one sample event per kind, signed like real deliveries, and reports what the
 * endpoint answered. Nothing is stored and the failure count is untouched: a test is not a
 * delivery. Works on a disabled webhook too (to check an endpoint before enabling it).
 */
export async function testWebhook(deps: Deps, id: number, input: { events?: string[] }, opts: WebhookOptions = {}): Promise<TestResult[]> {
  const w = row(deps, id)
  let kinds = input.events !== undefined ? checkKinds(input.events) : w.kinds
  if (kinds.includes('*')) kinds = input.events !== undefined ? [...WEBHOOK_EVENT_KINDS] : ['contact.subscribed']
  const now = deps.clock.now()
  const secrets = signingSecrets(w, now).map(deps.secrets.open)
  return Promise.all(
    kinds.map(async (kind, i) => {
      const body = payloadOf(sampleEvent(kind, now))
      const headers = signatureHeaders(secrets, `test_${w.id}_${now}_${i}`, Math.floor(now / 1000), body)
      const r = await postWebhook({
        url: w.url,
        headers,
        body,
        timeoutMs: deps.config.webhook_timeout_ms,
        allowPrivate: deps.config.webhooks_allow_private,
        lookup: opts.lookup,
        now,
      })
      return {
        kind,
        webhook_id: headers['webhook-id']!,
        ok: r.ok,
        status: r.status,
        latency_ms: r.latency_ms,
        error: r.error,
        response_snippet: r.snippet,
        headers,
      }
    }),
  )
}

// ---------------------------------------------------------------------------------------
// Delivery log and replay
// ---------------------------------------------------------------------------------------

type DeliveryRow = typeof webhookDeliveries.$inferSelect

function deliveryView(d: DeliveryRow) {
  return {
    id: d.id,
    webhook_id: d.webhook_id,
    event_id: d.event_id,
    kind: d.kind,
    message_id: messageId(d.event_id, d.webhook_id),
    state: d.state,
    attempts: d.attempts,
    next_attempt_at: toIso(d.next_attempt_at),
    last_status: d.last_status,
    last_error: d.last_error,
    created_at: toIso(d.created_at)!,
    updated_at: toIso(d.updated_at)!,
    finished_at: toIso(d.finished_at),
  }
}
export type DeliveryView = ReturnType<typeof deliveryView>

export function listDeliveries(deps: Deps, webhookId: number, query: { page?: number; per_page?: number; state?: DeliveryRow['state'] }) {
  row(deps, webhookId)
  const req = pageRequest(query)
  const where = and(eq(webhookDeliveries.webhook_id, webhookId), query.state ? eq(webhookDeliveries.state, query.state) : undefined)
  const total = deps.db.select({ n: count() }).from(webhookDeliveries).where(where).get()!.n
  const rows = deps.db.select().from(webhookDeliveries).where(where).orderBy(desc(webhookDeliveries.id)).limit(req.per_page).offset(req.offset).all()
  return { items: rows.map(deliveryView), meta: pageMeta(req, total) }
}

function delivery(deps: Deps, webhookId: number, deliveryId: number): DeliveryRow {
  row(deps, webhookId)
  const d = deps.db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.webhook_id, webhookId)))
    .get()
  if (!d) throw notFound('delivery', deliveryId)
  return d
}

/** The event a delivery carries, as the dispatcher sends it; null once the event was pruned from the log. */
export function deliveryEvent(deps: Deps, webhookId: number, deliveryId: number): EventRow | null {
  const d = delivery(deps, webhookId, deliveryId)
  const e = deps.db.select().from(events).where(eq(events.id, d.event_id)).get()
  return e ? { ...e, data: e.data } : null
}

export function getDelivery(deps: Deps, webhookId: number, deliveryId: number): DeliveryView {
  return deliveryView(delivery(deps, webhookId, deliveryId))
}

export function listAttempts(deps: Deps, webhookId: number, deliveryId: number, query: { page?: number; per_page?: number }) {
  delivery(deps, webhookId, deliveryId)
  const req = pageRequest(query)
  const where = eq(webhookAttempts.delivery_id, deliveryId)
  const total = deps.db.select({ n: count() }).from(webhookAttempts).where(where).get()!.n
  const rows = deps.db.select().from(webhookAttempts).where(where).orderBy(asc(webhookAttempts.id)).limit(req.per_page).offset(req.offset).all()
  return {
    items: rows.map((a) => ({
      id: a.id,
      delivery_id: a.delivery_id,
      attempted_at: toIso(a.attempted_at)!,
      status: a.status,
      latency_ms: a.latency_ms,
      error: a.error,
      response_snippet: a.response_snippet,
    })),
    meta: pageMeta(req, total),
  }
}

/**
 * Replay: a new delivery of the same event, due now (the old one and its attempts stay in
 * the log). It carries the same `webhook-id`, as Standard Webhooks asks for the same
 * message. On a disabled webhook it waits, parked, until the webhook is enabled.
 */
export function replayDelivery(deps: Deps, webhookId: number, deliveryId: number): DeliveryView {
  const d = delivery(deps, webhookId, deliveryId)
  if (d.state === 'pending' || d.state === 'sending')
    throw new AppError('conflict', `Delivery ${deliveryId} is still ${d.state}; replay it once it has finished.`)
  const w = row(deps, webhookId)
  const now = deps.clock.now()
  const r = deps.db
    .insert(webhookDeliveries)
    .values({
      webhook_id: webhookId,
      event_id: d.event_id,
      kind: d.kind,
      state: 'pending',
      attempts: 0,
      next_attempt_at: w.enabled ? now : null,
      created_at: now,
      updated_at: now,
    })
    .returning()
    .get()
  return deliveryView(r)
}
