import { t, type Static } from 'elysia'
import { BROADCAST_RECIPIENT_STATES, BROADCAST_STATUSES, SPLIT_TEST_METRICS, VERSION_MODES } from '../../db/schema/broadcasts'
import { enumOf, NameString, RecordId, Timestamps } from '../../http/schemas'

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T, description?: string) =>
  t.Union([schema, t.Null()], description ? { description } : {})
const Ids = (description: string) => t.Array(t.Integer({ minimum: 1 }), { maxItems: 100, description })
const Rate = (description: string) => Nullable(t.Number({ minimum: 0, maximum: 1 }), description)
const IsoTime = t.String({ format: 'date-time' })

export const SplitTestSchema = t.Object(
  {
    sample_percent: t.Integer({ minimum: 1, maximum: 50, description: 'Share of the audience (1-50 %) that receives the versions before a winner is picked.' }),
    metric: enumOf(SPLIT_TEST_METRICS, { description: 'What decides the winner: open rate, click rate, or the click rate of one link (`link_url`).' }),
    link_url: t.Optional(Nullable(t.String({ minLength: 1, maxLength: 2000 }), 'For link_click_rate: the link whose click rate decides.')),
    wait_seconds: t.Integer({ minimum: 60, maximum: 30 * 86_400, description: 'How long after the sample was sent the metric is read (60 s to 30 days).' }),
    auto_send_winner: t.Boolean({ description: 'true: send the winner to the rest; false: only report it (the broadcast pauses).' }),
  },
  { description: 'Split-test settings, used when version_mode is split_test.' },
)

export const SendWindowSchema = t.Object(
  {
    start_hour: t.Integer({ minimum: 0, maximum: 23 }),
    end_hour: t.Integer({ minimum: 1, maximum: 24, description: 'Exclusive; start_hour > end_hour wraps past midnight.' }),
    days: t.Optional(t.Array(t.Integer({ minimum: 0, maximum: 6 }), { maxItems: 7, description: '0 = Sunday ... 6 = Saturday; empty = every day.' })),
    timezone: t.Optional(Nullable(t.String({ maxLength: 64 }), "IANA zone for contacts without one; default the broadcast's timezone, then UTC.")),
    contact_timezone_field: t.Optional(Nullable(t.String({ maxLength: 64 }), "Custom field key holding each contact's IANA time zone.")),
  },
  { description: 'Hours of day and days of week when mail may leave.' },
)

/** The counters of GET /api/v2/broadcasts/{id} (issue 15 "API"), from broadcast_counts. */
export const CountsSchema = t.Object({
  total: t.Integer({ description: 'Recipient rows (the audience snapshot); 0 before the broadcast starts.' }),
  pending: t.Integer({ description: 'Not sent yet (pending or queued).' }),
  sent: t.Integer(),
  skipped: t.Integer({ description: 'Suppressed, unsubscribed since the snapshot, or invalid.' }),
  failed: t.Integer(),
  bounced: t.Integer(),
  opened: t.Integer({ description: 'Unique opens.' }),
  clicked: t.Integer({ description: 'Unique clicks.' }),
})

/** Fields a client sets on create and update (the create body, all of them optional). */
const settableFields = {
  name: NameString(),
  from: t.String({ minLength: 3, maxLength: 320, description: '"Name <address>" or an address on a verified sending domain.' }),
  reply_to: Nullable(t.String({ minLength: 3, maxLength: 320 })),
  subject: t.String({ minLength: 1, maxLength: 998 }),
  html: Nullable(t.String({ maxLength: 2_000_000 })),
  text: Nullable(t.String({ maxLength: 2_000_000 })),
  template_id: Nullable(t.Integer({ minimum: 1 }), 'A template whose active version is pinned when the broadcast starts; instead of html/text.'),
  list_ids: Ids('Contacts on these lists (narrowed by segment_id when both are given).'),
  segment_id: Nullable(t.Integer({ minimum: 1 })),
  exclude_list_ids: Ids('Addresses on these lists (any status) are left out.'),
  exclude_segment_ids: Ids('Addresses matching these segments are left out.'),
  track_opens: t.Boolean(),
  track_clicks: t.Boolean(),
  pool_id: Nullable(t.Integer({ minimum: 1 }), "An IP pool; null = the sending domain's or the default pool."),
  tags: t.Array(t.String({ minLength: 1, maxLength: 100 }), { maxItems: 20 }),
  send_rate_per_minute: Nullable(t.Integer({ minimum: 1, maximum: 1_000_000 }), 'Most messages a minute; null = as fast as the engine goes.'),
  send_window: Nullable(SendWindowSchema),
  timezone: Nullable(t.String({ minLength: 1, maxLength: 64 }), 'IANA time zone, such as Europe/Paris.'),
  version_mode: enumOf(VERSION_MODES, { description: 'rotation (even split by weight) or split_test.' }),
  split_test: Nullable(SplitTestSchema),
  max_bounce_rate: Rate('Auto-pause when the bounce rate of sent mail passes this fraction; null = the server default.'),
  max_complaint_rate: Rate('Auto-pause when the complaint rate passes this fraction; null = the server default.'),
  archive: t.Boolean({ description: 'Publish the sent broadcast on the public archive page and RSS feed.' }),
}

