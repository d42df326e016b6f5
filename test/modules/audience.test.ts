import { describe, expect, test } from 'bun:test'
import { listEvents } from '../../src/modules/events/service'
import { testApp } from '../support/app'
import { runScenarios, type Scenario, type ScenarioContext } from '../support/scenarios'

/** An app with an admin key and helpers for the audience API. */
function audience() {
  const t = testApp()
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  const list = async (name = 'Newsletter') => (await call('POST', '/api/v2/lists', { name })).body.data.id as number
  return { t, admin, call, list }
}

describe('lists', () => {
  test('CRUD with counts by status, and bulk delete', async () => {
    const { call, list } = audience()
    const a = await list('A')
    const b = await list('B')
    await call('POST', '/api/v2/contacts/batch', {
      list_id: a,
      contacts: [{ email: 'x@example.com' }, { email: 'y@example.com', status: 'unsubscribed' }, { email: 'z@example.com', status: 'bounced' }],
    })
    const got = await call('GET', `/api/v2/lists/${a}`)
    expect(got.body.data.counts).toEqual({ subscribed: 1, unconfirmed: 0, unsubscribed: 1, bounced: 1, complained: 0, total: 3 })
    expect((await call('PATCH', `/api/v2/lists/${a}`, { name: 'Renamed' })).body.data.name).toBe('Renamed')
    const page = await call('GET', '/api/v2/lists')
    expect(page.body.meta.total).toBe(2)
    expect(page.body.data[1].counts.total).toBe(0)
    const del = await call('POST', '/api/v2/lists/bulk-delete', { ids: [a, 999] })
    expect(del.body.data).toEqual({ deleted: [a], not_found: [999] })
    expect((await call('GET', `/api/v2/contacts?list_id=${a}`)).body.meta.total).toBe(0) // contacts went with the list
    expect((await call('DELETE', `/api/v2/lists/${b}`)).status).toBe(200)
    expect((await call('GET', `/api/v2/lists/${b}`)).status).toBe(404)
  })
})

describe('custom fields', () => {
  test('types are checked on every contact write', async () => {
    const { call, list } = audience()
    const l = await list()
    for (const f of [
      { key: 'plan', name: 'Plan', type: 'one_of', options: ['free', 'pro'] },
      { key: 'age', name: 'Age', type: 'number' },
      { key: 'birthday', name: 'Birthday', type: 'date' },
      { key: 'vip', name: 'VIP', type: 'boolean', default_value: false },
      { key: 'city', name: 'City', type: 'text' },
    ])
      expect((await call('POST', '/api/v2/custom-fields', f)).status).toBe(201)

    const ok = await call('POST', '/api/v2/contacts', {
      email: 'a@example.com',
      list_id: l,
      fields: { plan: 'pro', age: 41, birthday: '1985-02-28', city: 'Oslo' },
    })
    expect(ok.status).toBe(201)
    expect(ok.body.data.fields).toEqual({ plan: 'pro', age: 41, birthday: '1985-02-28', city: 'Oslo', vip: false })

    const bad = await call('POST', '/api/v2/contacts', {
      email: 'b@example.com',
      list_id: l,
      fields: { plan: 'gold', age: '41', birthday: '1985-02-30', vip: 'yes', colour: 'red' },
    })
    expect(bad.status).toBe(422)
    expect(bad.body.error.details).toEqual({
      'fields.plan': ['must be one of: free, pro'],
      'fields.age': ['must be a number'],
      'fields.birthday': ['must be a date as YYYY-MM-DD'],
      'fields.vip': ['must be true or false'],
      'fields.colour': ['is not a custom field; GET /api/v2/custom-fields lists them'],
    })
    // null clears a value
    const cleared = await call('PATCH', `/api/v2/contacts/${ok.body.data.id}`, { fields: { city: null } })
    expect(cleared.body.data.fields.city).toBeUndefined()
  })

  test('a new required field fills existing contacts with its default; deleting a field removes its values', async () => {
    const { call, list } = audience()
    const l = await list()
    const c = (await call('POST', '/api/v2/contacts', { email: 'a@example.com', list_id: l })).body.data
    const f = (await call('POST', '/api/v2/custom-fields', { key: 'tier', name: 'Tier', type: 'number', required: true, default_value: 1 })).body.data
    expect((await call('GET', `/api/v2/contacts/${c.id}`)).body.data.fields).toEqual({ tier: 1 })
    expect((await call('POST', '/api/v2/custom-fields', { key: 'tier', name: 'Again', type: 'text' })).status).toBe(409)
    const missing = await call('POST', '/api/v2/contacts', { email: 'b@example.com', list_id: l, fields: { tier: null } })
    expect(missing.body.error.details['fields.tier']).toEqual(['is required and cannot be cleared'])
    expect((await call('POST', '/api/v2/custom-fields/bulk-delete', { ids: [f.id, 4242] })).body.data).toEqual({ deleted: [f.id], not_found: [4242] })
    expect((await call('GET', `/api/v2/contacts/${c.id}`)).body.data.fields).toEqual({})
  })

  test('removing a one_of option in use is refused', async () => {
    const { call, list } = audience()
    const l = await list()
    const f = (await call('POST', '/api/v2/custom-fields', { key: 'plan', name: 'Plan', type: 'one_of', options: ['free', 'pro'] })).body.data
    await call('POST', '/api/v2/contacts', { email: 'a@example.com', list_id: l, fields: { plan: 'pro' } })
    expect((await call('PATCH', `/api/v2/custom-fields/${f.id}`, { options: ['free'] })).status).toBe(409)
    expect((await call('PATCH', `/api/v2/custom-fields/${f.id}`, { options: ['free', 'pro', 'team'] })).body.data.options).toEqual(['free', 'pro', 'team'])
  })
})

