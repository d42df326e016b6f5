import { t, type Static } from 'elysia'
import { PageQuery } from '../../http/schemas'

export const EventSchema = t.Object({
  id: t.Integer({ description: 'Increasing with time: a later event has a larger id.' }),
  kind: t.String({ description: 'See docs/api.md "Event kinds".' }),
  created_at: t.String({ format: 'date-time' }),
  message_id: t.Union([t.String(), t.Null()]),
  recipient: t.Union([t.String(), t.Null()]),
  contact_id: t.Union([t.Integer(), t.Null()]),
  list_id: t.Union([t.Integer(), t.Null()]),
  broadcast_id: t.Union([t.Integer(), t.Null()]),
  bridge_id: t.Union([t.Integer(), t.Null()]),
  data: t.Record(t.String(), t.Unknown(), { description: 'The payload of the kind (docs/api.md "Event kinds").' }),
})
export type EventView = Static<typeof EventSchema>

export const EventQuery = t.Object({
  ...PageQuery,
  kind: t.Optional(t.String({ maxLength: 1000, description: 'One kind or several, comma-separated (message.sent,message.bounced).' })),
  message_id: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
  recipient: t.Optional(t.String({ minLength: 1, maxLength: 320, description: 'Recipient address (compared in lower case).' })),
  contact_id: t.Optional(t.Integer({ minimum: 1 })),
  list_id: t.Optional(t.Integer({ minimum: 1 })),
  broadcast_id: t.Optional(t.Integer({ minimum: 1 })),
  bridge_id: t.Optional(t.Integer({ minimum: 1 })),
  from: t.Optional(t.String({ format: 'date-time', description: 'Events at or after this time (ISO 8601).' })),
  to: t.Optional(t.String({ format: 'date-time', description: 'Events before this time (ISO 8601).' })),
})
