import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { CreateSendingNodeBody, SendingNodeSchema, UpdateSendingNodeBody } from './model'
import { createSendingNode, deleteSendingNodes, getSendingNode, listSendingNodes, updateSendingNode } from './service'

/** /api/v2/sending-nodes: delivery routes, direct-to-MX or through a relay, with caps. */
export function sendingNodeRoutes(deps: Deps, authOf: AuthOf) {
  return crudRoutes(authOf, {
    resource: 'sending_nodes',
    view: SendingNodeSchema,
    create: {
      summary: 'Create a sending node',
      description: 'Names are unique (409). Relay settings are refused on direct nodes and the pool on relay nodes (422).',
      errors: [409],
      body: CreateSendingNodeBody,
      handle: (body) => createSendingNode(deps, body),
    },
    list: { summary: 'List sending nodes', handle: (query) => listSendingNodes(deps, query) },
    bulkDelete: { summary: 'Delete several sending nodes', handle: (ids) => deleteSendingNodes(deps, ids) },
    get: { summary: 'Get a sending node', handle: (id) => getSendingNode(deps, id) },
    update: {
      summary: 'Change a sending node',
      description:
        'The resulting node is checked as a whole. Changing `kind` drops the settings of the old kind. `relay_password: null` removes the password; omitting it keeps it.',
      errors: [409],
      body: UpdateSendingNodeBody,
      handle: (id, body) => updateSendingNode(deps, id, body),
    },
    remove: { summary: 'Delete a sending node', description: 'Queued mail that named it takes the default route.' },
  })
}
