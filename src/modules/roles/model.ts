import { t, type Static } from 'elysia'
import { NameString, Timestamps } from '../../http/schemas'

const Permissions = t.Array(t.String({ maxLength: 100 }), {
  maxItems: 1000,
  description: 'Permission ids from GET /api/v2/permissions, or "*" for every permission. Anything not listed is denied.',
})

export const RoleSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  description: t.String(),
  permissions: t.Array(t.String()),
  builtin: t.Boolean({ description: 'Built-in roles cannot be changed or deleted.' }),
  key_count: t.Integer({ description: 'API keys (not deleted) bound to the role.' }),
  ...Timestamps,
})
export type RoleView = Static<typeof RoleSchema>

export const CreateRoleBody = t.Object({
  name: NameString(100),
  description: t.Optional(t.String({ maxLength: 1000 })),
  permissions: Permissions,
})

export const UpdateRoleBody = t.Partial(CreateRoleBody)
