import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { createdAt, ownedBy, serialId, timestamps } from './columns'
import { contacts } from './audience'

// ---------------------------------------------------------------------------------------
// Automations (issue 16): drips and triggers are one engine. An automation's step graph is
// versioned; every run is an enrollment row pinned to a version; every executed step is a
// row unique on (enrollment, step, attempt), written in the transaction of its side effect;
// every pending wake-up is one row in ONE due_at-indexed table the in-process scheduler
// polls (no scan of enrollments, no cron). docs/api.md "Automations".
// ---------------------------------------------------------------------------------------

export const AUTOMATION_KINDS = ['drip', 'trigger'] as const
export type AutomationKind = (typeof AUTOMATION_KINDS)[number]
/** draft: never enrolls; active: enrolls and runs; paused: enrolls and records events, wake-ups held. */
export const AUTOMATION_STATUSES = ['draft', 'active', 'paused'] as const
export type AutomationStatus = (typeof AUTOMATION_STATUSES)[number]
/** once: one run per address ever; after_finish: again once the last run ended; always: every entry. */
export const REENTRY_POLICIES = ['once', 'after_finish', 'always'] as const
export type ReentryPolicy = (typeof REENTRY_POLICIES)[number]
export const ENROLLMENT_STATES = ['active', 'waiting', 'finished', 'exited', 'failed'] as const
export type EnrollmentState = (typeof ENROLLMENT_STATES)[number]

/** A property filter: every key must equal (or, for an array, be one of) the event's property at that dotted path. */
export type PropertyFilter = Record<string, unknown>

/** What ends a run at any step, or jumps it to a goal step: a custom event (optionally filtered) or a segment match. */
export interface AutomationCondition {
  event?: string | null
  filter?: PropertyFilter | null
  segment_id?: number | null
}
export interface AutomationGoal extends AutomationCondition {
  /** The step a run jumps to when the goal is met. */
  step_id: string
}

export interface StepGraphStep {
  id: string
  kind: string
  settings: Record<string, unknown>
  /** Outcome label (next, yes, no, event_received, timeout) -> step id. */
  edges?: Record<string, string>
  name?: string
}
export interface StepGraph {
  steps: StepGraphStep[]
}

export const automations = sqliteTable(
  'automations',
  {
    id: serialId(),
    kind: text('kind', { enum: AUTOMATION_KINDS }).notNull(),
    name: text('name').notNull(),
    status: text('status', { enum: AUTOMATION_STATUSES }).notNull(),
    /** Why it is paused, for people (the guardrails name the rate or listed IP); null otherwise. */
    status_reason: text('status_reason'),
    /** Drips: joining one of these lists (subscribed, or confirmed) enrolls. */
    list_ids: text('list_ids', { mode: 'json' }).$type<number[]>().notNull(),
    /** Triggers: the custom event that enrolls, and its optional property filter. */
    event_name: text('event_name'),
    event_filter: text('event_filter', { mode: 'json' }).$type<PropertyFilter | null>(),
    reentry: text('reentry', { enum: REENTRY_POLICIES }).notNull(),
    exit_conditions: text('exit_conditions', { mode: 'json' }).$type<AutomationCondition[]>().notNull(),
    goals: text('goals', { mode: 'json' }).$type<AutomationGoal[]>().notNull(),
    /** IANA zone for "time of day" waits of contacts without one. */
    timezone: text('timezone'),
    /** The version new runs start on (the newest). */
    current_version_id: integer('current_version_id'),
    ...timestamps(),
  },
  (t) => [index('automations_event_idx').on(t.event_name)],
)

export const automationVersions = sqliteTable(
  'automation_versions',
  {
    id: serialId(),
    automation_id: ownedBy('automation_id', () => automations.id),
    version: integer('version').notNull(),
    graph: text('graph', { mode: 'json' }).$type<StepGraph>().notNull(),
    created_at: createdAt(),
  },
  (t) => [uniqueIndex('automation_versions_number_unique').on(t.automation_id, t.version)],
)

