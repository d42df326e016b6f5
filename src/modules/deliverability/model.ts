import { t, type Static } from 'elysia'
import { enumOf } from '../../http/schemas'

const Time = t.Union([t.String({ format: 'date-time' }), t.Null()])
const IntOrNull = t.Union([t.Integer(), t.Null()])

export const LimitsSchema = t.Object({
  connections: t.Integer({ description: 'Deliveries in progress at once per source IP.' }),
  messages_per_connection: t.Integer(),
  per_minute: t.Union([t.Integer(), t.Null()], { description: 'Ceiling of messages a minute per source IP; null = none.' }),
  per_hour: IntOrNull,
})

export const WarmupStepSchema = t.Object({
  day: t.Integer({ minimum: 1, maximum: 365, description: 'First day (1-based) of this step; it lasts until the next step.' }),
  caps: t.Record(t.String({ minLength: 1, maxLength: 100 }), t.Integer({ minimum: 0, maximum: 100_000_000 }), {
    description: "Daily cap per provider group id (gmail, microsoft, yahoo, icloud, gmx, mailru, yandex, 'other' for the rest, '*' for any group not named).",
  }),
})

export const WarmupSchema = t.Object({
  ip_id: t.Integer(),
  address: t.String(),
  active: t.Boolean({ description: 'Whether the IP is warming up now (false: not started, stopped, or past the last day).' }),
  started_at: Time,
  day: IntOrNull,
  days_total: IntOrNull,
  schedule_kind: t.Union([enumOf(['default', 'custom']), t.Null()]),
  schedule: t.Union([t.Array(WarmupStepSchema), t.Null()]),
  today: t.Array(t.Object({ provider: t.String(), cap: IntOrNull, sent: t.Integer() }), {
    description: "Today's (UTC) cap and count per provider group: the groups the step names and those that got mail today.",
  }),
})
export type WarmupView = Static<typeof WarmupSchema>

export const WarmupBody = t.Object({
  schedule: t.Optional(
    t.Union([t.Array(WarmupStepSchema, { minItems: 1, maxItems: 365 }), t.Null()], {
      description: 'A custom schedule; absent or null = the built-in 30-day ramp.',
    }),
  ),
  started_at: t.Optional(
    t.String({ format: 'date-time', description: 'Day 1 of the schedule; default now (or, when the IP is already warming up, its start).' }),
  ),
})
export type WarmupInput = Static<typeof WarmupBody>

export const PairSchema = t.Object({
  provider: t.String(),
  ip: t.Union([t.String(), t.Null()], { description: "Source address; null = the host's default address." }),
  state: enumOf(['normal', 'throttled', 'suspended']),
  rate_per_minute: IntOrNull,
  ceiling_per_minute: IntOrNull,
  hold_until: Time,
  reason: t.Union([t.String(), t.Null()]),
  sent_last_minute: t.Integer(),
  updated_at: Time,
})

export const QueueSchema = t.Object({
  total: t.Integer({ description: 'Recipients waiting (queued, deferred) or being delivered.' }),
  providers: t.Array(
    t.Object({
      provider: t.String(),
      name: t.String(),
      queued: t.Integer(),
      deferred: t.Integer(),
      sending: t.Integer(),
      oldest_at: Time,
      state: enumOf(['normal', 'throttled', 'suspended']),
      sent_last_minute: t.Integer(),
      sent_24h: t.Integer({
        description:
          'Recipients delivered (message.sent) to the group in the last 24 hours: the current hour and the 23 before it (statistics rollup counters).',
      }),
      tls_share: t.Union([t.Number({ minimum: 0, maximum: 1 }), t.Null()], {
        description: 'Share of those deliveries made over TLS (0 to 1, 4 decimals); null with no deliveries in the window.',
      }),
      limits: LimitsSchema,
    }),
  ),
  ips: t.Array(
    t.Object({
      ip_id: IntOrNull,
      address: t.Union([t.String(), t.Null()]),
      hostname: t.Union([t.String(), t.Null()]),
      deferred: t.Integer({ description: 'Recipients waiting for a retry whose last attempt left over this IP.' }),
      oldest_at: Time,
      state: enumOf(['normal', 'throttled', 'suspended']),
      sent_last_minute: t.Integer(),
      warmup: t.Union([t.Object({ day: t.Integer(), days_total: t.Integer(), today: WarmupSchema.properties.today }), t.Null()]),
    }),
  ),
  pairs: t.Array(PairSchema, { description: 'Every (provider group, IP) pair that is not normal, or sent in the last minute.' }),
})
export type QueueView = Static<typeof QueueSchema>
