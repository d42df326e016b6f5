import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { commonErrors, Envelope, ErrorEnvelope, ok, PageMetaSchema, PageQuery, requires } from '../../http/schemas'
import { MessageHeaderSchema, MessageIdParams, MessageSearchQuery, MessageSummarySchema } from './model'
import { listMessagesByCursor, messageHeaders, rawMessage, SEARCH_COUNT_CAP, searchMessages } from './search'

const tags = ['sending']

/** Cursor pages say whether more follow and carry the cursors for the next and previous page. */
const CursorMetaSchema = t.Object({
  per_page: t.Integer(),
  has_more: t.Boolean({ description: 'More messages follow in the direction read (older for after, newer for before).' }),
  after: t.Nullable(t.String({ description: 'Pass as `after` for the next (older) page; null on an empty page.' })),
  before: t.Nullable(t.String({ description: 'Pass as `before` for the previous (newer) page; null on an empty page.' })),
})

/** GET /api/v2/messages (search), GET /api/v2/messages/{id}/raw and /headers: the console's Messages page (issue 14). */
export function messageReadRoutes(deps: Deps) {
  return new Elysia()
    .get(
      '/api/v2/messages',
      ({ query }) => {
        if (query.after === undefined && query.before === undefined) {
          const page = searchMessages(deps, query)
          return { success: true as const, data: page.items, meta: page.meta }
        }
        const per_page = query.per_page ?? 25
        const page = listMessagesByCursor(deps, { ...query, limit: per_page })
        const after = page.items.at(-1)?.id ?? null
        const before = page.items[0]?.id ?? null
        return { success: true as const, data: page.items, meta: { per_page, has_more: page.has_more, after, before } }
      },
      {
        query: t.Object({ ...PageQuery, ...MessageSearchQuery }),
        response: {
          200: t.Object({ success: t.Literal(true), data: t.Array(MessageSummarySchema), meta: t.Union([PageMetaSchema, CursorMetaSchema]) }),
          ...commonErrors,
        },
        detail: requires('transactional.read', 'List and search messages', {
          tags,
          description: `Newest first. Filters combine. By page (\`page\`, \`per_page\`; \`meta.total\` counts at most ${SEARCH_COUNT_CAP.toLocaleString('en-US')} matches: narrow the search past that) or by cursor (\`after\` or \`before\` a message id, \`per_page\`; \`meta.has_more\` and the next cursors, no total).`,
        }),
      },
    )
    .get('/api/v2/messages/:id/headers', ({ params }) => ok(messageHeaders(deps, params.id)), {
      params: MessageIdParams,
      response: { 200: Envelope(t.Array(MessageHeaderSchema)), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('transactional.read', "A message's header fields as accepted", {
        tags,
        description: 'In order, values unfolded and encoded words decoded; the headers added at delivery (DKIM-Signature, Received) are not included.',
      }),
    })
    .get(
      '/api/v2/messages/:id/raw',
      ({ params }) =>
        new Response(rawMessage(deps, params.id), {
          headers: {
            'content-type': 'message/rfc822',
            // The id is a UUID (checked by the lookup), so it is safe in the header as is.
            'content-disposition': `attachment; filename="${params.id.replace(/[^A-Za-z0-9-]/g, '')}.eml"`,
          },
        }),
      {
        params: MessageIdParams,
        response: { 200: t.String({ description: 'The message as accepted (RFC 5322), before DKIM signing.' }), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('transactional.read', 'Download a message as it was accepted (.eml)', { tags }),
      },
    )
}
