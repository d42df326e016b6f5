import { Elysia } from 'elysia'
import { openapi } from '@elysiajs/openapi'
// Embedded in the binary, so /docs renders with no internet access.
// The package does not export this file, hence the path into node_modules.
import scalarBundle from '../../node_modules/@scalar/api-reference/dist/browser/standalone.js' with { type: 'file' }
import { pathnameOf } from '../lib/route-table'
import { VERSION } from '../version'

const SCALAR_PATH = '/docs/assets/scalar.js'
type ScalarOptions = NonNullable<NonNullable<Parameters<typeof openapi>[0]>['scalar']>

type RouteLike = { method: string; path: string; hooks?: { body?: unknown; detail?: Record<string, unknown> } }
type Operation = { requestBody?: { content?: Record<string, unknown>; required?: boolean } }

/**
 * The generator fills a request body's media types only from named parsers; the body
 * plugin's parse hook (a function, for the streamed size limit) makes it leave them all
 * empty. They are filled in here from each route's own body schema (JSON) or its declared
 * media types (file uploads).
 */
function fillRequestBodies(doc: { paths?: Record<string, Record<string, Operation>> }, routes: RouteLike[]): void {
  for (const route of routes) {
    const path = route.path.replace(/:([A-Za-z_]+)/g, '{$1}')
    const op = doc.paths?.[path]?.[route.method.toLowerCase()]
    const declared = route.hooks?.detail?.['x-content-types'] as string[] | undefined
    if (!op) continue
    // A file upload declares its media types and has no JSON body schema.
    if (!op.requestBody && declared) op.requestBody = { required: true } as Operation['requestBody']
    if (!op.requestBody || Object.keys(op.requestBody.content ?? {}).length) continue
    const types = declared ?? ['application/json']
    const schema = route.hooks?.body ?? { type: 'string', format: 'binary' }
    op.requestBody.content = Object.fromEntries(types.map((t) => [t, { schema }]))
  }
}

/**
 * /openapi.json, generated from the route schemas, and a readable /docs page served entirely
 * from this binary. The request bodies are filled in by a local hook, which covers the
 * document's own route and not every request (decision 86).
 */
export function openapiPlugin(routes: () => RouteLike[]) {
  return new Elysia({ name: 'openapi' })
    .onAfterHandle(({ request, responseValue }) => {
      if (
        request.method === 'GET' &&
        responseValue &&
        typeof responseValue === 'object' &&
        'openapi' in responseValue &&
        pathnameOf(request.url) === '/openapi.json'
      ) {
        fillRequestBodies(responseValue as Parameters<typeof fillRequestBodies>[0], routes())
      }
    })
    .get(
      SCALAR_PATH,
      () => new Response(Bun.file(scalarBundle), { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=86400' } }),
      {
        detail: { hide: true },
      },
    )
    .use(
      openapi({
        path: '/docs',
        specPath: '/openapi.json',
        exclude: { paths: [SCALAR_PATH] },
        // The plugin's type demands every Scalar option; these two are all we change.
        scalar: { cdn: SCALAR_PATH, withDefaultFonts: false } as unknown as ScalarOptions,
        documentation: {
          info: {
            title: 'Mailroom API',
            version: VERSION,
            description:
              'Every request carries `Authorization: Bearer <API_KEY>`. Responses use the envelope `{ "success": true, "data": ... }` (plus `meta` on lists) or `{ "success": false, "error": { "code", "message", "details" } }`.',
          },
          tags: [
            { name: 'system', description: 'Liveness and readiness probes; no key needed.' },
            { name: 'roles', description: 'Roles are sets of permissions from the permission tree; every key is bound to one.' },
            {
              name: 'api keys',
              description: 'Keys are shown once at creation and stored only as a hash. Each has a role, a per-minute rate limit and an optional IP allowlist.',
            },
            { name: 'activity logs', description: 'Every change made through the API, with the key that made it.' },
          ],
          components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key: mr_<id>_<secret>' } } },
          security: [{ bearer: [] }],
        },
      }),
    )
}
