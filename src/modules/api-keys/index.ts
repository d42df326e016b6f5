import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, requires } from '../../http/schemas'
import { ApiKeyFilters, ApiKeySchema, CreateApiKeyBody, CreatedApiKeySchema, UpdateApiKeyBody } from './model'
import { assertNotBridgeKey, createApiKey, deleteApiKey, getApiKey, listApiKeys, restoreApiKey, updateApiKey, type UsageRecorder } from './service'

const tags = ['api keys']

/** /api/v2/api-keys: create, list, read, update, soft-delete and restore keys. */
export function apiKeyRoutes(deps: Deps, authOf: AuthOf, usage: UsageRecorder) {
  return crudRoutes(authOf, {
    resource: 'api_keys',
    view: ApiKeySchema,
    create: {
      summary: 'Create an API key',
      description: 'The key value is in the response once and never again.',
      body: CreateApiKeyBody,
      response: CreatedApiKeySchema,
      handle: (body, ctx) => {
        const { view, key } = createApiKey(deps, ctx.auth().actor, body)
        return { ...view, key }
      },
    },
    list: {
      summary: 'List API keys',
      query: ApiKeyFilters,
      handle: (query) => {
        const page = listApiKeys(deps, query)
        return { ...page, items: page.items.map(usage.overlay) }
      },
    },
    get: { summary: 'Get an API key', handle: (id) => usage.overlay(getApiKey(deps, id)) },
    update: {
      summary: 'Update an API key',
      description: 'Name, role, rate limit, allowlist and status change without changing the key value. Setting status to inactive revokes the key at once.',
      errors: [409],
      body: UpdateApiKeyBody,
      handle: (id, body, ctx) => (assertNotBridgeKey(deps, id), updateApiKey(deps, ctx.auth().actor, id, body)),
    },
    remove: {
      summary: 'Delete an API key',
      description: 'Soft delete: the key stops working at once and can be restored.',
      handle: (id, ctx) => (assertNotBridgeKey(deps, id), deleteApiKey(deps, ctx.auth().actor, id)),
    },
  }).post('/:id/restore', ({ params, request }) => (assertNotBridgeKey(deps, params.id), ok(restoreApiKey(deps, authOf(request).actor, params.id))), {
    params: IdParams,
    response: { 200: Envelope(ApiKeySchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
    detail: requires('api_keys.restore', 'Restore a deleted API key', { tags }),
  })
}
