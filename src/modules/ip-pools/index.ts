import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import {
  BulkDeleteBody,
  BulkDeleteResult,
  commonErrors,
  Envelope,
  ErrorEnvelope,
  IdParams,
  ok,
  okPage,
  Paged,
  PageQuery,
  requires,
  NOT_BLANK,
} from '../../http/schemas'
import { createPool, deletePools, getPool, listPools, MAX_WEIGHT, updatePool } from './service'

const tags = ['ip pools']

const PoolSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  is_default: t.Boolean({ description: 'Mail that names no pool (and whose sending domain names none) uses the default pool.' }),
  members: t.Array(
    t.Object({
      ip_id: t.Integer(),
      address: t.String(),
      hostname: t.String(),
      weight: t.Integer({ description: 'Relative share of the connections of this pool.' }),
    }),
  ),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

const MembersSchema = t.Array(
  t.Object({
    ip_id: t.Integer({ minimum: 1 }),
    weight: t.Optional(t.Integer({ minimum: 1, maximum: MAX_WEIGHT, description: `1 to ${MAX_WEIGHT}, default 1.` })),
  }),
  { maxItems: 1000, description: 'The IPs of the pool with their weights; on update the list replaces the old one.' },
)

const CreatePoolBody = t.Object({
  name: t.String({ minLength: 1, maxLength: 200, pattern: NOT_BLANK }),
  is_default: t.Optional(t.Boolean({ description: 'Make this the default pool (the previous default stops being one).' })),
  members: t.Optional(MembersSchema),
})

/** /api/v2/ip-pools: named groups of source IPs with weights. */
export function ipPoolRoutes(deps: Deps, authOf: AuthOf) {
  const target = (request: Request, id: number) => {
    authOf(request).target = { type: 'ip_pools', id }
  }
  return new Elysia({ prefix: '/api/v2/ip-pools' })
    .post(
      '/',
      ({ body, request, status }) => {
        const pool = createPool(deps, body)
        target(request, pool.id)
        return status(201, ok(pool))
      },
      {
        body: CreatePoolBody,
        response: { 201: Envelope(PoolSchema), 409: ErrorEnvelope, ...commonErrors },
        detail: requires('ips.create', 'Create an IP pool', { tags, description: 'Names are unique (409).' }),
      },
    )
    .get('/', ({ query }) => okPage(listPools(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(PoolSchema), ...commonErrors },
      detail: requires('ips.read', 'List IP pools', { tags }),
    })
    .post('/bulk-delete', ({ body }) => ok(deletePools(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('ips.delete', 'Delete several IP pools', { tags }),
    })
    .get('/:id', ({ params }) => ok(getPool(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(PoolSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('ips.read', 'Get an IP pool with its members', { tags }),
    })
    .patch(
      '/:id',
      ({ params, body, request }) => {
        target(request, params.id)
        return ok(updatePool(deps, params.id, body))
      },
      {
        params: IdParams,
        body: t.Partial(CreatePoolBody),
        response: { 200: Envelope(PoolSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
        detail: requires('ips.update', 'Change an IP pool', { tags, description: '`members`, when given, replaces the whole member list.' }),
      },
    )
    .delete(
      '/:id',
      ({ params, request }) => {
        target(request, params.id)
        const pool = getPool(deps, params.id)
        deletePools(deps, [params.id])
        return ok(pool)
      },
      {
        params: IdParams,
        response: { 200: Envelope(PoolSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('ips.delete', 'Delete an IP pool', {
          tags,
          description: 'Sending domains, nodes and queued messages that named it use the default pool from then on.',
        }),
      },
    )
}
