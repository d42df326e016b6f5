import { Elysia, t } from 'elysia'
import { broadcasts } from '../../db/schema'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import { parseScheduledAt } from '../messages/schedule'
import { grants } from '../permissions/service'
import type { BroadcastView, UpdateBroadcastInput } from '../broadcasts/model'
import {
  cancelBroadcast,
  createBroadcast,
  deleteBroadcasts,
  duplicateBroadcast,
  getBroadcast,
  pauseBroadcast,
  scheduleBroadcast,
  updateBroadcast,
} from '../broadcasts/service'
import { translateResendVariables } from './content-variables'
import { cursorPage, decodeId, encodeId, ListOf, PaginationQuery } from './ids'
import { segmentList } from './segments'
import { deleted, refuse } from './shapes'

/**
 * resend.broadcasts onto Mailroom's broadcasts (issue 15): every call is one of the native
 * service's operations. A Resend segment is a list (segments.ts), so `segment_id` (or the
 * deprecated `audience_id`) becomes `list_ids: [that list]`. Resend's `send` is the native
 * schedule (omitted time = now); its `cancel` of a broadcast that has not started is the
 * native pause (which keeps it editable and sendable again, as Resend's draft is), and of a
 * running one the native cancel.
 */

/**
 * Resend's statuses (https://resend.com/docs/dashboard/broadcasts/manage-broadcasts):
 * draft, scheduled (waiting for a later time), queued (due or sending), sent, canceled,
 * failed. A broadcast paused before it started reads as a draft (it is one: editable, and
 * `send` schedules it again); one paused mid-send keeps Mailroom's word, `paused`, since
 * Resend has no such state and calling it queued would say mail is going out.
 */
function statusOf(v: BroadcastView, now: number): string {
  switch (v.status) {
    case 'draft':
      return 'draft'
    case 'scheduled':
      return v.send_at !== null && Date.parse(v.send_at) > now ? 'scheduled' : 'queued'
    case 'preparing':
    case 'sending':
      return 'queued'
    case 'paused':
      return v.started_at === null && v.counts.total === 0 ? 'draft' : 'paused'
    case 'cancelled':
      return 'canceled'
    default:
      return v.status
  }
}

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])
const Item = t.Object({
  id: t.String(),
  name: t.String(),
  audience_id: Nullable(t.String()),
  segment_id: Nullable(t.String()),
  status: t.String(),
  created_at: t.String(),
  scheduled_at: Nullable(t.String()),
  sent_at: Nullable(t.String()),
})
const Full = t.Composite([
  t.Object({ object: t.Literal('broadcast') }),
  Item,
  t.Object({
    from: Nullable(t.String()),
    subject: Nullable(t.String()),
    reply_to: Nullable(t.Array(t.String())),
    preview_text: t.Null(),
    topic_id: t.Null(),
    html: Nullable(t.String()),
    text: Nullable(t.String()),
  }),
])
const Ack = t.Object({ object: t.Literal('broadcast'), id: t.String() })
const IdOnly = t.Object({ id: t.String() })

const Content = {
  name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
  segment_id: t.Optional(t.String()),
  audience_id: t.Optional(t.String()),
  from: t.Optional(t.String({ minLength: 1 })),
  subject: t.Optional(t.String({ minLength: 1 })),
  html: t.Optional(t.String()),
  text: t.Optional(t.String()),
  reply_to: t.Optional(t.Union([t.String(), t.Array(t.String())])),
  preview_text: t.Optional(Nullable(t.String())),
  topic_id: t.Optional(Nullable(t.String())),
}
type ContentBody = { [K in keyof typeof Content]?: (typeof Content)[K]['static'] }

