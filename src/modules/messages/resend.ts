import { unpackMessage } from '../../lib/stored-message'
import { Elysia, t } from 'elysia'
import addressparser from 'nodemailer/lib/addressparser'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import type { ImportRunner } from '../imports/runner'
import { resendSdkRoutes } from '../resend'
import type { SendInput } from './compose'
import { sendOverHttp } from './http'
import { RESEND_PREFIX, resendError } from './resend-errors'
import { cancelMessage, parseScheduledAt, rescheduleMessage } from './schedule'
import { listMessagesByCursor, messageHeaders } from './search'
import { getMessage, prepareMessages, withTextParts, type AcceptedMessage, type MessageView, type PreparedMessage } from './service'

/**
 * A Resend-compatible surface (https://resend.com/docs/api-reference) under /compat/resend,
 * so an app using the official `resend` SDK switches by setting its base URL:
 * `new Resend(key, { baseUrl: 'https://mail.example.com/compat/resend' })`. Requests and
 * answers have Resend's shapes; the work is done by the same service code as /v1/emails.
 * Mailroom API keys are used as they are (Bearer). docs/api.md lists what is not supported.
 */
export { RESEND_PREFIX, resendErrorDialect } from './resend-errors'

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

/** Resend's ListEmail: what both the list and emails.get show. */
const ResendEmailSummary = {
  id: t.String(),
  message_id: t.String({ description: 'The Message-ID header, with its angle brackets.' }),
  to: t.Array(t.String()),
  from: t.String(),
  created_at: t.String(),
  subject: t.String(),
  cc: t.Array(t.String()),
  bcc: t.Array(t.String()),
  reply_to: t.Nullable(t.Array(t.String())),
  last_event: t.String(),
  scheduled_at: t.Nullable(t.String()),
}

const ResendEmailView = t.Object({
  object: t.Literal('email'),
  ...ResendEmailSummary,
  html: t.Nullable(t.String()),
  text: t.Nullable(t.String()),
  tags: t.Array(t.Object({ name: t.String(), value: t.String() })),
})

const ResendEmailList = t.Object({ object: t.Literal('list'), has_more: t.Boolean(), data: t.Array(t.Object(ResendEmailSummary)) })
const ResendEmailRef = t.Object({ object: t.Literal('email'), id: t.String() })
const EmailIdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64 }) })

const list = (v: string | string[] | undefined) => (v === undefined ? undefined : ([] as string[]).concat(v))

/** Resend request -> our send input; features Mailroom does not have are refused, not ignored. */
function toSendInput(e: ResendEmailBody, now: number, field = ''): SendInput {
  const unsupported = (key: string, why: string) => {
    throw new AppError('validation_failed', `\`${key}\` is not supported: ${why}`, { [`${field}${key}`]: [why] })
  }
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
    scheduled_at: e.scheduled_at === undefined ? null : parseScheduledAt(e.scheduled_at, now, `${field}scheduled_at`),
  }
}

/**
 * Our event kinds -> Resend's `last_event`: the message's latest event that Resend names,
 * engagement (opened, clicked) and complaints included.
 */
const LAST_EVENT: Record<string, string> = {
  'message.queued': 'queued',
  'message.scheduled': 'scheduled',
  'message.canceled': 'canceled',
  'message.sent': 'delivered',
  'message.deferred': 'delivery_delayed',
  'message.delayed': 'delivery_delayed',
  'message.bounced': 'bounced',
  'message.failed': 'failed',
  'message.suppressed': 'suppressed',
  'message.complained': 'complained',
  'message.opened': 'opened',
  'message.clicked': 'clicked',
}

/** Resend's `last_event` for a message. */
function lastEvent(m: MessageView): string {
  for (let i = m.events.length - 1; i >= 0; i--) {
    const name = LAST_EVENT[m.events[i]!.kind]
    if (name) return name
  }
  return m.status === 'scheduled' ? 'scheduled' : 'queued'
}

const storedOf = preparedFor((db) =>
  db.$client.prepare<{ raw: Uint8Array; sent_html: string | null }, [string]>('SELECT raw, sent_html FROM messages WHERE id = ?'),
)

/**
 * "Name <a@b>" when the header gave a display name, else the address: Resend keeps names as
 * sent. A name with specials is quoted again (RFC 5322 section 3.2.3), so the text parses back.
 */
