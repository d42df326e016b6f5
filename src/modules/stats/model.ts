import { t } from 'elysia'
import { enumOf } from '../../http/schemas'
import { STATS_BUCKETS, STATS_GROUPS } from './service'

export const StatsQuerySchema = t.Object({
  from: t.Optional(
    t.String({
      format: 'date-time',
      description: 'Start (ISO 8601), rounded down to its bucket. Default: 24 hours (bucket=hour) or 30 days (bucket=day) before `to`.',
    }),
  ),
  to: t.Optional(t.String({ format: 'date-time', description: 'End (ISO 8601, exclusive), rounded up to its bucket. Default: now.' })),
  bucket: t.Optional(enumOf(STATS_BUCKETS, { description: 'hour, or day (UTC days). Default day.' })),
  group_by: t.Optional(
    enumOf(STATS_GROUPS, {
      description:
        'Split the counts by sending domain, IP, pool, bridge, list, broadcast, bounce reason (bounced, failed, deferred and delayed events only; docs/api.md "Bounce reasons"), or the recipient\'s provider group (sent, message.sent.tls, bounced, failed and deferred events only; docs/api.md "Statistics"). Default all.',
    }),
  ),
  kinds: t.Optional(
    t.String({
      maxLength: 1000,
      description:
        'Comma-separated event kinds to count, or the counters message.opened.unique, message.clicked.unique and message.sent.tls (deliveries over TLS). Default: every kind and counter.',
    }),
  ),
})

const Counts = t.Record(t.String(), t.Integer(), { description: 'Events per kind.' })
const Rate = t.Union([t.Number(), t.Null()])
const RatesSchema = t.Object(
  { delivery_rate: Rate, bounce_rate: Rate, complaint_rate: Rate, open_rate: Rate, click_rate: Rate, unsubscribe_rate: Rate },
  { description: 'Fractions from 0 to 1, null when the denominator is 0 (docs/api.md "Statistics").' },
)
const Group = t.Union([t.String(), t.Null()], {
  description:
    'The group value (domain name, IP, pool/bridge/list/broadcast id, bounce reason, or provider group such as gmail or mx:example.net); null with group_by=all.',
})

export const StatsSchema = t.Object({
  from: t.String({ format: 'date-time' }),
  to: t.String({ format: 'date-time' }),
  bucket: t.String(),
  group_by: t.String(),
  kinds: t.Array(t.String()),
  rows: t.Array(t.Object({ bucket_start: t.String({ format: 'date-time' }), group: Group, counts: Counts, rates: RatesSchema })),
  totals: t.Array(t.Object({ group: Group, counts: Counts, rates: RatesSchema })),
})
