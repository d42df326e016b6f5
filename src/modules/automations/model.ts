import { t, type Static } from 'elysia'
import { AUTOMATION_STATUSES, ENROLLMENT_STATES, REENTRY_POLICIES } from '../../db/schema/automations'
import { enumOf, NameString, Timestamps } from '../../http/schemas'
import { PROPERTY_OPS, STEP_KINDS } from './graph'

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T, description?: string) =>
  t.Union([schema, t.Null()], description ? { description } : {})
const IsoTime = t.String({ format: 'date-time' })
const Filter = t.Record(t.String({ maxLength: 200 }), t.Unknown(), {
  description: 'Property filter: every key (a dotted path into the properties) must equal the value, or be one of an array of values.',
})

export const StepSchema = t.Object({
  id: t.String({ minLength: 1, maxLength: 64, description: 'Unique in the graph: letters, digits, _ and -.' }),
  kind: t.String({ description: `One of: ${STEP_KINDS.join(', ')}.` }),
  name: t.Optional(t.String({ maxLength: 200 })),
  settings: t.Optional(
    t.Record(t.String(), t.Unknown(), {
      description: [
        'send: template_id (+ template_version, pinned on save when left out) or subject + html/text; from, reply_to, track_opens, track_clicks.',
        'wait: duration_seconds | until (ISO 8601) | time_of_day ("HH:MM" in the contact\'s zone: custom field timezone_field, default "timezone"; then timezone, then the automation\'s, then UTC).',
        'wait_for_event: event, filter, timeout_seconds.',
        `condition: type segment (segment_id or rules) | event (property, op: ${PROPERTY_OPS.join('/')}, value; on the triggering event) | engagement (step_id of a send step, activity opened|clicked).`,
        'update_contact: first_name, last_name, status (subscribed|unsubscribed), fields. add_to_list / remove_from_list: list_id. webhook: webhook_id. exit: none.',
      ].join(' '),
    }),
  ),
  edges: t.Optional(
    t.Record(t.String(), t.String(), {
      description: 'Outcome -> step id: next; yes/no (condition); event_received/timeout (wait_for_event). A missing edge ends the run (finished).',
    }),
  ),
})

export const GraphSchema = t.Object(
  { steps: t.Array(StepSchema, { minItems: 1, maxItems: 200, description: 'The first step is where runs start.' }) },
  { description: 'The step graph. Checked as a whole: errors are keyed steps.<step id>[.settings.<field>].' },
)

export const ConditionSchema = t.Object(
  {
    event: t.Optional(Nullable(t.String({ minLength: 1, maxLength: 200 }), 'A custom event name.')),
    filter: t.Optional(Nullable(Filter)),
    segment_id: t.Optional(Nullable(t.Integer({ minimum: 1 }), 'The contact matches this segment.')),
  },
  { description: 'An event (with an optional property filter) or a segment match.' },
)
export const GoalSchema = t.Object({
  ...ConditionSchema.properties,
  step_id: t.String({ minLength: 1, maxLength: 64, description: 'The step a run jumps to.' }),
})

const common = {
  name: NameString(),
  status: enumOf(AUTOMATION_STATUSES, { description: 'draft (default) never enrolls; active enrolls and runs; paused enrolls and holds every wake-up.' }),
  reentry: enumOf(REENTRY_POLICIES, { description: 'once (default): one run per address ever; after_finish: again after the last run ended; always.' }),
  exit_conditions: t.Array(ConditionSchema, { maxItems: 20, description: 'Any of these ends a run at whatever step it is.' }),
  goals: t.Array(GoalSchema, { maxItems: 20, description: 'Any of these moves a run to its step_id.' }),
  timezone: Nullable(t.String({ minLength: 1, maxLength: 64 }), 'IANA zone for time-of-day waits of contacts without one.'),
  graph: GraphSchema,
}
const dripFields = {
  ...common,
  list_ids: t.Array(t.Integer({ minimum: 1 }), { maxItems: 100, description: 'Joining one of these lists (subscribed, or confirmed) starts a run.' }),
}
const triggerFields = {
  ...common,
  event_name: t.String({ minLength: 1, maxLength: 200, description: 'The custom event (POST /api/v2/track) that starts a run.' }),
  event_filter: Nullable(Filter),
}

