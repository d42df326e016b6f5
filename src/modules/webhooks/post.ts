import { createHmac, randomBytes } from 'node:crypto'
import http from 'node:http'
import https from 'node:https'
import { resolveEndpoint, type Lookup } from './address'

/**
 * Signing and posting one webhook request, as the Standard Webhooks specification
 * (https://www.standardwebhooks.com, v1) describes it: `webhook-id`, `webhook-timestamp`
 * (Unix seconds of the attempt) and `webhook-signature`, a space-separated list of
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed with the base64 bytes after
 * `whsec_`. A receiver using the `standardwebhooks` package accepts any one of the listed
 * signatures, which is what makes secret rotation seamless.
 */

export const SECRET_PREFIX = 'whsec_'

/** A fresh secret: `whsec_` + 24 random bytes in base64 (the form the reference libraries generate). */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64')
}

/** A secret is `whsec_` + base64 of 24 to 64 bytes. */
export function secretProblem(secret: string): string | null {
  if (!secret.startsWith(SECRET_PREFIX)) return 'must start with whsec_'
  const b64 = secret.slice(SECRET_PREFIX.length)
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return 'must be whsec_ followed by base64'
  const n = Buffer.from(b64, 'base64').length
  if (n < 24 || n > 64) return 'must carry 24 to 64 bytes of key material'
  return null
}

export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')
  return 'v1,' + createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')
}

/** The three signature headers; every secret given signs (current first, then the one being rotated out). */
export function signatureHeaders(secrets: string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => sign(s, id, timestampSeconds, body)).join(' '),
  }
}

export interface PostResult {
  /** HTTP status, or null when no response came (refused, timeout, TLS, address refused). */
  status: number | null
  ok: boolean
  latency_ms: number
  error: string | null
  /** The first bytes of the response body. */
  snippet: string | null
  /** Delay the receiver asked for with Retry-After (RFC 9110 10.2.3), in ms, or null. */
  retry_after_ms: number | null
}

export const SNIPPET_BYTES = 1024

/** Parses Retry-After: delay-seconds or an HTTP-date; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | null {
  if (!value) return null
  const v = value.trim()
  if (/^\d+$/.test(v)) return Number(v) * 1000
  const at = Date.parse(v)
  if (Number.isNaN(at)) return null
  return Math.max(0, at - now)
}

export interface PostOptions {
  url: string
  headers: Record<string, string>
  body: string
  timeoutMs: number
  allowPrivate: boolean
  lookup?: Lookup
  /** Wall clock for Retry-After dates. */
  now: number
  agents?: { http: http.Agent; https: https.Agent }
}

/**
 * POSTs once. Success is a 2xx within the timeout; a redirect is a failure and is not
 * followed (following it would let the endpoint point us anywhere, past the address check).
 * The host is resolved and checked here, and the socket connects to that checked address
 * through the request's `lookup` hook, so the name is not resolved a second time.
 */
export async function postWebhook(o: PostOptions): Promise<PostResult> {
  const started = performance.now()
  const latency = () => Math.round(performance.now() - started)
  const fail = (error: string, status: number | null = null): PostResult => ({
    status,
    ok: false,
    latency_ms: latency(),
    error,
    snippet: null,
    retry_after_ms: null,
  })
  const url = new URL(o.url)
  const target = await resolveEndpoint(url, o.allowPrivate, o.lookup)
  if (!target.ok) return fail(target.error)
  const secure = url.protocol === 'https:'
  const mod = secure ? https : http
  return new Promise<PostResult>((resolve) => {
    let settled = false
    const done = (r: PostResult) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(r)
    }
    const req = mod.request(
      {
        method: 'POST',
        protocol: url.protocol,
        hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port || (secure ? 443 : 80),
        path: url.pathname + url.search,
        headers: { ...o.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(o.body)), 'user-agent': 'Mailroom-Webhooks/1' },
        agent: o.agents ? (secure ? o.agents.https : o.agents.http) : undefined,
        // The checked address, whatever the resolver would say now (DNS rebinding).
        lookup: ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
          if (opts && opts.all) cb(null, [{ address: target.address, family: target.family }])
          else cb(null, target.address, target.family)
        }) as never,
      },
      (res) => {
        const status = res.statusCode ?? 0
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (c: Buffer) => {
          if (size < SNIPPET_BYTES) chunks.push(c)
          size += c.length
        })
        res.on('error', (e) => done(fail(e.message, status)))
        res.on('end', () => {
          const snippet = Buffer.concat(chunks).subarray(0, SNIPPET_BYTES).toString('utf8')
          const ok = status >= 200 && status < 300
          const error = ok ? null : status >= 300 && status < 400 ? `redirect to ${res.headers.location ?? '(no location)'} not followed` : `HTTP ${status}`
          const ra = res.headers['retry-after']
          done({ status, ok, latency_ms: latency(), error, snippet, retry_after_ms: parseRetryAfter(Array.isArray(ra) ? ra[0] : ra, o.now) })
        })
      },
    )
    const timer = setTimeout(() => {
      done(fail(`no answer within ${o.timeoutMs} ms`))
      req.destroy()
    }, o.timeoutMs)
    req.on('error', (e) => done(fail((e as { code?: string }).code ? `${(e as { code?: string }).code}: ${e.message}` : e.message)))
    req.end(o.body)
  })
}
