import { Elysia } from 'elysia'
import type { Deps } from '../deps'
import { AppError, type ErrorCode } from '../lib/errors'
import { clientAddress } from '../lib/client-address'
import { isAllowed } from '../lib/ip-allowlist'
import type { RateDecision, RateLimiter } from '../lib/rate-limit'
import { pathnameOf, pathParams, type RouteInfo, type RouteTable } from '../lib/route-table'
import { recordActivity } from '../modules/activity-logs/service'
import type { KeyIdentity, UsageRecorder } from '../modules/api-keys/service'
import type { SessionIdentity } from '../modules/admins/sessions'
import { grants } from '../modules/permissions/service'
import type { Actor } from '../modules/roles/service'
import { assertCsrf, sessionCookieOf } from './session'

/** What a handler knows about the caller of an authenticated route: an API key, or an administrator's console session. */
export interface AuthContext {
  /** Null when an administrator calls through the console (session cookie). */
  key: KeyIdentity | null
  /** The console session, when there is no key. */
  admin: SessionIdentity | null
  actor: Actor
  /**
   * The client's address: always for a change and for a console session; for a key's read,
   * null unless the allowlist or the usage recorder asked for it (reading it is a system
   * call, decision 73).
   */
  ip: string | null
  route: RouteInfo
  /** Set by a handler when the activity log target is not the `:id` path parameter (creates). */
  target?: { type: string; id: string | number }
  logged?: boolean
}

export interface AuthOptions {
  routes: () => RouteTable
  resolveKey: (value: string) => KeyIdentity | null
  /** The live console session a cookie value names (src/modules/admins/sessions.ts). */
  resolveSession?: (token: string) => SessionIdentity | null
  limiter: RateLimiter
  usage: UsageRecorder
}

export { clientAddress }

/**
 * An AppError for a refused request, made without capturing a stack trace (issue 18): a
 * refusal is an expected answer, not a bug, and the envelope never shows or logs its stack,
 * while capturing one cost more than the rest of a 401. Thrown like any AppError.
 */
export function refusal(code: ErrorCode, message: string): AppError {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return new AppError(code, message)
  } finally {
    Error.stackTraceLimit = limit
  }
}

/** Path families where every request needs a key, even to learn that a route does not exist. */
const PROTECTED_PREFIXES = ['/api/', '/v1/', '/compat/']
const KEY_QUERY_PARAMS = ['api_key', 'apikey', 'key', 'token', 'access_token']
const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** The Bearer value, or null when no Authorization header is sent (then a console session may stand in). */
function bearerToken(request: Request): string | null {
  // A key in the URL is refused even when the header carries one too: the URL has already
  // leaked it into logs and histories, and answering would teach the client that it works.
  const query = request.url.includes('?') ? new URL(request.url).searchParams : null
  if (query && KEY_QUERY_PARAMS.some((p) => query.has(p))) {
    throw refusal(
      'unauthorized',
      'API keys are accepted only in the Authorization header, never in the URL. Send "Authorization: Bearer <API_KEY>" and revoke a key that was put in a URL.',
    )
  }
  const header = request.headers.get('authorization')
  if (!header) return null
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header)
  if (!m) throw refusal('unauthorized', 'The Authorization header must be "Bearer <API_KEY>".')
  return m[1]!
}

/**
 * Authentication and authorisation for every request, in the order the issue fixes:
 * Bearer header only -> key known -> IP allowlist -> key active and not deleted -> role
 * grants the route's permission -> rate limit. All of it runs in onRequest, before the body
 * is parsed or validated, so a refused caller learns nothing about the route and causes no
 * side effect (a refused request is neither counted nor recorded as a use of the key).
 */
