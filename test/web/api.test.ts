/**
 * The console's API client (web/admin/lib/api.ts) against a stand-in fetch: the envelope is
 * unwrapped, failures become ApiError with the details a form shows by its fields, the
 * CSRF token goes with changes only, and list reads carry their pagination meta.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { ApiError, api, apiPage, errorMessage, fieldError, setCsrfToken } from '../../web/admin/lib/api'

type Seen = { url: string; method: string; headers: Record<string, string>; body: string | null }
let seen: Seen[] = []
let answer: () => Response
const realFetch = globalThis.fetch

beforeEach(() => {
  seen = []
  globalThis.fetch = (async (url: string, init: RequestInit = {}) => {
    seen.push({ url, method: init.method ?? 'GET', headers: (init.headers ?? {}) as Record<string, string>, body: (init.body as string) ?? null })
    return answer()
  }) as typeof fetch
  setCsrfToken(null)
})
afterEach(() => {
  globalThis.fetch = realFetch
})

/** The ApiError a call fails with (a call that succeeds fails the test). */
const failure = (p: Promise<unknown>): Promise<ApiError> =>
  p.then(
    () => {
      throw new Error('expected the call to fail')
    },
    (e) => e as ApiError,
  )

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })

test('data is unwrapped from the envelope; the CSRF token is sent on changes, not on reads', async () => {
  answer = () => json(200, { success: true, data: { id: 1 } })
  setCsrfToken('tok')
  expect(await api<{ id: number }>('GET', '/api/v2/roles/1')).toEqual({ id: 1 })
  await api('POST', '/api/v2/roles', { name: 'Ops' })
  expect(seen[0]!.headers['x-csrf-token']).toBeUndefined()
  expect(seen[1]!.headers['x-csrf-token']).toBe('tok')
  expect(seen[1]!.headers['content-type']).toBe('application/json')
  expect(JSON.parse(seen[1]!.body!)).toEqual({ name: 'Ops' })
})

test('a failure is an ApiError whose details name the fields', async () => {
  answer = () =>
    json(422, { success: false, error: { code: 'validation_failed', message: 'The request is not valid.', details: { name: ['must not be blank'] } } })
  const error = await failure(api('POST', '/api/v2/roles', { name: ' ' }))
  expect(error).toBeInstanceOf(ApiError)
  expect(error.status).toBe(422)
  expect(error.code).toBe('validation_failed')
  expect(fieldError(error, 'name')).toBe('must not be blank')
  expect(fieldError(error, 'other')).toBeUndefined()
  expect(errorMessage(error)).toBe('The request is not valid.')
})

test('a wrong password on the session route is an error for the page, not a redirect', async () => {
  answer = () => json(401, { success: false, error: { code: 'unauthorized', message: 'The email or password is wrong.', details: null } })
  const error = await failure(api('POST', '/admin/api/session', { email: 'a@b.c', password: 'x' }))
  expect(error).toBeInstanceOf(ApiError)
  expect(error.message).toBe('The email or password is wrong.')
})

test('a page read sends its query and returns rows with meta', async () => {
  answer = () => json(200, { success: true, data: [{ id: 1 }], meta: { current_page: 2, per_page: 1, total: 5, last_page: 5 } })
  const page = await apiPage('/api/v2/api-keys', { page: 2, per_page: 1, status: '', name: null })
  expect(seen[0]!.url).toBe('/api/v2/api-keys?page=2&per_page=1')
  expect(page.data).toEqual([{ id: 1 }])
  expect(page.meta.total).toBe(5)
})

test('an unreachable server and a non-JSON answer still give a readable ApiError', async () => {
  globalThis.fetch = (async () => {
    throw new TypeError('fetch failed')
  }) as unknown as typeof fetch
  const down = await failure(api('GET', '/api/v2/stats'))
  expect(down.code).toBe('network_error')
  globalThis.fetch = (async () => new Response('Bad gateway', { status: 502, statusText: 'Bad Gateway' })) as unknown as typeof fetch
  const proxy = await failure(api('GET', '/api/v2/stats'))
  expect(proxy.status).toBe(502)
  expect(proxy.message).toContain('502')
})
