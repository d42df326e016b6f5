import { describe, expect, test } from 'bun:test'
import { testApp } from '../support/app'

describe('bad input gets the spec envelope', () => {
  const cases: Array<{
    name: string
    init: (key: string) => { method: string; path: string; rawBody?: string; headers?: Record<string, string> }
    status: number
    code: string
    message?: RegExp
  }> = [
    {
      name: 'malformed JSON',
      init: () => ({ method: 'POST', path: '/api/v2/roles', rawBody: '{"name": "x", ', headers: { 'content-type': 'application/json' } }),
      status: 400,
      code: 'bad_request',
      message: /valid JSON/,
    },
    {
      name: 'text/plain body',
      init: () => ({ method: 'POST', path: '/api/v2/roles', rawBody: 'name=x', headers: { 'content-type': 'text/plain' } }),
      status: 415,
      code: 'unsupported_media_type',
      message: /application\/json, not text\/plain/,
    },
    {
      name: 'form body',
      init: () => ({ method: 'POST', path: '/api/v2/roles', rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      status: 415,
      code: 'unsupported_media_type',
    },
    {
      name: 'body without a content type',
      init: () => ({ method: 'POST', path: '/api/v2/roles', rawBody: '{"name":"x","permissions":[]}' }),
      status: 415,
      code: 'unsupported_media_type',
    },
    {
      name: 'body over the size limit',
      init: () => ({
        method: 'POST',
        path: '/api/v2/roles',
        rawBody: JSON.stringify({ name: 'x', description: 'a'.repeat(5000), permissions: [] }),
        headers: { 'content-type': 'application/json' },
      }),
      status: 413,
      code: 'payload_too_large',
      message: /4096 bytes/,
    },
    {
      name: 'JSON array instead of object',
      init: () => ({ method: 'POST', path: '/api/v2/roles', rawBody: '[]', headers: { 'content-type': 'application/json' } }),
      status: 422,
      code: 'validation_failed',
    },
    {
      name: 'wrong field type',
      init: () => ({ method: 'POST', path: '/api/v2/roles', rawBody: '{"name": 5, "permissions": "all"}', headers: { 'content-type': 'application/json' } }),
      status: 422,
      code: 'validation_failed',
    },
    { name: 'unknown route with a key', init: () => ({ method: 'GET', path: '/api/v2/nothing-here' }), status: 404, code: 'not_found' },
  ]
  for (const c of cases) {
    test(`${c.name} -> ${c.status} ${c.code}`, async () => {
      const t = testApp({ max_body_bytes: 4096 })
      const admin = t.makeKey()
      const { method, path, ...opts } = c.init(admin.key)
      const r = await t.call(method, path, { key: admin.key, ...opts })
      expect(r.status).toBe(c.status)
      expect(r.body.success).toBe(false)
      expect(r.body.error.code).toBe(c.code)
      expect(typeof r.body.error.message).toBe('string')
      if (c.message) expect(r.body.error.message).toMatch(c.message)
      expect(r.headers.get('content-type')).toContain('application/json')
      // Nothing was created.
      expect((await t.call('GET', '/api/v2/roles', { key: admin.key })).body.meta.total).toBe(1)
    })
  }

  test('wrong field types are reported per field', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const r = await t.call('POST', '/api/v2/roles', { key: admin.key, body: { name: 5, permissions: 'all' } })
    expect(Object.keys(r.body.error.details).sort()).toEqual(['name', 'permissions'])
    for (const messages of Object.values(r.body.error.details)) expect(Array.isArray(messages)).toBe(true)
  })

  test('an unauthenticated caller learns nothing about the route: 401 before 404, 415 or 422', async () => {
    const t = testApp()
    for (const [method, path, rawBody, type] of [
      ['GET', '/api/v2/nothing-here', undefined, undefined],
      ['POST', '/api/v2/roles', '{bad', 'application/json'],
      ['POST', '/api/v2/roles', 'x', 'text/plain'],
      ['GET', '/api/v2/api-keys?per_page=1000', undefined, undefined],
      ['GET', '/v1/anything', undefined, undefined],
    ] as const) {
      const r = await t.call(method, path, { rawBody, headers: type ? { 'content-type': type } : {} })
      expect(r.status).toBe(401)
    }
  })

  test('an enum value outside the list says which values are allowed', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const q = await t.call('GET', '/api/v2/contacts?status=happy', { key: admin.key })
    expect(q.body.error.details).toEqual({ status: ['must be one of: subscribed, unconfirmed, unsubscribed, bounced, complained'] })
    const b = await t.call('POST', '/api/v2/custom-fields', { key: admin.key, body: { key: 'a', name: 'A', type: 'colour' } })
    expect(b.body.error.details.type).toEqual(['must be one of: text, number, date, boolean, one_of'])
  })

  test('unknown fields are ignored, not stored', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const r = await t.call('POST', '/api/v2/roles', { key: admin.key, body: { name: 'R', permissions: [], builtin: true, colour: 'red' } })
    expect(r.status).toBe(201)
    expect(r.body.data.builtin).toBe(false)
    expect(r.body.data.colour).toBeUndefined()
  })

  test('prototype pollution payloads change nothing', async () => {
    const t = testApp()
    const admin = t.makeKey()
    for (const raw of [
      '{"name":"p1","permissions":[],"__proto__":{"polluted":true,"builtin":true}}',
      '{"name":"p2","permissions":[],"constructor":{"prototype":{"polluted":true}}}',
      '{"name":"p3","permissions":["roles.read"],"__proto__":{"permissions":["*"]}}',
    ]) {
      const r = await t.call('POST', '/api/v2/roles', { key: admin.key, rawBody: raw, headers: { 'content-type': 'application/json' } })
      expect(r.status).toBe(201)
      expect(r.body.data.builtin).toBe(false)
      expect(r.body.data.permissions).not.toContain('*')
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined()
  })

  test('a key in the URL is refused even when valid', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const r = await t.call('GET', `/api/v2/roles?api_key=${admin.key}`)
    expect(r.status).toBe(401)
    expect(r.body.error.message).toContain('never in the URL')
  })

  const badHeaders: Array<[string, string]> = [
    ['Basic abc', 'must be "Bearer'],
    ['Bearer', 'must be "Bearer'],
    ['Bearer not-a-key', 'not valid'],
    ['Bearer mr_aaaaaaaaaaaa_' + 'A'.repeat(43), 'not valid'],
  ]
  for (const [header, message] of badHeaders) {
    test(`Authorization "${header.slice(0, 20)}" -> 401`, async () => {
      const t = testApp()
      t.makeKey()
      const r = await t.call('GET', '/api/v2/roles', { headers: { authorization: header } })
      expect(r.status).toBe(401)
      expect(r.body.error.message).toContain(message)
    })
  }

  test('a wrong secret with a real lookup id is refused', async () => {
    const t = testApp()
    const admin = t.makeKey()
    const forged = admin.key.slice(0, -1) + (admin.key.endsWith('A') ? 'B' : 'A')
    expect((await t.call('GET', '/api/v2/roles', { key: forged })).status).toBe(401)
  })

  test('a 500 tells the caller nothing internal and logs the cause with the request id', async () => {
    const t = testApp()
    const admin = t.makeKey()
    t.deps.db.$client.run('DROP TABLE activity_logs')
    const r = await t.call('GET', '/api/v2/activity-logs', { key: admin.key })
    expect(r.status).toBe(500)
    expect(r.body.error.code).toBe('internal')
    expect(r.body.error.message).not.toMatch(/activity_logs|sqlite|table/i)
    const requestId = r.headers.get('x-request-id')!
    expect(r.body.error.message).toContain(requestId)
    const logged = t.deps.log.lines.find((l) => l.level === 'error' && l.fields?.request_id === requestId)
    expect(String(logged?.fields?.error)).toContain('activity_logs')
  })
})