export function createAuth(deps: Deps, opts: AuthOptions) {
  const contexts = new WeakMap<Request, AuthContext>()

  /** Steps 1-3: the key exists, the address is allowed, the key is live. */
  const identify = (token: string, address: () => string | null): KeyIdentity => {
    const key = opts.resolveKey(token)
    if (!key) throw refusal('unauthorized', 'The API key is not valid.')
    if (key.allow && !isAllowed(key.allow, address()))
      throw refusal('ip_not_allowed', `Requests from ${address() ?? 'this address'} are not allowed for this API key.`)
    if (key.deleted) throw refusal('unauthorized', 'The API key has been deleted.')
    if (key.status !== 'active') throw refusal('unauthorized', 'The API key is inactive.')
    return key
  }

  /** The X-RateLimit-* headers, which every answer to an identified key carries (spec: "on every response"). */
  const rateHeaders = (headers: Record<string, string>, d: RateDecision): void => {
    headers['x-ratelimit-limit'] = String(d.limit)
    headers['x-ratelimit-remaining'] = String(d.remaining)
    headers['x-ratelimit-reset'] = String(d.resetSeconds)
  }

  /** Steps 4-5: the role grants the route's permission, then the rate limit has room. */
  const authorize = (key: KeyIdentity, route: RouteInfo | null, headers: Record<string, string>): void => {
    // A refusal before the limit applies is not counted; its headers show the window as it stands.
    const now = deps.clock.now()
    const refuse = (error: AppError): never => {
      rateHeaders(headers, opts.limiter.peek(key.id, key.rate_limit, now))
      throw error
    }
    // A path no route serves: the framework answers 404, with the headers.
    if (!route) return rateHeaders(headers, opts.limiter.peek(key.id, key.rate_limit, now))
    if (!route.permission) {
      // A route in a protected family that forgot to declare its permission is closed, not open.
      refuse(refusal('forbidden', 'This route declares no permission, so no key may call it.'))
    }
    if (!grants(key.permissions, route.permission!)) {
      refuse(refusal('forbidden', `The API key's role does not grant the ${route.permission} permission.`))
    }
    // An unlimited key is not counted: its headers say UNLIMITED (docs/api.md "Rate limits").
    const d = key.rate_limit === null ? opts.limiter.peek(key.id, null, now) : opts.limiter.take(key.id, key.rate_limit, now)
    rateHeaders(headers, d)
    if (!d.allowed) {
      headers['retry-after'] = String(d.resetSeconds)
      throw refusal('rate_limited', `Rate limit of ${d.limit} requests per minute exceeded; retry in ${d.resetSeconds} s.`)
    }
  }

  /**
   * A console request (docs/api.md "Console sessions"): the session cookie names a live
   * session, a change carries its CSRF token from this server's origin, and the
   * administrator's role grants the route's permission exactly as a key's role would.
   * Null for a path no route serves (the framework answers 404, as it does for a key).
   */
  const consoleSession = (request: Request, route: RouteInfo | null): SessionIdentity | null => {
    const cookie = sessionCookieOf(request)
    if (!cookie) throw refusal('unauthorized', 'Missing API key. Send the header "Authorization: Bearer <API_KEY>".')
    const session = opts.resolveSession?.(cookie) ?? null
    if (!session) throw refusal('unauthorized', 'The console session has ended; sign in again.')
    if (!route) return null
    if (MUTATING.has(request.method)) assertCsrf(request, deps, session)
    if (!route.permission) throw refusal('forbidden', 'This route declares no permission, so nobody may call it.')
    if (!grants(session.permissions, route.permission)) throw refusal('forbidden', `Your role does not grant the ${route.permission} permission.`)
    return session
  }

  const log = (request: Request, auth: AuthContext, status: number) => {
    if (auth.logged || !MUTATING.has(request.method)) return
    auth.logged = true
    const path = pathnameOf(request.url)
    const id = pathParams(auth.route.path, path).id
    const target = auth.target ?? (id !== undefined ? { type: auth.route.permission!.split('.')[0]!, id } : null)
    recordActivity(deps, {
      actor_key_id: auth.key?.id ?? null,
      actor_admin_id: auth.admin?.admin_id ?? null,
      actor_name: auth.actor.name,
      action: auth.route.permission!,
      target_type: target?.type ?? null,
      target_id: target ? String(target.id) : null,
      method: request.method,
      path,
      ip: auth.ip,
      status,
      outcome: status < 400 ? 'success' : 'failure',
    })
  }

  const plugin = new Elysia({ name: 'auth' }).onRequest(({ request, server, set }) => {
    const path = pathnameOf(request.url)
    const route = opts.routes().match(request.method, path)
    if (route?.permission || PROTECTED_PREFIXES.some((p) => path.startsWith(p))) {
      // The address is asked for only where it is used: Bun's requestIP is a getpeername
      // system call per request, about 2 µs here (issue 18). A read of a key without an
      // allowlist needs it only for last_used_ip, once per batch of uses.
      let ip: string | null | undefined
      const address = () => (ip === undefined ? (ip = clientAddress(request, server, deps.config.trust_proxy)) : ip)
      const token = bearerToken(request)
      if (token === null) {
        // No Authorization header: the console's session cookie may stand in for a key.
        const admin = consoleSession(request, route)
        if (admin)
          contexts.set(request, {
            key: null,
            admin,
            actor: { key_id: null, admin_id: admin.admin_id, name: admin.email, permissions: admin.permissions },
            ip: address(),
            route: route!,
          })
        return
      }
      const key = identify(token, address)
      authorize(key, route, set.headers as Record<string, string>)
      // A path no route serves: the key was checked (no route discovery without one); the framework answers 404.
      if (!route) return
      opts.usage.record(key.id, deps.clock.now(), address)
      // The activity log (changes only) records the address; a read's context has it only if asked for above.
      const changes = MUTATING.has(request.method)
      contexts.set(request, {
        key,
        admin: null,
        actor: { key_id: key.id, name: key.name, permissions: key.permissions },
        ip: changes ? address() : (ip ?? null),
        route,
      })
    }
  })

  /**
   * Records the answer to an authenticated change in the activity log, success or failure.
   * app.ts calls it from its one answer hook and from the error envelope: no hook of its own,
   * since every global hook is a call on every request (decision 86).
   */
  const recordAnswer = (request: Request, status: number) => {
    const auth = contexts.get(request)
    if (auth) log(request, auth, status)
  }
  /** The caller of an authenticated route; a route without a permission has none, which is a bug. */
  const authOf: AuthOf = (request) => {
    const auth = contexts.get(request)
    if (!auth) throw new Error('authOf called on a route without a permission')
    return auth
  }
  return { plugin, recordAnswer, authOf }
}

export type AuthOf = (request: Request) => AuthContext
