import { Elysia, t } from 'elysia'
import { sendingDomains } from '../../db/schema'
import type { Deps } from '../../deps'
import { requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import type { SendingDomainView } from '../sending-domains/model'
import { createSendingDomain, deleteSendingDomains, getSendingDomain, updateSendingDomain, verifySendingDomain } from '../sending-domains/service'
import { cursorPage, decodeId, encodeId, ListOf, PaginationQuery } from './ids'
import { refuse } from './shapes'

/**
 * resend.domains onto /api/v2/sending-domains. Mailroom has no regions and does not receive
 * mail for a sending domain, so `region` is a fixed answer and `receiving` cannot be enabled.
 */

const RecordSchema = t.Object({
  record: t.String(),
  name: t.String(),
  value: t.String(),
  type: t.String(),
  ttl: t.String(),
  status: t.String(),
})
const Capabilities = t.Object({ sending: t.String(), receiving: t.String() })
const DomainSchema = t.Object({
  id: t.String(),
  name: t.String(),
  status: t.String(),
  created_at: t.String(),
  region: t.String(),
  capabilities: Capabilities,
  open_tracking: t.Boolean(),
  click_tracking: t.Boolean(),
})
const DomainWithRecords = t.Composite([t.Object({ object: t.Literal('domain') }), DomainSchema, t.Object({ records: t.Array(RecordSchema) })])
const Ack = t.Object({ object: t.Literal('domain'), id: t.String() })

/** The one region answered: Mailroom runs where it is installed. */
export const REGION = 'us-east-1'

/** Our record check state -> Resend's record status. */
const RECORD_STATUS: Record<string, string> = {
  unchecked: 'not_started',
  verified: 'verified',
  missing: 'failed',
  mismatch: 'failed',
  error: 'temporary_failure',
}

/**
 * Resend labels records by what they do for sending: DKIM, and SPF for the bounce domain's
 * records (ours: the SPF TXT and the return-path CNAME). The DMARC suggestion is not a
 * required record and Resend's record kinds have no name for it, so it is left out here
 * (GET /api/v2/sending-domains/{id} shows it).
 */
function recordsOf(v: SendingDomainView) {
  return v.dns_records
    .filter((r) => r.purpose !== 'dmarc')
    .map((r) => ({
      record: r.purpose === 'dkim' ? 'DKIM' : 'SPF',
      name: r.name,
      value: r.value,
      type: r.type,
      ttl: 'Auto',
      status: RECORD_STATUS[r.state] ?? 'pending',
    }))
}

function domainOf(v: SendingDomainView) {
  return {
    id: encodeId('domain', v.id),
    name: v.name,
    // Never checked yet is Resend's `not_started`; a failed check keeps `pending` until it passes or fails for good.
    status: v.status === 'pending' && v.checked_at === null ? 'not_started' : v.status,
    created_at: v.created_at,
    region: REGION,
    capabilities: { sending: 'enabled', receiving: 'disabled' },
    open_tracking: v.track_opens,
    click_tracking: v.track_clicks,
  }
}

const Settings = {
  open_tracking: t.Optional(t.Boolean()),
  click_tracking: t.Optional(t.Boolean()),
  tls: t.Optional(t.String()),
  capabilities: t.Optional(t.Object({ sending: t.Optional(t.String()), receiving: t.Optional(t.String()) })),
  tracking_subdomain: t.Optional(t.String()),
}

/** Options Mailroom cannot honour are refused by name rather than dropped. */
function checkSettings(b: { tls?: string; capabilities?: { sending?: string; receiving?: string }; tracking_subdomain?: string }) {
  if (b.tls === 'enforced') refuse('tls', 'enforced TLS per domain is not available; Mailroom uses STARTTLS whenever the receiver offers it')
  if (b.capabilities?.receiving === 'enabled') refuse('capabilities.receiving', 'Mailroom does not receive mail for sending domains')
  if (b.capabilities?.sending === 'disabled') refuse('capabilities.sending', 'a sending domain always sends; delete it to stop')
  if (b.tracking_subdomain !== undefined) refuse('tracking_subdomain', 'tracking links use the server host name')
}

/** /compat/resend/domains */
export function domainRoutes(deps: Deps) {
  const tags = ['resend-compatible']
  const id = (text: string) => decodeId('domain', text)
  return new Elysia()
    .post(
      '/domains',
      async ({ body }) => {
        checkSettings(body)
        // Resend's custom_return_path is the label under the domain (default `send`); ours defaults to `bounces`.
        const v = await createSendingDomain(deps, {
          name: body.name,
          return_path_host: body.custom_return_path === undefined ? undefined : `${body.custom_return_path}.${body.name}`,
          track_opens: body.open_tracking,
          track_clicks: body.click_tracking,
        })
        return { ...domainOf(v), records: recordsOf(v) }
      },
      {
        body: t.Object({
          name: t.String({ minLength: 1 }),
          region: t.Optional(t.String()),
          custom_return_path: t.Optional(t.String({ minLength: 1 })),
          ...Settings,
        }),
        response: { 200: t.Composite([DomainSchema, t.Object({ records: t.Array(RecordSchema) })]) },
        detail: requires('sending_domains.create', 'Create a domain (Resend-compatible)', { tags }),
      },
    )
    .get(
      '/domains',
      ({ query }) => {
        const page = cursorPage(deps.db, sendingDomains, 'domain', query)
        return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((i) => domainOf(getSendingDomain(deps, i))) }
      },
      {
        query: PaginationQuery,
        response: { 200: ListOf(DomainSchema) },
        detail: requires('sending_domains.read', 'List domains (Resend-compatible)', { tags }),
      },
    )
    .get(
      '/domains/:id',
      ({ params }) => {
        const v = getSendingDomain(deps, id(params.id))
        return { object: 'domain' as const, ...domainOf(v), records: recordsOf(v) }
      },
      { response: { 200: DomainWithRecords }, detail: requires('sending_domains.read', 'Get a domain (Resend-compatible)', { tags }) },
    )
    .patch(
      '/domains/:id',
      ({ params, body }) => {
        checkSettings(body)
        const v = updateSendingDomain(deps, id(params.id), { track_opens: body.open_tracking, track_clicks: body.click_tracking })
        return { object: 'domain' as const, id: encodeId('domain', v.id) }
      },
      { body: t.Object(Settings), response: { 200: Ack }, detail: requires('sending_domains.update', 'Update a domain (Resend-compatible)', { tags }) },
    )
    .post(
      '/domains/:id/verify',
      async ({ params }) => {
        // Resend starts the check and answers; Mailroom looks the records up before answering, so GET shows the outcome at once.
        const v = await verifySendingDomain(deps, id(params.id))
        return { object: 'domain' as const, id: encodeId('domain', v.id) }
      },
      { response: { 200: Ack }, detail: requires('sending_domains.verify', 'Verify a domain (Resend-compatible)', { tags }) },
    )
    .delete(
      '/domains/:id',
      ({ params }) => {
        const n = id(params.id)
        if (deleteSendingDomains(deps, [n]).deleted.length === 0) throw new AppError('not_found', 'Domain not found.')
        return { object: 'domain' as const, id: params.id, deleted: true }
      },
      {
        response: { 200: t.Composite([Ack, t.Object({ deleted: t.Boolean() })]) },
        detail: requires('sending_domains.delete', 'Remove a domain (Resend-compatible)', { tags }),
      },
    )
}
