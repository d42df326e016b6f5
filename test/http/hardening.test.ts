import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SERVER_BODY_CAP } from '../../src/http/body'
import { UNLIMITED } from '../../src/lib/rate-limit'
import { testApp } from '../support/app'

/** Issue 13's HTTP findings, each through a real listener on loopback. */
const t = testApp()
let base = ''
const admin = t.makeKey()

beforeAll(() => {
  t.app.listen({ hostname: '127.0.0.1', port: 0, maxRequestBodySize: SERVER_BODY_CAP })
  base = `http://127.0.0.1:${t.app.server!.port}`
})
afterAll(() => t.app.stop(true))

interface Answer {
  status: number
  headers: Headers
  body: any
}

async function send(
  method: string,
  path: string,
  opts: { key?: string | null; body?: string; type?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers }
  const key = opts.key === undefined ? admin.key : opts.key
  if (key) headers.authorization = `Bearer ${key}`
  if (opts.body !== undefined) headers['content-type'] = opts.type ?? 'application/json'
  const res = await fetch(base + path, { method, headers, body: opts.body })
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: res.status, headers: res.headers, body }
}

describe('item 7: a key in the URL is refused even beside a valid header', () => {
  for (const param of ['api_key', 'apikey', 'key', 'token', 'access_token']) {
    test(`?${param}= with a valid Authorization header -> 401`, async () => {
      const r = await send('GET', `/api/v2/roles?${param}=${admin.key}`)
      expect(r.status).toBe(401)
      expect(r.body.error.code).toBe('unauthorized')
      expect(r.body.error.message).toMatch(/never in the URL/)
    })
  }
  test('the same request without the URL key succeeds', async () => {
    expect((await send('GET', '/api/v2/roles')).status).toBe(200)
  })
})

describe('item 8: application/*+json bodies are parsed as JSON', () => {
  for (const type of ['application/merge-patch+json', 'application/vnd.api+json', 'application/problem+json; charset=utf-8']) {
    test(`${type}`, async () => {
      const name = `list ${type}`
      const created = await send('POST', '/api/v2/lists', { body: JSON.stringify({ name }), type })
      expect(created.status).toBe(201)
      expect(created.body.data.name).toBe(name)
      const patched = await send('PATCH', `/api/v2/lists/${created.body.data.id}`, { body: JSON.stringify({ name: `${name} renamed` }), type })
      expect(patched.status).toBe(200)
      expect(patched.body.data.name).toBe(`${name} renamed`)
    })
  }
  test('a +json body that is not JSON is a 400 like any other', async () => {
    const r = await send('POST', '/api/v2/lists', { body: '{"name":', type: 'application/merge-patch+json' })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('bad_request')
  })
})

