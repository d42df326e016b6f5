import { t, type Static } from 'elysia'
import { NameString, Timestamps } from '../../http/schemas'

const RateLimit = t.Union([t.Integer({ minimum: 1, maximum: 1_000_000 }), t.Null()], {
  description: 'Requests per minute; null means unlimited. Omitted on create: the server default (600 unless configured).',
})
const AllowedIps = t.Array(t.String({ maxLength: 100 }), {
  maxItems: 500,
  description: 'Addresses, ranges (first-last) and CIDR blocks, IPv4 or IPv6, allowed to use the key. Empty: any address.',
})
const Status = t.Union([t.Literal('active'), t.Literal('inactive')])

export const ApiKeySchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  prefix: t.String({ description: 'The non-secret start of the key, to recognise it.' }),
  role: t.Object({ id: t.Integer(), name: t.String() }),
  rate_limit: t.Union([t.Integer(), t.Null()]),
  allowed_ips: t.Array(t.String()),
  status: Status,
  last_used_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  last_used_ip: t.Union([t.String(), t.Null()]),
  ...Timestamps,
  deleted_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
})
export type ApiKeyView = Static<typeof ApiKeySchema>

export const CreatedApiKeySchema = t.Composite([
  ApiKeySchema,
  t.Object({ key: t.String({ description: 'The key value. Shown only in this response; store it now.' }) }),
])

export const CreateApiKeyBody = t.Object({
  name: NameString(),
  role_id: t.Integer({ minimum: 1 }),
  rate_limit: t.Optional(RateLimit),
  allowed_ips: t.Optional(AllowedIps),
  status: t.Optional(Status),
})

export const UpdateApiKeyBody = t.Partial(CreateApiKeyBody)

/** The list's filters beside page and per_page. */
export const ApiKeyFilters = {
  status: t.Optional(Status),
  role_id: t.Optional(t.Integer({ minimum: 1 })),
  state: t.Optional(t.Union([t.Literal('live'), t.Literal('deleted'), t.Literal('all')], { description: 'live (default): not deleted; deleted; or all.' })),
}
