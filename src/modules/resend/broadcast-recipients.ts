import { and, eq, inArray, or } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { broadcastRecipients } from '../../db/schema'
import type { Deps } from '../../deps'
import { enumOf, requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import { broadcastLinkClicks, getBroadcast } from '../broadcasts/service'
import { cursorPage, decodeId, encodeId, ListOf, PaginationQuery, type Pagination } from './ids'
import { BOUNCE_TYPES, engagementOf, existingContacts, RECIPIENT_TYPES, recipientTypeWhere } from './queries'
import { refuse } from './shapes'

/**
 * resend.broadcasts.recipients and .clickedLinks: reports over a broadcast's native recipient
 * rows (broadcast_recipients: state, first open, first click) and the events of their
 * messages; the per-link figures are the native stats' own query (broadcastLinkClicks).
 */

const ClickedLink = t.Object({ url: t.String(), clicks: t.Integer() })
const Recipient = t.Object({
  id: t.String(),
  contact_id: t.Union([t.String(), t.Null()]),
  email: t.String(),
  count: t.Optional(t.Integer()),
  clicked_links: t.Optional(t.Array(ClickedLink)),
  bounce_type: t.Optional(enumOf(BOUNCE_TYPES)),
})
const LinkRow = t.Object({ id: t.String(), url: t.String(), clicks: t.Integer(), unique_clicks: t.Integer() })

const RecipientsQuery = t.Object({
  ...PaginationQuery.properties,
  type: enumOf(RECIPIENT_TYPES),
  email: t.Optional(t.String({ minLength: 1, description: 'Only this recipient address.' })),
  bounce_type: t.Optional(enumOf(BOUNCE_TYPES)),
})

/** The native broadcast id behind a Resend id; not_found in Resend's words. */
function broadcastIdOf(deps: Deps, id: string): number {
  const n = decodeId('broadcast', id)
  try {
    return getBroadcast(deps, n).id
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw new AppError('not_found', 'Broadcast not found.')
    throw e
  }
}

/**
 * One page of links by clicks. A link has no id of its own (Resend's cursor is "opaque"):
 * the cursor is the link's rank in the list, so a page read while clicks arrive may repeat
 * or skip a link whose rank moved, as offset pages do.
 */
function linkPage(deps: Deps, broadcastId: number, q: Pagination) {
  if (q.after !== undefined && q.before !== undefined)
    throw new AppError('validation_failed', 'Use `after` or `before`, not both.', { before: ['cannot be used with after'] })
  const limit = q.limit ?? 20
  let offset = 0
  let take = limit + 1
  if (q.after !== undefined) offset = decodeId('clicked_link', q.after, 'clicked link')
  else if (q.before !== undefined) {
    const rank = decodeId('clicked_link', q.before, 'clicked link')
    offset = Math.max(0, rank - 1 - limit)
    take = rank - 1 - offset
  }
  const rows = take > 0 ? broadcastLinkClicks(deps, broadcastId, take, offset) : []
  const page = rows.slice(0, limit)
  const has_more = q.before !== undefined ? offset > 0 : rows.length > limit
  return {
    has_more,
    data: page.map((l, i) => ({ id: encodeId('clicked_link', offset + i + 1), url: l.url, clicks: l.clicks, unique_clicks: l.unique_clicks })),
  }
}

/** /compat/resend/broadcasts/{id}/recipients and /clicked-links */
export function broadcastRecipientRoutes(deps: Deps) {
  const tags = ['resend-compatible']
  return new Elysia()
    .get(
      '/broadcasts/:id/recipients',
      ({ params, query }) => {
        const broadcastId = broadcastIdOf(deps, params.id)
        if (query.bounce_type !== undefined && query.type !== 'bounced') refuse('bounce_type', 'only with `type=bounced`')
        const r = broadcastRecipients
        const email = query.email?.trim()
        const where = and(
          eq(r.broadcast_id, broadcastId),
          recipientTypeWhere(query.type, query.bounce_type),
          email === undefined ? undefined : or(eq(r.email, email), eq(r.email, email.toLowerCase())),
        )
        const page = cursorPage(deps.db, r, 'broadcast_recipient', query, where)
        const rows = page.ids.length ? deps.db.select().from(r).where(inArray(r.id, page.ids)).all() : []
        const byId = new Map(rows.map((x) => [x.id, x]))
        const list = page.ids.map((i) => byId.get(i)!)
        const alive = existingContacts(
          deps.db,
          list.map((x) => x.contact_id),
        )
        const engagement =
          query.type === 'opened' || query.type === 'clicked'
            ? engagementOf(
                deps.db,
                list.flatMap((x) => (x.message_id ? [x.message_id] : [])),
              )
            : null
        const data = list.map((x) => {
          const base = {
            id: encodeId('broadcast_recipient', x.id),
            contact_id: alive.has(x.contact_id) ? encodeId('contact', x.contact_id) : null,
            email: x.email,
          }
          const e = x.message_id ? engagement?.get(x.message_id) : undefined
          const links = [...(e?.links ?? new Map<string, number>())]
            .map(([url, clicks]) => ({ url, clicks }))
            .sort((a, b) => b.clicks - a.clicks || a.url.localeCompare(b.url))
          switch (query.type) {
            // A click proves an open (the row's opened_at says so natively), so a recipient listed as opened has at least one.
            case 'opened':
              return { ...base, count: Math.max(1, e?.opens ?? 0) }
            case 'clicked':
              return {
                ...base,
                count: Math.max(
                  1,
                  links.reduce((n, l) => n + l.clicks, 0),
                ),
                clicked_links: links,
              }
            case 'bounced':
              return { ...base, bounce_type: x.state === 'bounced' ? ('permanent' as const) : ('transient' as const) }
            default:
              return base
          }
        })
        return { object: 'list' as const, has_more: page.has_more, data }
      },
      {
        query: RecipientsQuery,
        response: { 200: ListOf(Recipient) },
        detail: requires('broadcasts.read', "List a broadcast's recipients by event (Resend-compatible)", {
          tags,
          description:
            '`type`: sent (accepted by the receiving server, or bounced after), delivered (accepted), opened and clicked (with counts and links), bounced (`bounce_type` permanent or transient), complained, unsubscribed, suppressed (skipped for a suppression). Newest recipient first.',
        }),
      },
    )
    .get('/broadcasts/:id/clicked-links', ({ params, query }) => ({ object: 'list' as const, ...linkPage(deps, broadcastIdOf(deps, params.id), query) }), {
      query: PaginationQuery,
      response: { 200: ListOf(LinkRow) },
      detail: requires('broadcasts.read', "A broadcast's clicked links (Resend-compatible)", {
        tags,
        description: 'Most clicked first; `unique_clicks` counts recipients. `id` is an opaque cursor (the rank).',
      }),
    })
}
