import { t, type Static } from 'elysia'
import { DOMAIN_STATUSES } from '../../db/schema'
import { enumOf, Timestamps } from '../../http/schemas'
import { RECORD_PURPOSES, RECORD_STATES } from './records'

const DnsRecordSchema = t.Object({
  purpose: enumOf(RECORD_PURPOSES),
  type: enumOf(['TXT', 'CNAME'] as const),
  name: t.String({ description: 'Fully qualified name to publish the record at.' }),
  value: t.String({ description: 'The value to publish (for SPF: merge with an existing SPF record, there must be only one).' }),
  required: t.Boolean({ description: 'Needed for the domain to be verified (DMARC is a suggestion).' }),
  state: enumOf(RECORD_STATES, { description: '`unchecked` until a verify call has looked this value up.' }),
  found: t.Optional(t.Array(t.String(), { description: 'mismatch: what DNS has instead.' })),
  message: t.Optional(t.String({ description: 'mismatch or error: why.' })),
  warning: t.Optional(
    t.String({
      description: "Present when `value` holds the placeholder <public-host-name>: the server's host name is not public; do not publish it as it is.",
    }),
  ),
})
export type DnsRecordView = Static<typeof DnsRecordSchema>

export const SendingDomainSchema = t.Object({
  id: t.Integer(),
  name: t.String({ description: 'Lower-case ASCII (IDNA) form.' }),
  status: enumOf(DOMAIN_STATUSES),
  pool_id: t.Union([t.Integer(), t.Null()], { description: 'IP pool of mail from this domain when the send names none; null = the default pool.' }),
  dkim_selector: t.String(),
  return_path_host: t.String({ description: 'Host of the bounce address (MAIL FROM) of mail from this domain.' }),
  track_opens: t.Boolean({ description: 'API sends from this domain get an open-tracking pixel unless the request says otherwise.' }),
  track_clicks: t.Boolean({ description: 'API sends from this domain get their HTML links rewritten for click tracking unless the request says otherwise.' }),
  dns_records: t.Array(DnsRecordSchema),
  warnings: t.Array(t.String(), {
    description: "Problems with the records shown, such as the server's host name not being public; empty when all can be published.",
  }),
  checked_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  verified_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  ...Timestamps,
})
export type SendingDomainView = Static<typeof SendingDomainSchema>

const PoolId = t.Union([t.Integer({ minimum: 1 }), t.Null()], { description: 'IP pool id; null = the default pool.' })
const ReturnPathHost = t.String({ minLength: 1, maxLength: 253, description: 'A host under the domain; default bounces.<domain>.' })
const TrackOpens = t.Boolean({ description: 'Default of `track_opens` for API sends from this domain (false when created).' })
const TrackClicks = t.Boolean({ description: 'Default of `track_clicks` for API sends from this domain (false when created).' })

/** What a create or update may set besides the name. */
export const UpdateSendingDomainBody = t.Object({
  pool_id: t.Optional(PoolId),
  return_path_host: t.Optional(ReturnPathHost),
  track_opens: t.Optional(TrackOpens),
  track_clicks: t.Optional(TrackClicks),
})
export type SendingDomainSettings = Static<typeof UpdateSendingDomainBody>

export const CreateSendingDomainBody = t.Object({
  name: t.String({ minLength: 1, maxLength: 253, description: 'Domain name; internationalised names are stored in ASCII form.' }),
  ...UpdateSendingDomainBody.properties,
})
