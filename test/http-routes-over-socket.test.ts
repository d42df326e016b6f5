/**
 * Every GET route with path parameters, called through a real socket and Bun's own router.
 * `app.handle` (what the other tests call) matches routes with Elysia's router and hands the
 * handler a plain params object; a served app gets Bun's, whose properties cannot be
 * redefined. Elysia 1.4.32 redefined them for schemas with defaults and answered 500 on
 * such routes (decision 87) while every `app.handle` test passed. Each route must answer
 * with a status below 500 (records that do not exist give 404).
 */
import { afterAll, expect, test } from 'bun:test'
import { testApp } from './support/app'

const t = testApp()
const admin = t.makeKey()
const server = t.app.listen({ hostname: '127.0.0.1', port: 0 })
afterAll(() => server.stop())

test('every GET route with path parameters answers below 500 over a socket', async () => {
  const routes = (t.app.routes as Array<{ method: string; path: string }>).filter((r) => r.method === 'GET' && r.path.includes('/:'))
  expect(routes.length).toBeGreaterThan(30)
  const base = `http://127.0.0.1:${server.server!.port}`
  const failures: string[] = []
  for (const route of routes) {
    const path = route.path.replace(/:[a-z_]+/g, '1')
    const res = await fetch(base + path, { headers: { authorization: `Bearer ${admin.key}` } })
    await res.arrayBuffer()
    if (res.status >= 500) failures.push(`${route.path}: ${res.status}`)
  }
  expect(failures).toEqual([])
})

test("no route's path parameters carry a default (the cause of those 500s, for every method)", () => {
  const withDefault = (t.app.routes as Array<{ method: string; path: string; hooks?: { params?: unknown } }>)
    .filter((r) => r.hooks?.params && JSON.stringify(r.hooks.params).includes('"default"'))
    .map((r) => `${r.method} ${r.path}`)
  expect(withDefault).toEqual([])
})
