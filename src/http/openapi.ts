import { Elysia } from 'elysia'
import { openapi } from '@elysiajs/openapi'
// Embedded in the binary, so /docs renders with no internet access.
// The package does not export this file, hence the path into node_modules.
import scalarBundle from '../../node_modules/@scalar/api-reference/dist/browser/standalone.js' with { type: 'file' }
import { VERSION } from '../version'

const SCALAR_PATH = '/docs/assets/scalar.js'
type ScalarOptions = NonNullable<NonNullable<Parameters<typeof openapi>[0]>['scalar']>

/** /openapi.json, generated from the route schemas, and a readable /docs page served entirely from this binary. */
export function openapiPlugin() {
  return new Elysia({ name: 'openapi' })
    .get(SCALAR_PATH, () => new Response(Bun.file(scalarBundle), { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=86400' } }), {
      detail: { hide: true },
    })
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
            { name: 'api keys', description: 'Keys are shown once at creation and stored only as a hash. Each has a role, a per-minute rate limit and an optional IP allowlist.' },
            { name: 'activity logs', description: 'Every change made through the API, with the key that made it.' },
          ],
          components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key: mr_<id>_<secret>' } } },
          security: [{ bearer: [] }],
        },
      }),
    )
}
