import { t, type Static } from 'elysia'
import { Timestamps } from '../../http/schemas'

export const IpSchema = t.Object({
  id: t.Integer(),
  address: t.String({ description: 'Source address, IPv4 or IPv6 (RFC 5952 form).' }),
  family: t.Integer({ description: '4 or 6.' }),
  hostname: t.String({ description: 'EHLO name used on connections from this address; should match its PTR record.' }),
  pools: t.Array(t.Object({ id: t.Integer(), name: t.String(), weight: t.Integer() }), { description: 'Pools this address belongs to.' }),
  ...Timestamps,
})
export type IpView = Static<typeof IpSchema>

export const CreateIpBody = t.Object({
  address: t.String({ minLength: 1, maxLength: 64, description: 'A unicast address configured on this host.' }),
  hostname: t.String({ minLength: 1, maxLength: 253, description: 'Fully qualified EHLO name.' }),
})
export const UpdateIpBody = t.Partial(CreateIpBody)
