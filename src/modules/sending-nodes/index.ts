import { Elysia, t, type TSchema } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { NODE_KINDS, RELAY_TLS_MODES } from '../../db/schema'
import {
  BulkDeleteBody,
  BulkDeleteResult,
  commonErrors,
  Envelope,
  enumOf,
  ErrorEnvelope,
  IdParams,
  ok,
  okPage,
  Paged,
  PageQuery,
  requires,
  NOT_BLANK,
} from '../../http/schemas'
import { createSendingNode, deleteSendingNodes, getSendingNode, listSendingNodes, updateSendingNode } from './service'

const tags = ['sending nodes']

const Nullable = <T extends TSchema>(schema: T, description?: string) => t.Union([schema, t.Null()], description ? { description } : {})

const SendingNodeSchema = t.Object({
  id: t.Integer(),
  name: t.String(),
  kind: enumOf(NODE_KINDS, { description: '`direct`: to the recipient MX over an IP pool; `relay`: through a smart host.' }),
  pool_id: Nullable(t.Integer(), 'direct: the pool to send over; null = the pool of the message.'),
  relay_host: Nullable(t.String()),
  relay_port: Nullable(t.Integer()),
  relay_tls: Nullable(enumOf(RELAY_TLS_MODES)),
  relay_username: Nullable(t.String()),
  has_password: t.Boolean({ description: 'Whether a relay password is stored; the password itself is never returned.' }),
  hourly_cap: Nullable(t.Integer(), 'Most deliveries per clock hour; null = no cap.'),
  daily_cap: Nullable(t.Integer(), 'Most deliveries per UTC day; null = no cap.'),
  is_default: t.Boolean({ description: 'The route of mail that names no node.' }),
  active: t.Boolean(),
  usage: t.Object({ this_hour: t.Integer(), today: t.Integer() }, { description: 'Deliveries counted against the caps.' }),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

// No control characters: these values end up in SMTP commands (AUTH) and must not carry CR/LF.
const NoControl = '^[^\\u0000-\\u001f\\u007f]*$'

const NodeFields = {
  name: t.String({ minLength: 1, maxLength: 200, pattern: NOT_BLANK }),
  kind: enumOf(NODE_KINDS),
  pool_id: t.Optional(Nullable(t.Integer({ minimum: 1 }), 'direct only.')),
  relay_host: t.Optional(Nullable(t.String({ minLength: 1, maxLength: 253 }), 'relay: host name or IP address of the smart host (required).')),
  relay_port: t.Optional(Nullable(t.Integer({ minimum: 1, maximum: 65535 }), 'relay: default 587 (starttls), 465 (tls) or 25 (none).')),
  relay_tls: t.Optional(Nullable(enumOf(RELAY_TLS_MODES), 'relay: default starttls.')),
  relay_username: t.Optional(Nullable(t.String({ minLength: 1, maxLength: 500, pattern: NoControl }))),
  relay_password: t.Optional(Nullable(t.String({ minLength: 1, maxLength: 500, pattern: NoControl }), 'Write-only: never returned.')),
  hourly_cap: t.Optional(Nullable(t.Integer({ minimum: 1 }))),
  daily_cap: t.Optional(Nullable(t.Integer({ minimum: 1 }))),
  is_default: t.Optional(t.Boolean({ description: 'Make this the default route (the previous default stops being one).' })),
  active: t.Optional(t.Boolean({ description: 'Default true.' })),
}

/** /api/v2/sending-nodes: delivery routes, direct-to-MX or through a relay, with caps. */
export function sendingNodeRoutes(deps: Deps, authOf: AuthOf) {
  return new Elysia({ prefix: '/api/v2/sending-nodes' })
    .post(
      '/',
      ({ body, request, status }) => {
        const node = createSendingNode(deps, body)
        authOf(request).target = { type: 'sending_nodes', id: node.id }
        return status(201, ok(node))
      },
      {
        body: t.Object(NodeFields),
        response: { 201: Envelope(SendingNodeSchema), 409: ErrorEnvelope, ...commonErrors },
        detail: requires('sending_nodes.create', 'Create a sending node', {
          tags,
          description: 'Names are unique (409). Relay settings are refused on direct nodes and the pool on relay nodes (422).',
        }),
      },
    )
    .get('/', ({ query }) => okPage(listSendingNodes(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(SendingNodeSchema), ...commonErrors },
      detail: requires('sending_nodes.read', 'List sending nodes', { tags }),
    })
    .post('/bulk-delete', ({ body }) => ok(deleteSendingNodes(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('sending_nodes.delete', 'Delete several sending nodes', { tags }),
    })
    .get('/:id', ({ params }) => ok(getSendingNode(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(SendingNodeSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('sending_nodes.read', 'Get a sending node', { tags }),
    })
    .patch('/:id', ({ params, body }) => ok(updateSendingNode(deps, params.id, body)), {
      params: IdParams,
      body: t.Partial(t.Object(NodeFields)),
      response: { 200: Envelope(SendingNodeSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('sending_nodes.update', 'Change a sending node', {
        tags,
        description:
          'The resulting node is checked as a whole. Changing `kind` drops the settings of the old kind. `relay_password: null` removes the password; omitting it keeps it.',
      }),
    })
    .delete(
      '/:id',
      ({ params }) => {
        const node = getSendingNode(deps, params.id)
        deleteSendingNodes(deps, [params.id])
        return ok(node)
      },
      {
        params: IdParams,
        response: { 200: Envelope(SendingNodeSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('sending_nodes.delete', 'Delete a sending node', { tags, description: 'Queued mail that named it takes the default route.' }),
      },
    )
}
