import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { createdAt, flag, ownedBy, serialId, timestamps } from './columns'

export const roles = sqliteTable(
  'roles',
  {
    id: serialId(),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    /** JSON array of permission ids; ["*"] means every permission, present and future. */
    permissions: text('permissions', { mode: 'json' }).$type<string[]>().notNull(),
    builtin: flag('builtin', false),
    ...timestamps(),
  },
  (t) => [uniqueIndex('roles_name_unique').on(sql`lower(${t.name})`)],
)

export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: serialId(),
    name: text('name').notNull(),
    /** Non-secret part of the key value, used to find the row. */
    lookup_id: text('lookup_id').notNull(),
    /** SHA-256 hex of the whole key value; the value itself is never stored. */
    secret_hash: text('secret_hash').notNull(),
    role_id: integer('role_id')
      .notNull()
      .references(() => roles.id),
    /** Requests per minute; null is unlimited. */
    rate_limit: integer('rate_limit'),
    /** JSON array of allowlist entries as written; empty means any address. */
    allowed_ips: text('allowed_ips', { mode: 'json' }).$type<string[]>().notNull(),
    status: text('status', { enum: ['active', 'inactive'] }).notNull(),
    last_used_at: integer('last_used_at'),
    last_used_ip: text('last_used_ip'),
    ...timestamps(),
    /** Soft delete: set when deleted, cleared by restore. */
    deleted_at: integer('deleted_at'),
  },
  (t) => [uniqueIndex('api_keys_lookup_id_unique').on(t.lookup_id), index('api_keys_role_id_idx').on(t.role_id)],
)

export const activityLogs = sqliteTable(
  'activity_logs',
  {
    id: serialId(),
    created_at: createdAt(),
    /** Null for actions taken from the command line or by an administrator in the console. */
    actor_key_id: integer('actor_key_id'),
    /** The administrator (console session) who acted; null for keys and the command line. */
    actor_admin_id: integer('actor_admin_id'),
    actor_name: text('actor_name').notNull(),
    action: text('action').notNull(),
    target_type: text('target_type'),
    target_id: text('target_id'),
    method: text('method'),
    path: text('path'),
    ip: text('ip'),
    status: integer('status').notNull(),
    outcome: text('outcome', { enum: ['success', 'failure'] }).notNull(),
  },
  (t) => [
    index('activity_logs_created_at_idx').on(t.created_at),
    index('activity_logs_actor_idx').on(t.actor_key_id, t.created_at),
    index('activity_logs_admin_idx').on(t.actor_admin_id, t.created_at),
    index('activity_logs_action_idx').on(t.action, t.created_at),
    index('activity_logs_target_idx').on(t.target_type, t.target_id),
  ],
)

export const ADMIN_STATUSES = ['active', 'disabled'] as const

/** People who sign in to the console (issue 14). Each has a role, like an API key. */
export const admins = sqliteTable(
  'admins',
  {
    id: serialId(),
    /** As given (trimmed); unique whatever its case. */
    email: text('email').notNull(),
    /** argon2id PHC string from Bun.password.hash. */
    password_hash: text('password_hash').notNull(),
    role_id: integer('role_id')
      .notNull()
      .references(() => roles.id),
    status: text('status', { enum: ADMIN_STATUSES }).notNull(),
    last_sign_in_at: integer('last_sign_in_at'),
    ...timestamps(),
  },
  (t) => [uniqueIndex('admins_email_unique').on(sql`lower(${t.email})`), index('admins_role_id_idx').on(t.role_id)],
)

/** Console sessions. The cookie value is never stored: only its SHA-256. */
export const adminSessions = sqliteTable(
  'admin_sessions',
  {
    token_hash: text('token_hash').primaryKey(),
    admin_id: ownedBy('admin_id', () => admins.id),
    /** Sent back in X-CSRF-Token on every change (synchronizer token). */
    csrf_token: text('csrf_token').notNull(),
    created_at: createdAt(),
    last_seen_at: integer('last_seen_at').notNull(),
    /** The absolute end: created_at + admin_session_max_hours. */
    expires_at: integer('expires_at').notNull(),
    ip: text('ip'),
    user_agent: text('user_agent'),
  },
  (t) => [index('admin_sessions_admin_idx').on(t.admin_id), index('admin_sessions_expires_idx').on(t.expires_at)],
)

/** The one-time setup link printed at start while no administrator exists: its SHA-256 and end. */
export const adminSetupTokens = sqliteTable('admin_setup_tokens', {
  token_hash: text('token_hash').primaryKey(),
  expires_at: integer('expires_at').notNull(),
  created_at: createdAt(),
})
