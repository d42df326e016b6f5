import { sql } from 'drizzle-orm'
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { counter, createdAt, flag, hourlyUsageTable, ownedBy, serialId, timestamps, usesOptional } from './columns'

// ---------------------------------------------------------------------------------------
// Templates and spin tags (issue 4). A template's content lives in immutable versions; the
// template row points at the active one. Deleting a template deletes its versions.
// ---------------------------------------------------------------------------------------

export const templates = sqliteTable('templates', {
  id: serialId(),
  name: text('name').notNull(),
  description: text('description').notNull().default(''),
  /** The version sends use; null only between creating the row and its first version (one transaction). */
  active_version_id: integer('active_version_id'),
  ...timestamps(),
})

export const templateVersions = sqliteTable(
  'template_versions',
  {
    id: serialId(),
    template_id: ownedBy('template_id', () => templates.id),
    /** 1, 2, 3... per template. */
    version: integer('version').notNull(),
    subject: text('subject').notNull(),
    html: text('html'),
    text: text('text'),
    /** The sender of the template's sends ("Name <address>"), unless the request names one; null: none. */
    from_address: text('from_address'),
    /** The Reply-To of the template's sends; null: none. */
    reply_to: text('reply_to'),
    created_at: createdAt(),
  },
  (t) => [uniqueIndex('template_versions_template_version_unique').on(t.template_id, t.version)],
)

export const spinTags = sqliteTable('spin_tags', {
  id: serialId(),
  /** Referenced from templates as {{spin "name"}}; unique. */
  name: text('name').notNull().unique(),
  alternatives: text('alternatives', { mode: 'json' }).$type<string[]>().notNull(),
  ...timestamps(),
})

// ---------------------------------------------------------------------------------------
// Sending infrastructure: IPs, pools, sending domains, sending nodes.
// ---------------------------------------------------------------------------------------

/** A local source address the operator registered; mail over it greets with `hostname`. */
export const ips = sqliteTable('ips', {
  id: serialId(),
  address: text('address').notNull().unique(),
  /** EHLO name of this address (should match its PTR record). */
  hostname: text('hostname').notNull(),
  ...timestamps(),
})

export const ipPools = sqliteTable('ip_pools', {
  id: serialId(),
  name: text('name').notNull().unique(),
  /** At most one pool is the default (checked by the service). */
  is_default: flag('is_default', false),
  ...timestamps(),
})

export const ipPoolMembers = sqliteTable(
  'ip_pool_members',
  {
    pool_id: ownedBy('pool_id', () => ipPools.id),
    ip_id: ownedBy('ip_id', () => ips.id),
    /** Relative share of the pool's traffic (weighted rotation). */
    weight: integer('weight').notNull().default(1),
  },
  (t) => [primaryKey({ columns: [t.pool_id, t.ip_id] })],
)

export const DOMAIN_STATUSES = ['pending', 'verified', 'failed'] as const
export type DomainStatus = (typeof DOMAIN_STATUSES)[number]

export const sendingDomains = sqliteTable('sending_domains', {
  id: serialId(),
  /** Lower-case, ASCII (IDNA) form. */
  name: text('name').notNull().unique(),
  status: text('status', { enum: DOMAIN_STATUSES }).notNull(),
  dkim_selector: text('dkim_selector').notNull(),
  /** PKCS#8 PEM, sealed by deps.secrets (src/lib/secret-box.ts): a copied database file does not reveal it. */
  dkim_private_key: text('dkim_private_key').notNull(),
  /** Base64 SubjectPublicKeyInfo, the p= of the DKIM record. */
  dkim_public_key: text('dkim_public_key').notNull(),
  /** Host of the bounce (Return-Path) domain, e.g. bounces.example.com. */
  return_path_host: text('return_path_host').notNull(),
  /** The pool mail from this domain uses when the request names none; null = the default pool. */
  pool_id: usesOptional('pool_id', () => ipPools.id),
  /** Defaults of API sends from this domain: rewrite HTML for open and click tracking (src/modules/tracking). */
  track_opens: flag('track_opens', false),
  track_clicks: flag('track_clicks', false),
  /** The state of each DNS record at the last verify call. */
  records_state: text('records_state', { mode: 'json' }).$type<Record<string, unknown>>(),
  verified_at: integer('verified_at'),
  checked_at: integer('checked_at'),
  ...timestamps(),
})