describe('item 15: X-RateLimit-* on every authenticated response', () => {
  const limited = t.makeKey({ rate_limit: 50, permissions: ['lists.read'] })
  const unlimited = t.makeKey({ rate_limit: null, permissions: ['lists.read'] })
  const cases: Array<[name: string, method: string, path: string, status: number]> = [
    ['200', 'GET', '/api/v2/lists', 200],
    ['404 of a record', 'GET', '/api/v2/lists/999999', 404],
    ['404 of a path no route serves', 'GET', '/api/v2/no-such-thing', 404],
    ['403 of a permission the role lacks', 'GET', '/api/v2/roles', 403],
    ['422 of a bad query', 'GET', '/api/v2/lists?per_page=0', 422],
  ]
  for (const [name, method, path, status] of cases) {
    test(`limited key, ${name}`, async () => {
      const r = await send(method, path, { key: limited.key })
      expect(r.status).toBe(status)
      expect(r.headers.get('x-ratelimit-limit')).toBe('50')
      expect(Number(r.headers.get('x-ratelimit-remaining'))).toBeLessThan(50)
      expect(Number(r.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0)
    })
    test(`unlimited key, ${name}`, async () => {
      const r = await send(method, path, { key: unlimited.key })
      expect(r.status).toBe(status)
      expect(r.headers.get('x-ratelimit-limit')).toBe(String(UNLIMITED))
      expect(r.headers.get('x-ratelimit-remaining')).toBe(String(UNLIMITED))
      expect(Number(r.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0)
    })
  }
  test('a refusal before the limit applies (403) is not counted', async () => {
    const k = t.makeKey({ rate_limit: 5, permissions: ['lists.read'] })
    await send('GET', '/api/v2/lists', { key: k.key })
    const refused = await send('GET', '/api/v2/roles', { key: k.key })
    expect(refused.status).toBe(403)
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('4')
    expect((await send('GET', '/api/v2/lists', { key: k.key })).headers.get('x-ratelimit-remaining')).toBe('3')
  })
})

describe('item 1: deeply nested JSON is refused before validation', () => {
  const deepObject = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)
  const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)
  const bodies: Array<[name: string, path: string, body: string]> = [
    ['120 KB of nested objects in a typed field', '/api/v2/contacts', `{"email":"a@example.org","list_id":1,"fields":${deepObject(24_000)}}`],
    ['nested arrays of depth 10,000', '/api/v2/lists', `{"name":${deepArray(10_000)}}`],
    ['a nested array as the whole body', '/api/v2/roles', deepArray(10_000)],
    ['depth 33', '/api/v2/lists', `{"name":${deepArray(32)}}`],
  ]
  for (const [name, path, body] of bodies) {
    test(`${name} -> 400 bad_request, while /health answers`, async () => {
      const [deep, health] = await Promise.all([send('POST', path, { body }), send('GET', '/health', { key: null })])
      expect(deep.status).toBe(400)
      expect(deep.body.error.code).toBe('bad_request')
      expect(deep.body.error.message).toMatch(/nested more than 32 levels/)
      expect(health.status).toBe(200)
    })
  }

  test('depth 32 passes the guard and reaches validation', async () => {
    const r = await send('POST', '/api/v2/lists', { body: `{"name":${deepArray(31)}}` })
    expect(r.status).toBe(422)
    expect(r.body.error.code).toBe('validation_failed')
    expect(Object.keys(r.body.error.details)).toEqual(['name'])
  })

  test('brackets inside strings, escaped quotes included, do not count', async () => {
    const name = `\\"${'[{'.repeat(40)}`
    const r = await send('POST', '/api/v2/lists', { body: `{"name":"${name}"}` })
    expect(r.status).toBe(201)
    expect(r.body.data.name).toBe(`"${'[{'.repeat(40)}`)
  })

  test('the same guard for a chunked body of undeclared length', async () => {
    const body = `{"name":${deepArray(10_000)}}`
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(body))
        c.close()
      },
    })
    const res = await fetch(`${base}/api/v2/lists`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin.key}`, 'content-type': 'application/json' },
      body: stream,
    })
    expect(res.status).toBe(400)
    expect(((await res.json()) as any).error.message).toMatch(/nested more than 32 levels/)
  })
})

describe('item 2: pagination bounds on every paginated route', () => {
  const routes = [
    '/api/v2/roles',
    '/api/v2/api-keys',
    '/api/v2/contacts',
    '/api/v2/lists',
    '/api/v2/events',
    '/api/v2/suppressions',
    '/api/v2/templates',
    '/api/v2/activity-logs',
  ]
  const refused: Array<[query: string, field: 'page' | 'per_page']> = [
    ['per_page=-1', 'per_page'],
    ['per_page=1000', 'per_page'],
    ['per_page=101', 'per_page'],
    ['per_page=0', 'per_page'],
    ['per_page=%20', 'per_page'],
    ['per_page=', 'per_page'],
    ['per_page=1.5', 'per_page'],
    ['per_page=1e2', 'per_page'],
    ['per_page=abc', 'per_page'],
    ['page=0', 'page'],
    ['page=-1', 'page'],
    ['page=1e20', 'page'],
    ['page=1e308', 'page'],
    ['page=1000000001', 'page'],
    ['page=%2B1', 'page'],
  ]
  for (const path of routes) {
    for (const [query, field] of refused) {
      test(`${path}?${query} -> 422 naming ${field}`, async () => {
        const r = await send('GET', `${path}?${query}`)
        expect(r.status).toBe(422)
        expect(r.body.error.code).toBe('validation_failed')
        expect(Object.keys(r.body.error.details)).toEqual([field])
        expect(r.body.error.details[field]).toEqual([
          field === 'page' ? 'must be a whole number from 1 to 1,000,000,000' : 'must be a whole number from 1 to 100',
        ])
      })
    }
    test(`${path}: meta fields are integers at the bounds`, async () => {
      for (const query of ['per_page=100', 'per_page=1&page=1000000000', 'page=2&per_page=3', '']) {
        const r = await send('GET', `${path}?${query}`)
        expect(r.status).toBe(200)
        for (const k of ['current_page', 'per_page', 'total', 'last_page']) expect(Number.isInteger(r.body.meta[k])).toBe(true)
      }
    })
  }
  test('a record id in the path is checked the same way', async () => {
    for (const id of ['0', '-1', '1e20', '1.5']) {
      const r = await send('GET', `/api/v2/roles/${id}`)
      expect(r.status).toBe(422)
      expect(Object.keys(r.body.error.details)).toEqual(['id'])
    }
  })
})

describe('item 9: address length, blank names, fields.__proto__', () => {
  let listId = 0
  beforeAll(async () => {
    listId = (await send('POST', '/api/v2/lists', { body: JSON.stringify({ name: 'item 9' }) })).body.data.id
  })
  const label = (n: number) => 'd'.repeat(n)
  test('an address of 255 octets is refused on email; 254 is accepted', async () => {
    // 64 + 1 + 190 = 255 octets; every part within its own limit.
    const long = `${'a'.repeat(64)}@${label(63)}.${label(63)}.${label(58)}.org`
    expect(long.length).toBe(255)
    const r = await send('POST', '/api/v2/contacts', { body: JSON.stringify({ email: long, list_id: listId }) })
    expect(r.status).toBe(422)
    expect(r.body.error.details.email).toEqual(['is longer than 254 characters'])
    const ok = await send('POST', '/api/v2/contacts', { body: JSON.stringify({ email: long.slice(1), list_id: listId }) })
    expect(ok.status).toBe(201)
  })
  test('a local part of 65 octets is refused', async () => {
    const r = await send('POST', '/api/v2/contacts', { body: JSON.stringify({ email: `${'a'.repeat(65)}@example.org`, list_id: listId }) })
    expect(r.status).toBe(422)
    expect(Object.keys(r.body.error.details)).toEqual(['email'])
  })
  const blank: Array<[path: string, body: Record<string, unknown>]> = [
    ['/api/v2/lists', {}],
    ['/api/v2/roles', { permissions: [] }],
    ['/api/v2/api-keys', { role_id: 1 }],
    ['/api/v2/templates', { subject: 's', html: '<p>x</p>' }],
    ['/api/v2/custom-fields', { key: 'k', type: 'text' }],
    ['/api/v2/ip-pools', {}],
  ]
  for (const [path, body] of blank) {
    for (const name of ['   ', '\t\n', '\u00a0']) {
      test(`POST ${path} with name ${JSON.stringify(name)} -> 422 on name`, async () => {
        const r = await send('POST', path, { body: JSON.stringify({ ...body, name }) })
        expect(r.status).toBe(422)
        expect(r.body.error.details.name).toEqual(['must not be blank'])
      })
    }
  }
  test('PATCH a list to a blank name -> 422', async () => {
    const r = await send('PATCH', `/api/v2/lists/${listId}`, { body: JSON.stringify({ name: '  ' }) })
    expect(r.status).toBe(422)
    expect(r.body.error.details.name).toEqual(['must not be blank'])
  })
  test('a top-level __proto__ is ignored like any unknown field', async () => {
    const r = await send('POST', '/api/v2/lists', { body: '{"name":"proto top","__proto__":{"x":1}}' })
    expect(r.status).toBe(201)
  })
  for (const raw of ['"__proto__"', '"\\u005f_proto__"']) {
    test(`fields.${raw} is refused like an unknown key`, async () => {
      const r = await send('POST', '/api/v2/contacts', { body: `{"email":"proto@example.org","list_id":${listId},"fields":{${raw}:{"x":1}}}` })
      expect(r.status).toBe(422)
      expect(r.body.error.code).toBe('validation_failed')
      expect(Object.keys(r.body.error.details)).toEqual(['fields.__proto__'])
    })
  }
})

describe('item 10: every failing field in one 422, in plain words', () => {
  const cases: Array<[name: string, body: Record<string, unknown>, details: Record<string, string[]>]> = [
    [
      'the spec example: schema passes, two semantic failures',
      { email: 'not-an-email', list_id: 999 },
      { email: ['must look like name@example.com'], list_id: ['No list with id 999.'] },
    ],
    ['a schema failure beside a semantic one', { email: 5, list_id: 999 }, { email: ['must be a string'], list_id: ['No list with id 999.'] }],
    [
      'schema failures beside the custom field check',
      { email: 'a@example.org', list_id: 'x', first_name: 7, fields: { nope: 1 } },
      {
        list_id: ['must be a whole number'],
        first_name: ['must be a string or null'],
        'fields.nope': ['is not a custom field; GET /api/v2/custom-fields lists them'],
      },
    ],
    [
      'a missing field beside semantic failures',
      { list_id: 999, status: 'zz' },
      { email: ['is required'], list_id: ['No list with id 999.'], status: ['must be one of: subscribed, unconfirmed, unsubscribed, bounced, complained'] },
    ],
  ]
  for (const [name, body, details] of cases) {
    test(name, async () => {
      const r = await send('POST', '/api/v2/contacts', { body: JSON.stringify(body) })
      expect(r.status).toBe(422)
      expect(r.body.error.code).toBe('validation_failed')
      expect(r.body.error.details).toEqual(details)
    })
  }

  const words: Array<[path: string, body: Record<string, unknown>, field: string, message: string]> = [
    ['/api/v2/roles', { permissions: [] }, 'name', 'is required'],
    ['/api/v2/roles', { name: 5, permissions: [] }, 'name', 'must be a string'],
    ['/api/v2/roles', { name: 'x', permissions: 'all' }, 'permissions', 'must be a list'],
    ['/api/v2/roles', { name: 'x'.repeat(101), permissions: [] }, 'name', 'must be at most 100 characters long'],
    ['/api/v2/api-keys', { name: 'k', role_id: 1, rate_limit: 0 }, 'rate_limit', 'must be a whole number from 1 to 1,000,000 or null'],
    ['/api/v2/api-keys', { name: 'k', role_id: 1.5 }, 'role_id', 'must be a whole number of at least 1'],
    ['/api/v2/api-keys', { name: 'k', role_id: 1, status: 'paused' }, 'status', 'must be one of: active, inactive'],
    ['/v1/send', { from: 'a@example.org', to: 'b@example.org', subject: 5, text: 'x' }, 'subject', 'must be a string'],
  ]
  for (const [path, body, field, message] of words) {
    test(`${path} ${JSON.stringify(body).slice(0, 60)} -> ${field}: ${message}`, async () => {
      const r = await send('POST', path, { body: JSON.stringify(body) })
      expect(r.status).toBe(422)
      expect(r.body.error.details[field]).toEqual([message])
      expect(JSON.stringify(r.body.error.details)).not.toMatch(/Expected|should be one of|'integer'/)
    })
  }
})
