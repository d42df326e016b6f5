import { timingSafeEqual } from 'node:crypto'
import { Elysia, t } from 'elysia'
import type { Deps } from '../deps'
import type { Clock } from '../lib/clock'
import { clientAddress } from '../lib/client-address'
import { AppError } from '../lib/errors'
import { pathnameOf } from '../lib/route-table'
import { recordActivity } from '../modules/activity-logs/service'
import { SessionSchema, SetupBody, SetupStateSchema, SignInBody, type SessionView } from '../modules/admins/model'
import { completeSetup, countAdmins, recordSignIn, verifyCredentials } from '../modules/admins/service'
import { createSession, deleteSession, resolveSession, type SessionIdentity } from '../modules/admins/sessions'
import { Envelope, ErrorEnvelope, ok, publicRoute } from './schemas'

/** The console's session cookie (docs/api.md "Console sessions"). */
export const SESSION_COOKIE = 'mailroom_session'
/** The header that carries the session's CSRF token on every change. */
export const CSRF_HEADER = 'x-csrf-token'

/** The session cookie's value, or null; a cheap scan before any parsing. */
export function sessionCookieOf(request: Request): string | null {
  const header = request.headers.get('cookie')
  if (!header || !header.includes(SESSION_COOKIE)) return null
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim()
      return value === '' ? null : value
    }
  }
  return null
}

/** Whether the browser reached us over https: the URL's scheme, or X-Forwarded-Proto from a proxy the operator trusts. */
export function isHttps(request: Request, trustProxy: boolean): boolean {
  if (request.url.startsWith('https:')) return true
  return trustProxy && request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase() === 'https'
}

/**
 * The Set-Cookie value: HttpOnly (no script reads it), SameSite=Strict (no other site's
 * page sends it, RFC 6265bis section 5.4.7), Path=/ (the REST API is outside /admin), Secure
 * over https. Max-Age is the session's absolute lifetime; `maxAge` 0 clears it.
 */
export function sessionCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/**
 * Cross-site request checks for a change made with a session (OWASP's synchronizer token
 * plus origin verification): an Origin header, when sent, must be this server's origin (as
 * the request reached it, or public_url), a browser's Sec-Fetch-Site must not say
 * cross-site, and X-CSRF-Token must equal the session's token (compared in constant time).
 */
export function assertSameOrigin(request: Request, deps: Deps): void {
  const origin = request.headers.get('origin')
  if (origin !== null) {
    const url = new URL(request.url)
    const own = new Set([url.origin, new URL(deps.config.public_url).origin])
    const host = deps.config.trust_proxy ? request.headers.get('x-forwarded-host') : null
    if (host) own.add(`${isHttps(request, true) ? 'https' : 'http'}://${host}`)
    else if (deps.config.trust_proxy && isHttps(request, true)) own.add(`https://${url.host}`)
    if (!own.has(origin)) throw new AppError('forbidden', `Requests from ${origin} are not accepted: the console takes changes only from its own origin.`)
  }
  if (request.headers.get('sec-fetch-site') === 'cross-site') throw new AppError('forbidden', 'Cross-site requests are not accepted.')
}

/** The CSRF check of a change made with a session. */
export function assertCsrf(request: Request, deps: Deps, session: SessionIdentity): void {
  assertSameOrigin(request, deps)
  const sent = request.headers.get(CSRF_HEADER)
  if (!sent || !sameText(sent, session.csrf_token)) throw new AppError('forbidden', 'CSRF token missing or wrong: send the X-CSRF-Token header of the session.')
}

/**
 * Sign-in throttling (OWASP "Blocking brute force attacks"): at most `limit` failed sign-ins
 * in `windowMs` per account and `addressLimit` per client address; then 429 until the
 * oldest failure leaves the window. A success clears the account's count (not the
 * address's: one good password must not reopen the door to guessing others). Kept in
 * memory: a restart forgets it, which costs a guesser a restart they cannot cause.
 */
export function createSignInThrottle(clock: Clock, opts: { limit?: number; addressLimit?: number; windowMs?: number; maxTracked?: number } = {}) {
  const limit = opts.limit ?? 5
  const addressLimit = opts.addressLimit ?? 20
  const windowMs = opts.windowMs ?? 15 * 60_000
  const maxTracked = opts.maxTracked ?? 10_000
  const failures = new Map<string, number[]>()
  const recent = (key: string, now: number): number[] => {
    const list = (failures.get(key) ?? []).filter((t) => t > now - windowMs)
    if (list.length) failures.set(key, list)
    else failures.delete(key)
    return list
  }
  const keys = (address: string | null, account: string) =>
    [
      [`a:${account.trim().toLowerCase()}`, limit],
      [`ip:${address ?? 'unknown'}`, addressLimit],
    ] as const
  return {
    /** Seconds until another attempt is allowed, or 0 when it is allowed now. */
    retryAfter(address: string | null, account: string): number {
      const now = clock.now()
      let wait = 0
      for (const [key, max] of keys(address, account)) {
        const list = recent(key, now)
        if (list.length >= max) wait = Math.max(wait, Math.ceil((list[list.length - max]! + windowMs - now) / 1000))
      }
      return wait
    },
    /**
     * Counts an attempt as failed against the account and the address. Called before the
     * password is checked, so that attempts sent at once cannot all pass `retryAfter`
     * while the (slow, awaited) checks run; `succeed` takes it back.
     */
    fail(address: string | null, account: string): void {
      const now = clock.now()
      for (const [key] of keys(address, account)) {
        if (!failures.has(key) && failures.size >= maxTracked) failures.delete(failures.keys().next().value!)
        failures.set(key, [...recent(key, now), now])
      }
    },
    /** A successful sign-in: the account starts afresh, and the address's provisional count (see `fail`) is taken back. */
    succeed(address: string | null, account: string): void {
      failures.delete(`a:${account.trim().toLowerCase()}`)
      failures.get(`ip:${address ?? 'unknown'}`)?.pop()
    },
  }
}
export type SignInThrottle = ReturnType<typeof createSignInThrottle>