export const CreateBroadcastBody = t.Object({
  ...settableFields,
  reply_to: t.Optional(settableFields.reply_to),
  html: t.Optional(settableFields.html),
  text: t.Optional(settableFields.text),
  template_id: t.Optional(settableFields.template_id),
  list_ids: t.Optional(settableFields.list_ids),
  segment_id: t.Optional(settableFields.segment_id),
  exclude_list_ids: t.Optional(settableFields.exclude_list_ids),
  exclude_segment_ids: t.Optional(settableFields.exclude_segment_ids),
  track_opens: t.Optional(settableFields.track_opens),
  track_clicks: t.Optional(settableFields.track_clicks),
  pool_id: t.Optional(settableFields.pool_id),
  tags: t.Optional(settableFields.tags),
  send_rate_per_minute: t.Optional(settableFields.send_rate_per_minute),
  send_window: t.Optional(settableFields.send_window),
  timezone: t.Optional(settableFields.timezone),
  version_mode: t.Optional(settableFields.version_mode),
  split_test: t.Optional(settableFields.split_test),
  max_bounce_rate: t.Optional(settableFields.max_bounce_rate),
  max_complaint_rate: t.Optional(settableFields.max_complaint_rate),
  archive: t.Optional(settableFields.archive),
})
export type CreateBroadcastInput = Static<typeof CreateBroadcastBody>
export const UpdateBroadcastBody = t.Partial(t.Object(settableFields))
export type UpdateBroadcastInput = Static<typeof UpdateBroadcastBody>

export const BroadcastSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  status: enumOf(BROADCAST_STATUSES),
  status_reason: Nullable(t.String(), 'Why the broadcast is paused or failed, for people.'),
  from: t.String(),
  reply_to: Nullable(t.String()),
  subject: t.String(),
  html: Nullable(t.String()),
  text: Nullable(t.String()),
  template_id: Nullable(t.Integer()),
  template_version_id: Nullable(t.Integer({ description: 'The template version pinned when the broadcast started.' })),
  list_ids: t.Array(t.Integer()),
  segment_id: Nullable(t.Integer()),
  exclude_list_ids: t.Array(t.Integer()),
  exclude_segment_ids: t.Array(t.Integer()),
  track_opens: t.Boolean(),
  track_clicks: t.Boolean(),
  pool_id: Nullable(t.Integer()),
  tags: t.Array(t.String()),
  send_rate_per_minute: Nullable(t.Integer()),
  send_window: Nullable(SendWindowSchema),
  timezone: Nullable(t.String()),
  version_mode: enumOf(VERSION_MODES),
  split_test: Nullable(SplitTestSchema),
  split_phase: Nullable(t.String({ description: 'sampling, waiting or decided while a split test runs.' })),
  winner_version_id: Nullable(t.Integer()),
  max_bounce_rate: Nullable(t.Number()),
  max_complaint_rate: Nullable(t.Number()),
  archive: t.Boolean(),
  archive_id: t.String({ description: 'The unguessable id of the public archive page, /archive/{archive_id}.' }),
  source_broadcast_id: Nullable(t.Integer({ description: 'For a resend to non-openers: the broadcast whose recipients without an open form the audience.' })),
  send_at: Nullable(IsoTime),
  started_at: Nullable(IsoTime),
  finished_at: Nullable(IsoTime),
  counts: CountsSchema,
  progress: t.Number({ minimum: 0, maximum: 1, description: 'Share of the recipient rows no longer pending (0 to 1).' }),
  ...Timestamps,
})
export type BroadcastView = Static<typeof BroadcastSchema>

/** A list shows each broadcast without its bodies (GET one has them). */
export const BroadcastSummarySchema = t.Omit(BroadcastSchema, ['html', 'text'])
export type BroadcastSummary = Static<typeof BroadcastSummarySchema>

export const BroadcastListQuery = {
  status: t.Optional(enumOf(BROADCAST_STATUSES, { description: 'Only broadcasts in this state.' })),
}

export const ScheduleBody = t.Object({
  send_at: t.Optional(t.String({ format: 'date-time', description: 'When to start (ISO 8601); omitted or past = now.' })),
})

