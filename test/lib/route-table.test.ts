import { expect, test } from 'bun:test'
import { createRouteTable, MATCH_CACHE_SIZE, pathnameOf, pathParams } from '../../src/lib/route-table'

const route = (method: string, path: string, permission: string) => ({ method, path, permission, contentTypes: [] })
const table = createRouteTable([
  route('GET', '/api/v2/api-keys/:id', 'api_keys.read'),
  route('GET', '/api/v2/api-keys/deleted', 'api_keys.restore'),
  route('POST', '/api/v2/api-keys/:id/restore', 'api_keys.restore'),
  route('GET', '/api/v2/api-keys', 'api_keys.read'),
])

test('matches static and parameter segments, preferring static ones', () => {
  expect(table.match('GET', '/api/v2/api-keys/7')?.permission).toBe('api_keys.read')
  expect(table.match('GET', '/api/v2/api-keys/deleted')?.permission).toBe('api_keys.restore')
  expect(table.match('POST', '/api/v2/api-keys/7/restore')?.path).toBe('/api/v2/api-keys/:id/restore')
  expect(table.match('GET', '/api/v2/api-keys')?.path).toBe('/api/v2/api-keys')
})

test('no match for other methods, lengths or empty parameters', () => {
  expect(table.match('GET', '/api/v2/api-keys//restore')).toBeNull()
  expect(table.match('DELETE', '/api/v2/api-keys/7')).toBeNull()
  expect(table.match('GET', '/api/v2/api-keys/7/extra')).toBeNull()
})

test('HEAD falls back to GET', () => {
  expect(table.match('HEAD', '/api/v2/api-keys/1')?.permission).toBe('api_keys.read')
})

test('pathParams reads the named segments', () => {
  expect(pathParams('/api/v2/api-keys/:id/restore', '/api/v2/api-keys/42/restore')).toEqual({ id: '42' })
})

test('a trailing slash on either side is the same route', () => {
  const t = createRouteTable([route('POST', '/api/v2/things/', 'things.create')])
  expect(t.match('POST', '/api/v2/things')?.permission).toBe('things.create')
  expect(t.match('POST', '/api/v2/things/')?.permission).toBe('things.create')
  expect(table.match('GET', '/api/v2/api-keys/')?.path).toBe('/api/v2/api-keys')
})

test('pathnameOf takes the path from an absolute URL', () => {
  for (const [url, path] of [
    ['http://127.0.0.1:8825/api/v2/roles?page=2', '/api/v2/roles'],
    ['http://[::1]:8825/api/v2/roles#x', '/api/v2/roles'],
    ['https://mail.example.com/', '/'],
    ['http://h.example/a/b?q=/c', '/a/b'],
    ['http://h.example', '/'],
  ])
    expect(pathnameOf(url!)).toBe(path!)
})

test('answers are remembered by method and path, and stay right past the cache size', () => {
  const t = createRouteTable([route('GET', '/a/:id', 'a.read'), route('DELETE', '/a/:id', 'a.delete')])
  expect(t.match('GET', '/a/1')?.permission).toBe('a.read')
  expect(t.match('DELETE', '/a/1')?.permission).toBe('a.delete')
  expect(t.match('POST', '/a/1')).toBeNull()
  expect(t.match('GET', '/a/1')).toBe(t.match('GET', '/a/1'))
  for (let i = 0; i < MATCH_CACHE_SIZE + 10; i++) expect(t.match(i % 2 ? 'GET' : 'DELETE', `/a/${i}`)?.permission).toBe(i % 2 ? 'a.read' : 'a.delete')
  expect(t.match('DELETE', '/a/1')?.permission).toBe('a.delete')
  expect(t.match('GET', '/a/1/x')).toBeNull()
})
