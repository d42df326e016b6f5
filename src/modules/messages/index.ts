import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { commonErrors, Envelope, ErrorEnvelope, ok, RecordId, requires } from '../../http/schemas'
import { templateSendInput } from '../templates/service'
import { simpleSendBody } from './compose'
import { sendOverHttp, type SendCall } from './http'
import { DynamicTemplateBody, EmailQueuedSchema, EmailSendBody, MessageIdParams, MessageSchema, QueuedSchema, RescheduleBody, SimpleSendBody } from './model'
import { cancelMessage, parseScheduledAt, rescheduleMessage } from './schedule'
import { getMessage, type AcceptedMessage } from './service'

const tags = ['sending']
const sendErrors = { ...commonErrors, 409: ErrorEnvelope }
const idempotencyNote = 'Send an `Idempotency-Key` header (1-256 characters) to make retries safe: see "Idempotency" in docs/api.md.'

const queued = (a: AcceptedMessage) => ({ id: a.id, status: a.status, ...(a.scheduled_at ? { scheduled_at: a.scheduled_at } : {}) })
const trackingOf = (b: { track_opens?: boolean; track_clicks?: boolean; list_unsubscribe?: boolean }) => ({
  track_opens: b.track_opens,
  track_clicks: b.track_clicks,
  list_unsubscribe: b.list_unsubscribe,
})

