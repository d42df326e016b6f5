import { describe, expect, test } from 'bun:test'
import { lists } from '../../src/db/schema'
import { AppError } from '../../src/lib/errors'
import {
  checkRecipient,
  checkRecipients,
  getSuppression,
  listSuppressions,
  RECIPIENT_CHUNK,
  RECIPIENT_SQL,
  suppressionPageQuery,
  type Recipient,
} from '../../src/modules/suppressions/service'
import { MAX_BATCH_ENTRIES } from '../../src/modules/suppressions/model'
import { testApp } from '../support/app'
import { runScenarios, type Scenario } from '../support/scenarios'

type T = ReturnType<typeof testApp>

/** A test app with an admin key and two lists (lists are made in the database: this module only needs them to exist). */
function setup() {
  const t = testApp()
  const admin = t.makeKey()
  const now = t.deps.clock.now()
  const makeList = (name: string) => t.deps.db.insert(lists).values({ name, created_at: now, updated_at: now }).returning().get().id
  const listA = makeList('A')
  const listB = makeList('B')
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  const suppress = async (body: Record<string, unknown>) => {
    const r = await call('POST', '/api/v2/suppressions/batch', { reason: 'manual', ...body })
    expect(r.status).toBe(200)
    return r.body.data as { added: number; skipped: number; invalid: Array<{ entry: string; reason: string }> }
  }
  // Raw SQL on purpose: scope_key is the stored uniqueness key, which no view shows.
  const stored = () =>
    t.deps.db.$client.query('SELECT scope_key, type, value, reason FROM suppressions ORDER BY id').all() as Array<{
      scope_key: string
      type: string
      value: string
      reason: string
    }>
  return { t, admin, listA, listB, call, suppress, stored }
}

const planOf = (t: T, sql: string, params: unknown[]) =>
  (t.deps.db.$client.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as [])) as Array<{ detail: string }>).map((r) => r.detail)

