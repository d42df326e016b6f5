import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import {
  BulkDeleteBody,
  BulkDeleteResult,
  commonErrors,
  enumOf,
  Envelope,
  ErrorEnvelope,
  IdParams,
  ok,
  okPage,
  Paged,
  PageQuery,
  requires,
} from '../../http/schemas'
import { WEBHOOK_DELIVERY_STATES } from '../../db/schema'
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
  WEBHOOK_EVENT_KINDS,
  type WebhookOptions,
} from './service'

const tags = ['webhooks']
const Time = t.Union([t.String(), t.Null()])
const IntOrNull = t.Union([t.Integer(), t.Null()])
const StrOrNull = t.Union([t.String(), t.Null()])

const WebhookSchema = t.Object({
  id: t.Integer(),
  url: t.String(),
  description: t.String(),
  kinds: t.Array(t.String()),
  enabled: t.Boolean(),
  disabled_reason: t.Union([enumOf(['manual', 'failures', 'gone']), t.Null()]),
  disabled_at: Time,
  consecutive_failures: t.Integer(),
  last_success_at: Time,
  last_failure_at: Time,
  previous_secret_expires_at: Time,
  created_at: t.String(),
  updated_at: t.String(),
})
const WithSecret = t.Composite([WebhookSchema, t.Object({ secret: t.String({ description: 'The signing secret; shown only in this answer.' }) })])

const Kinds = t.Array(t.String({ description: `An event kind, or * for every kind: ${WEBHOOK_EVENT_KINDS.join(', ')}` }), { minItems: 1, maxItems: 50 })
const CreateBody = t.Object({
  url: t.String({ minLength: 1, maxLength: 2000 }),
  description: t.Optional(t.String({ maxLength: 2000 })),
  kinds: Kinds,
  secret: t.Optional(t.String({ description: 'whsec_ + base64 of 24 to 64 bytes; generated when omitted.' })),
  enabled: t.Optional(t.Boolean()),
})
const UpdateBody = t.Object({
  url: t.Optional(t.String({ minLength: 1, maxLength: 2000 })),
  description: t.Optional(t.String({ maxLength: 2000 })),
  kinds: t.Optional(Kinds),
  enabled: t.Optional(t.Boolean({ description: 'true on a disabled webhook resets the failure count and sends its pending deliveries.' })),
})

const DeliverySchema = t.Object({
  id: t.Integer(),
  webhook_id: t.Integer(),
  event_id: t.Integer(),
  kind: t.String(),
  message_id: t.String({ description: 'The webhook-id header of its requests.' }),
  state: enumOf(WEBHOOK_DELIVERY_STATES),
  attempts: t.Integer(),
  next_attempt_at: Time,
  last_status: IntOrNull,
  last_error: StrOrNull,
  created_at: t.String(),
  updated_at: t.String(),
  finished_at: Time,
})
const AttemptSchema = t.Object({
  id: t.Integer(),
  delivery_id: t.Integer(),
  attempted_at: t.String(),
  status: IntOrNull,
  latency_ms: IntOrNull,
  error: StrOrNull,
  response_snippet: StrOrNull,
})
const TestResultSchema = t.Object({
  kind: t.String(),
  webhook_id: t.String(),
  ok: t.Boolean(),
  status: IntOrNull,
  latency_ms: t.Integer(),
  error: StrOrNull,
  response_snippet: StrOrNull,
  headers: t.Record(t.String(), t.String()),
})
const DeliveryParams = t.Object({ id: t.Integer({ minimum: 1 }), delivery_id: t.Integer({ minimum: 1 }) })

/** /api/v2/webhooks */
export function webhookRoutes(deps: Deps, authOf: AuthOf, opts: WebhookOptions = {}) {
  return new Elysia({ prefix: '/api/v2/webhooks' })
    .post(
      '/',
      async ({ body, request, status }) => {
        const w = await createWebhook(deps, body, opts)
        authOf(request).target = { type: 'webhooks', id: w.id }
        return status(201, ok(w))
      },
      {
        body: CreateBody,
        response: { 201: Envelope(WithSecret), ...commonErrors },
        detail: requires('webhooks.create', 'Create a webhook', { tags, description: 'The answer carries the signing secret; no other answer does.' }),
      },
    )
    .get('/', ({ query }) => okPage(listWebhooks(deps, query)), {
      query: t.Object(PageQuery),
      response: { 200: Paged(WebhookSchema), ...commonErrors },
      detail: requires('webhooks.read', 'List webhooks', { tags }),
    })
    .get('/:id', ({ params }) => ok(getWebhook(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(WebhookSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('webhooks.read', 'Get a webhook', { tags }),
    })
    .patch('/:id', async ({ params, body }) => ok(await updateWebhook(deps, params.id, body, opts)), {
      params: IdParams,
      body: UpdateBody,
      response: { 200: Envelope(WebhookSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('webhooks.update', 'Update, disable or re-enable a webhook', { tags }),
    })
    .delete(
      '/:id',
      ({ params }) => {
        const w = getWebhook(deps, params.id)
        deleteWebhooks(deps, [params.id])
        return ok(w)
      },
      {
        params: IdParams,
        response: { 200: Envelope(WebhookSchema), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('webhooks.delete', 'Delete a webhook', { tags, description: 'With its deliveries and their attempts.' }),
      },
    )
    .post('/bulk-delete', ({ body }) => ok(deleteWebhooks(deps, body.ids)), {
      body: BulkDeleteBody,
      response: { 200: Envelope(BulkDeleteResult), ...commonErrors },
      detail: requires('webhooks.delete', 'Delete several webhooks', { tags }),
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
      body: t.Optional(t.Object({ kinds: t.Optional(Kinds) })),
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
