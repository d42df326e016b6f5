import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { contacts, customFields, lists, type ContactStatus } from '../../src/db/schema'
import { testApp } from '../support/app'
import { runScenarios, type Scenario, type ScenarioContext } from '../support/scenarios'

const DAY = 86_400_000
const subscribedPro = {
  all: [
    { field: 'status', op: 'eq', value: 'subscribed' },
    { field: 'fields.plan', op: 'eq', value: 'pro' },
  ],
}

/**
 * A test app with two lists, a `plan` (one_of) and an `age` (number) custom field, and 30
 * contacts on list 1: contact i (1..30) is subscribed unless i % 10 == 0 (unsubscribed),
 * has plan "pro" when i is odd, else "free", age 20 + i, and was created i days ago.
 */
function audience() {
  const t = testApp()
  const now = t.deps.clock.now()
  t.deps.db
    .insert(lists)
    .values([
      { name: 'news', created_at: now, updated_at: now },
      { name: 'vip', created_at: now, updated_at: now },
    ])
    .run()
  t.deps.db
    .insert(customFields)
    .values([
      { key: 'plan', name: 'Plan', type: 'one_of', options: ['free', 'pro'], created_at: now, updated_at: now },
      { key: 'age', name: 'Age', type: 'number', created_at: now, updated_at: now },
    ])
    .run()
  const ids: number[] = []
  for (let i = 1; i <= 30; i++) {
    const status: ContactStatus = i % 10 === 0 ? 'unsubscribed' : 'subscribed'
    const row = t.deps.db
      .insert(contacts)
      .values({
        list_id: 1,
        email: `c${i}@example.com`,
        first_name: `C${i}`,
        status,
        fields: { plan: i % 2 ? 'pro' : 'free', age: 20 + i },
        created_at: now - i * DAY,
        updated_at: now - i * DAY,
      })
      .returning({ id: contacts.id })
      .get()
    ids.push(row.id)
  }
  // c1 is on the vip list too.
  t.deps.db.insert(contacts).values({ list_id: 2, email: 'c1@example.com', status: 'subscribed', created_at: now, updated_at: now }).run()
  return { ...t, ids, admin: t.makeKey() }
}

describe('GET /api/v2/segments/fields', () => {
  test('lists the built-in fields, then the custom fields, with the operators and values the compiler accepts', async () => {
    const t = audience()
    const r = await t.call('GET', '/api/v2/segments/fields', { key: t.admin.key })
    expect(r.status).toBe(200)
    const fields = r.body.data as Array<{ field: string; name: string; type: string; operators: string[]; options: string[] | null }>
    expect(fields.map((f) => f.field)).toEqual([
      'email',
      'first_name',
      'last_name',
      'status',
      'list_id',
      'created_at',
      'updated_at',
      'fields.age',
      'fields.plan',
    ])
    expect(fields.find((f) => f.field === 'status')).toEqual({
      field: 'status',
      name: 'Status',
      type: 'status',
      operators: ['eq', 'neq', 'in', 'not_in'],
      options: ['subscribed', 'unconfirmed', 'unsubscribed', 'bounced', 'complained'],
    })
    expect(fields.find((f) => f.field === 'fields.plan')).toEqual({
      field: 'fields.plan',
      name: 'Plan',
      type: 'one_of',
      operators: ['eq', 'neq', 'in', 'not_in', 'is_set', 'is_not_set'],
      options: ['free', 'pro'],
    })
    expect(fields.find((f) => f.field === 'fields.age')?.operators).toContain('between')
    // Every field and operator offered is one a preview accepts.
    for (const f of fields) {
      const value = f.options ? f.options[0] : f.type === 'number' ? 1 : f.type === 'list_id' ? 1 : f.type === 'timestamp' ? { days_ago: 1 } : 'x'
      const preview = await t.call('POST', '/api/v2/segments/preview', { key: t.admin.key, body: { rules: { all: [{ field: f.field, op: 'eq', value }] } } })
      expect(preview.status).toBe(200)
    }
  })

  test('needs segments.read', async () => {
    const t = audience()
    const none = t.makeKey({ permissions: [] })
    expect((await t.call('GET', '/api/v2/segments/fields', { key: none.key })).status).toBe(403)
  })
})

