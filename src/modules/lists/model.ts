import type { TInteger } from '@sinclair/typebox'
import { t, type Static } from 'elysia'
import { CONTACT_STATUSES, type ContactStatus } from '../../db/schema'
import { NameString } from '../../http/schemas'

export const ListSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  description: t.String(),
  counts: t.Object(
    { ...(Object.fromEntries(CONTACT_STATUSES.map((s) => [s, t.Integer()])) as Record<ContactStatus, TInteger>), total: t.Integer() },
    { description: 'Contacts on the list by status.' },
  ),
  created_at: t.String(),
  updated_at: t.String(),
})
export type ListView = Static<typeof ListSchema>

export const CreateListBody = t.Object({ name: NameString(), description: t.Optional(t.String({ maxLength: 2000 })) })
export const UpdateListBody = t.Partial(CreateListBody)
