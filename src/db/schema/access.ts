import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** Times are integer milliseconds since the epoch; the wire shows ISO 8601 UTC. */
const createdAt = () => integer('created_at').notNull()

export const roles = sqliteTable(
  'roles',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    /** JSON array of permission ids; ["*"] means every permission, present and future. */
    permissions: text('permissions', { mode: 'json' }).$type<string[]>().notNull(),
    builtin: integer('builtin', { mode: 'boolean' }).notNull().default(false),
    created_at: createdAt(),
    updated_at: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('roles_name_unique').on(sql`lower(${t.name})`)],
)

export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
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
    created_at: createdAt(),
    updated_at: integer('updated_at').notNull(),
    /** Soft delete: set when deleted, cleared by restore. */
    deleted_at: integer('deleted_at'),
  },
  (t) => [uniqueIndex('api_keys_lookup_id_unique').on(t.lookup_id), index('api_keys_role_id_idx').on(t.role_id)],
)

export const activityLogs = sqliteTable(
  'activity_logs',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    created_at: createdAt(),
    /** Null for actions taken from the command line. */
    actor_key_id: integer('actor_key_id'),
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
    index('activity_logs_action_idx').on(t.action, t.created_at),
    index('activity_logs_target_idx').on(t.target_type, t.target_id),
  ],
)
