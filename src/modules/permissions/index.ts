import { Elysia } from 'elysia'
import { commonErrors, Envelope, ok, requires } from '../../http/schemas'
import { PERMISSION_TREE } from './service'
import { PermissionTreeSchema } from './model'

/** GET /api/v2/permissions: the permission tree roles are built from. */
export function permissionRoutes() {
  return new Elysia().get('/api/v2/permissions', () => ok(PERMISSION_TREE), {
    response: { 200: Envelope(PermissionTreeSchema), ...commonErrors },
    detail: requires('roles.read', 'The permission tree', {
      tags: ['roles'],
      description: 'Groups of permissions; each permission id can be granted to a role on its own.',
    }),
  })
}