describe('segments CRUD', () => {
  test('create answers 201 with the canonical rules; get, list, update and delete', async () => {
    const t = audience()
    const created = await t.call('POST', '/api/v2/segments', {
      key: t.admin.key,
      body: {
        name: '  Pro subscribers ',
        description: 'paying',
        rules: {
          all: [
            { field: 'status', op: 'eq', value: 'subscribed', comment: 'dropped' },
            { field: 'email', op: 'ends_with', value: '@EXAMPLE.com' },
          ],
        },
      },
    })
    expect(created.status).toBe(201)
    expect(created.body).toEqual({
      success: true,
      data: {
        id: expect.any(Number),
        name: 'Pro subscribers',
        description: 'paying',
        rules: {
          all: [
            { field: 'status', op: 'eq', value: 'subscribed' },
            { field: 'email', op: 'ends_with', value: '@example.com' },
          ],
        },
        indexed: false,
        created_at: '2026-03-01T12:00:30.000Z',
        updated_at: '2026-03-01T12:00:30.000Z',
      },
    })
    const id = created.body.data.id

    const read = await t.call('GET', `/api/v2/segments/${id}`, { key: t.admin.key })
    expect(read.status).toBe(200)
    expect(read.body.data).toEqual(created.body.data)
    expect(read.body.data.count).toBeUndefined()

    t.deps.clock.advance(1000)
    const updated = await t.call('PATCH', `/api/v2/segments/${id}`, { key: t.admin.key, body: { name: 'Pros', rules: subscribedPro } })
    expect(updated.status).toBe(200)
    expect(updated.body.data).toMatchObject({
      name: 'Pros',
      description: 'paying',
      rules: subscribedPro,
      updated_at: '2026-03-01T12:00:31.000Z',
      created_at: '2026-03-01T12:00:30.000Z',
    })
    const renamed = await t.call('PATCH', `/api/v2/segments/${id}`, { key: t.admin.key, body: { description: '' } })
    expect(renamed.body.data).toMatchObject({ name: 'Pros', description: '', rules: subscribedPro })

    const deleted = await t.call('DELETE', `/api/v2/segments/${id}`, { key: t.admin.key })
    expect(deleted.status).toBe(200)
    expect(deleted.body.data.name).toBe('Pros')
    expect((await t.call('GET', `/api/v2/segments/${id}`, { key: t.admin.key })).status).toBe(404)
    // The contacts are untouched. Raw SQL on purpose: they were seeded straight into the table, past the service's counters.
    expect(t.deps.db.$client.query('SELECT COUNT(*) AS n FROM contacts').get()).toEqual({ n: 31 })
  })

  test('the list is paginated, oldest first', async () => {
    const t = audience()
    for (let i = 1; i <= 3; i++) await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: `s${i}`, rules: subscribedPro } })
    const page = await t.call('GET', '/api/v2/segments?per_page=2&page=2', { key: t.admin.key })
    expect(page.status).toBe(200)
    expect(page.body.data.map((s: { name: string }) => s.name)).toEqual(['s3'])
    expect(page.body.meta).toEqual({ current_page: 2, per_page: 2, total: 3, last_page: 2 })
  })

  test('the activity log records writes with the segment as target, and not previews', async () => {
    const t = audience()
    const created = await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: 's', rules: subscribedPro } })
    await t.call('POST', '/api/v2/segments/preview', { key: t.admin.key, body: { rules: subscribedPro } })
    const log = await t.call('GET', '/api/v2/activity-logs', { key: t.admin.key })
    expect(log.body.data.map((e: { action: string; target: unknown }) => [e.action, e.target])).toEqual([
      ['segments.create', { type: 'segments', id: String(created.body.data.id) }],
    ])
  })
})

describe('invalid input', () => {
  test('update with invalid rules is refused and changes nothing', async () => {
    const t = audience()
    const id = (await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: 's', rules: subscribedPro } })).body.data.id
    const r = await t.call('PATCH', `/api/v2/segments/${id}`, {
      key: t.admin.key,
      body: { name: 'new', rules: { any: [{ field: 'status', op: 'contains', value: 'sub' }] } },
    })
    expect(r.status).toBe(422)
    expect(r.body.error.details['rules.any.0.op'][0]).toMatch(/eq, neq, in, not_in/)
    expect((await t.call('GET', `/api/v2/segments/${id}`, { key: t.admin.key })).body.data).toMatchObject({ name: 's', rules: subscribedPro })
  })
})