describe('POST /api/v2/suppressions/batch', () => {
  type Counts = { added: number; skipped: number; invalid: Array<{ entry: string; reason: string }> }
  const scenarios: Array<{ name: string; before?: Record<string, unknown>; body: Record<string, unknown>; expect: Counts; values?: string[] }> = [
    {
      name: 'new addresses are added',
      body: { type: 'email', entries: ['a@example.com', 'b@example.com'] },
      expect: { added: 2, skipped: 0, invalid: [] },
      values: ['a@example.com', 'b@example.com'],
    },
    {
      name: 'case and surrounding spaces are normalised; repeats in one request are skipped',
      body: { type: 'email', entries: [' Jane@Example.COM ', 'jane@example.com', 'JANE@EXAMPLE.COM\t'] },
      expect: { added: 1, skipped: 2, invalid: [] },
      values: ['jane@example.com'],
    },
    {
      name: 'invalid addresses are listed with the reason and do not fail the batch',
      body: { type: 'email', entries: ['not-an-address', 'a@b', '', 'two words@example.com', 'ok@example.com', 'example.com'] },
      expect: {
        added: 1,
        skipped: 0,
        invalid: [
          { entry: 'not-an-address', reason: 'must look like name@example.com' },
          { entry: 'a@b', reason: 'has an invalid domain' },
          { entry: '', reason: 'is empty' },
          { entry: 'two words@example.com', reason: 'must not contain spaces or control characters' },
          { entry: 'example.com', reason: 'must look like name@example.com' },
        ],
      },
      values: ['ok@example.com'],
    },
    {
      name: 'entries already suppressed in the scope are skipped and keep their first reason',
      before: { type: 'email', entries: ['old@example.com'], reason: 'hard_bounce' },
      body: { type: 'email', entries: ['OLD@example.com', 'new@example.com'], reason: 'manual' },
      expect: { added: 1, skipped: 1, invalid: [] },
      values: ['old@example.com', 'new@example.com'],
    },
    {
      name: 'domains are normalised (case, trailing dot, IDN to A-label); addresses and non-domains are invalid',
      body: {
        type: 'domain',
        entries: ['Example.COM', 'example.com.', 'mail.example.com', 'Bücher.example', 'bad_domain.com', 'jane@example.com', 'localhost', '192.0.2.1'],
      },
      expect: {
        added: 3,
        skipped: 1,
        invalid: [
          { entry: 'bad_domain.com', reason: 'is not a valid domain name' },
          { entry: 'jane@example.com', reason: 'is an address, not a domain; send it with type "email"' },
          { entry: 'localhost', reason: 'is not a valid domain name' },
          { entry: '192.0.2.1', reason: 'is not a valid domain name' },
        ],
      },
      values: ['example.com', 'mail.example.com', 'xn--bcher-kva.example'],
    },
    {
      name: 'the same address in another type or scope is a separate entry',
      before: { type: 'email', entries: ['x@example.com'] },
      body: { type: 'email', entries: ['x@example.com'], scope: 'program', program_type: 'drip', program_id: 4 },
      expect: { added: 1, skipped: 0, invalid: [] },
      values: ['x@example.com', 'x@example.com'],
    },
  ]

  for (const s of scenarios) {
    test(s.name, async () => {
      const { suppress, stored } = setup()
      if (s.before) await suppress(s.before)
      const result = await suppress(s.body)
      expect(result).toEqual(s.expect)
      expect(result.added + result.skipped + result.invalid.length).toBe((s.body.entries as string[]).length)
      if (s.values) expect(stored().map((r) => r.value)).toEqual(s.values)
    })
  }

  test('the first reason stays when an entry is suppressed again', async () => {
    const { suppress, stored } = setup()
    await suppress({ type: 'email', entries: ['old@example.com'], reason: 'hard_bounce' })
    await suppress({ type: 'email', entries: ['old@example.com'], reason: 'manual' })
    expect(stored()).toEqual([{ scope_key: 'global', type: 'email', value: 'old@example.com', reason: 'hard_bounce' }])
  })

  test('list and program scopes are stored with their keys; program ids are not checked against a table yet', async () => {
    const { suppress, call, listA } = setup()
    expect(await suppress({ type: 'email', entries: ['a@example.com'], scope: 'list', list_id: listA, reason: 'unsubscribe' })).toMatchObject({ added: 1 })
    expect(
      await suppress({ type: 'domain', entries: ['example.org'], scope: 'program', program_type: 'broadcast', program_id: 12345, reason: 'complaint' }),
    ).toMatchObject({ added: 1 })
    // null scope fields are the same as absent
    expect(await suppress({ type: 'email', entries: ['g@example.com'], scope: 'global', list_id: null, program_type: null, program_id: null })).toMatchObject({
      added: 1,
    })
    const page = await call('GET', '/api/v2/suppressions')
    expect(page.body.data).toEqual([
      {
        id: 3,
        scope: 'global',
        list_id: null,
        program_type: null,
        program_id: null,
        type: 'email',
        value: 'g@example.com',
        reason: 'manual',
        created_at: '2026-03-01T12:00:30.000Z',
      },
      {
        id: 2,
        scope: 'program',
        list_id: null,
        program_type: 'broadcast',
        program_id: 12345,
        type: 'domain',
        value: 'example.org',
        reason: 'complaint',
        created_at: '2026-03-01T12:00:30.000Z',
      },
      {
        id: 1,
        scope: 'list',
        list_id: listA,
        program_type: null,
        program_id: null,
        type: 'email',
        value: 'a@example.com',
        reason: 'unsubscribe',
        created_at: '2026-03-01T12:00:30.000Z',
      },
    ])
  })

  test(`a batch of ${MAX_BATCH_ENTRIES} entries is answered, and stored in full`, async () => {
    const { suppress, call } = setup()
    const entries = Array.from({ length: MAX_BATCH_ENTRIES }, (_, i) => `user${i}@bulk.example`)
    expect(await suppress({ type: 'email', entries, reason: 'import' })).toEqual({ added: MAX_BATCH_ENTRIES, skipped: 0, invalid: [] })
    expect((await call('GET', '/api/v2/suppressions?per_page=1')).body.meta.total).toBe(MAX_BATCH_ENTRIES)
    expect(await suppress({ type: 'email', entries, reason: 'import' })).toEqual({ added: 0, skipped: MAX_BATCH_ENTRIES, invalid: [] })
  })
})

