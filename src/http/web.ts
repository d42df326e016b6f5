import { Elysia } from 'elysia'
import landingPage from '../../web/index.html' with { type: 'text' }

// bun-types declares *.html imports as HTML bundles; with type 'text' the value is the file's text.
const landing = landingPage as unknown as string

/** The admin web UI's entry page, embedded in the binary. */
export function webPlugin() {
  return new Elysia({ name: 'web' }).get('/', () => new Response(landing, { headers: { 'content-type': 'text/html; charset=utf-8' } }), {
    detail: { hide: true },
  })
}
