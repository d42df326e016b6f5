import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { commonErrors, Envelope, ErrorEnvelope, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import { MessageHeaderSchema, MessageIdParams, MessageSearchQuery, MessageSummarySchema } from './model'
import { messageHeaders, rawMessage, SEARCH_COUNT_CAP, searchMessages } from './search'

const tags = ['sending']

/** GET /api/v2/messages (search), GET /api/v2/messages/{id}/raw and /headers: the console's Messages page (issue 14). */
export function messageReadRoutes(deps: Deps) {
  return new Elysia()
    .get('/api/v2/messages', ({ query }) => okPage(searchMessages(deps, query)), {
      query: t.Object({ ...PageQuery, ...MessageSearchQuery }),
      response: { 200: Paged(MessageSummarySchema), ...commonErrors },
      detail: requires('transactional.read', 'Search messages', {
        tags,
        description: `Newest first. Filters combine. \`meta.total\` counts at most ${SEARCH_COUNT_CAP.toLocaleString('en-US')} matches: narrow the search past that.`,
      }),
    })
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