describe('membership', () => {
  test('count and contacts pages: exactly the matching contacts, by id, in the contacts API shape', async () => {
    const t = audience()
    const id = (await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: 'pro', rules: subscribedPro } })).body.data.id
    // Odd i (pro), none of them a multiple of 10: 15 contacts.
    const expected = t.ids.filter((_, k) => (k + 1) % 2 === 1)
    const count = await t.call('GET', `/api/v2/segments/${id}/count`, { key: t.admin.key })
    expect(count.status).toBe(200)
    expect(count.body).toEqual({ success: true, data: { count: 15 } })

    const seen: number[] = []
    for (let page = 1; page <= 4; page++) {
      const r = await t.call('GET', `/api/v2/segments/${id}/contacts?per_page=4&page=${page}`, { key: t.admin.key })
      expect(r.status).toBe(200)
      expect(r.body.meta).toEqual({ current_page: page, per_page: 4, total: 15, last_page: 4 })
      expect(r.body.data.length).toBe(page < 4 ? 4 : 3)
      seen.push(...r.body.data.map((c: { id: number }) => c.id))
    }
    // Pages from both ends (the second half is read backwards) join up in order, without gaps or repeats.
    expect(seen).toEqual(expected)

    const first = (await t.call('GET', `/api/v2/segments/${id}/contacts`, { key: t.admin.key })).body
    expect(first.meta).toEqual({ current_page: 1, per_page: 25, total: 15, last_page: 1 })
    expect(first.data[0]).toEqual({
      id: t.ids[0],
      email: 'c1@example.com',
      first_name: 'C1',
      last_name: null,
      list_id: 1,
      status: 'subscribed',
      fields: { plan: 'pro', age: 21 },
      created_at: '2026-02-28T12:00:30.000Z',
      updated_at: '2026-02-28T12:00:30.000Z',
    })

    const past = await t.call('GET', `/api/v2/segments/${id}/contacts?page=9`, { key: t.admin.key })
    expect(past.body.data).toEqual([])
    expect(past.body.meta).toEqual({ current_page: 9, per_page: 25, total: 15, last_page: 1 })
  })

  test('every page size walks the same members', async () => {
    const t = audience()
    const rules = { any: [{ field: 'fields.age', op: 'between', value: [25, 33] }, { in_list: 2 }] }
    const id = (await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: 'ages', rules } })).body.data.id
    // c1 (on the vip list, and its vip-list twin) and ages 25..33 (c5..c13).
    const all = (await t.call('GET', `/api/v2/segments/${id}/contacts?per_page=100`, { key: t.admin.key })).body.data.map(
      (c: { email: string; list_id: number }) => `${c.email}/${c.list_id}`,
    )
    expect(all).toEqual(['c1@example.com/1', ...Array.from({ length: 9 }, (_, k) => `c${k + 5}@example.com/1`), 'c1@example.com/2'])
    for (const per of [1, 2, 3, 7]) {
      const walked: string[] = []
      for (let page = 1; ; page++) {
        const r = (await t.call('GET', `/api/v2/segments/${id}/contacts?per_page=${per}&page=${page}`, { key: t.admin.key })).body
        walked.push(...r.data.map((c: { email: string; list_id: number }) => `${c.email}/${c.list_id}`))
        if (r.meta.current_page === r.meta.last_page) break
      }
      expect(walked).toEqual(all)
    }
  })

  test('relative dates are resolved with the clock at every evaluation', async () => {
    const t = audience()
    const rules = { all: [{ field: 'created_at', op: 'gte', value: { days_ago: 5 } }] }
    const id = (await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: 'recent', rules } })).body.data.id
    // c1..c5 and the vip-list c1 (created now).
    expect((await t.call('GET', `/api/v2/segments/${id}/count`, { key: t.admin.key })).body.data.count).toBe(6)
    t.deps.clock.advance(2 * DAY)
    expect((await t.call('GET', `/api/v2/segments/${id}/count`, { key: t.admin.key })).body.data.count).toBe(4)
    expect((await t.call('GET', `/api/v2/segments/${id}`, { key: t.admin.key })).body.data.rules).toEqual(rules)
  })

  test('membership follows the contacts as they change', async () => {
    const t = audience()
    const id = (await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: 'pro', rules: subscribedPro } })).body.data.id
    t.deps.db.update(contacts).set({ status: 'bounced' }).where(eq(contacts.id, t.ids[0]!)).run()
    expect((await t.call('GET', `/api/v2/segments/${id}/count`, { key: t.admin.key })).body.data.count).toBe(14)
  })

  test('a segment whose custom field was deleted answers 409 until its rules are updated', async () => {
    const t = audience()
    const id = (await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: 'pro', rules: subscribedPro } })).body.data.id
    t.deps.db.delete(customFields).where(eq(customFields.key, 'plan')).run()
    expect((await t.call('GET', `/api/v2/segments/${id}/count`, { key: t.admin.key })).status).toBe(409) // the table below says more
    expect((await t.call('GET', `/api/v2/segments/${id}`, { key: t.admin.key })).status).toBe(200)
    await t.call('PATCH', `/api/v2/segments/${id}`, { key: t.admin.key, body: { rules: { all: [{ field: 'status', op: 'eq', value: 'subscribed' }] } } })
    expect((await t.call('GET', `/api/v2/segments/${id}/count`, { key: t.admin.key })).body.data.count).toBe(28)
  })

  test('a segment on a list that was deleted still evaluates: nobody is on that list', async () => {
    const t = audience()
    const id = (await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: 'not vip', rules: { all: [{ not_in_list: 2 }] } } })).body.data.id
    expect((await t.call('GET', `/api/v2/segments/${id}/count`, { key: t.admin.key })).body.data.count).toBe(29)
    t.deps.db.delete(lists).where(eq(lists.id, 2)).run()
    expect((await t.call('GET', `/api/v2/segments/${id}/count`, { key: t.admin.key })).body.data.count).toBe(30)
  })
})

