import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { CreatePoolBody, PoolSchema, UpdatePoolBody } from './model'
import { createPool, deletePools, getPool, listPools, updatePool } from './service'

/** /api/v2/ip-pools: named groups of source IPs with weights. */
export function ipPoolRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'ip_pools',
    group: 'ips',
    view: PoolSchema,
    create: {
      summary: 'Create an IP pool',
      description: 'Names are unique (409).',
      errors: [409],
      body: CreatePoolBody,
      handle: (body) => createPool(deps, body),
    },
    list: { summary: 'List IP pools', handle: (query) => listPools(deps, query) },
    bulkDelete: { summary: 'Delete several IP pools', handle: (ids) => deletePools(deps, ids) },
    get: { summary: 'Get an IP pool with its members', handle: (id) => getPool(deps, id) },
    update: {
      summary: 'Change an IP pool',
      description: '`members`, when given, replaces the whole member list.',
      errors: [409],
      body: UpdatePoolBody,
      handle: (id, body) => updatePool(deps, id, body),
    },
    remove: {
      summary: 'Delete an IP pool',
      description: 'Sending domains, nodes and queued messages that named it use the default pool from then on.',
    },
  })
}
