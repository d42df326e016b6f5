import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, requires } from '../../http/schemas'
import { CreateSendingDomainBody, SendingDomainSchema, UpdateSendingDomainBody } from './model'
import { createSendingDomain, deleteSendingDomains, getSendingDomain, listSendingDomains, updateSendingDomain, verifySendingDomain } from './service'

const tags = ['sending domains']

/** /api/v2/sending-domains: domains mail is sent from, their DKIM keys and DNS records. */
export function sendingDomainRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'sending_domains',
    view: SendingDomainSchema,
    create: {
      summary: 'Add a sending domain',
      description: 'Generates a 2048-bit RSA DKIM key and answers with the DNS records to publish. 409 when the domain exists.',
      errors: [409],
      body: CreateSendingDomainBody,
      handle: (body) => createSendingDomain(deps, body),
    },
    list: { summary: 'List sending domains', handle: (query) => listSendingDomains(deps, query) },
    bulkDelete: { summary: 'Delete several sending domains', handle: (ids) => deleteSendingDomains(deps, ids) },
    get: { summary: 'Get a sending domain with its DNS records', handle: (id) => getSendingDomain(deps, id) },
    update: {
      summary: 'Change the pool, the return-path host or the tracking defaults of a sending domain',
      description: 'The status stays; records whose value changed show `unchecked` until the next verify.',
      body: UpdateSendingDomainBody,
      handle: (id, body) => updateSendingDomain(deps, id, body),
    },
    remove: { summary: 'Delete a sending domain', description: 'Its DKIM key is deleted with it.' },
  }).post('/:id/verify', async ({ params }) => ok(await verifySendingDomain(deps, params.id)), {
    params: IdParams,
    response: { 200: Envelope(SendingDomainSchema), 404: ErrorEnvelope, ...commonErrors },
    detail: requires('sending_domains.verify', 'Look up the DNS records of a sending domain', {
      tags,
      description: 'Reports each record as verified, missing, mismatch (with what was found) or error (lookup failed), and updates the status.',
    }),
  })
}
