import { t, type Static } from 'elysia'
import { enumOf, Timestamps } from '../../http/schemas'
import { ADMIN_STATUSES } from '../../db/schema'

/** The shortest password accepted (NIST SP 800-63B asks for at least 8; we ask 10). */
export const MIN_PASSWORD_LENGTH = 10

const Status = enumOf(ADMIN_STATUSES, { description: 'active, or disabled (cannot sign in; its sessions end at once).' })
const Password = t.String({
  minLength: MIN_PASSWORD_LENGTH,
  maxLength: 1000,
  description: `At least ${MIN_PASSWORD_LENGTH} characters. Stored as an argon2id hash; never shown.`,
})
const Email = t.String({ minLength: 3, maxLength: 254, description: 'The address the person signs in with; unique whatever its case.' })

export const AdminSchema = t.Object({
  id: t.Integer(),
  email: t.String(),
  role: t.Object({ id: t.Integer(), name: t.String() }),
  status: Status,
  last_sign_in_at: t.Nullable(t.String({ format: 'date-time' })),
  ...Timestamps,
})
export type AdminView = Static<typeof AdminSchema>

export const CreateAdminBody = t.Object({
  email: Email,
  password: Password,
  role_id: t.Integer({ minimum: 1 }),
  status: t.Optional(Status),
})

export const UpdateAdminBody = t.Object({
  role_id: t.Optional(t.Integer({ minimum: 1 })),
  status: t.Optional(Status),
  password: t.Optional(Password),
})

/** The list's filters beside page and per_page. */
export const AdminFilters = {
  status: t.Optional(Status),
  role_id: t.Optional(t.Integer({ minimum: 1 })),
}

/** The signed-in administrator, as the console's session answer shows it. */
export const SessionSchema = t.Object({
  admin: t.Object({
    id: t.Integer(),
    email: t.String(),
    role: t.Object({ id: t.Integer(), name: t.String() }),
    permissions: t.Array(t.String(), { description: 'The role\'s grants; ["*"] means every permission.' }),
  }),
  csrf_token: t.String({ description: 'Send it back in the X-CSRF-Token header on every change.' }),
})
export type SessionView = Static<typeof SessionSchema>

export const SignInBody = t.Object({
  email: t.String({ minLength: 1, maxLength: 254 }),
  password: t.String({ minLength: 1, maxLength: 1000 }),
})

export const SetupBody = t.Object({
  token: t.String({ minLength: 1, maxLength: 200, description: 'The token of the setup link printed at start.' }),
  email: Email,
  password: Password,
})

export const SetupStateSchema = t.Object({ needed: t.Boolean({ description: 'True while no administrator exists.' }) })
