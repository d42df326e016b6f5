import { t, type Static } from 'elysia'
import { enumOf, NameString } from '../../http/schemas'
import { CUSTOM_FIELD_TYPES } from '../../db/schema'

const FieldType = enumOf(CUSTOM_FIELD_TYPES)
const FieldValue = t.Union([t.String(), t.Number(), t.Boolean(), t.Null()])

export const CustomFieldSchema = t.Object({
  id: t.Integer(),
  key: t.String({ description: "Name of the value in a contact's `fields` and in segment rules." }),
  name: t.String(),
  type: FieldType,
  options: t.Array(t.String(), { description: 'Allowed values of a one_of field.' }),
  required: t.Boolean(),
  default_value: FieldValue,
  created_at: t.String(),
  updated_at: t.String(),
})
export type CustomFieldView = Static<typeof CustomFieldSchema>

export const CreateCustomFieldBody = t.Object({
  key: t.String({ minLength: 1, maxLength: 63, description: 'Lower snake case, unique; cannot change later.' }),
  name: NameString(),
  type: FieldType,
  options: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 200 }), { maxItems: 500 })),
  required: t.Optional(t.Boolean()),
  default_value: t.Optional(FieldValue),
})

export const UpdateCustomFieldBody = t.Object({
  name: t.Optional(NameString()),
  options: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 200 }), { maxItems: 500 })),
  required: t.Optional(t.Boolean()),
  default_value: t.Optional(FieldValue),
})
