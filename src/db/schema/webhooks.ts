import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { sql } from 'drizzle-orm'
import { counter, flag, ownedBy, serialId, timestamps } from './columns'

// ---------------------------------------------------------------------------------------
// Webhooks (issue 6): endpoints, durable deliveries (one per event and webhook), attempts.
// ---------------------------------------------------------------------------------------

export const WEBHOOK_FORMATS = ['mailroom', 'resend'] as const

export const webhooks = sqliteTable('webhooks', {
  id: serialId(),
  url: text('url').notNull(),
  description: text('description').notNull().default(''),
  /** Event kinds delivered; ['*'] = every kind. */
  kinds: text('kinds', { mode: 'json' }).$type<string[]>().notNull(),
  /** Standard Webhooks secret, `whsec_` + base64 (the server signs with it, so it is sealed by deps.secrets, not hashed). */
  secret: text('secret').notNull(),
  /** After a rotation the old secret also signs until this time (ms), for a grace period. */
  previous_secret: text('previous_secret'),
  previous_secret_until: integer('previous_secret_until'),
  enabled: flag('enabled', true),
  /** Why it was disabled: 'manual', 'failures' (10 in a row), 'gone' (HTTP 410). */
  disabled_reason: text('disabled_reason'),
  disabled_at: integer('disabled_at'),
  consecutive_failures: counter('consecutive_failures'),
  last_success_at: integer('last_success_at'),
  last_failure_at: integer('last_failure_at'),
  /** Payload and header format: 'mailroom' (Standard Webhooks) or 'resend' (Resend's events, Svix headers; issue 19). */
  format: text('format', { enum: WEBHOOK_FORMATS }).notNull().default('mailroom'),
  ...timestamps(),
})

export const WEBHOOK_DELIVERY_STATES = ['pending', 'sending', 'succeeded', 'failed'] as const

/**
 * One event for one webhook. `pending` rows are due at next_attempt_at; a disabled
 * webhook's pending rows stay pending (not dropped) and go out once it is enabled again.
 */
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: serialId(),
    webhook_id: ownedBy('webhook_id', () => webhooks.id),
    /** The event delivered (events.id); the `webhook-id` header is derived from it, so retries share it. */
    event_id: integer('event_id').notNull(),
    /** Test and replay deliveries carry their own payload instead of an event's. */
    kind: text('kind').notNull(),
    state: text('state', { enum: WEBHOOK_DELIVERY_STATES }).notNull(),
    attempts: counter('attempts'),
    next_attempt_at: integer('next_attempt_at'),
    lease_until: integer('lease_until'),
    last_status: integer('last_status'),
    last_error: text('last_error'),
    ...timestamps(),
    finished_at: integer('finished_at'),
  },
  (t) => [
    index('webhook_deliveries_due_idx')
      .on(t.next_attempt_at)
      .where(sql`state = 'pending'`),
    // The dispatcher's requeue of expired leases every 30 s: without it, a scan of every
    // delivery ever made, growing with the table (issue 18's long run).
    index('webhook_deliveries_lease_idx')
      .on(t.lease_until)
      .where(sql`state = 'sending'`),
    index('webhook_deliveries_webhook_idx').on(t.webhook_id, t.id),
    index('webhook_deliveries_event_idx').on(t.event_id),
  ],
)

/** Every HTTP attempt of a delivery: the delivery log of a webhook. */
export const webhookAttempts = sqliteTable(
  'webhook_attempts',
  {
    id: serialId(),
    delivery_id: ownedBy('delivery_id', () => webhookDeliveries.id),
    webhook_id: integer('webhook_id').notNull(),
    attempted_at: integer('attempted_at').notNull(),
    /** HTTP status, null when there was no response (timeout, refused, TLS, redirect refused...). */
    status: integer('status'),
    latency_ms: integer('latency_ms'),
    error: text('error'),
    /** The first bytes of the response body. */
    response_snippet: text('response_snippet'),
  },
  (t) => [index('webhook_attempts_webhook_idx').on(t.webhook_id, t.id), index('webhook_attempts_delivery_idx').on(t.delivery_id)],
)

// ---------------------------------------------------------------------------------------
// Statistics (issue 6): hourly rollups kept from the event log by a cursor-driven job.
// ---------------------------------------------------------------------------------------

/**
 * Event counts per clock hour, kind and dimension. `dim` is 'all' (dim_value ''), 'domain',
 * 'ip', 'pool', 'bridge', 'list' or 'broadcast'. Day totals are rows of their own, with dim
 * '<dim>.day' and `hour` the start of the UTC day, written in the same statement as the hour
 * rows (summing 24 hour rows per value was 70+ ms over 30 days of a busy server).
 */
export const statsHourly = sqliteTable(
  'stats_hourly',
  {
    hour: integer('hour').notNull(),
    kind: text('kind').notNull(),
    dim: text('dim').notNull(),
    dim_value: text('dim_value').notNull(),
    count: counter('count'),
  },
  // (dim, hour) first: the queries ask for one dimension over a time range, grouped by value.
  (t) => [primaryKey({ columns: [t.dim, t.hour, t.dim_value, t.kind] })],
)