export const NODE_KINDS = ['direct', 'relay'] as const
export type NodeKind = (typeof NODE_KINDS)[number]
export const RELAY_TLS_MODES = ['none', 'starttls', 'tls'] as const
export type RelayTlsMode = (typeof RELAY_TLS_MODES)[number]

/** A delivery route: straight to the recipient's MX over a pool, or through a smart host. */
export const sendingNodes = sqliteTable('sending_nodes', {
  id: serialId(),
  name: text('name').notNull().unique(),
  kind: text('kind', { enum: NODE_KINDS }).notNull(),
  /** direct: the pool to send over (null = the message's pool). */
  pool_id: usesOptional('pool_id', () => ipPools.id),
  relay_host: text('relay_host'),
  relay_port: integer('relay_port'),
  relay_tls: text('relay_tls', { enum: RELAY_TLS_MODES }),
  relay_username: text('relay_username'),
  relay_password: text('relay_password'),
  /** Most deliveries per clock hour / UTC day; null = no cap. */
  hourly_cap: integer('hourly_cap'),
  daily_cap: integer('daily_cap'),
  /** At most one node is the default route (checked by the service). */
  is_default: flag('is_default', false),
  active: flag('active', true),
  ...timestamps(),
})

/** Deliveries per node and clock hour, for the hourly and daily caps. */
export const sendingNodeUsage = hourlyUsageTable('sending_node_usage', 'node_id', () => sendingNodes.id)

// ---------------------------------------------------------------------------------------
// Messages and the per-recipient delivery queue.
// ---------------------------------------------------------------------------------------

export const MESSAGE_SOURCES = ['api', 'template', 'resend', 'smtp', 'broadcast', 'dsn', 'web_form', 'automation'] as const

/**
 * One accepted message. `raw` is the complete RFC 5322 message as accepted (CRLF line ends,
 * unsigned); the DKIM signature is added at delivery, so a key rotation applies to queued mail.
 */
export const messages = sqliteTable(
  'messages',
  {
    /** UUID (v7, so ids sort by acceptance time). */
    id: text('id').primaryKey(),
    api_key_id: integer('api_key_id'),
    source: text('source', { enum: MESSAGE_SOURCES }).notNull(),
    /** RFC 5321 MAIL FROM (the return path). */
    mail_from: text('mail_from').notNull(),
    /** SMTP submission: the MAIL FROM the client gave, where DSNs go (mail_from may be our own return path). */
    envelope_from: text('envelope_from'),
    /** The From header's address. */
    from_address: text('from_address').notNull(),
    subject: text('subject').notNull(),
    tags: text('tags', { mode: 'json' })
      .$type<string[]>()
      .notNull()
      .default(sql`'[]'`),
    /** The Message-ID header value, without angle brackets. */
    message_id_header: text('message_id_header').notNull(),
    /** Sending domain that signs the message; null = sent unsigned (unverified domains allowed). */
    domain_id: usesOptional('domain_id', () => sendingDomains.id),
    pool_id: usesOptional('pool_id', () => ipPools.id),
    node_id: usesOptional('node_id', () => sendingNodes.id),
    template_id: integer('template_id'),
    template_version_id: integer('template_version_id'),
    /** The bridge (issue 5) the message came through, if any. */
    bridge_id: integer('bridge_id'),
    /** The broadcast (issue 15) this message is one recipient's copy of, if any. */
    broadcast_id: integer('broadcast_id'),
    /** When a scheduled send (issue 19) is due, as asked (ms); null = sent at once. Its recipients wait as `scheduled`. */
    scheduled_at: integer('scheduled_at'),
    /** The HTML as the caller sent it when open or click tracking rewrote it (raw holds the tracked copy); else null. */
    sent_html: text('sent_html'),
    raw: blob('raw', { mode: 'buffer' }).notNull(),
    size: integer('size').notNull(),
    created_at: createdAt(),
  },
  (t) => [
    index('messages_created_idx').on(t.created_at),
    // The console's message search by bridge, newest first.
    index('messages_bridge_idx').on(t.bridge_id, t.created_at),
  ],
)