/** /v1/send, /v1/emails, /api/v2/dynamicTemplate/{id} and message reads. */
export function messageRoutes(deps: Deps, authOf: AuthOf) {
  const send = (call: SendCall, set: { headers: Record<string, string | number> }) => sendOverHttp(deps, authOf, call, set)
  const routing = (b: { ip_pool_id?: number; sending_node_id?: number }) => ({ poolId: b.ip_pool_id ?? null, nodeId: b.sending_node_id ?? null })
  /** A body's scheduled_at read against the clock (schedule.ts); null: send at once. */
  const when = (b: { scheduled_at?: string }) => (b.scheduled_at === undefined ? null : parseScheduledAt(b.scheduled_at, deps.clock.now()))
  /** The send call of POST /v1/emails, shared by the bridge endpoint. */
  const emailsCall = (endpoint: string, body: typeof EmailSendBody.static, request: Request): SendCall => ({
    request,
    endpoint,
    body,
    inputs: () => [
      {
        from: body.from,
        to: body.to,
        cc: body.cc,
        bcc: body.bcc,
        reply_to: body.reply_to === undefined ? undefined : ([] as string[]).concat(body.reply_to),
        subject: body.subject,
        html: body.html,
        text: body.text,
        headers: body.headers,
        attachments: body.attachments,
        tags: body.tags,
        scheduled_at: when(body),
        ...trackingOf(body),
      },
    ],
    ctx: { source: 'api', ...routing(body) },
    respond: ([a]) => ({
      status: 202,
      body: ok({
        ...queued(a!),
        queued: a!.queued,
        suppressed: a!.suppressed.map((s) => ({ address: s.address, reason: s.suppression.reason, scope: s.suppression.scope })),
      }),
    }),
  })

  return new Elysia()
    .post(
      '/v1/send',
      async ({ body, request, set, status }) => {
        const r = await send(
          {
            request,
            endpoint: 'POST /v1/send',
            body,
            inputs: () => [{ from: body.from, to: [body.to], subject: body.subject, ...simpleSendBody(body), scheduled_at: when(body), ...trackingOf(body) }],
            ctx: { source: 'api', ...routing(body) },
            respond: ([a]) => ({ status: 202, body: ok(queued(a!)) }),
          },
          set,
        )
        return status(202, r.body as { success: true; data: typeof QueuedSchema.static })
      },
      {
        body: SimpleSendBody,
        response: { 202: Envelope(QueuedSchema), ...sendErrors },
        detail: requires('transactional.send', 'Send one message to one recipient', {
          tags,
          description: `Answers 202 once the message is on disk. ${idempotencyNote}`,
        }),
      },
    )
    .post('/v1/emails', async ({ body, request, set, status }) => status(202, (await send(emailsCall('POST /v1/emails', body, request), set)).body as never), {
      body: EmailSendBody,
      response: { 202: Envelope(EmailQueuedSchema), ...sendErrors },
      detail: requires('transactional.send', 'Send a message to several recipients', {
        tags,
        description: `to, cc and bcc together hold at most 50 addresses. Suppressed recipients are listed and never contacted. ${idempotencyNote}`,
      }),
    })
    .post(
      '/v1/bridge/emails',
      async ({ body, request, set, status }) =>
        status(202, (await send({ ...emailsCall('POST /v1/bridge/emails', body, request), bridgeOnly: true }, set)).body as never),
      {
        body: EmailSendBody,
        response: { 202: Envelope(EmailQueuedSchema), ...sendErrors },
        detail: requires('transactional.send', "Send through a bridge (with the bridge's API key)", {
          tags: [...tags, 'bridges'],
          description:
            "The body and answer of POST /v1/emails. Only a bridge's API key may call it (403 otherwise); the bridge's domains, pool, node, quotas (429 with Retry-After) and IP allowlist apply, and an inactive bridge is refused (403). " +
            idempotencyNote,
        }),
      },
    )
    .post(
      '/api/v2/dynamicTemplate/:template_id',
      async ({ body, params, request, set, status }) => {
        const r = await send(
          {
            request,
            endpoint: `POST /api/v2/dynamicTemplate/${params.template_id}`,
            body,
            inputs: () => {
              const input = { templateId: params.template_id, version: body.version, variables: body.variables ?? {}, to: body.to, from: body.from }
              return [{ ...templateSendInput(deps, input), tags: body.tags, scheduled_at: when(body), ...trackingOf(body) }]
            },
            ctx: { source: 'template', ...routing(body) },
            respond: ([a]) => ({ status: 202, body: ok(queued(a!)) }),
            allowSession: true,
          },
          set,
        )
        return status(202, r.body as { success: true; data: typeof QueuedSchema.static })
      },
      {
        params: t.Object({ template_id: RecordId('Template id.') }),
        body: DynamicTemplateBody,
        response: { 202: Envelope(QueuedSchema), 404: ErrorEnvelope, ...sendErrors },
        detail: requires('transactional.send', 'Send a template to one recipient', {
          tags,
          description: `Renders the template's active version (or \`version\`) with \`variables\` for \`to\` and queues it, from \`from\`, else the version's from, else the default_from setting, with the version's reply_to. ${idempotencyNote}`,
        }),
      },
    )
    .get('/v1/emails/:id', ({ params }) => ok(getMessage(deps, params.id)), {
      params: MessageIdParams,
      response: { 200: Envelope(MessageSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('transactional.read', 'Get a message with its recipients and events', { tags }),
    })
    .get('/api/v2/messages/:id', ({ params }) => ok(getMessage(deps, params.id)), {
      params: MessageIdParams,
      response: { 200: Envelope(MessageSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('transactional.read', 'Get a message with its recipients and events', { tags }),
    })
    .patch(
      '/api/v2/messages/:id',
      async ({ params, body }) => {
        await rescheduleMessage(deps, params.id, body.scheduled_at)
        return ok(getMessage(deps, params.id))
      },
      {
        params: MessageIdParams,
        body: RescheduleBody,
        response: { 200: Envelope(MessageSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
        detail: requires('transactional.send', 'Move a scheduled send to another time', {
          tags,
          description: 'Only while the message is `scheduled` (409 once it is sent or cancelled). See "Scheduled sends" in docs/api.md.',
        }),
      },
    )
    .post(
      '/api/v2/messages/:id/cancel',
      async ({ params }) => {
        await cancelMessage(deps, params.id)
        return ok(getMessage(deps, params.id))
      },
      {
        params: MessageIdParams,
        response: { 200: Envelope(MessageSchema), 404: ErrorEnvelope, 409: ErrorEnvelope, ...commonErrors },
        detail: requires('transactional.send', 'Cancel a scheduled send', {
          tags,
          description: 'Its recipients become `canceled` and nothing is sent. Only while the message is `scheduled` (409 after).',
        }),
      },
    )
}
