import { isNull } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { apiKeys } from '../../db/schema'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import { assertNotBridgeKey, createApiKey, deleteApiKey, getApiKey, updateApiKey } from '../api-keys/service'
import { ADMINISTRATOR, createRole, findRoleByName, type Actor } from '../roles/service'
import { cursorPage, decodeId, encodeId, ListOf, PaginationQuery } from './ids'
import { deleted, refuse } from './shapes'

/**
 * resend.apiKeys onto /api/v2/api-keys. Resend's two permissions become roles: `full_access`
 * is the built-in Administrator role; `sending_access` is a role named "Sending access" that
 * grants `transactional.send` only, made through the roles service the first time it is asked for.
 */
export const SENDING_ACCESS_ROLE = 'Sending access'

function roleFor(deps: Deps, actor: Actor, permission: 'full_access' | 'sending_access'): number {
  if (permission === 'full_access') return findRoleByName(deps, ADMINISTRATOR)!.id
  const existing = findRoleByName(deps, SENDING_ACCESS_ROLE)
  if (existing) return existing.id
  return createRole(deps, actor, {
    name: SENDING_ACCESS_ROLE,
    description: 'Send email only (Resend\'s "sending_access" API key permission).',
    permissions: ['transactional.send'],
  }).id
}

const KeySchema = t.Object({ id: t.String(), name: t.String(), created_at: t.String(), last_used_at: t.Union([t.String(), t.Null()]) })

/** A live (not deleted) key, or Resend's not_found. */
function liveKey(deps: Deps, id: number) {
  const v = getApiKey(deps, id)
  if (v.deleted_at !== null) throw new AppError('not_found', 'API key not found.')
  return v
}

/** /compat/resend/api-keys */
export function apiKeyRoutes(deps: Deps, authOf: AuthOf) {
  const tags = ['resend-compatible']
  const id = (text: string) => decodeId('api_key', text, 'API key')
  return new Elysia()
    .post(
      '/api-keys',
      ({ body, request }) => {
        if (body.domain_id !== undefined) refuse('domain_id', 'keys cannot be limited to one domain; sending keys send from every domain')
        const actor = authOf(request).actor
        const { view, key } = createApiKey(deps, actor, { name: body.name, role_id: roleFor(deps, actor, body.permission ?? 'full_access') })
        return { id: encodeId('api_key', view.id), token: key }
      },
      {
        body: t.Object({
          name: t.String({ minLength: 1, maxLength: 50 }),
          permission: t.Optional(t.Union([t.Literal('full_access'), t.Literal('sending_access')])),
          domain_id: t.Optional(t.String()),
        }),
        response: { 200: t.Object({ id: t.String(), token: t.String() }) },
        detail: requires('api_keys.create', 'Create an API key (Resend-compatible)', { tags }),
      },
    )
    .get(
      '/api-keys',
      ({ query }) => {
        const page = cursorPage(deps.db, apiKeys, 'api_key', query, isNull(apiKeys.deleted_at))
        return {
          object: 'list' as const,
          has_more: page.has_more,
          data: page.ids.map((i) => {
            const v = getApiKey(deps, i)
            return { id: encodeId('api_key', v.id), name: v.name, created_at: v.created_at, last_used_at: v.last_used_at }
          }),
        }
      },
      { query: PaginationQuery, response: { 200: ListOf(KeySchema) }, detail: requires('api_keys.read', 'List API keys (Resend-compatible)', { tags }) },
    )
    .patch(
      '/api-keys/:id',
      ({ params, body, request }) => {
        const n = id(params.id)
        liveKey(deps, n)
        assertNotBridgeKey(deps, n)
        updateApiKey(deps, authOf(request).actor, n, { name: body.name })
        return { object: 'api_key' as const, id: params.id }
      },
      {
        body: t.Object({ name: t.String({ minLength: 1, maxLength: 50 }) }),
        response: { 200: t.Object({ object: t.Literal('api_key'), id: t.String() }) },
        detail: requires('api_keys.update', 'Rename an API key (Resend-compatible)', { tags }),
      },
    )
    .delete(
      '/api-keys/:id',
      ({ params, request }) => {
        const n = id(params.id)
        liveKey(deps, n)
        assertNotBridgeKey(deps, n)
        // A soft delete, as natively: the key stops working now and an administrator can restore it.
        deleteApiKey(deps, authOf(request).actor, n)
        return deleted('api_key', params.id)
      },
      {
        response: { 200: t.Object({ object: t.Literal('api_key'), id: t.String(), deleted: t.Boolean() }) },
        detail: requires('api_keys.delete', 'Remove an API key (Resend-compatible)', { tags }),
      },
    )
}
