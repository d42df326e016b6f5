import { sql } from 'drizzle-orm'
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

// ---------------------------------------------------------------------------------------
// Templates and spin tags (issue 4). A template's content lives in immutable versions; the
// template row points at the active one. Deleting a template deletes its versions.
// ---------------------------------------------------------------------------------------

export const templates = sqliteTable('templates', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
  description: text('description').notNull().default(''),
  /** The version sends use; null only between creating the row and its first version (one transaction). */
  active_version_id: integer('active_version_id'),
  created_at: integer('created_at').notNull(),
  updated_at: integer('updated_at').notNull(),
})

export const templateVersions = sqliteTable(
  'template_versions',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    template_id: integer('template_id')
      .notNull()
      .references(() => templates.id, { onDelete: 'cascade' }),
    /** 1, 2, 3... per template. */
    version: integer('version').notNull(),
    subject: text('subject').notNull(),
    html: text('html'),
    text: text('text'),
    /** The sender of the template's sends ("Name <address>"), unless the request names one; null: none. */
    from_address: text('from_address'),
    /** The Reply-To of the template's sends; null: none. */
    reply_to: text('reply_to'),
    created_at: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('template_versions_template_version_unique').on(t.template_id, t.version)],
)

export const spinTags = sqliteTable('spin_tags', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  /** Referenced from templates as {{spin "name"}}; unique. */
  name: text('name').notNull().unique(),
  alternatives: text('alternatives', { mode: 'json' }).$type<string[]>().notNull(),
  created_at: integer('created_at').notNull(),
  updated_at: integer('updated_at').notNull(),
})

// ---------------------------------------------------------------------------------------
// Sending infrastructure: IPs, pools, sending domains, sending nodes.
// ---------------------------------------------------------------------------------------

/** A local source address the operator registered; mail over it greets with `hostname`. */
export const ips = sqliteTable('ips', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  address: text('address').notNull().unique(),
  /** EHLO name of this address (should match its PTR record). */
  hostname: text('hostname').notNull(),
  created_at: integer('created_at').notNull(),
  updated_at: integer('updated_at').notNull(),
})

export const ipPools = sqliteTable('ip_pools', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull().unique(),
  /** At most one pool is the default (checked by the service). */
  is_default: integer('is_default', { mode: 'boolean' }).notNull().default(false),
  created_at: integer('created_at').notNull(),
  updated_at: integer('updated_at').notNull(),
})

export const ipPoolMembers = sqliteTable(
  'ip_pool_members',
  {
    pool_id: integer('pool_id')
      .notNull()
      .references(() => ipPools.id, { onDelete: 'cascade' }),
    ip_id: integer('ip_id')
      .notNull()
      .references(() => ips.id, { onDelete: 'cascade' }),
    /** Relative share of the pool's traffic (weighted rotation). */
    weight: integer('weight').notNull().default(1),
  },
  (t) => [primaryKey({ columns: [t.pool_id, t.ip_id] })],
)

export const DOMAIN_STATUSES = ['pending', 'verified', 'failed'] as const
export type DomainStatus = (typeof DOMAIN_STATUSES)[number]

export const sendingDomains = sqliteTable('sending_domains', {
  id: integer('id').primaryKey({ autoIncrement: true }),
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
  pool_id: integer('pool_id').references(() => ipPools.id, { onDelete: 'set null' }),
  /** Defaults of API sends from this domain: rewrite HTML for open and click tracking (src/modules/tracking). */
  track_opens: integer('track_opens', { mode: 'boolean' }).notNull().default(false),
  track_clicks: integer('track_clicks', { mode: 'boolean' }).notNull().default(false),
  /** The state of each DNS record at the last verify call. */
  records_state: text('records_state', { mode: 'json' }).$type<Record<string, unknown>>(),
  verified_at: integer('verified_at'),
  checked_at: integer('checked_at'),
  created_at: integer('created_at').notNull(),
  updated_at: integer('updated_at').notNull(),
})

export const NODE_KINDS = ['direct', 'relay'] as const
export type NodeKind = (typeof NODE_KINDS)[number]
export const RELAY_TLS_MODES = ['none', 'starttls', 'tls'] as const
export type RelayTlsMode = (typeof RELAY_TLS_MODES)[number]