describe('contacts', () => {
  test('create as in the spec: 201 with id, email, list_id, created_at', async () => {
    const { call, list } = audience()
    const l = await list()
    const r = await call('POST', '/api/v2/contacts', { email: '  Ada.Lovelace@Example.COM ', first_name: 'Ada', list_id: l, status: 'subscribed' })
    expect(r.status).toBe(201)
    expect(r.body).toEqual({
      success: true,
      data: {
        id: expect.any(Number),
        email: 'ada.lovelace@example.com',
        first_name: 'Ada',
        last_name: null,
        list_id: l,
        status: 'subscribed',
        fields: {},
        created_at: '2026-03-01T12:00:30.000Z',
        updated_at: '2026-03-01T12:00:30.000Z',
      },
    })
  })

  test('an update checks addresses and names as a create does', async () => {
    const { call, list } = audience()
    const l = await list()
    const c = (await call('POST', '/api/v2/contacts', { email: 'a@example.com', list_id: l })).body.data
    const bad = await call('PATCH', `/api/v2/contacts/${c.id}`, {
      email: 'a@example.com\r\nBcc: b@example.com',
      first_name: 'A\nB',
    })
    expect(bad.status).toBe(422)
    expect(bad.body.error.details).toEqual({
      email: ['must not contain spaces or control characters'],
      first_name: ['must not contain line breaks or control characters'],
    })
    const ok = await call('PATCH', `/api/v2/contacts/${c.id}`, { email: ' B@Example.COM ', first_name: '  Bea  ', last_name: '' })
    expect(ok.body.data).toMatchObject({ email: 'b@example.com', first_name: 'Bea', last_name: null })
  })

  test('one address at most once per list; another list is fine', async () => {
    const { call, list } = audience()
    const a = await list('A')
    const b = await list('B')
    const first = await call('POST', '/api/v2/contacts', { email: 'a@example.com', list_id: a })
    const dup = await call('POST', '/api/v2/contacts', { email: 'A@EXAMPLE.com', list_id: a })
    expect(dup.status).toBe(409)
    expect(dup.body.error.message).toContain(`contact ${first.body.data.id}`)
    expect((await call('POST', '/api/v2/contacts', { email: 'a@example.com', list_id: b })).status).toBe(201)
    const move = await call('PATCH', `/api/v2/contacts/${first.body.data.id}`, { list_id: b })
    expect(move.status).toBe(409)
  })

  test('list with list_id, status, email, search, custom field, and pagination meta (refusals: the table)', async () => {
    const { call, list } = audience()
    const a = await list('A')
    const b = await list('B')
    await call('POST', '/api/v2/custom-fields', { key: 'plan', name: 'Plan', type: 'one_of', options: ['free', 'pro'] })
    const rows = Array.from({ length: 30 }, (_, i) => ({
      email: `user${String(i).padStart(2, '0')}@example.com`,
      status: i % 3 === 0 ? 'unsubscribed' : 'subscribed',
      fields: { plan: i % 2 ? 'pro' : 'free' },
    }))
    expect((await call('POST', '/api/v2/contacts/batch', { list_id: a, contacts: rows })).body.data.created).toBe(30)
    await call('POST', '/api/v2/contacts', { email: 'other@example.org', list_id: b })
    const q = async (query: string) => (await call('GET', `/api/v2/contacts?${query}`)).body
    expect((await q(`list_id=${a}`)).meta).toEqual({ current_page: 1, per_page: 25, total: 30, last_page: 2 })
    expect((await q(`list_id=${a}&page=2`)).data.map((c: { email: string }) => c.email)).toEqual([
      'user25@example.com',
      'user26@example.com',
      'user27@example.com',
      'user28@example.com',
      'user29@example.com',
    ])
    expect((await q(`list_id=${a}&status=unsubscribed`)).meta.total).toBe(10)
    // Every filter shape of the prepared listing: neither, status alone, list alone (above), both.
    expect((await q('')).meta.total).toBe(31)
    expect((await q('status=subscribed&per_page=100')).data.map((c: { email: string }) => c.email)).toContain('other@example.org')
    expect((await q('status=unsubscribed')).meta.total).toBe(10)
    expect((await q(`list_id=${b}&status=unsubscribed`)).meta.total).toBe(0)
    expect((await q('email=USER07@example.com')).data[0].email).toBe('user07@example.com')
    expect((await q('search=user1')).meta.total).toBe(10)
    expect((await q('search=other')).data[0].list_id).toBe(b)
    expect((await q('field=plan&field_value=pro')).meta.total).toBe(15)
    expect((await q(`list_id=${a}&status=subscribed&field=plan&field_value=pro`)).meta.total).toBe(10)
  })

  test('batch add answers per entry and commits in one go; batch delete answers which existed', async () => {
    const { call, list } = audience()
    const l = await list()
    await call('POST', '/api/v2/contacts', { email: 'old@example.com', list_id: l, first_name: 'Old' })
    const r = await call('POST', '/api/v2/contacts/batch', {
      list_id: l,
      contacts: [{ email: 'new@example.com' }, { email: 'OLD@example.com', first_name: 'Changed' }, { email: 'bad' }, { email: 'new@example.com' }],
    })
    expect(r.status).toBe(200)
    expect(r.body.data).toMatchObject({ created: 1, updated: 0, skipped: 2, invalid: 1 })
    expect(r.body.data.results.map((x: { result: string }) => x.result)).toEqual(['created', 'skipped', 'invalid', 'skipped'])
    expect(r.body.data.results[2].errors.email[0]).toContain('name@example.com')

    const upd = await call('POST', '/api/v2/contacts/batch', { list_id: l, mode: 'update', contacts: [{ email: 'old@example.com', first_name: 'Changed' }] })
    expect(upd.body.data.updated).toBe(1)
    const old = (await call('GET', '/api/v2/contacts?email=old@example.com')).body.data[0]
    expect(old.first_name).toBe('Changed')

    const ids = (await call('GET', `/api/v2/contacts?list_id=${l}`)).body.data.map((c: { id: number }) => c.id)
    const del = await call('POST', '/api/v2/contacts/batch-delete', { ids: [...ids, 9999] })
    expect(del.body.data).toEqual({ deleted: ids, not_found: [9999] })
  })

  test('status changes emit contact.subscribed and contact.unsubscribed events', async () => {
    const { t, call, list } = audience()
    const l = await list()
    const c = (await call('POST', '/api/v2/contacts', { email: 'a@example.com', list_id: l })).body.data
    await call('POST', '/api/v2/contacts', { email: 'quiet@example.com', list_id: l, status: 'unsubscribed' })
    await call('PATCH', `/api/v2/contacts/${c.id}`, { status: 'unsubscribed' })
    await call('PATCH', `/api/v2/contacts/${c.id}`, { first_name: 'No status change' })
    await call('POST', '/api/v2/contacts/batch', { list_id: l, mode: 'update', contacts: [{ email: 'a@example.com', status: 'subscribed' }] })
    // The events service lists newest first; oldest first reads as the story.
    const events = listEvents(t.deps, { per_page: 100 }).items.reverse()
    expect(events.map((e) => [e.kind, e.contact_id])).toEqual([
      ['contact.subscribed', c.id],
      ['contact.unsubscribed', c.id],
      ['contact.subscribed', c.id],
    ])
    expect(events[1]!.data).toEqual({ email: 'a@example.com', list_id: l, previous_status: 'subscribed' })
  })
})

