import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { DOMAIN_STATUSES } from '../../db/schema'
import {
  BulkDeleteBody,
  BulkDeleteResult,
  commonErrors,
  Envelope,
  enumOf,
  ErrorEnvelope,
  IdParams,
  ok,
  okPage,
  Paged,
  PageQuery,
  requires,
} from '../../http/schemas'
import { RECORD_PURPOSES, RECORD_STATES } from './records'
import { createSendingDomain, deleteSendingDomains, getSendingDomain, listSendingDomains, updateSendingDomain, verifySendingDomain } from './service'

const tags = ['sending domains']

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

const SendingDomainSchema = t.Object({
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
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

const PoolId = t.Union([t.Integer({ minimum: 1 }), t.Null()], { description: 'IP pool id; null = the default pool.' })
const ReturnPathHost = t.String({ minLength: 1, maxLength: 253, description: 'A host under the domain; default bounces.<domain>.' })
const TrackOpens = t.Boolean({ description: 'Default of `track_opens` for API sends from this domain (false when created).' })
const TrackClicks = t.Boolean({ description: 'Default of `track_clicks` for API sends from this domain (false when created).' })

/** /api/v2/sending-domains: domains mail is sent from, their DKIM keys and DNS records. */
export function sendingDomainRoutes(deps: Deps, authOf: AuthOf) {
  return new Elysia({ prefix: '/api/v2/sending-domains' })
    .post(
      '/',
      async ({ body, request, status }) => {
        const domain = await createSendingDomain(deps, body)
        authOf(request).target = { type: 'sending_domains', id: domain.id }
        return status(201, ok(domain))
      },
      {
        body: t.Object({
          name: t.String({ minLength: 1, maxLength: 253, description: 'Domain name; internationalised names are stored in ASCII form.' }),
          pool_id: t.Optional(PoolId),
          return_path_host: t.Optional(ReturnPathHost),
          track_opens: t.Optional(TrackOpens),
          track_clicks: t.Optional(TrackClicks),
        }),
        response: { 201: Envelope(SendingDomainSchema), 409: ErrorEnvelope, ...commonErrors },
        detail: requires('sending_domains.create', 'Add a sending domain', {
          tags,
          description: 'Generates a 2048-bit RSA DKIM key and answers with the DNS records to publish. 409 when the domain exists.',
        }),
      },
    )
    .get('/', ({ query }) => okPage(listSendingDomains(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(SendingDomainSchema), ...commonErrors },
      detail: requires('sending_domains.read', 'List sending domains', { tags }),
    })
    .post('/bulk-delete', ({ body }) => ok(deleteSendingDomains(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('sending_domains.delete', 'Delete several sending domains', { tags }),
    })
    .get('/:id', ({ params }) => ok(getSendingDomain(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(SendingDomainSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('sending_domains.read', 'Get a sending domain with its DNS records', { tags }),
    })
    .patch('/:id', ({ params, body }) => ok(updateSendingDomain(deps, params.id, body)), {
      params: IdParams,
      body: t.Object({
        pool_id: t.Optional(PoolId),
        return_path_host: t.Optional(ReturnPathHost),
        track_opens: t.Optional(TrackOpens),
        track_clicks: t.Optional(TrackClicks),
      }),
      response: { 200: Envelope(SendingDomainSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('sending_domains.update', 'Change the pool, the return-path host or the tracking defaults of a sending domain', {
        tags,
        description: 'The status stays; records whose value changed show `unchecked` until the next verify.',
      }),
    })
    .post('/:id/verify', async ({ params }) => ok(await verifySendingDomain(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(SendingDomainSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('sending_domains.verify', 'Look up the DNS records of a sending domain', {
        tags,
        description: 'Reports each record as verified, missing, mismatch (with what was found) or error (lookup failed), and updates the status.',
      }),
    })
    .delete(
      '/:id',
      ({ params }) => {
        const domain = getSendingDomain(deps, params.id)
        deleteSendingDomains(deps, [params.id])
        return ok(domain)
      },
      {
        params: IdParams,
        response: { 200: Envelope(SendingDomainSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('sending_domains.delete', 'Delete a sending domain', { tags, description: 'Its DKIM key is deleted with it.' }),
      },
    )
}
