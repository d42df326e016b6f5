import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { BulkDeleteBody, BulkDeleteResult, commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import {
  BridgeSchema,
  BridgeTestBody,
  BridgeTestResultSchema,
  CreateBridgeBody,
  CreatedBridgeSchema,
  RotateBody,
  RotatedBridgeSchema,
  UpdateBridgeBody,
} from './model'
import { createBridge, deleteBridges, getBridge, listBridges, rotateBridgeCredentials, updateBridge } from './service'
import { sendBridgeTest } from './test-send'

const tags = ['bridges']

/** /api/v2/bridges: applications' ways in (SMTP credentials and an API key), with their domains, routing and quotas. */
export function bridgeRoutes(deps: Deps, authOf: AuthOf) {
  return new Elysia({ prefix: '/api/v2/bridges' })
    .post(
      '/',
      ({ body, request, status }) => {
        const auth = authOf(request)
        const { bridge, secrets } = createBridge(deps, auth.actor, body)
        auth.target = { type: 'bridges', id: bridge.id }
        return status(201, ok({ ...bridge, ...secrets }))
      },
      {
        body: CreateBridgeBody,
        response: { 201: Envelope(CreatedBridgeSchema), 409: ErrorEnvelope, ...commonErrors },
        detail: requires('bridges.create', 'Create a bridge', {
          tags,
          description:
            'The answer holds the SMTP password and the API key value, once and never again. Each domain must be a sending domain (422). Creating credentials that may send needs `transactional.send` and `transactional.read` on your own key too (403).',
        }),
      },
    )
    .get('/', ({ query }) => okPage(listBridges(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(BridgeSchema), ...commonErrors },
      detail: requires('bridges.read', 'List bridges', { tags }),
    })
    .post('/bulk-delete', ({ body }) => ok(deleteBridges(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('bridges.delete', 'Delete several bridges', { tags, description: 'Their API keys are revoked.' }),
    })
    .get('/:id', ({ params }) => ok(getBridge(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(BridgeSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('bridges.read', 'Get a bridge with its counts and quota usage', { tags }),
    })
    .patch('/:id', ({ params, body }) => ok(updateBridge(deps, params.id, body)), {
      params: IdParams,
      body: UpdateBridgeBody,
      response: { 200: Envelope(BridgeSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('bridges.update', 'Change a bridge', {
        tags,
        description: 'Everything but the credentials (see rotate-credentials). The API key follows the name and the allowlist.',
      }),
    })
    .delete(
      '/:id',
      ({ params }) => {
        const bridge = getBridge(deps, params.id)
        deleteBridges(deps, [params.id])
        return ok(bridge)
      },
      {
        params: IdParams,
        response: { 200: Envelope(BridgeSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('bridges.delete', 'Delete a bridge', { tags, description: 'Its SMTP credentials and API key stop working at once.' }),
      },
    )
    .post(
      '/:id/rotate-credentials',
      ({ params, body, request }) => {
        const { bridge, secrets } = rotateBridgeCredentials(deps, authOf(request).actor, params.id, body)
        return ok({ ...bridge, ...secrets })
      },
      {
        params: IdParams,
        body: RotateBody,
        response: { 200: Envelope(RotatedBridgeSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('bridges.update', 'Rotate the credentials of a bridge', {
          tags,
          description:
            'A new SMTP password and/or a new API key (default both), shown in this answer only. The old ones stop working at once. Needs `transactional.send` and `transactional.read` on your own key too.',
        }),
      },
    )
    .post('/:id/test', async ({ params, body, request, status }) => status(202, ok(await sendBridgeTest(deps, authOf(request).actor, params.id, body))), {
      params: IdParams,
      body: BridgeTestBody,
      response: { 202: Envelope(BridgeTestResultSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('bridges.test', 'Send a test message through a bridge', {
        tags,
        description:
          "Queues one short message to `to` through the normal accept path with the bridge's identity: its domains (403 for another From), active flag, pool, node, quotas (429) and counters apply, as for its own mail. Needs `transactional.send` on your own key or role too (403).",
      }),
    })
}
