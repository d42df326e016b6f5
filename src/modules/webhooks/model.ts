import { t, type Static } from 'elysia'
import { WEBHOOK_DELIVERY_STATES } from '../../db/schema'
import { enumOf } from '../../http/schemas'

/**
 * Every event kind a webhook can subscribe to ('*' = all of them, including kinds added
 * later). The spec's list (contacts, broadcasts) plus the message and webhook kinds this
 * server emits.
 */
export const WEBHOOK_EVENT_KINDS = [
  'contact.subscribed',
  'contact.unsubscribed',
  'contact.bounced',
  'contact.complained',
  'broadcast.sent',
  'broadcast.opened',
  'broadcast.clicked',
  'message.queued',
  'message.sent',
  'message.deferred',
  'message.delayed',
  'message.bounced',
  'message.failed',
  'message.suppressed',
  'message.complained',
  'webhook.disabled',
] as const

const Time = t.Union([t.String(), t.Null()])
const IntOrNull = t.Union([t.Integer(), t.Null()])
const StrOrNull = t.Union([t.String(), t.Null()])

export const WebhookSchema = t.Object({
  id: t.Integer(),
  endpoint: t.String({ description: 'The receiving URL.' }),
  description: t.String(),
  events: t.Array(t.String(), { description: 'The subscribed event kinds; * is every kind.' }),
  enabled: t.Boolean(),
  disabled_reason: t.Union([enumOf(['manual', 'failures', 'gone']), t.Null()]),
  disabled_at: Time,
  consecutive_failures: t.Integer(),
  last_success_at: Time,
  last_failure_at: Time,
  previous_secret_expires_at: Time,
  created_at: t.String(),
  updated_at: t.String(),
})
export const WithSecret = t.Composite([WebhookSchema, t.Object({ secret: t.String({ description: 'The signing secret; shown only in this answer.' }) })])

export const Kinds = t.Array(t.String({ description: `An event kind, or * for every kind: ${WEBHOOK_EVENT_KINDS.join(', ')}` }), { minItems: 1, maxItems: 50 })
export const CreateWebhookBody = t.Object({
  endpoint: t.String({ minLength: 1, maxLength: 2000, description: 'The receiving URL (https, or http to a public address).' }),
  description: t.Optional(t.String({ maxLength: 2000 })),
  events: Kinds,
  secret: t.Optional(t.String({ description: 'whsec_ + base64 of 24 to 64 bytes; generated when omitted.' })),
  enabled: t.Optional(t.Boolean()),
})
export const UpdateWebhookBody = t.Object({
  endpoint: t.Optional(t.String({ minLength: 1, maxLength: 2000 })),
  description: t.Optional(t.String({ maxLength: 2000 })),
  events: t.Optional(Kinds),
  enabled: t.Optional(t.Boolean({ description: 'true on a disabled webhook resets the failure count and sends its pending deliveries.' })),
})

export const DeliverySchema = t.Object({
  id: t.Integer(),
  webhook_id: t.Integer(),
  event_id: t.Integer(),
  kind: t.String(),
  message_id: t.String({ description: 'The webhook-id header of its requests.' }),
  state: enumOf(WEBHOOK_DELIVERY_STATES),
  attempts: t.Integer(),
  next_attempt_at: Time,
  last_status: IntOrNull,
  last_error: StrOrNull,
  created_at: t.String(),
  updated_at: t.String(),
  finished_at: Time,
})
export const AttemptSchema = t.Object({
  id: t.Integer(),
  delivery_id: t.Integer(),
  attempted_at: t.String(),
  status: IntOrNull,
  latency_ms: IntOrNull,
  error: StrOrNull,
  response_snippet: StrOrNull,
})
export const TestResultSchema = t.Object({
  kind: t.String(),
  webhook_id: t.String(),
  ok: t.Boolean(),
  status: IntOrNull,
  latency_ms: t.Integer(),
  error: StrOrNull,
  response_snippet: StrOrNull,
  headers: t.Record(t.String(), t.String()),
})
export const DeliveryParams = t.Object({ id: t.Integer({ minimum: 1 }), delivery_id: t.Integer({ minimum: 1 }) })

export type WebhookView = Static<typeof WebhookSchema>
export type WebhookInput = Static<typeof CreateWebhookBody>
export type TestResult = Static<typeof TestResultSchema>