/** POST /api/v2/broadcasts/{id}/test: the addresses a test copy goes to (not counted, marked as a test). */
export const TestSendBody = t.Object({
  to: t.Array(t.String({ minLength: 3, maxLength: 254 }), { minItems: 1, maxItems: 10, description: '1 to 10 addresses.' }),
})
export type TestSendInput = Static<typeof TestSendBody>
export const TestSendResultSchema = t.Object({
  message_ids: t.Array(t.String(), { description: 'The queued test messages: one per address and version (GET /api/v2/messages/{id}).' }),
})

export const AudienceCountBody = t.Object({
  list_ids: t.Optional(settableFields.list_ids),
  segment_id: t.Optional(settableFields.segment_id),
  exclude_list_ids: t.Optional(settableFields.exclude_list_ids),
  exclude_segment_ids: t.Optional(settableFields.exclude_segment_ids),
})
export const AudienceCountSchema = t.Object({ total: t.Integer({ description: 'Distinct subscribed addresses the audience reaches now.' }) })

// Versions -------------------------------------------------------------------------------

const versionFields = {
  name: NameString(),
  subject: Nullable(t.String({ minLength: 1, maxLength: 998 })),
  from_name: Nullable(t.String({ minLength: 1, maxLength: 200 })),
  html: Nullable(t.String({ maxLength: 2_000_000 })),
  text: Nullable(t.String({ maxLength: 2_000_000 })),
  template_id: Nullable(t.Integer({ minimum: 1 })),
  send_at: Nullable(t.String({ format: 'date-time', description: "A later send time for this version's recipients; null = with the broadcast." })),
  weight: t.Integer({ minimum: 1, maximum: 1000, description: 'Relative share in rotation.' }),
}
export const CreateVersionBody = t.Partial(t.Object(versionFields), { description: "Each field left out or null falls back to the broadcast's." })
export type VersionInput = Static<typeof CreateVersionBody>
export const UpdateVersionBody = CreateVersionBody

export const VersionSchema = t.Object({
  id: t.Integer(),
  broadcast_id: t.Integer(),
  name: t.String(),
  subject: Nullable(t.String()),
  from_name: Nullable(t.String()),
  html: Nullable(t.String()),
  text: Nullable(t.String()),
  template_id: Nullable(t.Integer()),
  template_version_id: Nullable(t.Integer()),
  send_at: Nullable(IsoTime),
  weight: t.Integer(),
  ...Timestamps,
})
export type VersionView = Static<typeof VersionSchema>

export const VersionParams = t.Object({ id: RecordId(), vid: RecordId() })

// Recipients -----------------------------------------------------------------------------

export const RecipientSchema = t.Object({
  id: t.Integer(),
  contact_id: t.Integer(),
  list_id: t.Integer(),
  email: t.String(),
  version_id: Nullable(t.Integer()),
  state: enumOf(BROADCAST_RECIPIENT_STATES),
  reason: Nullable(t.String()),
  message_id: Nullable(t.String()),
  opened_at: Nullable(IsoTime),
  clicked_at: Nullable(IsoTime),
  updated_at: IsoTime,
})
export type RecipientView = Static<typeof RecipientSchema>

export const RecipientQuery = {
  state: t.Optional(enumOf(BROADCAST_RECIPIENT_STATES, { description: 'Only recipients in this state.' })),
  version_id: t.Optional(RecordId()),
}

// Statistics -----------------------------------------------------------------------------

const RateOf = (what: string) => Nullable(t.Number(), `${what} divided by sent; null while nothing was sent.`)
export const StatsBlockSchema = t.Object({
  recipients: t.Integer(),
  sent: t.Integer({ description: 'Messages handed to receiving servers (sent, including those that bounced later).' }),
  delivered: t.Integer(),
  bounced: t.Integer(),
  complained: t.Integer(),
  unsubscribed: t.Integer(),
  unique_opens: t.Integer(),
  unique_clicks: t.Integer(),
  open_rate: RateOf('unique_opens'),
  click_rate: RateOf('unique_clicks'),
  bounce_rate: RateOf('bounced'),
  complaint_rate: RateOf('complained'),
  unsubscribe_rate: RateOf('unsubscribed'),
})
export type StatsBlock = Static<typeof StatsBlockSchema>

export const StatsSchema = t.Object({
  broadcast_id: t.Integer(),
  totals: StatsBlockSchema,
  versions: t.Array(t.Object({ version_id: t.Integer(), name: t.String(), ...StatsBlockSchema.properties })),
  links: t.Array(t.Object({ url: t.String(), clicks: t.Integer(), unique_clicks: t.Integer() }), {
    description: 'Clicks per link, most clicked first (at most 100).',
  }),
  split_test: Nullable(
    t.Object({
      metric: enumOf(SPLIT_TEST_METRICS),
      phase: Nullable(t.String()),
      winner_version_id: Nullable(t.Integer()),
    }),
  ),
})
export type StatsView = Static<typeof StatsSchema>

export const ArchiveParams = t.Object({ archive_id: t.String({ minLength: 1, maxLength: 64 }) })
