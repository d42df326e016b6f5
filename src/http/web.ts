import type { HTMLBundle } from 'bun'
import { Elysia } from 'elysia'
import { readFileSync } from 'node:fs'
import { basename } from 'node:path'
import landingPage from '../../web/index.html' with { type: 'text' }
import consoleBundle from '../../web/admin/index.html'
import { AppError } from '../lib/errors'

// bun-types declares *.html imports as HTML bundles; with type 'text' the value is the file's text.
const landing = landingPage as unknown as string

/** Where the console's hashed scripts and stylesheets are served from. */
export const CONSOLE_ASSETS = '/admin/assets/'

/** One bundled file of the console: where it lives (in the binary's embedded file system) and its headers. */
export interface ConsoleAsset {
  path: string
  contentType: string
  etag: string
}

/** The console as the release build embeds it: the entry page and its assets by file name. */
export interface ConsoleSite {
  html: string
  assets: Map<string, ConsoleAsset>
}

/**
 * The console's files from a bundle built ahead of time (`Bun.build`, as the binary is), or
 * null when Bun bundles the HTML import on request (running from source: see
 * consoleDevRoutes). The bundler links assets from the site root (`/chunk-x.js`); the page is
 * rewritten to fetch them under /admin/assets/, so the console owns one path prefix and
 * nothing at the root can collide with it.
 */
export function consoleSite(bundle: HTMLBundle): ConsoleSite | null {
  if (!bundle.files) return null
  const assets = new Map<string, ConsoleAsset>()
  for (const f of bundle.files) {
    if (f.loader === 'html') continue
    assets.set(basename(f.path), { path: f.path, contentType: f.headers['content-type'], etag: f.headers.etag })
  }
  let html = readFileSync(bundle.index, 'utf8')
  for (const name of assets.keys()) html = html.replaceAll(`"/${name}"`, `"${CONSOLE_ASSETS}${name}"`)
  return { html, assets }
}

/**
 * Bun.serve routes for the console when running from source: Bun bundles web/admin on
 * request, with hot reload and the Tailwind plugin named in bunfig.toml [serve.static].
 * Empty in the binary, where the Elysia routes of webPlugin serve the prebuilt files.
 */
export function consoleDevRoutes(bundle: HTMLBundle = consoleBundle): Record<string, HTMLBundle> {
  return bundle.files ? {} : { '/admin': bundle, '/admin/*': bundle }
}

// The console loads only its own files; the API answers JSON on the same origin. Inline
// styles are allowed because Radix and recharts position elements with style attributes.
const CONSOLE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-cache',
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
}

/** The landing page at `/` and, in the binary, the console at `/admin` with a history fallback. */
export function webPlugin(bundle: HTMLBundle = consoleBundle) {
  const site = consoleSite(bundle)
  const app = new Elysia({ name: 'web' }).get('/', () => new Response(landing, { headers: { 'content-type': 'text/html; charset=utf-8' } }), {
    detail: { hide: true },
  })
  if (!site) return app
  const page = () => new Response(site.html, { headers: CONSOLE_HEADERS })
  return app
    .get('/admin', page, { detail: { hide: true } })
    .get(
      '/admin/assets/:name',
      ({ params, request }) => {
        const asset = site.assets.get(params.name)
        if (!asset) throw new AppError('not_found', 'No such console file.')
        const headers = {
          'content-type': asset.contentType,
          etag: `"${asset.etag}"`,
          // The names carry a content hash: a new build is a new name.
          'cache-control': 'public, max-age=31536000, immutable',
          'x-content-type-options': 'nosniff',
        }
        if (request.headers.get('if-none-match') === headers.etag) return new Response(null, { status: 304, headers })
        return new Response(Bun.file(asset.path), { headers })
      },
      { detail: { hide: true } },
    )
    .get(
      '/admin/*',
      ({ request }) => {
        // The console's own JSON routes never fall back to the page: an unknown one is a 404 envelope.
        if (new URL(request.url).pathname.startsWith('/admin/api/')) throw new AppError('not_found', 'No such route.')
        return page()
      },
      { detail: { hide: true } },
    )
}
