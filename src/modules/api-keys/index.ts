import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, requires } from '../../http/schemas'
import { ApiKeySchema, CreateApiKeyBody, CreatedApiKeySchema, ListApiKeysQuery, UpdateApiKeyBody } from './model'
import { assertNotBridgeKey, createApiKey, deleteApiKey, getApiKey, listApiKeys, restoreApiKey, updateApiKey, type UsageRecorder } from './service'

const tags = ['api keys']

/** /api/v2/api-keys: create, list, read, update, soft-delete and restore keys. */
export function apiKeyRoutes(deps: Deps, authOf: AuthOf, usage: UsageRecorder) {
  return new Elysia({ prefix: '/api/v2/api-keys' })
    .post(
      '/',
      ({ body, request, status }) => {
        const auth = authOf(request)
        const { view, key } = createApiKey(deps, auth.actor, body)
        auth.target = { type: 'api_keys', id: view.id }
        return status(201, ok({ ...view, key }))
      },
      {
        body: CreateApiKeyBody,
        response: { 201: Envelope(CreatedApiKeySchema), ...commonErrors },
        detail: requires('api_keys.create', 'Create an API key', { tags, description: 'The key value is in the response once and never again.' }),
      },
    )
    .get(
      '/',
      ({ query }) => {
        const page = listApiKeys(deps, query)
        return okPage({ ...page, items: page.items.map(usage.overlay) })
      },
      { query: ListApiKeysQuery, response: { 200: Paged(ApiKeySchema), ...commonErrors }, detail: requires('api_keys.read', 'List API keys', { tags }) },
    )
    .get('/:id', ({ params }) => ok(usage.overlay(getApiKey(deps, params.id))), {
      params: IdParams,
      response: { 200: Envelope(ApiKeySchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('api_keys.read', 'Get an API key', { tags }),
    })
    .patch('/:id', ({ params, body, request }) => (assertNotBridgeKey(deps, params.id), ok(updateApiKey(deps, authOf(request).actor, params.id, body))), {
      params: IdParams,
      body: UpdateApiKeyBody,
      response: { 200: Envelope(ApiKeySchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('api_keys.update', 'Update an API key', {
        tags,
        description: 'Name, role, rate limit, allowlist and status change without changing the key value. Setting status to inactive revokes the key at once.',
      }),
    })
    .delete('/:id', ({ params, request }) => (assertNotBridgeKey(deps, params.id), ok(deleteApiKey(deps, authOf(request).actor, params.id))), {
      params: IdParams,
      response: { 200: Envelope(ApiKeySchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('api_keys.delete', 'Delete an API key', { tags, description: 'Soft delete: the key stops working at once and can be restored.' }),
    })
    .post('/:id/restore', ({ params, request }) => (assertNotBridgeKey(deps, params.id), ok(restoreApiKey(deps, authOf(request).actor, params.id))), {
      params: IdParams,
      response: { 200: Envelope(ApiKeySchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('api_keys.restore', 'Restore a deleted API key', { tags }),
    })
}
