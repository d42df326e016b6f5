/**
 * The console's one way to the server: the same REST API every client uses, authenticated
 * by the session cookie (sent because the console is same-origin) and, on changes, the
 * CSRF token the session answer carried (CONSOLE.md "Session API").
 */

/** Pagination metadata of a list answer (docs/api.md "Pagination"). */
export interface PageMeta {
  current_page: number
  per_page: number
  total: number
  last_page: number
}

/** A list answer: the rows and where they sit in the whole list. */
export interface Page<T> {
  data: T[]
  meta: PageMeta
}

/** An API failure: the HTTP status and the envelope's code, message and details. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> | null = null,
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

let csrfToken: string | null = null

/** Remembers the CSRF token from GET/POST /admin/api/session (sent as X-CSRF-Token on every change). */
export function setCsrfToken(token: string | null): void {
  csrfToken = token
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
/** Paths whose 401 is an answer for the page itself (a wrong password), not "go and sign in". */
const NO_REDIRECT = ['/admin/api/session', '/admin/api/setup']

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** A body sent as it is (a file upload) with its media type, instead of as JSON. */
class RawBody {
  constructor(
    readonly body: Blob,
    readonly contentType: string,
  ) {}
}

async function request(method: Method, path: string, body?: unknown): Promise<{ data: unknown; meta?: PageMeta }> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (body !== undefined) headers['content-type'] = body instanceof RawBody ? body.contentType : 'application/json'
  if (MUTATING.has(method) && csrfToken) headers['x-csrf-token'] = csrfToken
  let res: Response
  try {
    const payload = body === undefined ? undefined : body instanceof RawBody ? body.body : JSON.stringify(body)
    res = await fetch(path, { method, headers, credentials: 'same-origin', body: payload })
  } catch {
    throw new ApiError(0, 'network_error', 'The server could not be reached. Check that Mailroom is running and try again.')
  }
  const text = await res.text()
  let parsed: { success?: boolean; data?: unknown; meta?: PageMeta; error?: { code?: string; message?: string; details?: Record<string, unknown> } } | null =
    null
  try {
    parsed = text ? JSON.parse(text) : null
  } catch {
    parsed = null
  }
  if (!res.ok || parsed?.success === false) {
    const err = parsed?.error
    const error = new ApiError(
      res.status,
      err?.code ?? 'http_error',
      err?.message ?? `The server answered ${res.status} ${res.statusText}.`,
      err?.details ?? null,
    )
    if (res.status === 401 && !NO_REDIRECT.some((p) => path.startsWith(p))) redirectToSignIn()
    throw error
  }
  return { data: parsed?.data, meta: parsed?.meta }
}

/** Sends the browser to the sign-in page, coming back here afterwards. */
export function redirectToSignIn(): void {
  const here = window.location.pathname + window.location.search
  if (window.location.pathname.startsWith('/admin/sign-in')) return
  window.location.assign(`/admin/sign-in?next=${encodeURIComponent(here)}`)
}

/** Calls the API and returns the envelope's `data`; throws ApiError on any failure. */
export async function api<T = unknown>(method: Method, path: string, body?: unknown): Promise<T> {
  return (await request(method, path, body)).data as T
}

/** Sends a file as the request body (e.g. a CSV to POST /api/v2/imports) and returns the envelope's `data`. */
export async function apiUpload<T = unknown>(path: string, file: Blob, contentType: string): Promise<T> {
  return (await request('POST', path, new RawBody(file, contentType))).data as T
}

/** Reads one page of a list (`?page=&per_page=` and filters) and returns rows with their meta. */
export async function apiPage<T = unknown>(path: string, query: Record<string, string | number | undefined | null> = {}): Promise<Page<T>> {
  const qs = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v))
  const url = qs.size ? `${path}${path.includes('?') ? '&' : '?'}${qs}` : path
  const res = await request('GET', url)
  const rows = (res.data ?? []) as T[]
  return { data: rows, meta: res.meta ?? { current_page: 1, per_page: rows.length, total: rows.length, last_page: 1 } }
}

/** The first message the API gave for a field (`details[field]` of a validation failure), if any. */
export function fieldError(error: unknown, field: string): string | undefined {
  if (!(error instanceof ApiError) || !error.details) return undefined
  const v = error.details[field]
  if (Array.isArray(v)) return v.map(String).join(' ')
  return typeof v === 'string' ? v : undefined
}

/** A sentence for a failure, for a toast or an error state. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) return error.message
  if (error instanceof Error) return error.message
  return 'Something went wrong.'
}
