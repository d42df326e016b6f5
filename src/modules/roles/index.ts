import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import { t } from 'elysia'
import { CreateRoleBody, RoleSchema, UpdateRoleBody } from './model'
import { createRole, deleteRole, getRole, listRoles, updateRole } from './service'

const tags = ['roles']

/** /api/v2/roles: roles are sets of permissions; a change applies to all their keys at the next request. */
export function roleRoutes(deps: Deps, authOf: AuthOf) {
  return new Elysia({ prefix: '/api/v2/roles' })
    .post(
      '/',
      ({ body, request, status }) => {
        const auth = authOf(request)
        const role = createRole(deps, auth.actor, body)
        auth.target = { type: 'roles', id: role.id }
        return status(201, ok(role))
      },
      {
        body: CreateRoleBody,
        response: { 201: Envelope(RoleSchema), 409: ErrorEnvelope, ...commonErrors },
        detail: requires('roles.create', 'Create a role', { tags, description: 'A role may only grant permissions that the calling key holds.' }),
      },
    )
    .get('/', ({ query }) => okPage(listRoles(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(RoleSchema), ...commonErrors },
      detail: requires('roles.read', 'List roles', { tags }),
    })
    .get('/:id', ({ params }) => ok(getRole(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(RoleSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('roles.read', 'Get a role', { tags }),
    })
    .patch('/:id', ({ params, body, request }) => ok(updateRole(deps, authOf(request).actor, params.id, body)), {
      params: IdParams,
      body: UpdateRoleBody,
      response: { 200: Envelope(RoleSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('roles.update', 'Update a role', { tags, description: 'Every key bound to the role sees the change on its next request.' }),
    })
    .delete('/:id', ({ params, request }) => ok(deleteRole(deps, authOf(request).actor, params.id)), {
      params: IdParams,
      response: { 200: Envelope(RoleSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('roles.delete', 'Delete a role', { tags, description: 'Refused with 409 while any key, deleted ones included, is bound to the role.' }),
    })
}
