import { t, type Static } from 'elysia'
import { WEBHOOK_DELIVERY_STATES, WEBHOOK_FORMATS } from '../../db/schema'
import { enumOf, RecordId } from '../../http/schemas'

/**
 * Every event kind a webhook can subscribe to ('*' = all of them, including kinds added
 * later). The spec's list (contacts, broadcasts) plus the message and webhook kinds this
 * server emits.
 */
export const WEBHOOK_EVENT_KINDS = [
  'contact.subscribed',
  'contact.confirmed',
  'contact.unsubscribed',
  'contact.bounced',
  'contact.complained',
  'broadcast.sent',
  'broadcast.opened',
  'broadcast.clicked',
  'broadcast.started',
  'broadcast.paused',
  'broadcast.finished',
  'message.queued',
  'message.scheduled',
  'message.canceled',
  'message.sent',
  'message.deferred',
  'message.delayed',
  'message.bounced',
  'message.failed',
  'message.suppressed',
  'message.complained',
  'message.opened',
  'message.clicked',
  'domain.created',
  'domain.updated',
  'domain.deleted',
  'webhook.disabled',
  'deliverability.alert',
  'doctor.changed',
] as const

/** What each kind means, for people choosing what to subscribe to (the console's checkboxes). */
export const WEBHOOK_EVENT_DESCRIPTIONS: Record<(typeof WEBHOOK_EVENT_KINDS)[number], string> = {
  'contact.subscribed': 'A contact joined a list (or confirmed).',
  'contact.confirmed': 'A contact confirmed a double opt-in web form subscription.',
  'contact.unsubscribed': 'A contact left a list.',
  'contact.bounced': "A contact's address bounced permanently.",
  'contact.complained': 'A contact marked a message as spam.',
  'broadcast.sent': 'A broadcast message was sent to a recipient.',
  'broadcast.opened': 'A broadcast message was opened.',
  'broadcast.clicked': 'A link in a broadcast message was clicked.',
  'broadcast.started': 'A broadcast started: its recipients were snapshotted and sending began.',
  'broadcast.paused': 'A broadcast was paused, by a person or automatically (the reason says which).',
  'broadcast.finished': 'A broadcast finished: every recipient was sent to, skipped or failed.',
  'message.queued': 'A message was accepted for delivery.',
  'message.scheduled': 'A message was accepted to be sent later (scheduled_at), or rescheduled.',
  'message.canceled': 'A scheduled message was cancelled before it was sent.',
  'message.sent': "The recipient's server accepted a message.",
  'message.deferred': 'A delivery attempt failed temporarily; it will be retried.',
  'message.delayed': 'A message has been waiting longer than expected.',
  'message.bounced': "The recipient's server refused a message permanently.",
  'message.failed': 'Mailroom gave up retrying a message.',
  'message.suppressed': 'A message was not sent because the address is suppressed.',
  'message.complained': 'A recipient marked a message as spam.',
  'message.opened': 'A recipient opened a tracked message.',
  'message.clicked': 'A recipient clicked a tracked link.',
  'domain.created': 'A sending domain was added.',
  'domain.updated': "A sending domain's settings or verification status changed.",
  'domain.deleted': 'A sending domain was deleted.',
  'webhook.disabled': 'A webhook was switched off after repeated failures.',
  'deliverability.alert': 'A provider/IP pair was suspended after a block reply, or broadcasts were auto-paused (bounce or complaint rate, listed IP).',
  'doctor.changed': 'A deliverability check changed status (pass, warn, fail) between two runs of the doctor.',
}

export const EventKindSchema = t.Object({ kind: t.String(), description: t.String() })

const Time = t.Union([t.String(), t.Null()])
const IntOrNull = t.Union([t.Integer(), t.Null()])
const StrOrNull = t.Union([t.String(), t.Null()])

const Format = enumOf(WEBHOOK_FORMATS, {
  description:
    "Payload format: mailroom (Standard Webhooks headers, Mailroom's events) or resend (Resend's event names and data, Svix headers), for consumers written for Resend.",
})

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
  format: Format,
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
  format: t.Optional(Format),
})
export const UpdateWebhookBody = t.Object({
  endpoint: t.Optional(t.String({ minLength: 1, maxLength: 2000 })),
  description: t.Optional(t.String({ maxLength: 2000 })),
  events: t.Optional(Kinds),
  enabled: t.Optional(t.Boolean({ description: 'true on a disabled webhook resets the failure count and sends its pending deliveries.' })),
  format: t.Optional(Format),
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
export const DeliveryParams = t.Object({ id: RecordId('Webhook id.'), delivery_id: RecordId('Delivery id.') })

export type WebhookView = Static<typeof WebhookSchema>
export type WebhookInput = Static<typeof CreateWebhookBody>
export type TestResult = Static<typeof TestResultSchema>
