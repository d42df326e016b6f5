import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { counter, flag, ownedBy, serialId, timestamps, usesOptional } from './columns'
import { ipPools, templates } from './sending'
import { segments } from './audience'

// ---------------------------------------------------------------------------------------
// Broadcasts (issue 15). A broadcast is one mailing to an audience snapshot: when it starts,
// one chunked INSERT ... SELECT writes a row per recipient (never the audience in memory),
// and every later step is a state change of those committed rows, so pause, resume and a
// restart continue exactly where the rows say (docs/api.md "Broadcasts").
// ---------------------------------------------------------------------------------------

/** draft -> scheduled -> preparing -> sending <-> paused -> sent; cancelled and failed from any live state. */
export const BROADCAST_STATUSES = ['draft', 'scheduled', 'preparing', 'sending', 'paused', 'sent', 'cancelled', 'failed'] as const
export type BroadcastStatus = (typeof BROADCAST_STATUSES)[number]

/** How versions share the audience: `rotation` splits it evenly; `split_test` sends a sample, then the winner. */
export const VERSION_MODES = ['rotation', 'split_test'] as const
export const SPLIT_TEST_METRICS = ['open_rate', 'click_rate', 'link_click_rate'] as const

/** Split-test settings (used when `version_mode` is `split_test`). */
export interface SplitTestSettings {
  /** Share of the audience (1-50 %) that receives the versions before a winner is picked. */
  sample_percent: number
  metric: (typeof SPLIT_TEST_METRICS)[number]
  /** For link_click_rate: the link whose click rate decides. */
  link_url?: string | null
  /** How long after the sample finished sending the metric is read. */
  wait_seconds: number
  /** true: send the winner to the rest automatically; false: only report it (the broadcast pauses). */
  auto_send_winner: boolean
}

/** Hours of day and days of week when mail may leave, in the contact's or the broadcast's time zone. */
export interface SendWindow {
  /** Start and end hour (0-24, end exclusive); start > end wraps past midnight. */
  start_hour: number
  end_hour: number
  /** 0 = Sunday ... 6 = Saturday; empty or absent = every day. */
  days?: number[]
  /** IANA zone used when the contact has none (or none is configured); default the broadcast's `timezone` or UTC. */
  timezone?: string | null
  /** Custom field key holding each contact's IANA time zone; null = the window's zone for everyone. */
  contact_timezone_field?: string | null
}

export const broadcasts = sqliteTable(
  'broadcasts',
  {
    id: serialId(),
    name: text('name').notNull(),
    status: text('status', { enum: BROADCAST_STATUSES }).notNull(),
    /** Why the broadcast is paused or failed (a missed schedule, a bounce-rate threshold...), for people. */
    status_reason: text('status_reason'),
    /** "Name <address>" on a verified sending domain. */
    from_address: text('from_address').notNull(),
    reply_to: text('reply_to'),
    subject: text('subject').notNull(),
    /** Content: inline html/text, or a template whose active version is pinned when the broadcast starts. */
    html: text('html'),
    text: text('text'),
    template_id: usesOptional('template_id', () => templates.id),
    template_version_id: integer('template_version_id'),
    /** The audience: contacts on these lists and/or matching the segment, minus the exclusions. */
    list_ids: text('list_ids', { mode: 'json' })
      .$type<number[]>()
      .notNull()
      .default(sql`'[]'`),
    segment_id: usesOptional('segment_id', () => segments.id),
    exclude_list_ids: text('exclude_list_ids', { mode: 'json' })
      .$type<number[]>()
      .notNull()
      .default(sql`'[]'`),
    exclude_segment_ids: text('exclude_segment_ids', { mode: 'json' })
      .$type<number[]>()
      .notNull()
      .default(sql`'[]'`),
    track_opens: flag('track_opens', true),
    track_clicks: flag('track_clicks', true),
    /** Route: an IP pool (null = the sending domain's or the default pool), or a bridge's identity and quotas. */
    pool_id: usesOptional('pool_id', () => ipPools.id),
    bridge_id: integer('bridge_id'),
    tags: text('tags', { mode: 'json' })
      .$type<string[]>()
      .notNull()
      .default(sql`'[]'`),
    /** Most messages a minute; null = as fast as the engine goes. */
    send_rate_per_minute: integer('send_rate_per_minute'),
    send_window: text('send_window', { mode: 'json' }).$type<SendWindow>(),
    /** The broadcast's IANA time zone (schedule display, send window fallback). */
    timezone: text('timezone'),
    version_mode: text('version_mode', { enum: VERSION_MODES }).notNull().default('rotation'),
    split_test: text('split_test', { mode: 'json' }).$type<SplitTestSettings>(),
    /** The split test's phase and outcome: null (not a split test or not started), sampling, waiting, decided. */
    split_phase: text('split_phase'),
    winner_version_id: integer('winner_version_id'),
    /** When the split test's sample finished plus its wait: the time the winner is picked (ms). */
    split_decide_at: integer('split_decide_at'),
    /** Auto-pause thresholds over the running broadcast's sent mail (fractions); null = the server defaults. */
    max_bounce_rate: text('max_bounce_rate'),
    max_complaint_rate: text('max_complaint_rate'),
    /** Public archive (web view and RSS) opt-in, under an unguessable id. */
    archive: flag('archive', false),
    archive_id: text('archive_id').notNull().unique(),
    /** Resend-to-non-openers: the broadcast whose recipients without an open form this one's audience. */
    source_broadcast_id: integer('source_broadcast_id'),
    /** When a scheduled broadcast is due (ms); null = not scheduled. */
    send_at: integer('send_at'),
    started_at: integer('started_at'),
    finished_at: integer('finished_at'),
    /** Preparation cursor: the last contact id copied into broadcast_recipients, so a restart continues the INSERT ... SELECT. */
    prepare_cursor: integer('prepare_cursor'),
    ...timestamps(),
  },
  (t) => [index('broadcasts_status_idx').on(t.status, t.send_at)],
)

