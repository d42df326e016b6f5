import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { commonErrors, Envelope, ErrorEnvelope, ok, requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import { bridgeForApiKey, checkBridgeActive, checkBridgeSender } from '../bridges/identity'
import { BridgeQuotaError } from '../bridges/quotas'
import { templateSendInput } from '../templates/service'
import { simpleSendBody, type SendInput } from './compose'
import { beginIdempotent, IDEMPOTENCY_HEADER, type StoredResponse } from './idempotency'
import { DynamicTemplateBody, EmailQueuedSchema, EmailSendBody, MessageIdParams, MessageSchema, QueuedSchema, SimpleSendBody } from './model'
import { acceptMessages, getMessage, type AcceptContext, type AcceptedMessage, type SendingRuntime } from './service'

const tags = ['sending']
const sendErrors = { ...commonErrors, 409: ErrorEnvelope }
const idempotencyNote = 'Send an `Idempotency-Key` header (1-256 characters) to make retries safe: see "Idempotency" in docs/api.md.'

export interface SendCall {
  request: Request
  endpoint: string
  body: unknown
  inputs: () => SendInput[] | Promise<SendInput[]>
  ctx: Omit<AcceptContext, 'apiKeyId' | 'bridgeId'>
  respond: (accepted: AcceptedMessage[]) => StoredResponse
  /** Only a bridge's API key may call (POST /v1/bridge/emails). */
  bridgeOnly?: boolean
}

/**
 * The one path every HTTP send endpoint takes (the Resend-compatible routes too):
 * idempotency first, then accept-and-commit, then the stored or fresh response.
 * A bridge's API key is held to its bridge on every one of them (active, its From domains,
 * its pool and node, its quotas), so a bridge key cannot escape its rules by calling
 * /v1/emails instead of /v1/bridge/emails.
 */
export async function sendThroughApi(deps: Deps, runtime: SendingRuntime, authOf: AuthOf, call: SendCall): Promise<StoredResponse & { replayed: boolean }> {
  const auth = authOf(call.request)
  // A send is recorded in its message row (api_key_id, source) and events, not also as an
  // activity-log row: that would be a second write, with its own fsync, per message.
  auth.logged = true
  const apiKeyId = auth.key.id
  const bridge = bridgeForApiKey(deps, apiKeyId)
  if (call.bridgeOnly && !bridge)
    throw new AppError('forbidden', 'This endpoint is for bridge API keys; this key belongs to no bridge. Use POST /v1/emails, or the API key of a bridge.')
  if (bridge) checkBridgeActive(bridge)
  const start = beginIdempotent(deps, call.request.headers.get(IDEMPOTENCY_HEADER), apiKeyId, call.endpoint, call.body)
  if (start.kind === 'replay') return { ...start.response, replayed: true }
  const claim = start.kind === 'claimed' ? start.claim : null
  try {
    const inputs = await call.inputs()
    // The bridge's pool and node win over the request's (docs/api.md "Bridges").
    const ctx: AcceptContext = bridge
      ? {
          ...call.ctx,
          apiKeyId,
          bridgeId: bridge.id,
          bridgeTracking: bridge.tracking,
          poolId: bridge.pool_id ?? call.ctx.poolId,
          nodeId: bridge.node_id ?? call.ctx.nodeId,
        }
      : { ...call.ctx, apiKeyId }
    if (bridge) for (const input of inputs) checkBridgeSender(bridge, input.from)
    const { accepted, response } = await acceptMessages(deps, runtime, inputs, ctx, claim ? { claim, respond: call.respond } : undefined)
    return { ...(response ?? call.respond(accepted)), replayed: false }
  } finally {
    claim?.release()
  }
}

/** sendThroughApi plus its response headers: `Idempotent-Replayed` on a replay, `Retry-After` when a bridge quota is used up. */
export async function sendWithHeaders(
  deps: Deps,
  runtime: SendingRuntime,
  authOf: AuthOf,
  call: SendCall,
  set: { headers: Record<string, string | number> },
): Promise<StoredResponse & { replayed: boolean }> {
  try {
    const result = await sendThroughApi(deps, runtime, authOf, call)
    if (result.replayed) set.headers['idempotent-replayed'] = 'true'
    return result
  } catch (e) {
    // A bridge quota is used up: say when to come back (RFC 9110 section 10.2.3).
    if (e instanceof BridgeQuotaError) set.headers['retry-after'] = String(Math.max(1, Math.ceil((e.resets_at - deps.clock.now()) / 1000)))
    throw e
  }
}

const queued = (a: AcceptedMessage) => ({ id: a.id, status: a.status })
const trackingOf = (b: { track_opens?: boolean; track_clicks?: boolean; list_unsubscribe?: boolean }) => ({
  track_opens: b.track_opens,
  track_clicks: b.track_clicks,
  list_unsubscribe: b.list_unsubscribe,
})

/** /v1/send, /v1/emails, /api/v2/dynamicTemplate/{id} and message reads. */
export function messageRoutes(deps: Deps, runtime: SendingRuntime, authOf: AuthOf) {
  const send = (call: SendCall, set: { headers: Record<string, string | number> }) => sendWithHeaders(deps, runtime, authOf, call, set)
  const routing = (b: { ip_pool_id?: number; sending_node_id?: number }) => ({ poolId: b.ip_pool_id ?? null, nodeId: b.sending_node_id ?? null })
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
            inputs: () => [{ from: body.from, to: [body.to], subject: body.subject, ...simpleSendBody(body), ...trackingOf(body) }],
            ctx: { source: 'api', ...routing(body) },
            respond: ([a]) => ({ status: 202, body: ok(queued(a!)) }),
          },
          set,
        )
        return status(202, r.body as { success: true; data: { id: string; status: 'queued' } })
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
              return [{ ...templateSendInput(deps, input), tags: body.tags, ...trackingOf(body) }]
            },
            ctx: { source: 'template', ...routing(body) },
            respond: ([a]) => ({ status: 202, body: ok(queued(a!)) }),
          },
          set,
        )
        return status(202, r.body as { success: true; data: { id: string; status: 'queued' } })
      },
      {
        params: t.Object({ template_id: t.Integer({ minimum: 1 }) }),
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
}
