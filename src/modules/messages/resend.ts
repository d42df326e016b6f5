import { Elysia, t } from 'elysia'
import { simpleParser } from 'mailparser'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import type { ErrorDialect, Failure } from '../../http/envelope'
import { requires } from '../../http/schemas'
import { AppError, ERROR_CODES, type ErrorCode } from '../../lib/errors'
import type { ImportRunner } from '../imports/runner'
import { resendSdkRoutes } from '../resend'
import type { SendInput } from './compose'
import { sendOverHttp } from './http'
import { getMessage, type AcceptedMessage } from './service'

/**
 * A Resend-compatible surface (https://resend.com/docs/api-reference) under /compat/resend,
 * so an app using the official `resend` SDK switches by setting its base URL:
 * `new Resend(key, { baseUrl: 'https://mail.example.com/compat/resend' })`. Requests and
 * answers have Resend's shapes; the work is done by the same service code as /v1/emails.
 * Mailroom API keys are used as they are (Bearer). docs/api.md lists what is not supported.
 */
export const RESEND_PREFIX = '/compat/resend'

/** Resend's error `name` for each of our codes (https://resend.com/docs/api-reference/errors). */
const RESEND_ERROR_NAMES: Partial<Record<ErrorCode, string>> = {
  bad_request: 'validation_error',
  unauthorized: 'invalid_api_key',
  forbidden: 'restricted_api_key',
  ip_not_allowed: 'restricted_api_key',
  not_found: 'not_found',
  payload_too_large: 'validation_error',
  unsupported_media_type: 'validation_error',
  validation_failed: 'validation_error',
  domain_not_verified: 'validation_error',
  idempotency_key_reused: 'invalid_idempotent_request',
  idempotency_in_progress: 'concurrent_idempotent_requests',
  rate_limited: 'rate_limit_exceeded',
  internal: 'internal_server_error',
}

export const resendErrorDialect: ErrorDialect = {
  prefix: `${RESEND_PREFIX}/`,
  format(f: Failure) {
    const name = RESEND_ERROR_NAMES[f.code] ?? 'application_error'
    // Resend puts one message in `message`; field problems are appended so nothing is lost.
    const fields = f.details ? Object.entries(f.details).map(([k, v]) => `${k}: ${v.join('; ')}`) : []
    return { statusCode: ERROR_CODES[f.code], name, message: fields.length ? `${f.message} ${fields.join('. ')}` : f.message }
  },
}

const OneOrMany = t.Union([t.String({ minLength: 1 }), t.Array(t.String({ minLength: 1 }), { maxItems: 50 })])
const Tag = t.Object({ name: t.String({ pattern: '^[A-Za-z0-9_-]{1,256}$' }), value: t.String({ pattern: '^[A-Za-z0-9_-]{0,256}$' }) })

const ResendEmail = t.Object(
  {
    from: t.String({ minLength: 1 }),
    to: OneOrMany,
    subject: t.String(),
    bcc: t.Optional(OneOrMany),
    cc: t.Optional(OneOrMany),
    reply_to: t.Optional(OneOrMany),
    html: t.Optional(t.String()),
    text: t.Optional(t.String()),
    headers: t.Optional(t.Record(t.String(), t.String())),
    attachments: t.Optional(
      t.Array(
        t.Object({
          content: t.Optional(t.String()),
          filename: t.Optional(t.String()),
          path: t.Optional(t.String()),
          content_type: t.Optional(t.String()),
          content_id: t.Optional(t.String()),
        }),
        { maxItems: 20 },
      ),
    ),
    tags: t.Optional(t.Array(Tag, { maxItems: 20 })),
    scheduled_at: t.Optional(t.String()),
    template: t.Optional(t.Unknown()),
    topic_id: t.Optional(t.String()),
  },
  { additionalProperties: true },
)
type ResendEmailBody = typeof ResendEmail.static

const ResendEmailView = t.Object({
  object: t.Literal('email'),
  id: t.String(),
  to: t.Array(t.String()),
  from: t.String(),
  created_at: t.String(),
  subject: t.String(),
  html: t.Nullable(t.String()),
  text: t.Nullable(t.String()),
  cc: t.Array(t.String()),
  bcc: t.Array(t.String()),
  reply_to: t.Nullable(t.Array(t.String())),
  last_event: t.String(),
  scheduled_at: t.Null(),
  tags: t.Array(t.Object({ name: t.String(), value: t.String() })),
})

const list = (v: string | string[] | undefined) => (v === undefined ? undefined : ([] as string[]).concat(v))

/** Resend request -> our send input; features Mailroom does not have are refused, not ignored. */
function toSendInput(e: ResendEmailBody, field = ''): SendInput {
  const unsupported = (key: string, why: string) => {
    throw new AppError('validation_failed', `\`${key}\` is not supported: ${why}`, { [`${field}${key}`]: [why] })
  }
  if (e.scheduled_at !== undefined) unsupported('scheduled_at', 'scheduled sending is not available; send at the time wanted')
  if (e.template !== undefined) unsupported('template', 'use POST /api/v2/dynamicTemplate/{template_id}')
  if (e.topic_id !== undefined) unsupported('topic_id', 'topics are not available')
  e.attachments?.forEach((a, i) => {
    if (a.path !== undefined) unsupported(`attachments.${i}.path`, 'send the file as base64 `content`; Mailroom does not fetch URLs')
    if (a.content_id !== undefined) unsupported(`attachments.${i}.content_id`, 'inline (cid) attachments are not available')
  })
  return {
    from: e.from,
    to: list(e.to)!,
    cc: list(e.cc),
    bcc: list(e.bcc),
    reply_to: list(e.reply_to),
    subject: e.subject,
    html: e.html,
    text: e.text,
    headers: e.headers,
    attachments: e.attachments?.map((a) => ({ filename: a.filename ?? 'attachment', content: a.content ?? '', content_type: a.content_type })),
    tags: e.tags?.map((tag) => `${tag.name}:${tag.value}`),
  }
}