const { name, graph, ...rest } = common
export const CreateDripBody = t.Composite([t.Object({ name, graph }), t.Partial(t.Object({ ...rest, list_ids: dripFields.list_ids }))])
export const CreateTriggerBody = t.Composite([
  t.Object({ name, graph, event_name: triggerFields.event_name }),
  t.Partial(t.Object({ ...rest, event_filter: triggerFields.event_filter })),
])
const moveRuns = t.Boolean({
  description:
    'With graph: move runs under way to the new version (default false: they finish on theirs). Refused with 422 naming the step when a run is at a step the new graph lacks.',
})
export const UpdateDripBody = t.Partial(t.Object({ ...dripFields, move_runs: moveRuns }))
export const UpdateTriggerBody = t.Partial(t.Object({ ...triggerFields, move_runs: moveRuns }))
export type AutomationInput = {
  name?: string
  status?: (typeof AUTOMATION_STATUSES)[number]
  reentry?: (typeof REENTRY_POLICIES)[number]
  exit_conditions?: Static<typeof ConditionSchema>[]
  goals?: Static<typeof GoalSchema>[]
  timezone?: string | null
  graph?: Static<typeof GraphSchema>
  list_ids?: number[]
  event_name?: string
  event_filter?: Record<string, unknown> | null
  move_runs?: boolean
}

export const CountsSchema = t.Object({
  active: t.Integer({ description: 'Runs executing a step now.' }),
  waiting: t.Integer(),
  finished: t.Integer(),
  exited: t.Integer(),
  failed: t.Integer(),
})

export const AutomationSchema = t.Object({
  id: t.Integer(),
  kind: t.String({ description: 'drip or trigger.' }),
  name: t.String(),
  status: enumOf(AUTOMATION_STATUSES),
  status_reason: Nullable(t.String(), 'Why it is paused when the guardrails paused it (a rate over its threshold, a listed IP), for people; null otherwise.'),
  list_ids: t.Array(t.Integer(), { description: 'Drips: the lists whose new subscribers enter.' }),
  event_name: Nullable(t.String(), 'Triggers: the custom event that starts a run.'),
  event_filter: Nullable(t.Record(t.String(), t.Unknown())),
  reentry: enumOf(REENTRY_POLICIES),
  exit_conditions: t.Array(ConditionSchema),
  goals: t.Array(GoalSchema),
  timezone: Nullable(t.String()),
  version: t.Integer({ description: 'The current version number: new runs start on it.' }),
  version_id: t.Integer(),
  graph: GraphSchema,
  runs: CountsSchema,
  ...Timestamps,
})
export type AutomationView = Static<typeof AutomationSchema>
export const AutomationSummarySchema = t.Omit(AutomationSchema, ['graph'])
export type AutomationSummary = Static<typeof AutomationSummarySchema>

export const AutomationListQuery = { status: t.Optional(enumOf(AUTOMATION_STATUSES, { description: 'Only automations in this state.' })) }

export const VersionSchema = t.Object({
  id: t.Integer(),
  automation_id: t.Integer(),
  version: t.Integer(),
  current: t.Boolean({ description: 'New runs start on this version.' }),
  graph: GraphSchema,
  runs: t.Integer({ description: 'Runs under way (active or waiting) on this version.' }),
  created_at: IsoTime,
})
export type VersionView = Static<typeof VersionSchema>
export const CreateVersionBody = t.Object({ graph: GraphSchema, move_runs: t.Optional(moveRuns) })

export const ValidateBody = t.Object({ graph: GraphSchema })
export const ValidationSchema = t.Object({ valid: t.Literal(true), steps: t.Integer() })