/** A delivery route: straight to the recipient's MX over a pool, or through a smart host. */
export const sendingNodes = sqliteTable('sending_nodes', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull().unique(),
  kind: text('kind', { enum: NODE_KINDS }).notNull(),
  /** direct: the pool to send over (null = the message's pool). */
  pool_id: integer('pool_id').references(() => ipPools.id, { onDelete: 'set null' }),
  relay_host: text('relay_host'),
  relay_port: integer('relay_port'),
  relay_tls: text('relay_tls', { enum: RELAY_TLS_MODES }),
  relay_username: text('relay_username'),
  relay_password: text('relay_password'),
  /** Most deliveries per clock hour / UTC day; null = no cap. */
  hourly_cap: integer('hourly_cap'),
  daily_cap: integer('daily_cap'),
  /** At most one node is the default route (checked by the service). */
  is_default: integer('is_default', { mode: 'boolean' }).notNull().default(false),
  active: integer('active', { mode: 'boolean' }).notNull().default(true),
  created_at: integer('created_at').notNull(),
  updated_at: integer('updated_at').notNull(),
})

/** Deliveries per node and clock hour, for the hourly and daily caps. */
export const sendingNodeUsage = sqliteTable(
  'sending_node_usage',
  {
    node_id: integer('node_id')
      .notNull()
      .references(() => sendingNodes.id, { onDelete: 'cascade' }),
    /** Start of the clock hour, ms since the epoch. */
    hour: integer('hour').notNull(),
    count: integer('count').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.node_id, t.hour] })],
)

// ---------------------------------------------------------------------------------------
// Messages and the per-recipient delivery queue.
// ---------------------------------------------------------------------------------------

export const MESSAGE_SOURCES = ['api', 'template', 'resend', 'smtp', 'broadcast'] as const

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
    domain_id: integer('domain_id').references(() => sendingDomains.id, { onDelete: 'set null' }),
    pool_id: integer('pool_id').references(() => ipPools.id, { onDelete: 'set null' }),
    node_id: integer('node_id').references(() => sendingNodes.id, { onDelete: 'set null' }),
    template_id: integer('template_id'),
    template_version_id: integer('template_version_id'),
    /** The bridge (issue 5) the message came through, if any. */
    bridge_id: integer('bridge_id'),
    raw: blob('raw', { mode: 'buffer' }).notNull(),
    size: integer('size').notNull(),
    created_at: integer('created_at').notNull(),
  },
  (t) => [index('messages_created_idx').on(t.created_at)],
)

export const RECIPIENT_STATES = ['queued', 'sending', 'sent', 'deferred', 'bounced', 'failed', 'suppressed'] as const
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
    id: integer('id').primaryKey({ autoIncrement: true }),
    message_id: text('message_id')
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    address: text('address').notNull(),
    /** Lower-case domain of the address: the unit of MX lookup and per-destination limits. */
    domain: text('domain').notNull(),
    kind: text('kind', { enum: RECIPIENT_KINDS }).notNull(),
    state: text('state', { enum: RECIPIENT_STATES }).notNull(),
    attempts: integer('attempts').notNull().default(0),
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
    /** The IP and MX host of the last attempt. */
    last_ip: text('last_ip'),
    last_mx: text('last_mx'),
    /** For `suppressed`: which suppression matched (id, scope, reason). */
    suppression: text('suppression', { mode: 'json' }).$type<Record<string, unknown>>(),
    created_at: integer('created_at').notNull(),
    updated_at: integer('updated_at').notNull(),
    /** When the state became final (sent, bounced, failed, suppressed). */
    finished_at: integer('finished_at'),
  },
  (t) => [
    index('message_recipients_message_idx').on(t.message_id),
    // The scheduler's pick: due rows in time order. Partial, so final rows cost nothing here.
    index('message_recipients_due_idx')
      .on(t.next_attempt_at)
      .where(sql`state IN ('queued', 'deferred')`),
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
    created_at: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.api_key_id, t.key] }), index('idempotency_keys_created_idx').on(t.created_at)],
)
