import { describe, expect, test } from 'bun:test'
import { testApp } from '../support/app'
import { runScenarios, type Scenario } from '../support/scenarios'

// Each failure has the envelope, says JSON, and created nothing (the Administrator role is the only role).
const failed = (code: string, message?: RegExp): Partial<Scenario> => ({
  code,
  json: { success: false, error: { code, message: expect.any(String) } },
  ...(message ? { message } : {}),
  expectHeaders: { 'content-type': 'application/json' },
  after: async ({ t, admin }) => expect((await t.call('GET', '/api/v2/roles', { key: admin })).body.meta.total).toBe(1),
})
const json = { 'content-type': 'application/json' }

runScenarios(
  'bad input gets the spec envelope',
  [
    {
      name: 'malformed JSON',
      method: 'POST',
      url: '/api/v2/roles',
      rawBody: '{"name": "x", ',
      headers: json,
      status: 400,
      ...failed('bad_request', /valid JSON/),
    },
    {
      name: 'text/plain body',
      method: 'POST',
      url: '/api/v2/roles',
      rawBody: 'name=x',
      headers: { 'content-type': 'text/plain' },
      status: 415,
      ...failed('unsupported_media_type', /application\/json, not text\/plain/),
    },
    {
      name: 'form body',
      method: 'POST',
      url: '/api/v2/roles',
      rawBody: 'name=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      status: 415,
      ...failed('unsupported_media_type'),
    },
    {
      name: 'body without a content type',
      method: 'POST',
      url: '/api/v2/roles',
      rawBody: '{"name":"x","permissions":[]}',
      status: 415,
      ...failed('unsupported_media_type'),
    },
    {
      name: 'body over the size limit',
      method: 'POST',
      url: '/api/v2/roles',
      rawBody: JSON.stringify({ name: 'x', description: 'a'.repeat(5000), permissions: [] }),
      headers: json,
      status: 413,
      ...failed('payload_too_large', /4096 bytes/),
    },
    { name: 'JSON array instead of object', method: 'POST', url: '/api/v2/roles', rawBody: '[]', headers: json, status: 422, ...failed('validation_failed') },
    {
      name: 'wrong field type',
      method: 'POST',
      url: '/api/v2/roles',
      rawBody: '{"name": 5, "permissions": "all"}',
      headers: json,
      status: 422,
      ...failed('validation_failed'),
    },
    { name: 'unknown route with a key', method: 'GET', url: '/api/v2/nothing-here', status: 404, ...failed('not_found') },
  ] as Scenario[],
  { config: { max_body_bytes: 4096 } },
)

runScenarios('failures say what and where, and nothing internal', [
  {
    name: 'unknown fields are ignored, not stored',
    method: 'POST',
    url: '/api/v2/roles',
    body: { name: 'R', permissions: [], builtin: true, colour: 'red' },
    status: 201,
    json: { data: { builtin: false } },
    after: (_, r) => expect(r.body.data.colour).toBeUndefined(),
  },
  {
    name: 'wrong field types are reported per field',
    method: 'POST',
    url: '/api/v2/roles',
    body: { name: 5, permissions: 'all' },
    status: 422,
    detailFields: ['name', 'permissions'],
    after: (_, r) => {
      for (const messages of Object.values(r.body.error.details)) expect(Array.isArray(messages)).toBe(true)
    },
  },
  {
    name: 'a 500 tells the caller nothing internal and logs the cause with the request id',
    method: 'GET',
    url: '/api/v2/activity-logs',
    before: ({ t, admin }) => {
      void admin // the key is made before the table goes: making one writes an activity log
      t.deps.db.$client.run('DROP TABLE activity_logs')
    },
    status: 500,
    code: 'internal',
    after: ({ t }, r) => {
      expect(r.body.error.message).not.toMatch(/activity_logs|sqlite|table/i)
      const requestId = r.headers.get('x-request-id')!
      expect(r.body.error.message).toContain(requestId)
      const logged = t.deps.log.lines.find((l) => l.level === 'error' && l.fields?.request_id === requestId)
      expect(String(logged?.fields?.error)).toContain('activity_logs')
    },
  },
])

runScenarios('an unauthenticated caller learns nothing about the route: 401 before 404, 415 or 422', [
  { name: 'unknown route', method: 'GET', url: '/api/v2/nothing-here', key: null, status: 401 },
  { name: 'malformed JSON', method: 'POST', url: '/api/v2/roles', rawBody: '{bad', headers: json, key: null, status: 401 },
  { name: 'text/plain body', method: 'POST', url: '/api/v2/roles', rawBody: 'x', headers: { 'content-type': 'text/plain' }, key: null, status: 401 },
  { name: 'per_page out of range', method: 'GET', url: '/api/v2/api-keys?per_page=1000', key: null, status: 401 },
  { name: 'unknown /v1 route', method: 'GET', url: '/v1/anything', key: null, status: 401 },
])

runScenarios('an enum value outside the list says which values are allowed', [
  {
    name: 'query enum',
    method: 'GET',
    url: '/api/v2/contacts?status=happy',
    status: 422,
    details: { status: ['must be one of: subscribed, unconfirmed, unsubscribed, bounced, complained'] },
  },
  {
    name: 'body enum',
    method: 'POST',
    url: '/api/v2/custom-fields',
    body: { key: 'a', name: 'A', type: 'colour' },
    status: 422,
    after: (_, r) => expect(r.body.error.details.type).toEqual(['must be one of: text, number, date, boolean, one_of']),
  },
])

runScenarios('the key never travels in the URL, and a malformed Authorization header is refused', [
  {
    name: 'a key in the URL is refused even when valid',
    method: 'GET',
    url: ({ admin }) => `/api/v2/roles?api_key=${admin}`,
    key: null,
    status: 401,
    message: 'never in the URL',
  },
  ...(
    [
      ['Basic abc', 'must be "Bearer'],
      ['Bearer', 'must be "Bearer'],
      ['Bearer not-a-key', 'not valid'],
      ['Bearer mr_aaaaaaaaaaaa_' + 'A'.repeat(43), 'not valid'],
    ] as const
  ).map(([header, message]): Scenario => ({
    name: `Authorization "${header.slice(0, 20)}"`,
    method: 'GET',
    url: '/api/v2/roles',
    before: ({ t }) => t.makeKey(),
    key: null,
    headers: { authorization: header },
    status: 401,
    message,
  })),
  {
    name: 'a wrong secret with a real lookup id is refused',
    method: 'GET',
    url: '/api/v2/roles',
    key: ({ admin }) => admin.slice(0, -1) + (admin.endsWith('A') ? 'B' : 'A'),
    status: 401,
  },
])

describe('bad input gets the spec envelope', () => {
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
})