describe('preview', () => {
  test('counts without saving (its checks: the table)', async () => {
    const t = audience()
    const r = await t.call('POST', '/api/v2/segments/preview', {
      key: t.admin.key,
      body: { rules: { all: [{ in_list: 2 }, { field: 'list_id', op: 'eq', value: 1 }] } },
    })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ success: true, data: { count: 1 } })
    expect((await t.call('GET', '/api/v2/segments', { key: t.admin.key })).body.meta.total).toBe(0)
  })
})

describe('bulk delete', () => {
  test('reports deleted and unknown ids; duplicates count once', async () => {
    const t = audience()
    const a = (await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: 'a', rules: subscribedPro } })).body.data.id
    const b = (await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: 'b', rules: subscribedPro } })).body.data.id
    const c = (await t.call('POST', '/api/v2/segments', { key: t.admin.key, body: { name: 'c', rules: subscribedPro } })).body.data.id
    const r = await t.call('POST', '/api/v2/segments/bulk-delete', { key: t.admin.key, body: { ids: [a, 999, c, a] } })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ success: true, data: { deleted: [a, c], not_found: [999] } })
    const left = await t.call('GET', '/api/v2/segments', { key: t.admin.key })
    expect(left.body.data.map((s: { id: number }) => s.id)).toEqual([b])
  })
})

// A segment made with the scenario's Administrator key; `setup` is its id.
const segment = async ({ t, admin }: ScenarioContext) =>
  (await t.call('POST', '/api/v2/segments', { key: admin, body: { name: 'pro', rules: subscribedPro } })).body.data.id as number
const noSegments: Scenario['after'] = async ({ t, admin }) => expect((await t.call('GET', '/api/v2/segments', { key: admin })).body.meta.total).toBe(0)

