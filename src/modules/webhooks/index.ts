import { t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { commonErrors, enumOf, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import { WEBHOOK_DELIVERY_STATES } from '../../db/schema'
import {
  AttemptSchema,
  CreateWebhookBody,
  DeliveryParams,
  DeliverySchema,
  EventKindSchema,
  Kinds,
  TestResultSchema,
  UpdateWebhookBody,
  WEBHOOK_EVENT_DESCRIPTIONS,
  WEBHOOK_EVENT_KINDS,
  WebhookSchema,
  WithSecret,
} from './model'
import {
  createWebhook,
  deleteWebhooks,
  getWebhook,
  listAttempts,
  listDeliveries,
  listWebhooks,
  replayDelivery,
  rotateSecret,
  testWebhook,
  updateWebhook,
  type WebhookOptions,
} from './service'

const tags = ['webhooks']

/** /api/v2/webhooks */
export function webhookRoutes(deps: Deps, authOf: AuthOf, opts: WebhookOptions = {}) {
  return crudRoutes(authOf, {
    resource: 'webhooks',
    view: WebhookSchema,
    create: {
      summary: 'Create a webhook',
      description: 'The answer carries the signing secret; no other answer does.',
      body: CreateWebhookBody,
      response: WithSecret,
      handle: (body) => createWebhook(deps, body, opts),
    },
    list: { summary: 'List webhooks', handle: (query) => listWebhooks(deps, query) },
    bulkDelete: { summary: 'Delete several webhooks', handle: (ids) => deleteWebhooks(deps, ids) },
    get: { summary: 'Get a webhook', handle: (id) => getWebhook(deps, id) },
    update: { summary: 'Update, disable or re-enable a webhook', body: UpdateWebhookBody, handle: (id, body) => updateWebhook(deps, id, body, opts) },
    remove: { summary: 'Delete a webhook', description: 'With its deliveries and their attempts.' },
  })
    .get('/event-kinds', () => ok(WEBHOOK_EVENT_KINDS.map((kind) => ({ kind, description: WEBHOOK_EVENT_DESCRIPTIONS[kind] }))), {
      response: { 200: Envelope(t.Array(EventKindSchema)), ...commonErrors },
      detail: requires('webhooks.read', 'List the event kinds a webhook can subscribe to', {
        tags,
        description: 'Each kind with one line of what it means; `*` (every kind, including later ones) is not listed.',
      }),
    })
    .post('/:id/rotate-secret', ({ params, body }) => ok(rotateSecret(deps, params.id, body ?? {})), {
      params: IdParams,
      body: t.Optional(t.Object({ secret: t.Optional(t.String()) })),
      response: { 200: Envelope(WithSecret), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('webhooks.update', 'Rotate the signing secret', {
        tags,
        description: 'Returns the new secret once. The previous secret keeps signing too (a second signature) for 24 hours.',
      }),
    })
    .post('/:id/test', async ({ params, body }) => ok(await testWebhook(deps, params.id, body ?? {}, opts)), {
      params: IdParams,
      body: t.Optional(t.Object({ events: t.Optional(Kinds) })),
      response: { 200: Envelope(t.Array(TestResultSchema)), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('webhooks.test', 'Send sample events to the endpoint', {
        tags,
        description: 'Synchronous; returns what the endpoint answered per kind.',
      }),
    })
    .get('/:id/deliveries', ({ params, query }) => okPage(listDeliveries(deps, params.id, query)), {
      params: IdParams,
      query: t.Object({ ...PageQuery, state: t.Optional(enumOf(WEBHOOK_DELIVERY_STATES)) }),
      response: { 200: Paged(DeliverySchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('webhooks.read', 'List the deliveries of a webhook', { tags, description: 'Newest first.' }),
    })
    .get('/:id/deliveries/:delivery_id/attempts', ({ params, query }) => okPage(listAttempts(deps, params.id, params.delivery_id, query)), {
      params: DeliveryParams,
      query: t.Object(PageQuery),
      response: { 200: Paged(AttemptSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('webhooks.read', 'List the attempts of a delivery', { tags }),
    })
    .post('/:id/deliveries/:delivery_id/replay', ({ params, status }) => status(201, ok(replayDelivery(deps, params.id, params.delivery_id))), {
      params: DeliveryParams,
      response: { 201: Envelope(DeliverySchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
      detail: requires('webhooks.update', 'Replay a delivery', {
        tags,
        description: 'Creates a new delivery of the same event, due now, with the same webhook-id.',
      }),
    })
}