describe('POST /api/v2/suppressions/batch-delete', () => {
  test('removes only in the given scope and type; counts removed, not found and invalid', async () => {
    const { suppress, call, stored, listA } = setup()
    await suppress({ type: 'email', entries: ['a@example.com', 'b@example.com', 'c@example.com'] })
    await suppress({ type: 'email', entries: ['a@example.com'], scope: 'list', list_id: listA })
    await suppress({ type: 'domain', entries: ['example.com'] })

    const r = await call('POST', '/api/v2/suppressions/batch-delete', {
      type: 'email',
      entries: [' A@Example.com', 'a@example.com', 'b@example.com', 'nobody@example.com', 'not an address'],
    })
    expect(r.status).toBe(200)
    expect(r.body.data).toEqual({ removed: 2, not_found: 2, invalid: [{ entry: 'not an address', reason: 'must not contain spaces or control characters' }] })
    expect(stored().map((s) => `${s.scope_key} ${s.type} ${s.value}`)).toEqual([
      'global email c@example.com',
      `list:${listA} email a@example.com`,
      'global domain example.com',
    ])

    const list = await call('POST', '/api/v2/suppressions/batch-delete', { type: 'email', entries: ['a@example.com'], scope: 'list', list_id: listA })
    expect(list.body.data).toEqual({ removed: 1, not_found: 0, invalid: [] })
    const domain = await call('POST', '/api/v2/suppressions/batch-delete', { type: 'domain', entries: ['EXAMPLE.com', 'example.net'] })
    expect(domain.body.data).toEqual({ removed: 1, not_found: 1, invalid: [] })
    expect(stored().map((s) => s.value)).toEqual(['c@example.com'])
  })
})

describe('GET /api/v2/suppressions', () => {
  /** Six suppressions one second apart, so "newest first" has an order to show. */
  async function seeded() {
    const s = setup()
    const steps: Array<Record<string, unknown>> = [
      { type: 'email', entries: ['jane@example.com'], reason: 'hard_bounce' },
      { type: 'email', entries: ['janet@example.org'], reason: 'complaint', scope: 'list', list_id: s.listA },
      { type: 'domain', entries: ['example.net'], reason: 'manual' },
      { type: 'email', entries: ['john@example.com'], reason: 'unsubscribe', scope: 'program', program_type: 'broadcast', program_id: 7 },
      { type: 'email', entries: ['jane@example.com'], reason: 'import', scope: 'list', list_id: s.listB },
      { type: 'domain', entries: ['bücher.example'], reason: 'manual', scope: 'program', program_type: 'drip', program_id: 7 },
    ]
    for (const step of steps) {
      s.t.deps.clock.advance(1000)
      await s.suppress(step)
    }
    return s
  }

  const filters: Array<[query: string, ids: number[]]> = [
    ['', [6, 5, 4, 3, 2, 1]],
    ['scope=global', [3, 1]],
    ['scope=list', [5, 2]],
    ['list_id=1', [2]],
    ['list_id=2', [5]],
    ['scope=program', [6, 4]],
    ['program_type=broadcast', [4]],
    ['program_id=7', [6, 4]],
    ['program_type=drip&program_id=7', [6]],
    ['program_type=drip&program_id=8', []],
    ['type=domain', [6, 3]],
    ['reason=manual', [6, 3]],
    ['reason=manual&type=domain&scope=global', [3]],
    ['search=jane', [5, 2, 1]],
    ['search=JANE%40', [5, 1]],
    ['search=jane%40example.com', [5, 1]],
    ['search=%20example.', [3]],
    ['search=j&type=email&scope=list', [5, 2]],
    ['search=zz', []],
    ['search=b%C3%BCcher.example', [6]],
    ['search=b%C3%BCch', []],
    ['search=xn--', [6]],
  ]
  for (const [query, ids] of filters) {
    test(`?${query} -> [${ids.join(', ')}]`, async () => {
      const { call } = await seeded()
      const r = await call('GET', `/api/v2/suppressions${query ? `?${query}` : ''}`)
      expect(r.status).toBe(200)
      expect(r.body.data.map((x: { id: number }) => x.id)).toEqual(ids)
      expect(r.body.meta.total).toBe(ids.length)
    })
  }

  test('pagination meta follows the spec (out-of-range and malformed values: the table)', async () => {
    const { call } = await seeded()
    const p2 = await call('GET', '/api/v2/suppressions?page=2&per_page=4')
    expect(p2.body.meta).toEqual({ current_page: 2, per_page: 4, total: 6, last_page: 2 })
    expect(p2.body.data.map((x: { id: number }) => x.id)).toEqual([2, 1])
    expect((await call('GET', '/api/v2/suppressions')).body.meta).toEqual({ current_page: 1, per_page: 25, total: 6, last_page: 1 })
  })

  test('a search is a range on the (value, type) index, not a scan', async () => {
    const { t } = await seeded()
    for (const filter of [{ search: 'jane@' }, { search: 'jane', type: 'email' as const, reason: 'manual' as const }]) {
      const q = suppressionPageQuery(t.deps, filter).toSQL()
      const plan = planOf(t, q.sql, q.params)
      expect(plan.join(' | ')).toContain('USING INDEX suppressions_value_idx (value>? AND value<?)')
      expect(plan.join(' | ')).not.toContain('SCAN suppressions')
    }
  })
})