runScenarios(
  'segments: create refuses with 422 naming the field',
  (
    [
      ['missing name', { rules: subscribedPro }, 'name', /./],
      ['empty name', { name: '', rules: subscribedPro }, 'name', /./],
      ['missing rules', { name: 'x' }, 'rules', /must be a group/],
      ['rules that are not a group', { name: 'x', rules: [subscribedPro] }, 'rules', /must be a group/],
      [
        'a bad value deep in the tree',
        { name: 'x', rules: { all: [{ field: 'status', op: 'eq', value: 'subscribed' }, { any: [{ field: 'fields.age', op: 'gt', value: 'old' }] }] } },
        'rules.all.1.any.0.value',
        /must be a number/,
      ],
      [
        'an unknown custom field',
        { name: 'x', rules: { all: [{ field: 'fields.shoe', op: 'eq', value: 'x' }] } },
        'rules.all.0.field',
        /no custom field with key "shoe"/,
      ],
      [
        'an injection attempt as a field',
        { name: 'x', rules: { all: [{ field: "fields.x') OR 1=1 --", op: 'eq', value: 'x' }] } },
        'rules.all.0.field',
        /no custom field/,
      ],
      ['an unknown list', { name: 'x', rules: { all: [{ in_list: 3 }] } }, 'rules.all.0.in_list', /no list with id 3/],
    ] as Array<[name: string, body: Record<string, unknown>, field: string, message: RegExp]>
  ).map(([name, body, field, message]): Scenario => ({
    name: `${name} (${field})`,
    method: 'POST',
    url: '/api/v2/segments',
    body,
    status: 422,
    code: 'validation_failed',
    after: async (ctx, r) => {
      expect(Object.keys(r.body.error.details)).toContain(field)
      expect(r.body.error.details[field].join(' ')).toMatch(message)
      await noSegments!(ctx, r)
    },
  })),
  { app: audience },
)

const noSegment = { code: 'not_found', equals: { success: false, error: { code: 'not_found', message: 'No segment with id 42.' } } }
runScenarios(
  'segments: unknown ids answer 404 on every route',
  [
    { name: 'GET', method: 'GET', url: '/api/v2/segments/42', status: 404, ...noSegment },
    { name: 'PATCH', method: 'PATCH', url: '/api/v2/segments/42', body: { name: 'x' }, status: 404, ...noSegment },
    { name: 'DELETE', method: 'DELETE', url: '/api/v2/segments/42', status: 404, ...noSegment },
    { name: 'count', method: 'GET', url: '/api/v2/segments/42/count', status: 404, ...noSegment },
    { name: 'contacts', method: 'GET', url: '/api/v2/segments/42/contacts', status: 404, ...noSegment },
  ],
  { app: audience },
)

// The segment's custom field `plan` is deleted behind its back.
const orphaned = async (ctx: ScenarioContext) => {
  const id = await segment(ctx)
  ctx.t.deps.db.delete(customFields).where(eq(customFields.key, 'plan')).run()
  return id
}
runScenarios(
  'segments: other refusals',
  [
    ...['count', 'contacts'].map((route): Scenario => ({
      name: `${route} of a segment whose custom field was deleted`,
      method: 'GET',
      before: orphaned,
      url: (c) => `/api/v2/segments/${c.setup}/${route}`,
      status: 409,
      code: 'conflict',
      message: 'rules.all.1.field: no custom field with key "plan"',
    })),
    { name: 'per_page over 100', method: 'GET', url: '/api/v2/segments?per_page=101', status: 422 },
    { name: 'bulk delete of no ids', method: 'POST', url: '/api/v2/segments/bulk-delete', body: { ids: [] }, status: 422 },
    {
      name: 'preview checks the rules like create',
      method: 'POST',
      url: '/api/v2/segments/preview',
      body: { rules: { all: [{ field: 'fields.plan', op: 'eq', value: 'gold' }] } },
      status: 422,
      after: (_, r) => expect(r.body.error.details['rules.all.0.value'][0]).toMatch(/one of: free, pro/),
    },
    {
      name: 'preview needs only segments.read',
      method: 'POST',
      url: '/api/v2/segments/preview',
      key: { permissions: ['segments.read'] },
      body: { rules: subscribedPro },
      status: 200,
      json: { data: { count: 15 } },
    },
    {
      name: 'segments.read cannot create',
      method: 'POST',
      url: '/api/v2/segments',
      key: { permissions: ['segments.read'] },
      body: { name: 'x', rules: subscribedPro },
      status: 403,
    },
  ],
  { app: audience },
)
