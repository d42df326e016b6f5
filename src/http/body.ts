import { Elysia } from 'elysia'
import { AppError } from '../lib/errors'
import { pathnameOf, type RouteInfo, type RouteTable } from '../lib/route-table'

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

function isJson(contentType: string): boolean {
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase()
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/**
 * The HTTP server's own body cap. Bun answers a request over it with a bare 413 before the
 * app sees it, so it is set out of the way: this plugin refuses a declared length over the
 * API limit without reading the body, and counts an undeclared one as it streams in.
 */
export const SERVER_BODY_CAP = Number.MAX_SAFE_INTEGER

const tooLarge = (max: number) => new AppError('payload_too_large', `The request body is larger than the limit of ${max} bytes.`)

/** Reads a body of undeclared length (chunked), stopping as soon as it passes the limit. */
async function readLimited(body: ReadableStream<Uint8Array>, max: number): Promise<string> {
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) {
      await reader.cancel()
      throw tooLarge(max)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * Request bodies: a declared Content-Length over the limit is refused before anything is
 * read (413); a body must be JSON unless the route names other media types (415); a body of
 * undeclared length is read with a running count. Registered after the auth plugin, so an
 * unauthenticated caller gets 401 first.
 */
export function bodyPlugin(maxBytes: number, routes: () => RouteTable) {
  return new Elysia({ name: 'body' })
    .onRequest(({ request }) => {
      if (!WITH_BODY.has(request.method)) return
      const length = request.headers.get('content-length')
      if (length !== null ? length === '0' : request.body === null) return
      const route: RouteInfo | null = routes().match(request.method, pathnameOf(request.url))
      const limit = route?.maxBytes ?? maxBytes
      if (length !== null && Number(length) > limit) throw tooLarge(limit)
      const type = request.headers.get('content-type') ?? ''
      const accepted = route?.contentTypes.length ? route.contentTypes : null
      const ok = accepted ? accepted.some((a) => type.toLowerCase().startsWith(a)) : isJson(type)
      if (!ok) {
        throw new AppError(
          'unsupported_media_type',
          `The request body must be sent as ${accepted ? accepted.join(' or ') : 'application/json'}${type ? `, not ${type.split(';')[0]}` : ''}.`,
        )
      }
    })
    .onParse({ as: 'global' }, async ({ request }) => {
      if (request.headers.has('content-length') || request.body === null) return
      if (!isJson(request.headers.get('content-type') ?? '')) return
      const text = await readLimited(request.body, maxBytes)
      try {
        return JSON.parse(text)
      } catch {
        throw new AppError('bad_request', 'The request body could not be parsed; send valid JSON with Content-Type: application/json.')
      }
    })
}