/** One row per run of an automation for a contact. */
export const enrollments = sqliteTable(
  'automation_enrollments',
  {
    id: serialId(),
    automation_id: ownedBy('automation_id', () => automations.id),
    version_id: ownedBy('version_id', () => automationVersions.id),
    contact_id: ownedBy('contact_id', () => contacts.id),
    /** The contact's address when it entered: re-entry and custom events match runs by address. */
    email: text('email').notNull(),
    state: text('state', { enum: ENROLLMENT_STATES }).notNull(),
    /** The step the run is at (or ended at). */
    step_id: text('step_id'),
    /** The custom event that started a trigger's run (its properties feed conditions). */
    trigger_event_id: integer('trigger_event_id'),
    /** While waiting for an event: its name and filter, and since when (earlier events do not count). */
    wait_event: text('wait_event'),
    wait_filter: text('wait_filter', { mode: 'json' }).$type<PropertyFilter | null>(),
    wait_since: integer('wait_since'),
    reason: text('reason'),
    started_at: integer('started_at').notNull(),
    finished_at: integer('finished_at'),
    updated_at: integer('updated_at').notNull(),
  },
  (t) => [
    index('automation_enrollments_automation_email_idx').on(t.automation_id, t.email),
    index('automation_enrollments_email_state_idx').on(t.email, t.state),
    index('automation_enrollments_contact_idx').on(t.contact_id),
    index('automation_enrollments_automation_state_idx').on(t.automation_id, t.state, t.step_id),
  ],
)

/** Each executed step of a run; the unique key is what makes a restart never repeat one. */
export const stepRuns = sqliteTable(
  'automation_step_runs',
  {
    id: serialId(),
    enrollment_id: ownedBy('enrollment_id', () => enrollments.id),
    automation_id: integer('automation_id').notNull(),
    step_id: text('step_id').notNull(),
    attempt: integer('attempt').notNull(),
    /** The edge taken (next, yes, no, event_received, timeout); null while a wait is under way. */
    outcome: text('outcome'),
    /** A send step's message. */
    message_id: text('message_id'),
    detail: text('detail'),
    created_at: createdAt(),
    completed_at: integer('completed_at'),
  },
  (t) => [
    uniqueIndex('automation_step_runs_unique').on(t.enrollment_id, t.step_id, t.attempt),
    index('automation_step_runs_automation_step_idx').on(t.automation_id, t.step_id),
  ],
)

/**
 * The one wake-up table: a row per run that has something to do at `due_at` (a wait ending,
 * a wait-for-event timing out, or work to continue now). `claimed` marks rows a runner is
 * working on; a new process clears it, so a run cut off by a crash is taken up again.
 */
export const wakeups = sqliteTable(
  'automation_wakeups',
  {
    enrollment_id: integer('enrollment_id')
      .primaryKey()
      .references(() => enrollments.id, { onDelete: 'cascade' }),
    automation_id: integer('automation_id').notNull(),
    due_at: integer('due_at').notNull(),
    claimed: integer('claimed').notNull().default(0),
  },
  (t) => [index('automation_wakeups_due_idx').on(t.due_at)],
)

/** Custom events (POST /api/v2/track): stored, on the contact's timeline, and fed to the engine. */
export const customEvents = sqliteTable(
  'custom_events',
  {
    id: serialId(),
    name: text('name').notNull(),
    contact_id: integer('contact_id').references(() => contacts.id, { onDelete: 'set null' }),
    email: text('email').notNull(),
    properties: text('properties', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    occurred_at: integer('occurred_at').notNull(),
    /** The client's Idempotency-Key, scoped by API key: a retry stores nothing new. */
    idempotency_key: text('idempotency_key'),
    api_key_id: integer('api_key_id'),
    created_at: createdAt(),
  },
  (t) => [index('custom_events_email_name_idx').on(t.email, t.name), uniqueIndex('custom_events_idempotency_unique').on(t.api_key_id, t.idempotency_key)],
)