runScenarios(
  'custom fields: refused definitions',
  (
    [
      ['key with capitals', { key: 'Plan', name: 'P', type: 'text' }, 'key'],
      ['key with a quote', { key: "x'y", name: 'P', type: 'text' }, 'key'],
      ['one_of without options', { key: 'p', name: 'P', type: 'one_of' }, 'options'],
      ['options on a text field', { key: 'p', name: 'P', type: 'text', options: ['a'] }, 'options'],
      ['default of the wrong type', { key: 'p', name: 'P', type: 'number', default_value: 'x' }, 'default_value'],
      ['required without default', { key: 'p', name: 'P', type: 'text', required: true }, 'default_value'],
      ['unknown type', { key: 'p', name: 'P', type: 'colour' }, 'type'],
    ] as Array<[string, Record<string, unknown>, string]>
  ).map(([name, body, field]): Scenario => ({
    name,
    method: 'POST',
    url: '/api/v2/custom-fields',
    body,
    status: 422,
    after: (_, r) => expect(Object.keys(r.body.error.details)).toContain(field),
  })),
)

// A list made with the scenario's Administrator key; `setup` is its id.
const newsletter = async ({ t, admin }: ScenarioContext) =>
  (await t.call('POST', '/api/v2/lists', { key: admin, body: { name: 'Newsletter' } })).body.data.id as number