/** `scheduled`: waits for the message's scheduled_at (then delivered like `queued`); `canceled`: a scheduled send called off, final. */
export const RECIPIENT_STATES = ['scheduled', 'queued', 'sending', 'sent', 'deferred', 'bounced', 'failed', 'suppressed', 'canceled'] as const
export type RecipientState = (typeof RECIPIENT_STATES)[number]
export const RECIPIENT_KINDS = ['to', 'cc', 'bcc'] as const

/**
 * Every recipient of every message is one row and moves through RECIPIENT_STATES
 * (docs/api.md "Message states"). `sending` rows carry a lease: a row whose lease ran out
 * (the process died mid-delivery) is picked up again, which bounds duplicates to the
 * messages that were on the wire at that moment.
 */
export const messageRecipients = sqliteTable(
  'message_recipients',
  {
    id: serialId(),
    message_id: text('message_id')
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    address: text('address').notNull(),
    /** Lower-case domain of the address: the unit of MX lookup and per-destination limits. */
    domain: text('domain').notNull(),
    kind: text('kind', { enum: RECIPIENT_KINDS }).notNull(),
    state: text('state', { enum: RECIPIENT_STATES }).notNull(),
    attempts: counter('attempts'),
    /** When the row is next due (queued/deferred) in ms; null once final. */
    next_attempt_at: integer('next_attempt_at'),
    /** Lease expiry of a `sending` row. */
    lease_until: integer('lease_until'),
    /** Last SMTP reply: basic code, enhanced code (RFC 3463) and text; or a connection error. */
    last_code: integer('last_code'),
    last_enhanced: text('last_enhanced'),
    last_response: text('last_response'),
    /** Rule name from the classification table that decided the last outcome. */
    last_class: text('last_class'),
    /** Why the last attempt or bounce report failed: one of BOUNCE_REASONS (src/lib/smtp-replies.ts); null when sent. */
    last_reason: text('last_reason'),
    /** The IP and MX host of the last attempt. */
    last_ip: text('last_ip'),
    last_mx: text('last_mx'),
    /** The TLS of the last attempt's session (version, cipher, verified), null for plaintext (issue 17). */
    last_tls: text('last_tls', { mode: 'json' }).$type<Record<string, unknown>>(),
    /** For `suppressed`: which suppression matched (id, scope, reason). */
    suppression: text('suppression', { mode: 'json' }).$type<Record<string, unknown>>(),
    ...timestamps(),
    /** When the state became final (sent, bounced, failed, suppressed). */
    finished_at: integer('finished_at'),
  },
  (t) => [
    index('message_recipients_message_idx').on(t.message_id),
    // The console's message search by recipient, whatever the address's case.
    index('message_recipients_address_idx').on(sql`lower(${t.address})`),
    // The scheduler's pick: due rows in time order (a scheduled row is due at its scheduled
    // time). Partial, so final rows cost nothing here.
    index('message_recipients_due_idx')
      .on(t.next_attempt_at)
      .where(sql`state IN ('scheduled', 'queued', 'deferred')`),
    index('message_recipients_leased_idx')
      .on(t.lease_until)
      .where(sql`state = 'sending'`),
  ],
)

/**
 * Idempotency records (docs/api.md "Idempotency"): scoped to the API key, kept 24 hours,
 * committed in the same transaction as the message they answer for.
 */
export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    api_key_id: integer('api_key_id').notNull(),
    key: text('key').notNull(),
    /** Which endpoint the key was used on plus a SHA-256 of the request body. */
    request_hash: text('request_hash').notNull(),
    response_status: integer('response_status').notNull(),
    response_body: text('response_body').notNull(),
    created_at: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.api_key_id, t.key] }), index('idempotency_keys_created_idx').on(t.created_at)],
)