describe('one suppression', () => {
  test('get, delete (answered with the record) and 404 afterwards (a malformed id: the table)', async () => {
    const { suppress, call } = setup()
    await suppress({ type: 'email', entries: ['a@example.com', 'b@example.com'], reason: 'complaint' })
    const record = {
      id: 2,
      scope: 'global',
      list_id: null,
      program_type: null,
      program_id: null,
      type: 'email',
      value: 'b@example.com',
      reason: 'complaint',
      created_at: '2026-03-01T12:00:30.000Z',
    }
    const got = await call('GET', '/api/v2/suppressions/2')
    expect(got.status).toBe(200)
    expect(got.body).toEqual({ success: true, data: record })
    const del = await call('DELETE', '/api/v2/suppressions/2')
    expect(del.status).toBe(200)
    expect(del.body).toEqual({ success: true, data: record })
    for (const method of ['GET', 'DELETE']) {
      const r = await call(method, '/api/v2/suppressions/2')
      expect(r.status).toBe(404)
      expect(r.body.error).toEqual({ code: 'not_found', message: 'No suppression with id 2.' })
    }
    expect((await call('GET', '/api/v2/suppressions')).body.data.map((x: { id: number }) => x.id)).toEqual([1])
  })

  test('bulk-delete lifts several by id whatever their scope and type, and names the ids it did not find', async () => {
    const { call, suppress, stored, listA } = setup()
    await suppress({ type: 'email', entries: ['a@example.com', 'b@example.com'] })
    await suppress({ type: 'domain', entries: ['example.net'], scope: 'list', list_id: listA })
    const r = await call('POST', '/api/v2/suppressions/bulk-delete', { ids: [3, 1, 99] })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ success: true, data: { deleted: [1, 3], not_found: [99] } })
    expect(stored().map((s) => s.value)).toEqual(['b@example.com'])
    const empty = await call('POST', '/api/v2/suppressions/bulk-delete', { ids: [] })
    expect(empty.status).toBe(422)
  })

  test('deleting a list lifts its list-scoped suppressions with it', async () => {
    const { t, suppress, stored, listA } = setup()
    await suppress({ type: 'email', entries: ['a@example.com'], scope: 'list', list_id: listA })
    await suppress({ type: 'email', entries: ['a@example.com'] })
    t.deps.db.$client.run('DELETE FROM lists WHERE id = ?', [listA])
    expect(stored().map((s) => s.scope_key)).toEqual(['global'])
  })
})

