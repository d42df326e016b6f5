import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { CreateIpBody, IpSchema, UpdateIpBody } from './model'
import { createIp, deleteIps, getIp, listIps, updateIp } from './service'

/** /api/v2/ips: the local source addresses mail may leave from. */
export function ipRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'ips',
    view: IpSchema,
    create: {
      summary: 'Register a source IP',
      description:
        'Refused with 422 on `address` unless this host can bind the address (it must be configured on one of its interfaces); 409 when already registered.',
      errors: [409],
      body: CreateIpBody,
      handle: (body) => createIp(deps, body),
    },
    list: { summary: 'List source IPs', handle: (query) => listIps(deps, query) },
    bulkDelete: { summary: 'Delete several source IPs', description: 'They leave their pools.', handle: (ids) => deleteIps(deps, ids) },
    get: { summary: 'Get a source IP', handle: (id) => getIp(deps, id) },
    update: {
      summary: 'Change the EHLO name or the address of a source IP',
      description: 'A new address is checked as on create.',
      errors: [409],
      body: UpdateIpBody,
      handle: (id, body) => updateIp(deps, id, body),
    },
    remove: { summary: 'Delete a source IP', description: 'It leaves its pools; a pool left without IPs sends from the host default address.' },
  })
}