function view(s: SessionIdentity): SessionView {
  return { admin: { id: s.admin_id, email: s.email, role: s.role, permissions: [...s.permissions] }, csrf_token: s.csrf_token }
}

const tags = ['console']

/**
 * The console's session API under /admin/api/ (docs/api.md "Console sessions"): open to
 * the auth layer (no API key); the session cookie is read here.
 */
export function sessionRoutes(deps: Deps, throttle: SignInThrottle = createSignInThrottle(deps.clock)) {
  const current = (request: Request) => {
    const token = sessionCookieOf(request)
    return token ? resolveSession(deps, token) : null
  }
  /** Sign-ins and sign-outs are in the activity log with the person as actor (failed attempts are not: anyone can make those). */
  const audit = (request: Request, ip: string | null, admin: { id: number; email: string }, action: string) =>
    recordActivity(deps, {
      actor_key_id: null,
      actor_admin_id: admin.id,
      actor_name: admin.email,
      action,
      target_type: 'admins',
      target_id: String(admin.id),
      method: request.method,
      path: pathnameOf(request.url),
      ip,
      status: 200,
      outcome: 'success',
    })
  const signIn = (
    request: Request,
    server: Parameters<typeof clientAddress>[1],
    set: { headers: Record<string, string | number> },
    admin: { id: number; email: string },
  ) => {
    const ip = clientAddress(request, server, deps.config.trust_proxy)
    const { token } = createSession(deps, admin.id, { ip, userAgent: request.headers.get('user-agent') })
    recordSignIn(deps, admin.id)
    audit(request, ip, admin, 'admins.sign_in')
    set.headers['set-cookie'] = sessionCookie(token, deps.config.admin_session_max_hours * 3600, isHttps(request, deps.config.trust_proxy))
    set.headers['cache-control'] = 'no-store'
    return ok(view(resolveSession(deps, token)!))
  }
  const unauthorized = ErrorEnvelope

  return new Elysia({ prefix: '/admin/api' })
    .get(
      '/session',
      ({ request, set }) => {
        const session = current(request)
        if (!session) throw new AppError('unauthorized', 'Not signed in.')
        set.headers['cache-control'] = 'no-store'
        return ok(view(session))
      },
      { response: { 200: Envelope(SessionSchema), 401: unauthorized }, detail: publicRoute('The signed-in administrator and the CSRF token', tags) },
    )
    .post(
      '/session',
      async ({ body, request, server, set }) => {
        assertSameOrigin(request, deps)
        const ip = clientAddress(request, server, deps.config.trust_proxy)
        const wait = throttle.retryAfter(ip, body.email)
        if (wait > 0) {
          set.headers['retry-after'] = String(wait)
          throw new AppError('rate_limited', `Too many failed sign-ins; try again in ${wait} s.`)
        }
        throttle.fail(ip, body.email)
        const admin = await verifyCredentials(deps, body.email, body.password)
        if (!admin) throw new AppError('unauthorized', 'The email or password is wrong.')
        throttle.succeed(ip, body.email)
        return signIn(request, server, set, admin)
      },
      {
        body: SignInBody,
        response: { 200: Envelope(SessionSchema), 401: unauthorized, 403: ErrorEnvelope, 422: ErrorEnvelope, 429: ErrorEnvelope },
        detail: publicRoute('Sign in: sets the session cookie', tags),
      },
    )
    .delete(
      '/session',
      ({ request, server, set }) => {
        const session = current(request)
        if (session) {
          assertCsrf(request, deps, session)
          deleteSession(deps, session.hash)
          audit(request, clientAddress(request, server, deps.config.trust_proxy), { id: session.admin_id, email: session.email }, 'admins.sign_out')
        }
        set.headers['set-cookie'] = sessionCookie('', 0, isHttps(request, deps.config.trust_proxy))
        return ok({ signed_out: true as const })
      },
      {
        response: { 200: Envelope(t.Object({ signed_out: t.Literal(true) })), 403: ErrorEnvelope },
        detail: publicRoute('Sign out: ends the session and clears the cookie', tags),
      },
    )
    .get('/setup', () => ok({ needed: countAdmins(deps) === 0 }), {
      response: { 200: Envelope(SetupStateSchema) },
      detail: publicRoute('Whether the first administrator is still to be created', tags),
    })
    .post(
      '/setup',
      async ({ body, request, server, set }) => {
        assertSameOrigin(request, deps)
        const admin = await completeSetup(deps, body)
        return signIn(request, server, set, admin)
      },
      {
        body: SetupBody,
        response: { 200: Envelope(SessionSchema), 401: ErrorEnvelope, 403: ErrorEnvelope, 409: ErrorEnvelope, 422: ErrorEnvelope },
        detail: publicRoute('Create the first administrator with the setup link, and sign in', tags),
      },
    )
}