describe('checkRecipient: the decision every send makes', () => {
  async function world() {
    const s = setup()
    const add = (body: Record<string, unknown>) => s.suppress(body)
    await add({ type: 'email', entries: ['blocked@example.com'], reason: 'hard_bounce' })
    await add({ type: 'domain', entries: ['blocked.test'], reason: 'complaint' })
    await add({ type: 'email', entries: ['listonly@example.com'], scope: 'list', list_id: s.listA, reason: 'unsubscribe' })
    await add({ type: 'email', entries: ['progonly@example.com'], scope: 'program', program_type: 'broadcast', program_id: 7 })
    // precedence: the same recipient suppressed several ways
    await add({
      type: 'email',
      entries: ['multi@prec.test', 'listwins@example.com'],
      scope: 'program',
      program_type: 'broadcast',
      program_id: 7,
      reason: 'unsubscribe',
    })
    await add({ type: 'domain', entries: ['prec.test'], scope: 'list', list_id: s.listA, reason: 'complaint' })
    await add({ type: 'email', entries: ['multi@prec.test', 'listwins@example.com'], scope: 'list', list_id: s.listA, reason: 'unsubscribe' })
    await add({ type: 'domain', entries: ['prec.test'], reason: 'manual' })
    await add({ type: 'email', entries: ['both@blocked.test'], reason: 'import' })
    return s
  }

  const program = (type: 'broadcast' | 'drip' | 'trigger', id: number) => ({ type, id })
  // [name, recipient (list 1 is listA), expected match or null for allowed]
  const matrix: Array<[name: string, recipient: Recipient, match: { scope: string; type: string; value: string; reason: string } | null]> = [
    ['global address', { email: 'blocked@example.com' }, { scope: 'global', type: 'email', value: 'blocked@example.com', reason: 'hard_bounce' }],
    [
      'global address, any case and spacing',
      { email: ' Blocked@EXAMPLE.com ', list_id: 1 },
      { scope: 'global', type: 'email', value: 'blocked@example.com', reason: 'hard_bounce' },
    ],
    ['global domain', { email: 'anyone@Blocked.test' }, { scope: 'global', type: 'domain', value: 'blocked.test', reason: 'complaint' }],
    ['a subdomain of a suppressed domain is not suppressed', { email: 'x@sub.blocked.test' }, null],
    ['a domain that merely ends the same is not suppressed', { email: 'x@notblocked.test' }, null],
    [
      'list address, on its list',
      { email: 'listonly@example.com', list_id: 1 },
      { scope: 'list', type: 'email', value: 'listonly@example.com', reason: 'unsubscribe' },
    ],
    ['list address, on another list', { email: 'listonly@example.com', list_id: 2 }, null],
    ['list address, no list', { email: 'listonly@example.com' }, null],
    ['list address, in a program', { email: 'listonly@example.com', program: program('broadcast', 7) }, null],
    [
      'program address, in its program',
      { email: 'progonly@example.com', list_id: 2, program: program('broadcast', 7) },
      { scope: 'program', type: 'email', value: 'progonly@example.com', reason: 'manual' },
    ],
    ['program address, same id of another program type', { email: 'progonly@example.com', program: program('drip', 7) }, null],
    ['program address, another broadcast', { email: 'progonly@example.com', program: program('broadcast', 8) }, null],
    ['program address, no program', { email: 'progonly@example.com', list_id: 1 }, null],
    [
      'global domain beats list and program addresses',
      { email: 'multi@prec.test', list_id: 1, program: program('broadcast', 7) },
      { scope: 'global', type: 'domain', value: 'prec.test', reason: 'manual' },
    ],
    ['global address beats global domain', { email: 'both@blocked.test' }, { scope: 'global', type: 'email', value: 'both@blocked.test', reason: 'import' }],
    [
      'list beats program',
      { email: 'listwins@example.com', list_id: 1, program: program('broadcast', 7) },
      { scope: 'list', type: 'email', value: 'listwins@example.com', reason: 'unsubscribe' },
    ],
    [
      'program alone when not on the list',
      { email: 'listwins@example.com', list_id: 2, program: program('broadcast', 7) },
      { scope: 'program', type: 'email', value: 'listwins@example.com', reason: 'unsubscribe' },
    ],
    ['not suppressed anywhere', { email: 'fine@example.com', list_id: 1, program: program('broadcast', 7) }, null],
  ]

  for (const [name, recipient, match] of matrix) {
    test(name, async () => {
      const { t } = await world()
      const decision = checkRecipient(t.deps, recipient)
      if (match === null) expect(decision).toEqual({ allowed: true })
      else {
        expect(decision).toEqual({ allowed: false, suppression: { id: expect.any(Number), ...match } } as never)
        // The id names the row that matched.
        if (!decision.allowed) expect(getSuppression(t.deps, decision.suppression.id)).toMatchObject({ value: match.value, scope: match.scope })
      }
    })
  }

  test('lifting the more general suppressions reveals the next one in precedence order', async () => {
    const { t, call } = await world()
    const multi: Recipient = { email: 'multi@prec.test', list_id: 1, program: program('broadcast', 7) }
    const next = () => {
      const d = checkRecipient(t.deps, multi)
      return d.allowed ? 'allowed' : `${d.suppression.scope} ${d.suppression.type}`
    }
    expect(next()).toBe('global domain')
    await call('POST', '/api/v2/suppressions/batch-delete', { type: 'domain', entries: ['prec.test'] })
    expect(next()).toBe('list email')
    await call('POST', '/api/v2/suppressions/batch-delete', { type: 'email', entries: ['multi@prec.test'], scope: 'list', list_id: 1 })
    expect(next()).toBe('list domain')
    await call('POST', '/api/v2/suppressions/batch-delete', { type: 'domain', entries: ['prec.test'], scope: 'list', list_id: 1 })
    expect(next()).toBe('program email')
    await call('POST', '/api/v2/suppressions/batch-delete', {
      type: 'email',
      entries: ['multi@prec.test'],
      scope: 'program',
      program_type: 'broadcast',
      program_id: 7,
    })
    expect(next()).toBe('allowed')
  })

  test('checkRecipients gives the same decisions, in order, across several chunks', async () => {
    const { t } = await world()
    const recipients: Recipient[] = []
    // More than two chunks, each recipient with its own list and program, the matrix cases spread through them.
    for (let i = 0; recipients.length < RECIPIENT_CHUNK * 2 + 37; i++) {
      recipients.push(matrix[i % matrix.length]![1])
      recipients.push({ email: `filler${i}@example.com`, list_id: (i % 2) + 1, program: i % 3 ? program('broadcast', 7) : null })
    }
    const many = checkRecipients(t.deps, recipients)
    expect(many).toHaveLength(recipients.length)
    expect(many).toEqual(recipients.map((r) => checkRecipient(t.deps, r)))
    expect(many.filter((d) => !d.allowed).length).toBeGreaterThan(100)
    expect(checkRecipients(t.deps, [])).toEqual([])
  })

  test('an invalid address is a validation error, not a decision', async () => {
    const { t } = await world()
    const fail = (fn: () => unknown) => {
      try {
        fn()
      } catch (e) {
        return e
      }
      throw new Error('expected an error')
    }
    const one = fail(() => checkRecipient(t.deps, { email: 'not an address' }))
    expect(one).toBeInstanceOf(AppError)
    expect(one).toMatchObject({ code: 'validation_failed', details: { email: ['must not contain spaces or control characters'] } })
    const many = fail(() => checkRecipients(t.deps, [{ email: 'a@example.com' }, { email: 'b@example.com' }, { email: 'nobody' }]))
    expect(many).toMatchObject({ code: 'validation_failed', details: { 'recipients.2.email': ['must look like name@example.com'] } })
  })

  test('both lookups are index searches, never a scan of the table', async () => {
    const { t } = await world()
    const one = planOf(t, RECIPIENT_SQL.one, ['a@example.com', 'example.com', 'list:1', 'program:broadcast:7'])
    expect(one.filter((d) => d.startsWith('SEARCH suppressions USING INDEX suppressions_entry_unique (scope_key=? AND type=? AND value=?)'))).toHaveLength(2)
    expect(one.join(' | ')).not.toMatch(/SCAN suppressions/)
    const many = planOf(t, RECIPIENT_SQL.many, ['["a@example.com","example.com"]', '["global"]'])
    expect(many).toContain('SEARCH s USING INDEX suppressions_value_idx (value=?)')
    expect(many.join(' | ')).not.toMatch(/SCAN (s|suppressions)\b/)
  })
})

