import { t, type Static } from 'elysia'
import { CONTACT_STATUSES } from '../../db/schema'
import { enumOf } from '../../http/schemas'

export const Status = enumOf(CONTACT_STATUSES)
const FieldValues = t.Record(t.String(), t.Union([t.String(), t.Number(), t.Boolean(), t.Null()]), {
  description: 'Custom field values by key; null clears one.',
})
const Name = t.Union([t.String({ maxLength: 200 }), t.Null()])

export const ContactSchema = t.Object({
  id: t.Integer(),
  email: t.String(),
  first_name: t.Union([t.String(), t.Null()]),
  last_name: t.Union([t.String(), t.Null()]),
  list_id: t.Integer(),
  status: Status,
  fields: t.Record(t.String(), t.Union([t.String(), t.Number(), t.Boolean()])),
  created_at: t.String(),
  updated_at: t.String(),
})
export type ContactView = Static<typeof ContactSchema>

/** The spec's contact fields; statuses other than the email are checked by the service for per-field messages. */
export const CreateContactBody = t.Object({
  email: t.String({ maxLength: 320, description: 'A valid address; stored trimmed and in lower case.' }),
  list_id: t.Integer({ description: 'The list must exist.' }),
  first_name: t.Optional(Name),
  last_name: t.Optional(Name),
  status: t.Optional(t.String({ description: `One of ${CONTACT_STATUSES.join(', ')}; default subscribed.` })),
  fields: t.Optional(FieldValues),
})

export const UpdateContactBody = t.Object({
  email: t.Optional(t.String({ maxLength: 320 })),
  list_id: t.Optional(t.Integer()),
  first_name: t.Optional(Name),
  last_name: t.Optional(Name),
  status: t.Optional(t.String()),
  fields: t.Optional(FieldValues),
})

export const BatchAddBody = t.Object({
  list_id: t.Integer(),
  mode: t.Optional(enumOf(['skip', 'update'], { description: 'For addresses already on the list: skip them (default) or update them.' })),
  contacts: t.Array(
    t.Object({
      email: t.String({ maxLength: 320 }),
      first_name: t.Optional(Name),
      last_name: t.Optional(Name),
      status: t.Optional(t.String()),
      fields: t.Optional(FieldValues),
    }),
    { minItems: 1, maxItems: 1000 },
  ),
})

export const BatchAddResult = t.Object({
  created: t.Integer(),
  updated: t.Integer(),
  skipped: t.Integer(),
  invalid: t.Integer(),
  results: t.Array(
    t.Object({
      index: t.Integer({ description: 'Position in the request.' }),
      result: enumOf(['created', 'updated', 'skipped', 'invalid']),
      id: t.Optional(t.Integer()),
      email: t.Union([t.String(), t.Null()]),
      errors: t.Optional(t.Record(t.String(), t.Array(t.String()))),
    }),
  ),
})

/** The list's filters beside page and per_page. */
export const ContactFilters = {
  list_id: t.Optional(t.Integer()),
  status: t.Optional(Status),
  email: t.Optional(t.String({ maxLength: 320, description: 'Exact address.' })),
  search: t.Optional(t.String({ minLength: 1, maxLength: 320, description: 'Addresses that start with this text.' })),
  field: t.Optional(t.String({ maxLength: 63, description: 'A custom field key; with field_value, contacts whose value equals it.' })),
  field_value: t.Optional(t.String({ maxLength: 2000 })),
}
