import { integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { ownedBy } from './columns'
import { ips } from './sending'

// ---------------------------------------------------------------------------------------
// Traffic shaping and IP warm-up (issue 17). The engine's adaptive state per (provider
// group, source IP) lives here, not only in memory, so a restart does not forget a
// suspension and the queue view (GET /api/v2/queue) can read it from any process.
// ---------------------------------------------------------------------------------------

/** Adaptive state of one (provider group, source address) pair; no row = normal at the ceiling. */
export const shapingStates = sqliteTable(
  'shaping_states',
  {
    /** Provider group id (src/delivery/providers.ts), e.g. 'gmail' or 'mx:example.net'. */
    provider: text('provider').notNull(),
    /** Source address; '' when the host chooses it (no pool IPs). */
    ip: text('ip').notNull(),
    state: text('state', { enum: ['normal', 'throttled', 'suspended'] }).notNull(),
    /** Messages a minute currently allowed; null = the configured ceiling. */
    rate_per_minute: real('rate_per_minute'),
    /** Nothing leaves this pair before this time (a throttle's back-off or a suspension). */
    hold_until: integer('hold_until'),
    /** Successful deliveries since the last slow-down reply (recovery steps up per SUCCESS_STEP). */
    successes: integer('successes').notNull().default(0),
    /** The reply that caused the current state, for people. */
    reason: text('reason'),
    updated_at: integer('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.provider, t.ip] })],
)

/** Provider group learned from a domain's MX hosts, so the queue view can group queued mail without DNS. */
export const providerDomains = sqliteTable('provider_domains', {
  domain: text('domain').primaryKey(),
  provider: text('provider').notNull(),
  updated_at: integer('updated_at').notNull(),
})

/** One warm-up per IP; deleting the row (or the IP) ends it. */
export const ipWarmups = sqliteTable('ip_warmups', {
  ip_id: ownedBy('ip_id', () => ips.id).primaryKey(),
  /** Day 1 of the schedule starts at this time (ms). */
  started_at: integer('started_at').notNull(),
  /** Custom schedule ([{ day, caps: { group | '*': cap } }]); null = the built-in ramp. */
  schedule: text('schedule', { mode: 'json' }).$type<Array<{ day: number; caps: Record<string, number> }>>(),
  updated_at: integer('updated_at').notNull(),
})

/** Messages sent per source address, UTC day and provider group, counted against warm-up caps. */
export const warmupUsage = sqliteTable(
  'warmup_usage',
  {
    ip: text('ip').notNull(),
    /** YYYY-MM-DD (UTC). */
    day: text('day').notNull(),
    provider: text('provider').notNull(),
    count: integer('count').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.ip, t.day, t.provider] })],
)