/** Resend's fields -> the native create/update fields; what Mailroom cannot keep is refused by name. */
function fieldsOf(deps: Deps, b: ContentBody): UpdateBroadcastInput {
  if (b.preview_text) refuse('preview_text', 'broadcasts have no separate preview text; put a hidden preheader at the top of html')
  if (b.topic_id) refuse('topic_id', 'Mailroom has no topics; unsubscribes apply per list')
  const replyTo = b.reply_to === undefined ? undefined : ([] as string[]).concat(b.reply_to)
  if (replyTo && replyTo.length > 1) refuse('reply_to', 'a broadcast has one Reply-To address')
  const segment = b.segment_id ?? b.audience_id
  const out: UpdateBroadcastInput = {}
  if (b.name !== undefined) out.name = b.name
  if (b.from !== undefined) out.from = b.from
  // Resend's {{{FIRST_NAME|fallback}}} and friends become the native variables (content-variables.ts).
  if (b.subject !== undefined) out.subject = translateResendVariables(b.subject, 'subject')
  if (b.html !== undefined) out.html = translateResendVariables(b.html, 'html')
  if (b.text !== undefined) out.text = translateResendVariables(b.text, 'text')
  if (replyTo !== undefined) out.reply_to = replyTo[0] ?? null
  if (segment !== undefined) out.list_ids = [segmentList(deps, segment)]
  return out
}

/**
 * `scheduled_at` for the native schedule: read as a scheduled email's is (ISO 8601 with an
 * offset, or Resend's phrases such as "in 2 days"; at most 30 days ahead); undefined = now.
 */
function sendAtOf(deps: Deps, text: string | undefined): string | undefined {
  if (text === undefined) return undefined
  const at = parseScheduledAt(text, deps.clock.now())
  return at === null ? undefined : new Date(at).toISOString()
}

/** A native broadcast as Resend's list shows one. */
function itemOf(v: BroadcastView, now: number) {
  // A Resend broadcast has one segment; Mailroom's may name several lists: the first stands for them.
  const segment = v.list_ids.length ? encodeId('segment', v.list_ids[0]!) : null
  return {
    id: encodeId('broadcast', v.id),
    name: v.name,
    audience_id: segment,
    segment_id: segment,
    status: statusOf(v, now),
    created_at: v.created_at,
    scheduled_at: v.send_at,
    sent_at: v.started_at,
  }
}

/** A native broadcast as Resend's get shows one. */
function fullOf(v: BroadcastView, now: number) {
  return {
    object: 'broadcast' as const,
    ...itemOf(v, now),
    from: v.from,
    subject: v.subject,
    reply_to: v.reply_to === null ? null : [v.reply_to],
    preview_text: null,
    topic_id: null,
    html: v.html,
    text: v.text,
  }
}

/** The native broadcast behind a Resend id; not_found (in Resend's words) when there is none. */
function broadcastOf(deps: Deps, id: string): BroadcastView {
  const n = decodeId('broadcast', id)
  try {
    return getBroadcast(deps, n)
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw new AppError('not_found', 'Broadcast not found.')
    throw e
  }
}

