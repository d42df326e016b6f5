/**
 * Finds the declared route for a method and path before the web framework routes it, so
 * that authentication and permission checks run before any body is parsed or validated.
 * Paths use the framework's syntax: `/api/v2/api-keys/:id`.
 */
export interface RouteInfo {
  method: string
  path: string
  permission: string | null
  /** Media types the route's body may have; JSON when empty. */
  contentTypes: string[]
  /** The route's own body size limit, when it differs from the server's (file uploads). */
  maxBytes?: number
}

interface Compiled {
  info: RouteInfo
  segments: string[]
  staticCount: number
}

/** `/a/b/` and `/a/b` are one route to the framework (it is not strict about trailing slashes), so they are one here too. */
function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.replace(/\/+$/, '') || '/' : path
}

/** Most method-and-path answers a route table remembers. */
export const MATCH_CACHE_SIZE = 4096

/** A route table over `routes`: `match` finds the declared route of a method and path. */
export function createRouteTable(routes: RouteInfo[]) {
  const byMethod = new Map<string, Compiled[]>()
  for (const info of routes) {
    const segments = trimSlash(info.path).split('/')
    const list = byMethod.get(info.method) ?? []
    list.push({ info, segments, staticCount: segments.filter((s) => !s.startsWith(':')).length })
    byMethod.set(info.method, list)
  }
  for (const list of byMethod.values()) list.sort((a, b) => b.staticCount - a.staticCount)

  // Answers by method and path (issue 18): auth, the body checks and the framework's own
  // router each looked the route up again, by a scan of every route of the method. Bounded:
  // emptied when full, so many distinct paths (ids) cost one scan each, as before.
  const seen = new Map<string, RouteInfo | null>()
  const scan = (method: string, pathname: string): RouteInfo | null => {
    const parts = trimSlash(pathname).split('/')
    const candidates = byMethod.get(method) ?? (method === 'HEAD' ? byMethod.get('GET') : undefined) ?? []
    for (const c of candidates) {
      if (c.segments.length !== parts.length) continue
      if (c.segments.every((seg, i) => (seg.startsWith(':') ? parts[i] !== '' : seg === parts[i]))) return c.info
    }
    return null
  }

  return {
    /** The route for a request, or null when none is declared (HEAD falls back to GET). */
    match(method: string, pathname: string): RouteInfo | null {
      const key = `${method} ${pathname}`
      let found = seen.get(key)
      if (found === undefined) {
        found = scan(method, pathname)
        if (seen.size >= MATCH_CACHE_SIZE) seen.clear()
        seen.set(key, found)
      }
      return found
    },
  }
}
export type RouteTable = ReturnType<typeof createRouteTable>

/** The values of a route's `:name` segments in a concrete path. */
export function pathParams(routePath: string, pathname: string): Record<string, string> {
  const out: Record<string, string> = {}
  const parts = pathname.split('/')
  routePath.split('/').forEach((seg, i) => {
    if (seg.startsWith(':') && parts[i] !== undefined) out[seg.slice(1)] = decodeURIComponent(parts[i]!)
  })
  return out
}

/** The path of an absolute URL string without building a URL object (that costs more than routing on the request path). */
export function pathnameOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start === -1) return '/'
  const end = url.search(/[?#]/)
  return end === -1 || end < start ? url.slice(start) : url.slice(start, end)
}