function mailboxText(a: { name?: string; address?: string }): string {
  if (!a.name) return a.address ?? ''
  const name = /[()<>[\]:;@\\,."]/.test(a.name) ? `"${a.name.replace(/(["\\])/g, '\\$1')}"` : a.name
  return `${name} <${a.address}>`
}

/** Resend's ListEmail for a message: addresses as written in its header (display names kept), bcc from the envelope. */
function resendSummary(deps: Deps, m: MessageView) {
  const headers = messageHeaders(deps, m.id)
  const field = (name: string) =>
    headers
      .filter((h) => h.name.toLowerCase() === name)
      .flatMap((h) => addressparser(h.value, { flatten: true }))
      .map(mailboxText)
  const from = field('from')[0] ?? m.from
  const replyTo = field('reply-to')
  return {
    id: m.id,
    message_id: m.message_id_header,
    to: field('to'),
    from,
    created_at: m.created_at,
    subject: m.subject,
    cc: field('cc'),
    bcc: m.recipients.filter((r) => r.kind === 'bcc').map((r) => r.address),
    reply_to: replyTo.length ? replyTo : null,
    last_event: lastEvent(m),
    scheduled_at: m.scheduled_at,
  }
}

async function resendView(deps: Deps, id: string) {
  const m = getMessage(deps, id)
  const stored = storedOf(deps.db).get(id)!
  const raw = unpackMessage(stored.raw)
  // Loaded with the first such read, not with the server: mailparser is about 12 MiB (issue 18).
  const { simpleParser } = await import('mailparser')
  const parsed = await simpleParser(raw)
  // mailparser derives a text body from the HTML when there is none; Resend answers null then.
  const hasTextPart = /^content-type:\s*text\/plain/im.test(raw.toString('latin1'))
  // The HTML as the caller sent it: the tracked copy (pixel, rewritten links) is ours, not theirs.
  const html = stored.sent_html ?? (typeof parsed.html === 'string' ? parsed.html.replace(/\r?\n$/, '') : null)
  return {
    object: 'email' as const,
    ...resendSummary(deps, m),
    // The MIME encoder ends each part with a line break; Resend returns the content as sent.
    html,
    text: hasTextPart && parsed.text !== undefined ? parsed.text.replace(/\r?\n$/, '') : null,
    tags: m.tags.map((tag) => {
      const i = tag.indexOf(':')
      return i < 0 ? { name: tag, value: '' } : { name: tag.slice(0, i), value: tag.slice(i + 1) }
    }),
  }
}

/**
 * `x-batch-validation: permissive` (the SDK's batchValidation): each email is checked on
 * its own, the valid ones are sent and the others listed in `errors` by index; strict (the
 * default) is all or nothing. The text parts of the HTML-only ones are made on the text
 * worker, as for every other API send (withTextParts).
 */
async function preparePermissive(
  deps: Deps,
  inputs: Array<() => SendInput>,
  ctx: Parameters<typeof prepareMessages>[2],
  errors: BatchError[],
): Promise<PreparedMessage[]> {
  const refused = (index: number, e: unknown) => {
    if (!(e instanceof AppError)) throw e
    errors.push({ index, message: resendError({ code: e.code, message: e.message, details: e.details }).message })
  }
  const read: Array<{ index: number; input: SendInput }> = []
  inputs.forEach((input, index) => {
    try {
      read.push({ index, input: input() })
    } catch (e) {
      refused(index, e)
    }
  })
  const texted = await withTextParts(
    deps,
    read.map((r) => r.input),
  )
  const prepared: PreparedMessage[] = []
  texted.forEach((input, i) => {
    try {
      prepared.push(...prepareMessages(deps, [input], ctx))
    } catch (e) {
      refused(read[i]!.index, e)
    }
  })
  errors.sort((a, b) => a.index - b.index)
  return prepared
}
interface BatchError {
  index: number
  message: string
}

/** Resend's list `limit`: 1-100, default 20 (the SDK's PaginationOptions). */
const ListQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, description: 'At most 100; default 20.' })),
  after: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'The emails sent before (older than) this email id.' })),
  before: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'The emails sent after (newer than) this email id.' })),
})

/**
 * The Resend-compatible routes under /compat/resend: emails (send, batch, get, list, update, cancel).
 * `logAnswer` records the access-log line of a request this module answers from its global
 * onRequest hook (the 308 below), which neither the handler hooks nor the error envelope see.
 */
export function resendRoutes(deps: Deps, authOf: AuthOf, imports?: ImportRunner, logAnswer: (request: Request, status: number) => void = () => {}) {
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
    prepare?: (ctx: Parameters<typeof prepareMessages>[2]) => Promise<PreparedMessage[]>,
  ): Promise<R> => {
    const endpoint = `POST ${RESEND_PREFIX}${path}`
    const r = await sendOverHttp(
      deps,
      authOf,
      { request, endpoint, body, inputs, prepare, ctx: { source: 'resend' }, respond: (a) => ({ status: 200, body: respond(a) }) },
      set,
    )
    set.status = r.status
    // A replayed idempotent request answers the stored body, which is what respond made then.
    return r.body as R
  }
  return (
    new Elysia({ prefix: RESEND_PREFIX })
      /**
       * The SDK joins `${baseUrl}${path}`, so a base URL ending in "/" asks for
       * `/compat/resend//emails`. Such a path is sent to its one-slash form with a 308, which
       * keeps the method, body and (same origin) the Authorization header (RFC 9110 15.4.9).
       */
      .onRequest(({ request }) => {
        // Every request passes here (onRequest is global): a string check before any parsing.
        if (!request.url.includes(`${RESEND_PREFIX}/`)) return
        const url = new URL(request.url)
        if (!url.pathname.startsWith(`${RESEND_PREFIX}/`) || !url.pathname.includes('//')) return
        url.pathname = url.pathname.replace(/\/{2,}/g, '/')
        logAnswer(request, 308)
        return new Response(null, { status: 308, headers: { location: url.toString() } })
      })
      .post(
        '/emails',
        (ctx) =>
          send(
            '/emails',
            ctx,
            () => [toSendInput(ctx.body, deps.clock.now())],
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
        (ctx) => {
          const permissive = ctx.request.headers.get('x-batch-validation')?.toLowerCase() === 'permissive'
          const inputs = () => ctx.body.map((e, i) => toSendInput(e, deps.clock.now(), `${i}.`))
          if (!permissive) return send('/emails/batch', ctx, inputs, (accepted) => ({ data: accepted.map(idOnly) }))
          const errors: BatchError[] = []
          return send(
            '/emails/batch (permissive)',
            ctx,
            inputs,
            (accepted) => ({ data: accepted.map(idOnly), errors }),
            (sendCtx) =>
              preparePermissive(
                deps,
                ctx.body.map((e) => () => toSendInput(e, deps.clock.now())),
                sendCtx,
                errors,
              ),
          )
        },
        {
          body: t.Array(ResendEmail, { minItems: 1, maxItems: 100 }),
          response: {
            200: t.Object({
              data: t.Array(t.Object({ id: t.String() })),
              errors: t.Optional(t.Array(t.Object({ index: t.Integer(), message: t.String() }))),
            }),
          },
          detail: requires('transactional.send', 'Send up to 100 emails in one request (Resend-compatible)', {
            tags,
            description:
              'Strict (default): one invalid email fails the whole batch. With the header `x-batch-validation: permissive` the valid emails are sent and `errors` lists the others by index.',
          }),
        },
      )
      .get(
        '/emails',
        ({ query }) => {
          const page = listMessagesByCursor(deps, query)
          return { object: 'list' as const, has_more: page.has_more, data: page.items.map((s) => resendSummary(deps, getMessage(deps, s.id))) }
        },
        {
          query: ListQuery,
          response: { 200: ResendEmailList },
          detail: requires('transactional.read', 'List emails, newest first (Resend-compatible)', {
            tags,
            description: 'Cursor pages: `limit` (1-100, default 20), `after` or `before` an email id; `has_more` says whether the list goes on that way.',
          }),
        },
      )
      .get('/emails/:id', ({ params }) => resendView(deps, params.id), {
        params: EmailIdParams,
        response: { 200: ResendEmailView },
        detail: requires('transactional.read', 'Get an email (Resend-compatible)', { tags }),
      })
      .patch(
        '/emails/:id',
        async ({ params, body }) => {
          await rescheduleMessage(deps, params.id, body.scheduled_at)
          return { object: 'email' as const, id: params.id }
        },
        {
          params: EmailIdParams,
          body: t.Object({ scheduled_at: t.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: true }),
          response: { 200: ResendEmailRef },
          detail: requires('transactional.send', 'Reschedule a scheduled email (Resend-compatible)', { tags }),
        },
      )
      .post(
        '/emails/:id/cancel',
        async ({ params }) => {
          await cancelMessage(deps, params.id)
          return { object: 'email' as const, id: params.id }
        },
        {
          params: EmailIdParams,
          response: { 200: ResendEmailRef },
          detail: requires('transactional.send', 'Cancel a scheduled email (Resend-compatible)', { tags }),
        },
      )
      // Every other Resend method group (src/modules/resend/).
      .use(resendSdkRoutes(deps, authOf, imports))
  )
}