/** /compat/resend/broadcasts */
export function broadcastRoutes(deps: Deps, authOf: AuthOf) {
  const tags = ['resend-compatible']
  const actorOf = (request: Request) => authOf(request).actor.name
  return new Elysia()
    .post(
      '/broadcasts',
      ({ body, request }) => {
        // Sending is its own permission natively; create-and-send needs it as the send route does.
        if (body.send && !grants(authOf(request).actor.permissions, 'broadcasts.send'))
          throw new AppError('forbidden', "The API key's role does not grant the broadcasts.send permission (needed with `send: true`).")
        if (body.scheduled_at !== undefined && body.send !== true) refuse('scheduled_at', 'needs `send: true`')
        const sendAt = body.send ? sendAtOf(deps, body.scheduled_at) : undefined
        const fields = fieldsOf(deps, body)
        if (body.send && !fields.list_ids)
          throw new AppError('validation_failed', 'A broadcast sent at once needs `segment_id`.', { segment_id: ['is required with send'] })
        // Resend names a broadcast after nothing when no name is given; Mailroom needs one: the subject.
        const created = createBroadcast(deps, {
          ...fields,
          name: body.name ?? body.subject.slice(0, 200),
          from: body.from,
          subject: translateResendVariables(body.subject, 'subject'),
        })
        if (body.send) {
          try {
            scheduleBroadcast(deps, created.id, sendAt)
          } catch (e) {
            // Create-and-send is one request: a broadcast that cannot be sent is not left behind as a draft.
            deleteBroadcasts(deps, [created.id])
            throw e
          }
        }
        return { id: encodeId('broadcast', created.id) }
      },
      {
        body: t.Object({
          ...Content,
          from: t.String({ minLength: 1 }),
          subject: t.String({ minLength: 1, maxLength: 998 }),
          send: t.Optional(t.Boolean()),
          scheduled_at: t.Optional(t.String()),
        }),
        response: { 200: IdOnly },
        detail: requires('broadcasts.create', 'Create a broadcast, optionally sending or scheduling it (Resend-compatible)', {
          tags,
          description: '`send: true` (with an optional `scheduled_at`, read as for emails) schedules it at once and needs the broadcasts.send permission too.',
        }),
      },
    )
    .get(
      '/broadcasts',
      ({ query }) => {
        const page = cursorPage(deps.db, broadcasts, 'broadcast', query)
        const now = deps.clock.now()
        return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((i) => itemOf(getBroadcast(deps, i), now)) }
      },
      { query: PaginationQuery, response: { 200: ListOf(Item) }, detail: requires('broadcasts.read', 'List broadcasts (Resend-compatible)', { tags }) },
    )
    .get('/broadcasts/:id', ({ params }) => fullOf(broadcastOf(deps, params.id), deps.clock.now()), {
      response: { 200: Full },
      detail: requires('broadcasts.read', 'Get a broadcast (Resend-compatible)', { tags }),
    })
    .patch(
      '/broadcasts/:id',
      ({ params, body }) => {
        updateBroadcast(deps, broadcastOf(deps, params.id).id, fieldsOf(deps, body))
        return { id: params.id }
      },
      {
        body: t.Object(Content),
        response: { 200: IdOnly },
        detail: requires('broadcasts.update', 'Update a broadcast (Resend-compatible)', {
          tags,
          description: 'While it is a draft, scheduled or paused; otherwise 409.',
        }),
      },
    )
    .post(
      '/broadcasts/:id/send',
      ({ params, body }) => {
        scheduleBroadcast(deps, broadcastOf(deps, params.id).id, sendAtOf(deps, body?.scheduled_at))
        return { id: params.id }
      },
      {
        body: t.Optional(t.Object({ scheduled_at: t.Optional(t.String()) })),
        response: { 200: IdOnly },
        detail: requires('broadcasts.send', 'Send or schedule a broadcast (Resend-compatible)', {
          tags,
          description: '`scheduled_at` (ISO 8601, or a phrase such as "in 2 days" as for emails) omitted or past = now. Only a draft (409 otherwise).',
        }),
      },
    )
    .post(
      '/broadcasts/:id/cancel',
      ({ params, request }) => {
        const v = broadcastOf(deps, params.id)
        // Resend: scheduled (for later) -> draft (nothing sent, can be sent again); queued (due or sending) -> canceled.
        if (statusOf(v, deps.clock.now()) === 'scheduled') pauseBroadcast(deps, v.id, actorOf(request))
        else cancelBroadcast(deps, v.id, actorOf(request))
        return { object: 'broadcast' as const, id: params.id }
      },
      {
        response: { 200: Ack },
        detail: requires('broadcasts.send', 'Cancel a broadcast (Resend-compatible)', {
          tags,
          description: 'A scheduled broadcast goes back to a draft (natively: paused before it started); a running one is cancelled.',
        }),
      },
    )
    .post(
      '/broadcasts/:id/duplicate',
      ({ params }) => ({ object: 'broadcast' as const, id: encodeId('broadcast', duplicateBroadcast(deps, broadcastOf(deps, params.id).id).id) }),
      { response: { 200: Ack }, detail: requires('broadcasts.create', 'Duplicate a broadcast as a draft (Resend-compatible)', { tags }) },
    )
    .delete(
      '/broadcasts/:id',
      ({ params }) => {
        deleteBroadcasts(deps, [broadcastOf(deps, params.id).id])
        return deleted('broadcast', params.id)
      },
      {
        response: { 200: t.Composite([Ack, t.Object({ deleted: t.Boolean() })]) },
        detail: requires('broadcasts.delete', 'Remove a broadcast (Resend-compatible)', {
          tags,
          description: 'With its recipients and counters; a broadcast that is sending answers 409 (cancel it first).',
        }),
      },
    )
}
