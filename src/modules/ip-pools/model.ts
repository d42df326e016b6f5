import { t, type Static } from 'elysia'
import { NameString, Timestamps } from '../../http/schemas'

export const MAX_WEIGHT = 1000

const PoolMemberSchema = t.Object({
  ip_id: t.Integer(),
  address: t.String(),
  hostname: t.String(),
  weight: t.Integer({ description: 'Relative share of the connections of this pool.' }),
})
export type PoolMemberView = Static<typeof PoolMemberSchema>

export const PoolSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  is_default: t.Boolean({ description: 'Mail that names no pool (and whose sending domain names none) uses the default pool.' }),
  members: t.Array(PoolMemberSchema),
  ...Timestamps,
})
export type PoolView = Static<typeof PoolSchema>

const MembersSchema = t.Array(
  t.Object({
    ip_id: t.Integer({ minimum: 1 }),
    weight: t.Optional(t.Integer({ minimum: 1, maximum: MAX_WEIGHT, description: `1 to ${MAX_WEIGHT}, default 1.` })),
  }),
  { maxItems: 1000, description: 'The IPs of the pool with their weights; on update the list replaces the old one.' },
)

export const CreatePoolBody = t.Object({
  name: NameString(),
  is_default: t.Optional(t.Boolean({ description: 'Make this the default pool (the previous default stops being one).' })),
  members: t.Optional(MembersSchema),
})
export type PoolInput = Static<typeof CreatePoolBody>
export const UpdatePoolBody = t.Partial(CreatePoolBody)
