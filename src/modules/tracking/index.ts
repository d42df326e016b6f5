import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { clientAddress } from '../../http/auth'
import { publicRoute } from '../../http/schemas'
import { TokenParams, UnsubscribeBody } from './model'
import { recordEngagement, senderOf, unsubscribeRecipient, type ClientInfo } from './service'
import { verifyToken, type TokenKind, type TrackingToken } from './tokens'

const tags = ['tracking']

/** 1x1 transparent GIF (GIF89a, one palette entry, transparent). */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64')

// Every tracking answer is about one reader at one moment: never cached by a browser or a proxy.
const NO_STORE = 'no-store, private'

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

function page(status: number, title: string, body: string): Response {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}button{font:inherit;padding:.5rem 1.25rem;cursor:pointer}</style></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`
  return new Response(html, { status, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': NO_STORE } })
}

const invalidLink = () => page(404, 'Link not valid', '<p>This link is not valid. It may have been copied incompletely.</p>')

/**
 * Public tracking routes (no API key: they are followed by whoever reads the mail):
 * GET /t/o/{token} (open pixel), GET /t/c/{token} (click redirect), GET and POST
 * /t/u/{token} (unsubscribe page and RFC 8058 one-click unsubscribe). Each answers after the
 * event is committed.
 */
export function trackingRoutes(deps: Deps) {
  type Ctx = { request: Request; server: { requestIP(r: Request): { address: string } | null } | null }
  const clientOf = ({ request, server }: Ctx): ClientInfo => ({
    ip: clientAddress(request, server, deps.config.trust_proxy),
    user_agent: request.headers.get('user-agent')?.slice(0, 512) ?? null,
  })
  /**
   * Records an open or a click; a failure is logged, not shown: the reader gets the image or
   * reaches the page whatever happens (a lost event costs less than a broken link).
   */
  const record = async (token: TrackingToken, ctx: Ctx) => {
    try {
      await recordEngagement(deps, token, clientOf(ctx))
    } catch (e) {
      deps.log.error(`${token.kind} not recorded`, { message_id: token.messageId, error: (e as Error).message })
    }
  }

  /** A route whose `:token` must be a valid token of `kind`; any other answers the "not valid" page. */
  type TokenCtx = Ctx & { params: { token: string }; body?: unknown }
  const withToken = (kind: TokenKind, handle: (token: TrackingToken, ctx: TokenCtx) => Response | Promise<Response>) => (ctx: TokenCtx) => {
    const token = verifyToken(deps, ctx.params.token, kind)
    return token ? handle(token, ctx) : invalidLink()
  }

  return new Elysia()
    .get(
      '/t/o/:token',
      async (ctx) => {
        const token = verifyToken(deps, ctx.params.token, 'open')
        if (token) await record(token, ctx)
        return new Response(PIXEL, { headers: { 'content-type': 'image/gif', 'cache-control': NO_STORE } })
      },
      { params: TokenParams, detail: publicRoute('Open-tracking image (records message.opened)', tags) },
    )
    .get(
      '/t/c/:token',
      withToken('click', async (token, ctx) => {
        await record(token, ctx)
        return new Response(null, { status: 302, headers: { location: token.value, 'cache-control': NO_STORE } })
      }),
      { params: TokenParams, detail: publicRoute('Click-tracking redirect (records message.clicked)', tags) },
    )
    .get(
      '/t/u/:token',
      withToken('unsubscribe', (token) => {
        const sender = senderOf(deps, token.messageId)
        // A GET changes nothing: mail scanners and link previews fetch links (RFC 8058 section 1).
        return page(
          200,
          'Unsubscribe',
          `<p>Stop mail${sender ? ` from ${escapeHtml(sender)}` : ''} to <strong>${escapeHtml(token.value)}</strong>?</p>` +
            `<form method="post"><input type="hidden" name="source" value="page"><button type="submit">Unsubscribe</button></form>`,
        )
      }),
      { params: TokenParams, detail: publicRoute('Unsubscribe page (a form that posts the one-click unsubscribe)', tags) },
    )
    .post(
      '/t/u/:token',
      withToken('unsubscribe', async (token, ctx) => {
        // Mail clients post "List-Unsubscribe=One-Click" (RFC 8058 section 3.2); our page posts source=page.
        const method = (ctx.body as Record<string, unknown> | undefined)?.source === 'page' ? 'page' : 'one_click'
        const result = await unsubscribeRecipient(deps, token, method, clientOf(ctx))
        return page(200, 'Unsubscribed', `<p><strong>${escapeHtml(result.address)}</strong> is unsubscribed.</p>`)
      }),
      {
        params: TokenParams,
        body: UnsubscribeBody,
        detail: {
          ...publicRoute('One-click unsubscribe (RFC 8058; records message.unsubscribed)', tags),
          'x-content-types': ['application/x-www-form-urlencoded', 'multipart/form-data'],
        },
      },
    )
}