runScenarios('contacts: create refuses with 422 on the field', [
  ...(
    [
      ['invalid email', { email: 'not-an-email' }, 'email'],
      ['header injection in email', { email: 'a@example.com\r\nBcc: b@example.com' }, 'email'],
      ['unknown list', { list_id: 999 }, 'list_id'],
      ['unknown status', { status: 'happy' }, 'status'],
      ['line break in a name', { first_name: 'A\nB' }, 'first_name'],
    ] as Array<[string, Record<string, unknown>, string]>
  ).map(([name, patch, field]): Scenario => ({
    name: `${name} (${field})`,
    method: 'POST',
    before: newsletter,
    url: '/api/v2/contacts',
    body: (c) => ({ email: 'ok@example.com', list_id: c.setup, ...patch }),
    status: 422,
    code: 'validation_failed',
    after: async ({ t, admin }, r) => {
      expect(Object.keys(r.body.error.details)).toContain(field)
      expect((await t.call('GET', '/api/v2/contacts', { key: admin })).body.meta.total).toBe(0)
    },
  })),
])

// The one_of field `plan` (free, pro) exists.
const planField = async ({ t, admin }: ScenarioContext) =>
  t.call('POST', '/api/v2/custom-fields', { key: admin, body: { key: 'plan', name: 'Plan', type: 'one_of', options: ['free', 'pro'] } })
runScenarios('contacts: list filters out of range are 422', [
  { name: 'an unknown field', method: 'GET', before: planField, url: '/api/v2/contacts?field=nope&field_value=x', status: 422 },
  { name: 'a value outside the options', method: 'GET', before: planField, url: '/api/v2/contacts?field=plan&field_value=gold', status: 422 },
  { name: 'per_page over 100', method: 'GET', before: planField, url: '/api/v2/contacts?per_page=101', status: 422 },
])

runScenarios('contacts: batch refusals', [
  { name: 'an unknown list', method: 'POST', url: '/api/v2/contacts/batch', body: { list_id: 999, contacts: [{ email: 'a@example.com' }] }, status: 422 },
  {
    name: 'over 1,000 contacts',
    method: 'POST',
    before: newsletter,
    url: '/api/v2/contacts/batch',
    body: (c) => ({ list_id: c.setup, contacts: Array.from({ length: 1001 }, (_, i) => ({ email: `u${i}@example.com` })) }),
    status: 422,
  },
  {
    name: 'mode update without contacts.update',
    method: 'POST',
    before: newsletter,
    url: '/api/v2/contacts/batch',
    key: { permissions: ['contacts.create'] },
    body: (c) => ({ list_id: c.setup, mode: 'update', contacts: [{ email: 'a@example.com' }] }),
    status: 403,
    after: async ({ t, admin }) => expect((await t.call('GET', '/api/v2/contacts', { key: admin })).body.meta.total).toBe(0),
  },
  {
    name: 'mode create with contacts.create',
    method: 'POST',
    before: newsletter,
    url: '/api/v2/contacts/batch',
    key: { permissions: ['contacts.create'] },
    body: (c) => ({ list_id: c.setup, contacts: [{ email: 'a@example.com' }] }),
    status: 200,
    after: async ({ t, admin }) => expect((await t.call('GET', '/api/v2/contacts', { key: admin })).body.meta.total).toBe(1),
  },
])