/** A variant of a broadcast's subject, content, sender name or send time (Mumara's "versions"). */
export const broadcastVersions = sqliteTable(
  'broadcast_versions',
  {
    id: serialId(),
    broadcast_id: ownedBy('broadcast_id', () => broadcasts.id),
    name: text('name').notNull(),
    /** Each null field falls back to the broadcast's. */
    subject: text('subject'),
    from_name: text('from_name'),
    html: text('html'),
    text: text('text'),
    template_id: usesOptional('template_id', () => templates.id),
    /** Pinned when the broadcast starts (or at creation when given). */
    template_version_id: integer('template_version_id'),
    /** A later send time for this version's recipients (ms); null = with the broadcast. */
    send_at: integer('send_at'),
    /** Relative share in rotation (even split = all 1). */
    weight: integer('weight').notNull().default(1),
    ...timestamps(),
  },
  (t) => [index('broadcast_versions_broadcast_idx').on(t.broadcast_id)],
)

/** pending -> queued -> sent | skipped | failed; sent -> bounced when the MX bounces it later. */
export const BROADCAST_RECIPIENT_STATES = ['pending', 'queued', 'sent', 'skipped', 'failed', 'bounced'] as const
export type BroadcastRecipientState = (typeof BROADCAST_RECIPIENT_STATES)[number]

/**
 * One row per recipient of a started broadcast: the audience snapshot and the send record.
 * Unique per (broadcast, email): the same address on two lists gets one message.
 */
export const broadcastRecipients = sqliteTable(
  'broadcast_recipients',
  {
    id: serialId(),
    broadcast_id: ownedBy('broadcast_id', () => broadcasts.id),
    /** The contact at snapshot time (no foreign key: the send record outlives a deleted contact). */
    contact_id: integer('contact_id').notNull(),
    list_id: integer('list_id').notNull(),
    email: text('email').notNull(),
    /** The version this recipient gets; null until assigned (the rest of a split test waits for the winner). */
    version_id: integer('version_id'),
    /** true for the split-test sample. */
    sample: flag('sample', false),
    state: text('state', { enum: BROADCAST_RECIPIENT_STATES }).notNull(),
    /** Not before this time (send window in the contact's zone, a version's send time); null = now. */
    due_at: integer('due_at'),
    /** For skipped/failed: why (suppressed, unsubscribed, invalid address, ...). */
    reason: text('reason'),
    /** The queued message (messages.id), once rendered and queued. */
    message_id: text('message_id'),
    opened_at: integer('opened_at'),
    clicked_at: integer('clicked_at'),
    updated_at: integer('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('broadcast_recipients_email_unique').on(t.broadcast_id, t.email),
    // The sender's pick: pending rows of a broadcast in id order (ends in the rowid).
    index('broadcast_recipients_state_idx').on(t.broadcast_id, t.state),
    // From a delivery or engagement event's message back to its recipient row.
    index('broadcast_recipients_message_idx')
      .on(t.message_id)
      .where(sql`message_id IS NOT NULL`),
  ],
)

/**
 * Counters per broadcast, version (0 = all versions together) and metric: the recipient
 * states, plus delivered, opened, clicked (unique), complained and unsubscribed. Kept by the
 * broadcast engine in the transactions that change the rows, so progress polls read a handful
 * of rows instead of counting a million.
 */
export const broadcastCounts = sqliteTable(
  'broadcast_counts',
  {
    broadcast_id: ownedBy('broadcast_id', () => broadcasts.id),
    version_id: integer('version_id').notNull().default(0),
    metric: text('metric').notNull(),
    n: counter('n'),
  },
  (t) => [primaryKey({ columns: [t.broadcast_id, t.version_id, t.metric] })],
)
