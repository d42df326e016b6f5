import { t, type Static } from 'elysia'
import { PageQuery } from '../../http/schemas'

export const ActivitySchema = t.Object({
  id: t.Integer(),
  created_at: t.String({ format: 'date-time' }),
  actor: t.Object({ type: t.Union([t.Literal('api_key'), t.Literal('cli')]), key_id: t.Union([t.Integer(), t.Null()]), name: t.String() }),
  action: t.String({ description: 'The permission the call used, for example api_keys.create.' }),
  target: t.Union([t.Object({ type: t.String(), id: t.Union([t.String(), t.Null()]) }), t.Null()]),
  method: t.Union([t.String(), t.Null()]),
  path: t.Union([t.String(), t.Null()]),
  ip: t.Union([t.String(), t.Null()]),
  status: t.Integer({ description: 'HTTP status of the call.' }),
  outcome: t.Union([t.Literal('success'), t.Literal('failure')]),
})
export type ActivityView = Static<typeof ActivitySchema>

export const ActivityQuery = t.Object({
  ...PageQuery,
  key_id: t.Optional(t.Integer({ minimum: 1 })),
  action: t.Optional(t.String({ maxLength: 100 })),
  target_type: t.Optional(t.String({ maxLength: 100 })),
  target_id: t.Optional(t.String({ maxLength: 100 })),
  outcome: t.Optional(t.Union([t.Literal('success'), t.Literal('failure')])),
  since: t.Optional(t.String({ format: 'date-time', description: 'Entries at or after this time (ISO 8601).' })),
  until: t.Optional(t.String({ format: 'date-time', description: 'Entries before this time (ISO 8601).' })),
})
