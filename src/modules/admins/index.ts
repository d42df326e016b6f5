import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { AdminFilters, AdminSchema, CreateAdminBody, UpdateAdminBody } from './model'
import { createAdmin, deleteAdmin, getAdmin, listAdmins, updateAdmin } from './service'

/** /api/v2/admins: the people who sign in to the console, each with a role (docs/api.md "Administrators"). */
export function adminRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'admins',
    tags: ['administrators'],
    view: AdminSchema,
    create: {
      summary: 'Create an administrator',
      description: 'The role may grant only permissions you hold (403 otherwise). The password is stored as an argon2id hash and never shown.',
      errors: [409],
      body: CreateAdminBody,
      handle: (body, ctx) => createAdmin(deps, ctx.auth().actor, body),
    },
    list: { summary: 'List administrators', query: AdminFilters, handle: (query) => listAdmins(deps, query) },
    get: { summary: 'Get an administrator', handle: (id) => getAdmin(deps, id) },
    update: {
      summary: 'Update an administrator',
      description:
        "Role, status and password. A new password or a disable ends the person's other sessions at once. The last active administrator with every permission cannot be disabled or given a lesser role (409); nobody can disable themselves (409).",
      errors: [409],
      body: UpdateAdminBody,
      handle: (id, body, ctx) => updateAdmin(deps, ctx.auth().actor, id, body, ctx.auth().admin?.hash),
    },
    remove: {
      summary: 'Delete an administrator',
      description: 'Not yourself, and not the last active administrator with every permission (409). Their sessions end.',
      errors: [409],
      handle: (id, ctx) => deleteAdmin(deps, ctx.auth().actor, id),
    },
  })
}