export const EnrollBody = t.Object({
  contact_ids: t.Optional(t.Array(t.Integer({ minimum: 1 }), { minItems: 1, maxItems: 1000, description: 'Contacts to start runs for (at most 1,000).' })),
  list_id: t.Optional(t.Integer({ minimum: 1, description: 'Every subscribed contact of this list (streamed in chunks, never loaded whole).' })),
})
export const EnrollResultSchema = t.Object({
  enrolled: t.Integer({ description: 'Runs started.' }),
  skipped: t.Integer({ description: 'Contacts the re-entry policy kept out (or not subscribed).' }),
  not_found: t.Array(t.Integer(), { description: 'contact_ids that name no contact.' }),
})

export const StepStatsSchema = t.Object({
  step_id: t.String(),
  kind: t.String(),
  entered: t.Integer({ description: 'Executions of the step (a run that loops counts each visit).' }),
  completed: t.Integer(),
  waiting: t.Integer({ description: 'Runs parked at the step now.' }),
  sent: t.Integer({ description: 'Messages accepted by a send step.' }),
  opened: t.Integer({ description: 'Of those, messages opened at least once.' }),
  clicked: t.Integer(),
  exited: t.Integer({ description: 'Runs that ended exited at the step (exit step or exit condition).' }),
})
export const StatsSchema = t.Object({
  automation_id: t.Integer(),
  runs: CountsSchema,
  steps: t.Array(StepStatsSchema, { description: 'Every step of the current version, in graph order, then steps of older versions that runs used.' }),
})
export type StatsView = Static<typeof StatsSchema>

export const RunSchema = t.Object({
  id: t.Integer(),
  automation_id: t.Integer(),
  automation_kind: t.String(),
  automation_name: t.String(),
  version: t.Integer(),
  contact_id: t.Integer(),
  email: t.String(),
  state: enumOf(ENROLLMENT_STATES),
  step_id: Nullable(t.String(), 'The step the run is at, or ended at.'),
  reason: Nullable(t.String(), 'Why it exited or failed.'),
  next_wake_at: Nullable(IsoTime, 'When a waiting run wakes up (a wait ending, or a wait for event timing out).'),
  started_at: IsoTime,
  finished_at: Nullable(IsoTime),
  steps: t.Array(
    t.Object({
      step_id: t.String(),
      attempt: t.Integer(),
      outcome: Nullable(t.String()),
      message_id: Nullable(t.String()),
      detail: Nullable(t.String()),
      at: IsoTime,
    }),
    { description: 'The executed steps, in order.' },
  ),
})
export type RunView = Static<typeof RunSchema>
export const RunQuery = { state: t.Optional(enumOf(ENROLLMENT_STATES, { description: 'Only runs in this state.' })) }

// Custom events -----------------------------------------------------------------------------

export const TrackBody = t.Object({
  event: t.String({ minLength: 1, maxLength: 200, pattern: '^[^\\u0000-\\u001f]+$', description: 'The event name, such as order.completed.' }),
  email: t.Optional(t.String({ minLength: 3, maxLength: 254 })),
  contact_id: t.Optional(t.Integer({ minimum: 1 })),
  properties: t.Optional(t.Record(t.String({ maxLength: 200 }), t.Unknown(), { description: 'Any JSON object (at most 32 KB serialised).' })),
  occurred_at: t.Optional(t.String({ format: 'date-time', description: 'When it happened (default: now).' })),
  create_contact: t.Optional(t.Boolean({ description: 'With email: create the contact (subscribed, on list_id) when the address is on no list.' })),
  list_id: t.Optional(t.Integer({ minimum: 1, description: 'The list a created contact joins.' })),
})
export type TrackInput = Static<typeof TrackBody>
export const TrackBatchBody = t.Object({ events: t.Array(TrackBody, { minItems: 1, maxItems: 1000, description: 'At most 1,000; all or nothing.' }) })
export const TrackedSchema = t.Object({
  id: t.Integer({ description: 'The stored event.' }),
  event: t.String(),
  contact_id: Nullable(t.Integer()),
  email: t.String(),
  occurred_at: IsoTime,
  duplicate: t.Boolean({ description: 'true when the Idempotency-Key was seen before: nothing new was stored.' }),
})
export type TrackedView = Static<typeof TrackedSchema>
export const TrackBatchSchema = t.Object({ accepted: t.Integer(), events: t.Array(TrackedSchema) })
