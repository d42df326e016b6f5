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

/**
 * The deepest nesting of arrays and objects a JSON body may have. Real requests need a
 * handful of levels; a 120 KB body of 10,000 levels made schema validation and error
 * formatting take seconds and gigabytes (issue 13), so deeper bodies never reach them.
 */
export const MAX_JSON_DEPTH = 32

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACKET = 0x5b
const OPEN_BRACE = 0x7b
const CLOSE_BRACKET = 0x5d
const CLOSE_BRACE = 0x7d

/**
 * Whether the body holds at most `max` opening brackets and braces in all, counted with the
 * native indexOf: then no nesting can pass `max`, and the byte-by-byte scan (about 1 ns a
 * byte, a 5 KB send's HTML is mostly string) is not needed. Typical bodies hold a handful.
 */
function fewerOpenings(bytes: Uint8Array, max: number): boolean {
  let count = 0
  for (const open of [OPEN_BRACE, OPEN_BRACKET]) {
    for (let at = bytes.indexOf(open); at !== -1; at = bytes.indexOf(open, at + 1)) if (++count > max) return false
  }
  return true
}

/**
 * The first byte offset at which the nesting of `[` and `{` outside strings passes `max`,
 * or -1. One pass, constant memory. It runs on UTF-8 bytes: every byte of a multi-byte
 * character is >= 0x80, so none is mistaken for a quote or a bracket (RFC 8259 section 8.1).
 * It does not validate: JSON.parse does that after it, on input it can no longer choke on.
 */
export function nestingBeyond(bytes: Uint8Array, max: number): number {
  if (fewerOpenings(bytes, max)) return -1
  let depth = 0
  let inString = false
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!
    if (inString) {
      if (b === BACKSLASH) i++
      else if (b === QUOTE) inString = false
    } else if (b === QUOTE) inString = true
    else if (b === OPEN_BRACKET || b === OPEN_BRACE) {
      if (++depth > max) return i
    } else if (b === CLOSE_BRACKET || b === CLOSE_BRACE) depth--
  }
  return -1
}

/**
 * Dotted paths of the `__proto__` keys below the top level of a parsed body. JSON.parse
 * keeps such a key as an own property, but the framework's schema normalisation copies
 * records (custom field values and the like) by assignment, which sets the copy's prototype
 * instead: the key vanished silently (issue 13) where any other unknown key there gets a
 * 422. No field of this API has that name, so below the top level it is refused. At the top
 * level it is ignored like any unknown field (docs/api.md "Basics"). Recursion is bounded
 * by MAX_JSON_DEPTH, checked before parsing.
 */
export function protoKeyPaths(value: unknown, path = ''): string[] {
  if (value === null || typeof value !== 'object') return []
  const found: string[] = []
  for (const [key, child] of Object.entries(value)) {
    if (key === '__proto__' && path === '' && !Array.isArray(value)) continue
    const here = path ? `${path}.${key}` : key
    if (key === '__proto__') found.push(here)
    found.push(...protoKeyPaths(child, here))
  }
  return found
}

/**
 * Reads a body, stopping as soon as it passes the limit. A declared length was checked
 * already (onRequest) and HTTP framing holds the body to it, so such a body is read whole at
 * once; a chunked one is counted as it streams in.
 */
async function readLimited(request: Request, max: number): Promise<Buffer> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (Number.isSafeInteger(declared) && declared <= max) return Buffer.from(await request.arrayBuffer())
  const reader = request.body!.getReader()
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
  return Buffer.concat(chunks)
}

/**
 * Request bodies: a declared Content-Length over the limit is refused before anything is
 * read (413); a body must be JSON unless the route names other media types (415); a body of
 * undeclared length is read with a running count. JSON bodies (`application/json` and every
 * `application/*+json`, RFC 6839 section 3.1) are parsed here rather than by the framework,
 * after a depth scan that refuses nesting beyond MAX_JSON_DEPTH (400). Registered after the
 * auth plugin, so an unauthenticated caller gets 401 first.
 */
export function bodyPlugin(maxBytes: number, routes: () => RouteTable) {
  const limitOf = (request: Request) => routes().match(request.method, pathnameOf(request.url))?.maxBytes ?? maxBytes
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
      if (request.body === null || !isJson(request.headers.get('content-type') ?? '')) return
      const bytes = await readLimited(request, limitOf(request))
      if (bytes.length === 0) return
      if (nestingBeyond(bytes, MAX_JSON_DEPTH) !== -1) {
        throw new AppError('bad_request', `The request body is nested more than ${MAX_JSON_DEPTH} levels deep; send flatter JSON.`)
      }
      let value: unknown
      try {
        value = JSON.parse(bytes.toString('utf8'))
      } catch {
        throw new AppError('bad_request', 'The request body could not be parsed; send valid JSON with Content-Type: application/json.')
      }
      const proto = protoKeyPaths(value)
      if (proto.length > 0)
        throw new AppError('validation_failed', 'The request body is invalid.', Object.fromEntries(proto.map((p) => [p, ['is not a known field']])))
      return value
    })
}
