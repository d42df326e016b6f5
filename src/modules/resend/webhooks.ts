import { eq } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { webhookDeliveries, webhooks } from '../../db/schema'
import type { Deps } from '../../deps'
import { requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import type { WebhookView } from '../webhooks/model'
import {
  createWebhook,
  currentSecret,
  deleteWebhooks,
  deliveryEvent,
  getDelivery,
  getWebhook,
  listAttempts,
  replayDelivery,
  rotateSecret,
  updateWebhook,
  type DeliveryView,
  type WebhookOptions,
} from '../webhooks/service'
import { cursorPage, decodeId, encodeId, ListOf, PaginationQuery } from './ids'
import { deleted, refuse } from './shapes'
import { NATIVE_KINDS_OF, RESEND_EVENT_OF, resendPayloadOf } from './webhook-payloads'

/**
 * resend.webhooks onto /api/v2/webhooks. A webhook made here has `format: resend`: its
 * requests carry Resend's event names and data under Svix's headers (webhook-payloads.ts).
 * This surface shows only such webhooks; Mailroom-format ones are managed at /api/v2/webhooks.
 */

/** Resend event names -> native kinds; a name Mailroom never emits is refused, naming the ones it does. */
function nativeKinds(events: string[]): string[] {
  const unknown = events.filter((e) => !(e in NATIVE_KINDS_OF))
  if (unknown.length) refuse('events', `Mailroom does not emit ${unknown.join(', ')}; available: ${Object.keys(NATIVE_KINDS_OF).join(', ')}`)
  return [...new Set(events.flatMap((e) => NATIVE_KINDS_OF[e]!))]
}

/** Native kinds -> Resend names ('*' is every name that has a native source). */
function resendEvents(kinds: string[]): string[] {
  if (kinds.includes('*')) return Object.keys(NATIVE_KINDS_OF)
  return [...new Set(kinds.flatMap((k) => (RESEND_EVENT_OF[k] ? [RESEND_EVENT_OF[k]!] : [])))]
}

const WebhookSchema = t.Object({
  id: t.String(),
  endpoint: t.String(),
  created_at: t.String(),
  status: t.Union([t.Literal('enabled'), t.Literal('disabled')]),
  events: t.Union([t.Array(t.String()), t.Null()]),
})
const Ack = t.Object({ object: t.Literal('webhook'), id: t.String() })
const WithSecret = t.Composite([Ack, t.Object({ signing_secret: t.String() })])

function webhookOf(v: WebhookView) {
  return {
    id: encodeId('webhook', v.id),
    endpoint: v.endpoint,
    created_at: v.created_at,
    status: v.enabled ? ('enabled' as const) : ('disabled' as const),
    events: resendEvents(v.events),
  }
}

/**
 * webhooks.events: a Resend webhook event is one of our deliveries (one event for one
 * webhook). Its status: `pending` before the first attempt, `attempting` while retrying,
 * then `success` or `failed`.
 */
function eventStatus(d: DeliveryView): 'success' | 'pending' | 'failed' | 'attempting' {
  if (d.state === 'succeeded') return 'success'
  if (d.state === 'failed') return 'failed'
  return d.state === 'sending' || d.attempts > 0 ? 'attempting' : 'pending'
}

function eventOf(d: DeliveryView) {
  return { id: encodeId('webhook_event', d.id), type: RESEND_EVENT_OF[d.kind] ?? d.kind, created_at: d.created_at, status: eventStatus(d) }
}

const EventLog = t.Object({ id: t.String(), type: t.String(), created_at: t.String(), status: t.String() })
const Attempt = t.Object({ id: t.String(), http_status_code: t.Integer(), response: t.String(), sent_at: t.String() })

/** /compat/resend/webhooks */
export function webhookRoutes(deps: Deps, opts: WebhookOptions = {}) {
  const tags = ['resend-compatible']
  /** A Resend-format webhook's native id, or not_found. */
  const id = (text: string) => {
    const n = decodeId('webhook', text)
    if (getWebhook(deps, n).format !== 'resend') throw new AppError('not_found', 'Webhook not found.')
    return n
  }
  const Events = t.Array(t.String(), { minItems: 1, maxItems: 50 })
  return new Elysia()
    .post(
      '/webhooks',
      async ({ body }) => {
        const w = await createWebhook(deps, { endpoint: body.endpoint, events: nativeKinds(body.events), format: 'resend' }, opts)
        return { object: 'webhook' as const, id: encodeId('webhook', w.id), signing_secret: w.secret }
      },
      {
        body: t.Object({ endpoint: t.String({ minLength: 1 }), events: Events }),
        response: { 200: WithSecret },
        detail: requires('webhooks.create', 'Create a webhook (Resend-compatible)', { tags }),
      },
    )
    .get(
      '/webhooks',
      ({ query }) => {
        const page = cursorPage(deps.db, webhooks, 'webhook', query, eq(webhooks.format, 'resend'))
        return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((i) => webhookOf(getWebhook(deps, i))) }
      },
      { query: PaginationQuery, response: { 200: ListOf(WebhookSchema) }, detail: requires('webhooks.read', 'List webhooks (Resend-compatible)', { tags }) },
    )
    .get(
      '/webhooks/:id',
      ({ params }) => {
        const n = id(params.id)
        return { object: 'webhook' as const, ...webhookOf(getWebhook(deps, n)), signing_secret: currentSecret(deps, n) }
      },
      {
        response: { 200: t.Composite([t.Object({ object: t.Literal('webhook') }), WebhookSchema, t.Object({ signing_secret: t.String() })]) },
        detail: requires('webhooks.read', 'Get a webhook (Resend-compatible)', { tags }),
      },
    )
    .patch(
      '/webhooks/:id',
      async ({ params, body }) => {
        const n = id(params.id)
        await updateWebhook(
          deps,
          n,
          {
            endpoint: body.endpoint,
            events: body.events === undefined ? undefined : nativeKinds(body.events),
            enabled: body.status === undefined ? undefined : body.status === 'enabled',
          },
          opts,
        )
        return { object: 'webhook' as const, id: params.id }
      },
      {
        body: t.Object({
          endpoint: t.Optional(t.String({ minLength: 1 })),
          events: t.Optional(Events),
          status: t.Optional(t.Union([t.Literal('enabled'), t.Literal('disabled')])),
        }),
        response: { 200: Ack },
        detail: requires('webhooks.update', 'Update a webhook (Resend-compatible)', { tags }),
      },
    )
    .post(
      '/webhooks/:id/signing-secret/rotate',
      ({ params }) => ({ object: 'webhook' as const, id: params.id, signing_secret: rotateSecret(deps, id(params.id)).secret }),
      {
        response: { 200: WithSecret },
        detail: requires('webhooks.update', 'Rotate the signing secret (Resend-compatible)', {
          tags,
          description: 'The previous secret keeps signing beside the new one for 24 hours.',
        }),
      },
    )
    .get(
      '/webhooks/:id/events',
      ({ params, query }) => {
        const n = id(params.id)
        const page = cursorPage(deps.db, webhookDeliveries, 'webhook_event', query, eq(webhookDeliveries.webhook_id, n))
        return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((i) => eventOf(getDelivery(deps, n, i))) }
      },
      {
        query: PaginationQuery,
        response: { 200: ListOf(EventLog) },
        detail: requires('webhooks.read', "List a webhook's events (Resend-compatible)", { tags }),
      },
    )
    .get(
      '/webhooks/:id/events/:event_id',
      ({ params }) => {
        const n = id(params.id)
        const d = getDelivery(deps, n, decodeId('webhook_event', params.event_id, 'webhook event'))
        const e = deliveryEvent(deps, n, d.id)
        const body = e ? resendPayloadOf(deps, e) : null
        return {
          object: 'webhook_event' as const,
          ...eventOf(d),
          next_attempt_at: d.next_attempt_at,
          payload: body === null ? null : (JSON.parse(body) as unknown),
        }
      },
      {
        response: {
          200: t.Composite([
            t.Object({ object: t.Literal('webhook_event') }),
            EventLog,
            t.Object({
              next_attempt_at: t.Union([t.String(), t.Null()]),
              payload: t.Unknown({ description: 'The body sent; null once the event was pruned.' }),
            }),
          ]),
        },
        detail: requires('webhooks.read', 'Get a webhook event with its payload (Resend-compatible)', { tags }),
      },
    )
    .get(
      '/webhooks/:id/events/:event_id/attempts',
      ({ params, query }) => {
        const n = id(params.id)
        // At most eight attempts per delivery (the retry schedule): one page of the native list holds them all.
        const all = listAttempts(deps, n, decodeId('webhook_event', params.event_id, 'webhook event'), { per_page: 100 }).items.map((a) => ({
          id: encodeId('webhook_attempt', a.id),
          http_status_code: a.status ?? 0,
          response: a.response_snippet ?? a.error ?? '',
          sent_at: a.attempted_at,
        }))
        const from = query.after === undefined ? 0 : all.findIndex((a) => a.id === query.after) + 1
        const limit = query.limit ?? 20
        return { object: 'list' as const, has_more: all.length > from + limit, data: all.slice(from, from + limit) }
      },
      {
        query: PaginationQuery,
        response: { 200: ListOf(Attempt) },
        detail: requires('webhooks.read', "List a webhook event's attempts (Resend-compatible)", { tags }),
      },
    )
    .post(
      '/webhooks/:id/events/:event_id/replay',
      ({ params }) => {
        const n = id(params.id)
        const d = replayDelivery(deps, n, decodeId('webhook_event', params.event_id, 'webhook event'))
        return { object: 'webhook_event' as const, id: encodeId('webhook_event', d.id) }
      },
      {
        response: { 200: t.Object({ object: t.Literal('webhook_event'), id: t.String() }) },
        detail: requires('webhooks.update', 'Replay a webhook event: a new delivery, due now (Resend-compatible)', { tags }),
      },
    )
    .delete(
      '/webhooks/:id',
      ({ params }) => {
        deleteWebhooks(deps, [id(params.id)])
        return deleted('webhook', params.id)
      },
      {
        response: { 200: t.Composite([Ack, t.Object({ deleted: t.Boolean() })]) },
        detail: requires('webhooks.delete', 'Remove a webhook (Resend-compatible)', { tags }),
      },
    )
}
