import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { BulkDeleteBody, BulkDeleteResult, commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import { createIp, deleteIps, getIp, listIps, updateIp } from './service'

const tags = ['ips']

export const IpSchema = t.Object({
  id: t.Integer(),
  address: t.String({ description: 'Source address, IPv4 or IPv6 (RFC 5952 form).' }),
  family: t.Integer({ description: '4 or 6.' }),
  hostname: t.String({ description: 'EHLO name used on connections from this address; should match its PTR record.' }),
  pools: t.Array(t.Object({ id: t.Integer(), name: t.String(), weight: t.Integer() }), { description: 'Pools this address belongs to.' }),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

const CreateIpBody = t.Object({
  address: t.String({ minLength: 1, maxLength: 64, description: 'A unicast address configured on this host.' }),
  hostname: t.String({ minLength: 1, maxLength: 253, description: 'Fully qualified EHLO name.' }),
})

/** /api/v2/ips: the local source addresses mail may leave from. */
export function ipRoutes(deps: Deps, authOf: AuthOf) {
  return new Elysia({ prefix: '/api/v2/ips' })
    .post(
      '/',
      async ({ body, request, status }) => {
        const ip = await createIp(deps, body)
        authOf(request).target = { type: 'ips', id: ip.id }
        return status(201, ok(ip))
      },
      {
        body: CreateIpBody,
        response: { 201: Envelope(IpSchema), 409: ErrorEnvelope, ...commonErrors },
        detail: requires('ips.create', 'Register a source IP', {
          tags,
          description:
            'Refused with 422 on `address` unless this host can bind the address (it must be configured on one of its interfaces); 409 when already registered.',
        }),
      },
    )
    .get('/', ({ query }) => okPage(listIps(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(IpSchema), ...commonErrors },
      detail: requires('ips.read', 'List source IPs', { tags }),
    })
    .post('/bulk-delete', ({ body }) => ok(deleteIps(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('ips.delete', 'Delete several source IPs', { tags, description: 'They leave their pools.' }),
    })
    .get('/:id', ({ params }) => ok(getIp(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(IpSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('ips.read', 'Get a source IP', { tags }),
    })
    .patch('/:id', async ({ params, body }) => ok(await updateIp(deps, params.id, body)), {
      params: IdParams,
      body: t.Partial(CreateIpBody),
      response: { 200: Envelope(IpSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('ips.update', 'Change the EHLO name or the address of a source IP', { tags, description: 'A new address is checked as on create.' }),
    })
    .delete(
      '/:id',
      ({ params }) => {
        const ip = getIp(deps, params.id)
        deleteIps(deps, [params.id])
        return ok(ip)
      },
      {
        params: IdParams,
        response: { 200: Envelope(IpSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('ips.delete', 'Delete a source IP', {
          tags,
          description: 'It leaves its pools; a pool left without IPs sends from the host default address.',
        }),
      },
    )
}
