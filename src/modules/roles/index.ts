import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { CreateRoleBody, RoleSchema, UpdateRoleBody } from './model'
import { createRole, deleteRole, getRole, listRoles, updateRole } from './service'

/** /api/v2/roles: roles are sets of permissions; a change applies to all their keys at the next request. */
export function roleRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'roles',
    view: RoleSchema,
    create: {
      summary: 'Create a role',
      description: 'A role may only grant permissions that the calling key holds.',
      errors: [409],
      body: CreateRoleBody,
      handle: (body, ctx) => createRole(deps, ctx.auth().actor, body),
    },
    list: { summary: 'List roles', handle: (query) => listRoles(deps, query) },
    get: { summary: 'Get a role', handle: (id) => getRole(deps, id) },
    update: {
      summary: 'Update a role',
      description: 'Every key bound to the role sees the change on its next request.',
      errors: [409],
      body: UpdateRoleBody,
      handle: (id, body, ctx) => updateRole(deps, ctx.auth().actor, id, body),
    },
    remove: {
      summary: 'Delete a role',
      description: 'Refused with 409 while any key, deleted ones included, is bound to the role.',
      errors: [409],
      handle: (id, ctx) => deleteRole(deps, ctx.auth().actor, id),
    },
  })
}