// Nothing was stored: read through the service.
const nothingStored: Scenario['after'] = ({ t }) => expect(listSuppressions(t.deps, {}).meta.total).toBe(0)
const withLists = () => setup().t

runScenarios(
  'suppressions: scope and body validation',
  [
    ...['/api/v2/suppressions/batch', '/api/v2/suppressions/batch-delete'].flatMap((path) =>
      (
        [
          // [name, body fields over a valid global email batch, field -> message pattern]
          ['global with list_id', { list_id: 1 }, { list_id: /must not be set when scope is global/ }],
          [
            'global (by default) with program fields',
            { program_type: 'broadcast', program_id: 1 },
            { program_type: /must not be set when scope is global/, program_id: /must not be set/ },
          ],
          ['list without list_id', { scope: 'list' }, { list_id: /is required when scope is list/ }],
          ['list with an unknown list', { scope: 'list', list_id: 999 }, { list_id: /No list with id 999/ }],
          ['list with program fields', { scope: 'list', list_id: 1, program_type: 'drip' }, { program_type: /must not be set when scope is list/ }],
          [
            'program without type and id',
            { scope: 'program' },
            { program_type: /is required when scope is program/, program_id: /is required when scope is program/ },
          ],
          ['program without id', { scope: 'program', program_type: 'trigger' }, { program_id: /is required/ }],
          ['program with list_id', { scope: 'program', program_type: 'drip', program_id: 2, list_id: 1 }, { list_id: /must not be set when scope is program/ }],
          ['an unknown scope', { scope: 'everywhere' }, { scope: /./ }],
          ['an unknown program type', { scope: 'program', program_type: 'newsletter', program_id: 1 }, { program_type: /./ }],
          ['a list_id that is not an integer', { scope: 'list', list_id: 'one' }, { list_id: /./ }],
          ['an unknown type', { type: 'phone' }, { type: /./ }],
          ['no entries', { entries: [] }, { entries: /./ }],
          ['entries that are not strings', { entries: ['a@example.com', 42] }, { 'entries.1': /./ }],
          // Until broadcasts, drips and triggers exist, any positive id is accepted; nothing else is (docs/api.md "Scopes").
          ['program with id 0', { scope: 'program', program_type: 'drip', program_id: 0 }, { program_id: /./ }],
          ['program with a negative id', { scope: 'program', program_type: 'broadcast', program_id: -3 }, { program_id: /./ }],
        ] as Array<[name: string, body: Record<string, unknown>, errors: Record<string, RegExp>]>
      ).map(([name, fields, errors]): Scenario => ({
        name: `${path.split('/').pop()} refuses ${name} (${Object.keys(errors).join(', ')})`,
        method: 'POST',
        url: path,
        body: { type: 'email', reason: 'manual', entries: ['a@example.com'], ...fields },
        status: 422,
        code: 'validation_failed',
        detailFields: Object.keys(errors),
        after: (ctx, r) => {
          for (const [field, pattern] of Object.entries(errors)) expect(r.body.error.details[field].join(' ')).toMatch(pattern)
          return nothingStored!(ctx, r)
        },
      })),
    ),
    ...(
      [
        ['an unknown reason', { reason: 'spite' }, 'reason'],
        ['a missing reason', { reason: undefined }, 'reason'],
      ] as Array<[name: string, body: Record<string, unknown>, field: string]>
    ).map(([name, fields, field]): Scenario => ({
      name: `batch refuses ${name} (${field})`,
      method: 'POST',
      url: '/api/v2/suppressions/batch',
      body: { type: 'email', reason: 'manual', entries: ['a@example.com'], ...fields },
      status: 422,
      after: (_, r) => expect(Object.keys(r.body.error.details)).toContain(field),
    })),
    ...['/api/v2/suppressions/batch', '/api/v2/suppressions/batch-delete'].map((path): Scenario => ({
      name: `${path.split('/').pop()} of ${MAX_BATCH_ENTRIES + 1} entries`,
      method: 'POST',
      url: path,
      body: { type: 'email', reason: 'manual', entries: Array.from({ length: MAX_BATCH_ENTRIES + 1 }, (_, i) => `user${i}@bulk.example`) },
      status: 422,
      code: 'validation_failed',
      detailFields: ['entries'],
      after: nothingStored,
    })),
  ],
  { app: withLists },
)

runScenarios(
  'suppressions: out-of-range and malformed list queries and ids are 422',
  [
    ...['per_page=101', 'page=0', 'list_id=x', 'scope=nowhere', 'type=phone', 'reason=spite', `search=${'a'.repeat(255)}`].map((q): Scenario => ({
      name: q.slice(0, 30),
      method: 'GET',
      url: `/api/v2/suppressions?${q}`,
      status: 422,
      code: 'validation_failed',
    })),
    { name: 'id abc', method: 'GET', url: '/api/v2/suppressions/abc', status: 422, after: (_, r) => expect(r.body.error.details.id).toBeDefined() },
  ],
  { app: withLists },
)