/** Our message state -> Resend's `last_event`. */
const LAST_EVENT: Record<string, string> = {
  queued: 'queued',
  sending: 'queued',
  deferred: 'delivery_delayed',
  sent: 'delivered',
  bounced: 'bounced',
  failed: 'failed',
  suppressed: 'suppressed',
}

const rawOf = preparedFor((db) => db.$client.prepare<{ raw: Uint8Array }, [string]>('SELECT raw FROM messages WHERE id = ?'))

async function resendView(deps: Deps, id: string) {
  const m = getMessage(deps, id)
  // bun:sqlite returns BLOBs as Uint8Array; mailparser wants a Buffer.
  const raw = Buffer.from(rawOf(deps.db).get(id)!.raw)
  const parsed = await simpleParser(raw)
  // mailparser derives a text body from the HTML when there is none; Resend answers null then.
  const hasTextPart = /^content-type:\s*text\/plain/im.test(raw.toString('latin1'))
  const sender = parsed.from?.value[0]
  const addresses = (kind: string) => m.recipients.filter((r) => r.kind === kind).map((r) => r.address)
  const replyTo = parsed.replyTo?.value.map((a) => a.address ?? '').filter(Boolean) ?? []
  return {
    object: 'email' as const,
    id: m.id,
    to: addresses('to'),
    from: sender?.name ? `${sender.name} <${sender.address}>` : m.from,
    created_at: m.created_at,
    subject: m.subject,
    // The MIME encoder ends each part with a line break; Resend returns the content as sent.
    html: typeof parsed.html === 'string' ? parsed.html.replace(/\r?\n$/, '') : null,
    text: hasTextPart && parsed.text !== undefined ? parsed.text.replace(/\r?\n$/, '') : null,
    cc: addresses('cc'),
    bcc: addresses('bcc'),
    reply_to: replyTo.length ? replyTo : null,
    last_event: LAST_EVENT[m.status] ?? m.status,
    scheduled_at: null,
    tags: m.tags.map((tag) => {
      const i = tag.indexOf(':')
      return i < 0 ? { name: tag, value: '' } : { name: tag.slice(0, i), value: tag.slice(i + 1) }
    }),
  }
}

export function resendRoutes(deps: Deps, authOf: AuthOf, imports?: ImportRunner) {
  const tags = ['resend-compatible']
  const idOnly = (a: AcceptedMessage) => ({ id: a.id })
  /**
   * Both send routes: accept through the one accept service, answer 200 as Resend does. The
   * idempotency endpoint is the route's method and full path (`POST /compat/resend/emails`).
   */
  const send = async <B, R>(
    path: string,
    { body, request, set }: { body: B; request: Request; set: { status?: number | string; headers: Record<string, string | number> } },
    inputs: () => SendInput[],
    respond: (accepted: AcceptedMessage[]) => R,
  ): Promise<R> => {
    const endpoint = `POST ${RESEND_PREFIX}${path}`
    const r = await sendOverHttp(
      deps,
      authOf,
      { request, endpoint, body, inputs, ctx: { source: 'resend' }, respond: (a) => ({ status: 200, body: respond(a) }) },
      set,
    )
    set.status = r.status
    // A replayed idempotent request answers the stored body, which is what respond made then.
    return r.body as R
  }
  return new Elysia({ prefix: RESEND_PREFIX })
    .use(resendSdkRoutes(deps, authOf, imports))
    .post(
      '/emails',
      (ctx) =>
        send(
          '/emails',
          ctx,
          () => [toSendInput(ctx.body)],
          ([a]) => idOnly(a!),
        ),
      {
        body: ResendEmail,
        response: { 200: t.Object({ id: t.String() }) },
        detail: requires('transactional.send', 'Send an email (Resend-compatible)', { tags }),
      },
    )
    .post(
      '/emails/batch',
      (ctx) =>
        send(
          '/emails/batch',
          ctx,
          () => ctx.body.map((e, i) => toSendInput(e, `${i}.`)),
          (accepted) => ({ data: accepted.map(idOnly) }),
        ),
      {
        body: t.Array(ResendEmail, { minItems: 1, maxItems: 100 }),
        response: { 200: t.Object({ data: t.Array(t.Object({ id: t.String() })) }) },
        detail: requires('transactional.send', 'Send up to 100 emails in one request (Resend-compatible)', {
          tags,
          description: 'All or nothing: one invalid email fails the whole batch (Resend\'s "strict" validation).',
        }),
      },
    )
    .get('/emails/:id', ({ params }) => resendView(deps, params.id), {
      params: t.Object({ id: t.String({ minLength: 1, maxLength: 64 }) }),
      response: { 200: ResendEmailView },
      detail: requires('transactional.read', 'Get an email (Resend-compatible)', { tags }),
    })
}
