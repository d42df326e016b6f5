import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { apiKeys } from './access'
import { ipPools, sendingNodes } from './sending'
import { counter, flag, hourlyUsageTable, ownedBy, serialId, timestamps, usesOptional } from './columns'

// ---------------------------------------------------------------------------------------
// Bridges (issue 5): one application's way in, over SMTP submission or its own API key.
// ---------------------------------------------------------------------------------------

export const bridges = sqliteTable('bridges', {
  id: serialId(),
  name: text('name').notNull().unique(),
  /** SMTP AUTH user name (generated, unique). */
  smtp_username: text('smtp_username').notNull().unique(),
  /** SHA-256 of the generated password (high-entropy, so no slow hash is needed; as API keys). */
  smtp_password_hash: text('smtp_password_hash').notNull(),
  /** The bridge's own API key for its per-application send endpoint. */
  api_key_id: usesOptional('api_key_id', () => apiKeys.id),
  /** Sending-domain names (lower-case ASCII) its From and MAIL FROM may use. */
  domains: text('domains', { mode: 'json' }).$type<string[]>().notNull(),
  pool_id: usesOptional('pool_id', () => ipPools.id),
  node_id: usesOptional('node_id', () => sendingNodes.id),
  /** Most accepted messages per clock hour / UTC day; null = no quota. */
  hourly_quota: integer('hourly_quota'),
  daily_quota: integer('daily_quota'),
  /** IPs/CIDRs/ranges allowed to use the bridge (SMTP and its API key); empty = any. */
  allowed_ips: text('allowed_ips', { mode: 'json' }).$type<string[]>().notNull(),
  /** Tracking settings for the engagement issue. */
  track_opens: flag('track_opens', false),
  track_clicks: flag('track_clicks', false),
  active: flag('active', true),
  /** Mail submitted over SMTP that bounces or expires gets a DSN to its envelope sender (RFC 5321 6.1, RFC 3464). */
  send_dsn: flag('send_dsn', true),
  ...timestamps(),
})

/** Accepted messages per bridge and clock hour, for the quotas. */
export const bridgeUsage = hourlyUsageTable('bridge_usage', 'bridge_id', () => bridges.id)

/** Running totals per bridge, kept in the transactions that change them. */
export const bridgeCounters = sqliteTable('bridge_counters', {
  bridge_id: integer('bridge_id')
    .primaryKey()
    .references(() => bridges.id, { onDelete: 'cascade' }),
  accepted: counter('accepted'),
  delivered: counter('delivered'),
  bounced: counter('bounced'),
  complained: counter('complained'),
})

// ---------------------------------------------------------------------------------------
// Inbound: feedback loops, DMARC aggregate reports, and the log of what came in.
// ---------------------------------------------------------------------------------------

export const FEEDBACK_LOOP_KINDS = ['address', 'imap'] as const

export const feedbackLoopAccounts = sqliteTable('feedback_loop_accounts', {
  id: serialId(),
  name: text('name').notNull().unique(),
  kind: text('kind', { enum: FEEDBACK_LOOP_KINDS }).notNull(),
  /** kind address: the address on the inbound listener that receives the reports. */
  address: text('address'),
  imap_host: text('imap_host'),
  imap_port: integer('imap_port'),
  imap_tls: integer('imap_tls', { mode: 'boolean' }),
  imap_username: text('imap_username'),
  imap_password: text('imap_password'),
  imap_mailbox: text('imap_mailbox'),
  poll_interval_seconds: integer('poll_interval_seconds'),
  last_polled_at: integer('last_polled_at'),
  last_error: text('last_error'),
  active: flag('active', true),
  ...timestamps(),
})

export const dmarcReports = sqliteTable(
  'dmarc_reports',
  {
    id: serialId(),
    /** The policy domain the report is about. */
    domain: text('domain').notNull(),
    org_name: text('org_name').notNull(),
    report_id: text('report_id').notNull(),
    begin_at: integer('begin_at').notNull(),
    end_at: integer('end_at').notNull(),
    policy: text('policy', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    received_at: integer('received_at').notNull(),
  },
  (t) => [uniqueIndex('dmarc_reports_org_report_unique').on(t.org_name, t.report_id), index('dmarc_reports_domain_idx').on(t.domain, t.begin_at)],
)

export const dmarcRecords = sqliteTable(
  'dmarc_records',
  {
    id: serialId(),
    report_id: ownedBy('report_id', () => dmarcReports.id),
    source_ip: text('source_ip').notNull(),
    count: integer('count').notNull(),
    disposition: text('disposition').notNull(),
    dkim: text('dkim').notNull(),
    spf: text('spf').notNull(),
    header_from: text('header_from').notNull(),
  },
  (t) => [index('dmarc_records_report_idx').on(t.report_id)],
)

/** Every message the inbound listener accepted, and what was done with it. */
export const inboundMessages = sqliteTable(
  'inbound_messages',
  {
    id: serialId(),
    received_at: integer('received_at').notNull(),
    remote_ip: text('remote_ip'),
    mail_from: text('mail_from').notNull(),
    rcpt_to: text('rcpt_to').notNull(),
    /** dsn, arf, dmarc or unknown. */
    kind: text('kind').notNull(),
    /** applied, ignored, forged, duplicate, unparsed. */
    outcome: text('outcome').notNull(),
    message_id: text('message_id'),
    recipient: text('recipient'),
    detail: text('detail', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
  },
  (t) => [index('inbound_messages_received_idx').on(t.received_at)],
)
