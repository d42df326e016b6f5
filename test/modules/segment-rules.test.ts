import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { contacts, customFields, lists } from '../../src/db/schema'
import {
  compileRules,
  inlineParams,
  MAX_CONDITIONS,
  MAX_DEPTH,
  type CompileOptions,
  type CustomFieldInfo,
  type RuleCatalog,
} from '../../src/modules/segments/rules'
import { testDeps } from '../support/app'

/**
 * The rule compiler is pure; its SQL is checked by running it on a real (in-memory,
 * migrated) database with a handful of contacts, so every case states which contacts a
 * rule matches rather than what SQL text it produces.
 */
const deps = testDeps()
const NOW = deps.clock.now() // 2026-03-01T12:00:30Z
const at = (iso: string) => Date.parse(iso)

const FIELDS: CustomFieldInfo[] = [
  { key: 'plan', type: 'one_of', options: ['free', 'pro', 'team'] },
  { key: 'age', type: 'number', options: [] },
  { key: 'vip', type: 'boolean', options: [] },
  { key: 'renewal', type: 'date', options: [] },
  { key: 'city', type: 'text', options: [] },
]
for (const f of FIELDS)
  deps.db
    .insert(customFields)
    .values({ key: f.key, name: f.key, type: f.type, options: [...f.options], created_at: NOW, updated_at: NOW })
    .run()
deps.db
  .insert(lists)
  .values([1, 2].map((id) => ({ id, name: `list ${id}`, created_at: NOW, updated_at: NOW })))
  .run()

/** The people in every case, by name. */
const PEOPLE = {
  A: {
    list_id: 1,
    email: 'ann@example.com',
    first_name: 'Ann',
    last_name: 'Lee',
    status: 'subscribed',
    fields: { plan: 'pro', age: 30, vip: true, renewal: '2026-03-15', city: 'Berlin' },
    created_at: at('2026-01-01T00:00:00Z'),
  },
  B: {
    list_id: 1,
    email: 'bob@test.org',
    first_name: 'Bob',
    last_name: null,
    status: 'unsubscribed',
    fields: { plan: 'free', age: 45, vip: false, renewal: '2026-02-01', city: '' },
    created_at: at('2026-02-20T00:00:00Z'),
  },
  C: {
    list_id: 2,
    email: 'cy@example.com',
    first_name: null,
    last_name: "O'Brien",
    status: 'bounced',
    fields: { age: 30.5 },
    created_at: at('2025-06-01T00:00:00Z'),
  },
  D: {
    list_id: 2,
    email: 'dee_50%@shop.example',
    first_name: 'dee',
    last_name: '',
    status: 'unconfirmed',
    fields: { plan: 'team', city: 'berlin' },
    created_at: NOW - 86_400_000,
  },
  E: { list_id: 2, email: 'ann@example.com', first_name: 'ANN', last_name: null, status: 'complained', fields: {}, created_at: NOW },
} as const
type Name = keyof typeof PEOPLE
const idOf = new Map<number, Name>()
for (const [name, p] of Object.entries(PEOPLE) as Array<[Name, (typeof PEOPLE)[Name]]>) {
  const row = deps.db
    .insert(contacts)
    .values({ ...p, fields: { ...p.fields }, updated_at: p.created_at + 1000 })
    .returning()
    .get()
  idOf.set(row.id, name)
}

const catalog: RuleCatalog = {
  customField: (key) => FIELDS.find((f) => f.key === key),
  listExists: (id) => id === 1 || id === 2,
}
const options: CompileOptions = { now: NOW, catalog, checkReferences: true }

/** Compiles and runs the rules; the names of the matching contacts. Raw SQL on purpose: the test is of the compiled WHERE clause itself. */
function matching(rules: unknown, opts: CompileOptions = options): string {
  const c = compileRules(rules, opts)
  if (!c.ok) throw new Error(`compile failed: ${JSON.stringify(c.errors)}`)
  const rows = deps.db.$client.prepare<{ id: number }, Array<string | number>>(`SELECT id FROM contacts WHERE ${c.where} ORDER BY id`).all(...c.params)
  return rows.map((r) => idOf.get(r.id)).join('')
}

const cond = (field: string, op: string, value?: unknown) => ({ all: [value === undefined ? { field, op } : { field, op, value }] })

// [field, op, value, expected matches]
const CASES: Array<[string, string, unknown, string]> = [
  // text: case-insensitive (ASCII), LIKE wildcards in values are literal
  ['first_name', 'eq', 'ann', 'AE'],
  ['first_name', 'neq', 'Ann', 'BCD'],
  ['first_name', 'in', ['bob', 'DEE'], 'BD'],
  ['first_name', 'not_in', ['bob'], 'ACDE'],
  ['first_name', 'contains', 'N', 'AE'],
  ['first_name', 'not_contains', 'n', 'BCD'],
  ['first_name', 'starts_with', 'b', 'B'],
  ['first_name', 'ends_with', 'E', 'D'],
  ['first_name', 'is_set', undefined, 'ABDE'],
  ['first_name', 'is_not_set', undefined, 'C'],
  ['last_name', 'contains', "'", 'C'],
  ['last_name', 'is_not_set', undefined, 'BDE'],
  ['email', 'eq', ' ANN@Example.com ', 'AE'],
  ['email', 'neq', 'ann@example.com', 'BCD'],
  ['email', 'in', ['BOB@test.org', 'cy@example.com'], 'BC'],
  ['email', 'not_in', ['ann@example.com'], 'BCD'],
  ['email', 'ends_with', '@EXAMPLE.com', 'ACE'],
  ['email', 'starts_with', 'dee_', 'D'],
  ['email', 'starts_with', 'c', 'C'],
  ['email', 'contains', '%', 'D'],
  ['email', 'contains', '_', 'D'],
  ['email', 'not_contains', 'example', 'B'],
  ['email', 'is_set', undefined, 'ABCDE'],
  ['email', 'is_not_set', undefined, ''],
  // status and list_id
  ['status', 'eq', 'subscribed', 'A'],
  ['status', 'neq', 'subscribed', 'BCDE'],
  ['status', 'in', ['bounced', 'complained'], 'CE'],
  ['status', 'not_in', ['subscribed', 'unsubscribed'], 'CDE'],
  ['status', 'not_in', ['subscribed', 'unsubscribed', 'unconfirmed', 'bounced', 'complained'], ''],
  ['list_id', 'eq', 2, 'CDE'],
  ['list_id', 'neq', 2, 'AB'],
  ['list_id', 'in', [1], 'AB'],
  ['list_id', 'not_in', [1], 'CDE'],
  // timestamps: ISO 8601 with a zone, dates (midnight UTC), relative to the clock
  ['created_at', 'gte', '2026-02-01', 'BDE'],
  ['created_at', 'gt', '2026-02-28T12:00:30Z', 'E'],
  ['created_at', 'eq', '2026-02-28T13:00:30+01:00', 'D'],
  ['created_at', 'neq', '2026-02-28T13:00:30.000+01:00', 'ABCE'],
  ['created_at', 'lt', { days_ago: 1 }, 'ABC'],
  ['created_at', 'lte', { days_ago: 1 }, 'ABCD'],
  ['created_at', 'gte', { days_ago: 0 }, 'E'],
  ['created_at', 'between', ['2026-01-01', '2026-02-20T00:00:00Z'], 'AB'],
  ['created_at', 'is_set', undefined, 'ABCDE'],
  ['created_at', 'is_not_set', undefined, ''],
  ['updated_at', 'gt', '2026-02-20T00:00:00Z', 'BDE'],
  ['updated_at', 'lte', { days_from_now: 0 }, 'ABCD'],
  // number
  ['fields.age', 'eq', 30, 'A'],
  ['fields.age', 'neq', 30, 'BCDE'],
  ['fields.age', 'gt', 30, 'BC'],
  ['fields.age', 'gte', 30, 'ABC'],
  ['fields.age', 'lt', 31, 'AC'],
  ['fields.age', 'lte', 30, 'A'],
  ['fields.age', 'between', [30, 31], 'AC'],
  ['fields.age', 'is_set', undefined, 'ABC'],
  ['fields.age', 'is_not_set', undefined, 'DE'],
  // date (YYYY-MM-DD strings; relative values are UTC calendar dates)
  ['fields.renewal', 'eq', '2026-03-15', 'A'],
  ['fields.renewal', 'neq', '2026-03-15', 'BCDE'],
  ['fields.renewal', 'gt', { days_ago: 30 }, 'AB'],
  ['fields.renewal', 'gte', '2026-03-15', 'A'],
  ['fields.renewal', 'lt', '2026-03-01', 'B'],
  ['fields.renewal', 'lte', { days_from_now: 13 }, 'B'],
  ['fields.renewal', 'lte', { days_from_now: 14 }, 'AB'],
  ['fields.renewal', 'between', [{ days_ago: 28 }, { days_from_now: 14 }], 'AB'],
  ['fields.renewal', 'between', [{ days_ago: 27 }, '2026-03-14'], ''],
  ['fields.renewal', 'is_set', undefined, 'AB'],
  ['fields.renewal', 'is_not_set', undefined, 'CDE'],
  // boolean
  ['fields.vip', 'eq', true, 'A'],
  ['fields.vip', 'eq', false, 'B'],
  ['fields.vip', 'is_set', undefined, 'AB'],
  ['fields.vip', 'is_not_set', undefined, 'CDE'],
  // one_of: exact values
  ['fields.plan', 'eq', 'pro', 'A'],
  ['fields.plan', 'neq', 'pro', 'BCDE'],
  ['fields.plan', 'in', ['free', 'team'], 'BD'],
  ['fields.plan', 'not_in', ['free'], 'ACDE'],
  ['fields.plan', 'is_set', undefined, 'ABD'],
  ['fields.plan', 'is_not_set', undefined, 'CE'],
  // custom text: like first_name; an empty string is not set
  ['fields.city', 'eq', 'BERLIN', 'AD'],
  ['fields.city', 'neq', 'berlin', 'BCE'],
  ['fields.city', 'contains', 'erl', 'AD'],
  ['fields.city', 'is_set', undefined, 'AD'],
  ['fields.city', 'is_not_set', undefined, 'BCE'],
]

describe('every operator of every field type', () => {
  for (const [field, op, value, expected] of CASES) {
    test(`${field} ${op} ${JSON.stringify(value) ?? ''} -> ${expected || 'nobody'}`, () => {
      expect(matching(cond(field, op, value))).toBe(expected)
    })
  }

  test('a negative operator matches exactly the complement of its positive one', () => {
    const pairs: Array<[string, string, string, unknown]> = [
      ['first_name', 'eq', 'neq', 'ann'],
      ['first_name', 'in', 'not_in', ['bob', 'dee']],
      ['first_name', 'contains', 'not_contains', 'o'],
      ['fields.city', 'is_set', 'is_not_set', undefined],
      ['fields.age', 'eq', 'neq', 45],
      ['fields.plan', 'in', 'not_in', ['pro', 'team']],
      ['status', 'in', 'not_in', ['subscribed', 'bounced']],
      ['list_id', 'eq', 'neq', 1],
    ]
    for (const [field, pos, neg, value] of pairs) {
      const a = matching(cond(field, pos, value))
      const b = matching(cond(field, neg, value))
      expect([...a, ...b].sort().join('')).toBe('ABCDE')
    }
  })
})

describe('groups and list membership', () => {
  const cases: Array<[string, unknown, string]> = [
    [
      'all: every item',
      {
        all: [
          { field: 'list_id', op: 'eq', value: 1 },
          { field: 'status', op: 'eq', value: 'unsubscribed' },
        ],
      },
      'B',
    ],
    [
      'any: at least one',
      {
        any: [
          { field: 'status', op: 'eq', value: 'bounced' },
          { field: 'fields.plan', op: 'eq', value: 'pro' },
        ],
      },
      'AC',
    ],
    [
      'nested',
      {
        all: [
          { field: 'status', op: 'in', value: ['subscribed', 'complained', 'unconfirmed'] },
          {
            any: [
              { field: 'list_id', op: 'eq', value: 1 },
              { field: 'fields.plan', op: 'eq', value: 'team' },
            ],
          },
        ],
      },
      'AD',
    ],
    ['in_list: the address is on that list', { all: [{ in_list: 1 }] }, 'ABE'],
    ['in_list of the other list', { all: [{ in_list: 2 }] }, 'ACDE'],
    ['not_in_list', { all: [{ not_in_list: 1 }] }, 'CD'],
    ['on list 2 and also on list 1', { all: [{ field: 'list_id', op: 'eq', value: 2 }, { in_list: 1 }] }, 'E'],
    ['on list 1 but not on list 2', { all: [{ field: 'list_id', op: 'eq', value: 1 }, { not_in_list: 2 }] }, 'B'],
    ['deepest allowed nesting', nest(MAX_DEPTH, { field: 'status', op: 'eq', value: 'subscribed' }), 'A'],
  ]
  for (const [name, rules, expected] of cases) {
    test(`${name} -> ${expected || 'nobody'}`, () => expect(matching(rules)).toBe(expected))
  }
})

/** `depth` groups around one condition: all at the root, then any, all, ... */
function nest(depth: number, leaf: unknown): unknown {
  let node = leaf
  for (let level = depth; level >= 1; level--) node = { [level % 2 ? 'all' : 'any']: [node] }
  return node
}

describe('relative values follow the clock', () => {
  test('days_ago resolves against `now`, not the wall clock', () => {
    const rules = cond('created_at', 'gte', { days_ago: 30 })
    const c = compileRules(rules, options)
    expect(c.ok && c.params).toEqual([NOW - 30 * 86_400_000])
    const later = compileRules(rules, { ...options, now: NOW + 86_400_000 })
    expect(later.ok && later.params).toEqual([NOW - 29 * 86_400_000])
    // Who matches moves with the clock: a year on, nobody was created in the last 30 days.
    expect(matching(rules)).toBe('BDE')
    expect(matching(rules, { ...options, now: NOW + 365 * 86_400_000 })).toBe('')
  })

  test('relative dates are UTC calendar dates', () => {
    const c = compileRules(cond('fields.renewal', 'eq', { days_from_now: 1 }), { ...options, now: Date.parse('2026-03-01T23:59:59+00:00') })
    expect(c.ok && c.params).toEqual(['2026-03-02'])
  })
})

describe('the stored form and the SQL', () => {
  test('unknown properties are dropped; email values are normalised; relative values are kept as given', () => {
    const c = compileRules(
      {
        all: [
          { field: 'email', op: 'eq', value: ' Ann@Example.COM', note: 'x' },
          { in_list: 1, status: 'subscribed' },
          { field: 'created_at', op: 'gte', value: { days_ago: 7 } },
          { field: 'first_name', op: 'is_set', value: 'ignored' },
        ],
        extra: true,
      },
      options,
    )
    expect(c.ok && c.rules).toEqual({
      all: [
        { field: 'email', op: 'eq', value: 'ann@example.com' },
        { in_list: 1 },
        { field: 'created_at', op: 'gte', value: { days_ago: 7 } },
        { field: 'first_name', op: 'is_set' },
      ],
    })
  })

  test('values are bound parameters, never part of the SQL text', () => {
    const values = ["x' OR '1'='1", 'Robert"); DROP TABLE contacts; --', 'percent%', 'team']
    const c = compileRules(
      {
        any: [
          { field: 'first_name', op: 'in', value: values.slice(0, 2) },
          { field: 'last_name', op: 'contains', value: values[2] },
          { field: 'fields.plan', op: 'eq', value: values[3] },
        ],
      },
      options,
    )
    if (!c.ok) throw new Error('compile failed')
    for (const v of values) expect(c.where).not.toContain(v)
    expect(c.where.split('?').length - 1).toBe(c.params.length)
    expect(matching({ all: [{ field: 'first_name', op: 'eq', value: "x' OR '1'='1" }] })).toBe('')
    // Raw SQL on purpose: the contacts here are seeded straight into the table, past the service's counters.
    expect(deps.db.$client.query('SELECT COUNT(*) AS n FROM contacts').get()).toEqual({ n: 5 })
  })

  test('cheap column tests come before JSON in a group; the order never changes the result', () => {
    const rules = { all: [{ field: 'fields.plan', op: 'eq', value: 'pro' }, { in_list: 1 }, { field: 'status', op: 'eq', value: 'subscribed' }] }
    const c = compileRules(rules, options)
    if (!c.ok) throw new Error('compile failed')
    expect(c.where.indexOf('contacts.status')).toBeLessThan(c.where.indexOf('EXISTS'))
    expect(c.where.indexOf('EXISTS')).toBeLessThan(c.where.indexOf('instr(contacts.fields'))
    expect(c.params).toEqual(['subscribed', 1, '"plan":"pro"'])
    expect(c.rules).toEqual(rules)
    expect(matching(rules)).toBe('A')
  })

  /**
   * A database of its own: these custom fields, list 1, and one subscribed contact per
   * `people` entry (p0@example.com, p1@..., in order); compiles rules against that catalog and
   * answers the addresses a WHERE clause matches, in order.
   */
  function ownAudience(defs: CustomFieldInfo[], people: Array<Record<string, unknown>>) {
    const own = testDeps()
    for (const d of defs)
      own.db
        .insert(customFields)
        .values({ key: d.key, name: d.key, type: d.type, options: [...d.options], created_at: NOW, updated_at: NOW })
        .run()
    own.db.insert(lists).values({ id: 1, name: 'l', created_at: NOW, updated_at: NOW }).run()
    people.forEach((fields, i) =>
      own.db
        .insert(contacts)
        .values({ list_id: 1, email: `p${i}@example.com`, status: 'subscribed', fields, created_at: NOW, updated_at: NOW })
        .run(),
    )
    const ownCatalog: RuleCatalog = { customField: (key) => defs.find((d) => d.key === key), listExists: () => true }
    return {
      compile(rules: unknown) {
        const c = compileRules(rules, { now: NOW, catalog: ownCatalog, checkReferences: false })
        if (!c.ok) throw new Error(`compile failed: ${JSON.stringify(c.errors)}`)
        return c
      },
      emails: (where: string, params: Array<string | number>) =>
        own.db.$client
          .prepare<{ email: string }, Array<string | number>>(`SELECT email FROM contacts WHERE ${where} ORDER BY id`)
          .all(...params)
          .map((r) => r.email),
    }
  }

  test('a one_of value is looked for as text first; a value that only looks like it inside another value does not match', () => {
    const own = ownAudience(
      [
        { key: 'plan', type: 'one_of', options: ['free', 'pro'] },
        { key: 'note', type: 'text', options: [] },
      ],
      [{ plan: 'pro' }, { note: '"plan":"pro"', plan: 'free' }, { note: 'x","plan":"pro' }, { plan: 'profile' }, {}],
    )
    const run = (op: string) => {
      const c = own.compile(cond('fields.plan', op, 'pro'))
      return own.emails(c.where, c.params)
    }
    expect(run('eq')).toEqual(['p0@example.com'])
    expect(run('neq')).toEqual(['p1@example.com', 'p2@example.com', 'p3@example.com', 'p4@example.com'])
  })

  test('a number field read from the stored text agrees with parsing the JSON, whatever else the text holds', () => {
    const own = ownAudience(
      [
        { key: 'seats', type: 'number', options: [] },
        { key: 'max_seats', type: 'number', options: [] },
        { key: 'note', type: 'text', options: [] },
      ],
      [
        { seats: 12 },
        { seats: -3.5, note: 'x' },
        { note: '"seats":99', max_seats: 50 },
        { max_seats: 7, seats: 0 },
        { seats: 1e21 },
        { seats: 2.5e-7 },
        { note: 'a\\', seats: 10 },
        { seats: 9007199254740993 },
        {},
      ],
    )
    const values: Array<[string, unknown]> = [
      ['eq', 12],
      ['neq', 12],
      ['gt', 0],
      ['gte', 10],
      ['lt', 1],
      ['lte', -3.5],
      ['between', [0, 1]],
      ['gt', 1e20],
      ['is_set', undefined],
      ['is_not_set', undefined],
    ]
    for (const [op, value] of values) {
      const c = own.compile(cond('fields.seats', op, value))
      expect(c.where).not.toContain('json_extract')
      // The reference: the same condition with the value parsed out of the JSON.
      const reference = c.where.replaceAll(
        /CAST\(substr\(contacts\.fields, [^)]*\), 0\) \+ \d+, 32\) AS NUMERIC\)/g,
        "json_extract(contacts.fields, '$.seats')",
      )
      expect(reference).toContain('json_extract')
      expect({ op, value, matched: own.emails(c.where, c.params) }).toEqual({ op, value, matched: own.emails(reference, c.params) })
    }
    const gte10 = own.compile(cond('fields.seats', 'gte', 10))
    expect(own.emails(gte10.where, gte10.params)).toEqual(['p0@example.com', 'p4@example.com', 'p6@example.com', 'p7@example.com'])
  })

  test('a status most contacts have is tested on the rows, not through the status index', () => {
    const plan = (share: number) => {
      const c = compileRules(cond('status', 'eq', 'subscribed'), { ...options, catalog: { ...catalog, statusShare: () => share } })
      if (!c.ok) throw new Error('compile failed')
      return deps.db.$client
        .prepare<{ detail: string }, Array<string | number>>(`EXPLAIN QUERY PLAN SELECT COUNT(*) FROM contacts WHERE ${c.where}`)
        .all(...c.params)
        .map((r) => r.detail)
        .join(' | ')
    }
    expect(plan(0.1)).toMatch(/^SEARCH contacts USING COVERING INDEX contacts_status_created_idx \(status=\?\)/)
    // A scan (of the narrowest structure that has the status), no index search.
    expect(plan(0.9)).toMatch(/^SCAN contacts/)
    expect(matching(cond('status', 'eq', 'subscribed'), { ...options, catalog: { ...catalog, statusShare: () => 0.9 } })).toBe('A')
    expect(matching(cond('status', 'neq', 'subscribed'), { ...options, catalog: { ...catalog, statusShare: () => 0.9 } })).toBe('BCDE')
  })

  test('status, list and creation time conditions are index searches, not table scans (EXPLAIN QUERY PLAN)', () => {
    const plan = (rules: unknown): string => {
      const c = compileRules(rules, options)
      if (!c.ok) throw new Error('compile failed')
      const rows = deps.db.$client
        .prepare<{ detail: string }, Array<string | number>>(`EXPLAIN QUERY PLAN SELECT COUNT(*) FROM contacts WHERE ${c.where}`)
        .all(...c.params)
      return rows.map((r) => r.detail).join(' | ')
    }
    // The audience benchmark's shape: status, a creation window, a custom field.
    const three = plan({
      all: [
        { field: 'status', op: 'eq', value: 'subscribed' },
        { field: 'created_at', op: 'gte', value: { days_ago: 30 } },
        { field: 'fields.plan', op: 'eq', value: 'pro' },
      ],
    })
    expect(three).toMatch(/^SEARCH contacts USING (COVERING )?INDEX contacts_(status_created|created)_idx/)
    expect(plan(cond('status', 'not_in', ['bounced', 'complained']))).toMatch(/SEARCH contacts USING COVERING INDEX contacts_status_created_idx/)
    expect(plan(cond('created_at', 'between', ['2026-01-01', '2026-02-01']))).toMatch(/SEARCH contacts USING COVERING INDEX contacts_status_created_idx/)
    expect(
      plan({
        all: [
          { field: 'list_id', op: 'eq', value: 1 },
          { field: 'status', op: 'eq', value: 'subscribed' },
        ],
      }),
    ).toMatch(/SEARCH contacts USING COVERING INDEX contacts_list_status_idx/)
    expect(plan(cond('email', 'starts_with', 'ann'))).toMatch(
      /SEARCH contacts USING COVERING INDEX contacts_list_email_unique \(list_id=\? AND email>\? AND email<\?\)/,
    )
    expect(plan(cond('email', 'eq', 'ann@example.com'))).toMatch(/SEARCH contacts USING COVERING INDEX contacts_list_email_unique \(list_id=\? AND email=\?\)/)
    // in_list is one probe of the unique (list_id, email) index per contact.
    expect(plan({ all: [{ in_list: 2 }] })).toMatch(/SEARCH other .*USING COVERING INDEX contacts_list_email_unique \(list_id=\? AND email=\?\)/)
  })

  test('saved segments are evaluated without reference checks: deleted lists and removed options match nobody', () => {
    const lenient = { ...options, checkReferences: false, catalog: { ...catalog, listExists: () => false } }
    expect(matching({ all: [{ in_list: 99 }] }, lenient)).toBe('')
    expect(matching({ all: [{ not_in_list: 99 }] }, lenient)).toBe('ABCDE')
    expect(matching(cond('fields.plan', 'eq', 'gold'), lenient)).toBe('')
    expect(matching(cond('list_id', 'in', [2, 99]), lenient)).toBe('CDE')
  })
})

describe('invalid rules are refused with the path of each problem', () => {
  const c = (v: unknown) => ({ all: [v] })
  const CASES_422: Array<[string, unknown, string, RegExp]> = [
    ['no rules', undefined, 'rules', /must be a group/],
    ['an array', [], 'rules', /must be a group/],
    ['an empty object', {}, 'rules', /must be a group/],
    ['a bare condition at the root', { field: 'email', op: 'eq', value: 'x' }, 'rules', /must be a group/],
    ['an empty group', { all: [] }, 'rules.all', /non-empty array/],
    ['a group that is not an array', { any: 'x' }, 'rules.any', /non-empty array/],
    ['a number as a node', c(5), 'rules.all.0', /must be a group .* or a condition/],
    ['an empty node', c({}), 'rules.all.0', /must be a group .* or a condition/],
    ['a node with two kinds', c({ all: [c({ in_list: 1 })], any: [] }), 'rules.all.0', /only one of all, any/],
    ['a condition with in_list too', c({ field: 'email', op: 'eq', value: 'x', in_list: 1 }), 'rules.all.0', /only one of field, in_list/],
    ['an unknown field', c({ field: 'phone', op: 'eq', value: 'x' }), 'rules.all.0.field', /unknown field "phone"/],
    ['an unknown custom field', c({ field: 'fields.shoe_size', op: 'eq', value: 1 }), 'rules.all.0.field', /no custom field with key "shoe_size"/],
    ['a field that is not a string', c({ field: 5, op: 'eq', value: 1 }), 'rules.all.0.field', /must be a field name/],
    ['an operator the type lacks', c({ field: 'email', op: 'gt', value: 'x' }), 'rules.all.0.op', /must be one of eq, neq, .* for email \(text\)/],
    ['contains on a boolean', c({ field: 'fields.vip', op: 'contains', value: 'x' }), 'rules.all.0.op', /eq, is_set, is_not_set for fields.vip \(boolean\)/],
    ['is_set on status', c({ field: 'status', op: 'is_set' }), 'rules.all.0.op', /eq, neq, in, not_in/],
    ['no operator', c({ field: 'email', value: 'x' }), 'rules.all.0.op', /must be one of/],
    ['a missing value', c({ field: 'email', op: 'eq' }), 'rules.all.0.value', /is required/],
    ['an empty text', c({ field: 'first_name', op: 'contains', value: '' }), 'rules.all.0.value', /non-empty string/],
    ['a text too long', c({ field: 'first_name', op: 'eq', value: 'x'.repeat(2001) }), 'rules.all.0.value', /at most 2000/],
    ['a number as text', c({ field: 'fields.age', op: 'eq', value: '30' }), 'rules.all.0.value', /must be a number/],
    ['a reversed range', c({ field: 'fields.age', op: 'between', value: [40, 30] }), 'rules.all.0.value', /first value must not be after the second/],
    ['between with one value', c({ field: 'fields.age', op: 'between', value: [1] }), 'rules.all.0.value', /two values/],
    ['in with a scalar', c({ field: 'status', op: 'in', value: 'subscribed' }), 'rules.all.0.value', /array of 1 to 500/],
    ['in with nothing', c({ field: 'status', op: 'in', value: [] }), 'rules.all.0.value', /array of 1 to 500/],
    ['in with too many', c({ field: 'first_name', op: 'in', value: Array.from({ length: 501 }, (_, i) => `n${i}`) }), 'rules.all.0.value', /array of 1 to 500/],
    [
      'an unknown status in a list',
      c({ field: 'status', op: 'in', value: ['subscribed', 'gone'] }),
      'rules.all.0.value.1',
      /must be one of: subscribed, unconfirmed/,
    ],
    ['a one_of value that is not an option', c({ field: 'fields.plan', op: 'eq', value: 'gold' }), 'rules.all.0.value', /must be one of: free, pro, team/],
    ['a boolean as text', c({ field: 'fields.vip', op: 'eq', value: 'true' }), 'rules.all.0.value', /true or false/],
    ['an impossible date', c({ field: 'fields.renewal', op: 'eq', value: '2026-02-30' }), 'rules.all.0.value', /YYYY-MM-DD/],
    ['a date with a time', c({ field: 'fields.renewal', op: 'eq', value: '2026-02-03T00:00:00Z' }), 'rules.all.0.value', /YYYY-MM-DD/],
    ['a time without a zone', c({ field: 'created_at', op: 'gte', value: '2026-03-01T12:00:00' }), 'rules.all.0.value', /ISO 8601/],
    ['a time that is not one', c({ field: 'created_at', op: 'gte', value: '2026-03-01T25:00:00Z' }), 'rules.all.0.value', /ISO 8601/],
    ['a timestamp as a number', c({ field: 'created_at', op: 'gte', value: 1772366400000 }), 'rules.all.0.value', /ISO 8601/],
    ['negative days', c({ field: 'created_at', op: 'gte', value: { days_ago: -1 } }), 'rules.all.0.value', /whole number from 0 to 36500/],
    ['fractional days', c({ field: 'created_at', op: 'gte', value: { days_ago: 1.5 } }), 'rules.all.0.value', /whole number/],
    ['an unknown relative unit', c({ field: 'created_at', op: 'gte', value: { weeks_ago: 1 } }), 'rules.all.0.value', /days_ago/],
    ['a bad item in a between', c({ field: 'created_at', op: 'between', value: ['2026-01-01', 'soon'] }), 'rules.all.0.value.1', /ISO 8601/],
    ['an unknown list in list_id', c({ field: 'list_id', op: 'eq', value: 99 }), 'rules.all.0.value', /no list with id 99/],
    ['an unknown list in in_list', c({ in_list: 99 }), 'rules.all.0.in_list', /no list with id 99/],
    ['a list id that is text', c({ not_in_list: '1' }), 'rules.all.0.not_in_list', /positive integer/],
    ['too deep', nest(MAX_DEPTH + 1, { in_list: 1 }), 'rules.all.0.any.0.all.0.any.0.all.0', /at most 5 deep/],
    ['too many conditions', { any: Array.from({ length: MAX_CONDITIONS + 1 }, () => ({ in_list: 1 })) }, 'rules', /at most 100 conditions/],
  ]
  for (const [name, rules, path, message] of CASES_422) {
    test(`${name} -> ${path}`, () => {
      const c = compileRules(rules, options)
      expect(c.ok).toBe(false)
      if (c.ok) return
      expect(Object.keys(c.errors)).toContain(path)
      expect(c.errors[path]!.join(' ')).toMatch(message)
    })
  }

  test('every problem is reported at once, under its own path', () => {
    const c = compileRules(
      {
        all: [
          { field: 'phone', op: 'eq', value: 1 },
          { any: [{ field: 'email', op: 'eq' }, { field: 'status', op: 'eq', value: 'subscribed' }, { in_list: 0 }] },
        ],
      },
      options,
    )
    expect(c.ok).toBe(false)
    if (c.ok) return
    expect(Object.keys(c.errors).sort()).toEqual(['rules.all.0.field', 'rules.all.1.any.0.value', 'rules.all.1.any.2.in_list'])
  })

  test('exactly 100 conditions are allowed', () => {
    expect(compileRules({ any: Array.from({ length: MAX_CONDITIONS }, () => ({ in_list: 1 })) }, options).ok).toBe(true)
  })
})

describe('field names cannot inject SQL', () => {
  const attempts = [
    "fields.x') OR 1=1 --",
    "fields.plan') OR 1=1 --",
    "fields.plan'",
    'fields."plan"',
    'fields.plan.sub',
    'fields.PLAN',
    'fields.plan ',
    'fields.',
    'fields.__proto__',
    "email'; DROP TABLE contacts; --",
    'contacts.email',
    'email OR 1=1',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
  ]
  for (const field of attempts) {
    test(`${JSON.stringify(field)} is refused`, () => {
      const c = compileRules({ all: [{ field, op: 'eq', value: 'x' }] }, options)
      expect(c.ok).toBe(false)
      if (!c.ok) expect(Object.keys(c.errors)).toEqual(['rules.all.0.field'])
    })
  }

  test('a custom field key is refused unless it is lower snake case, whatever the catalog says', () => {
    const anything: RuleCatalog = { customField: (key) => ({ key, type: 'text', options: [] }), listExists: () => true }
    const bad = compileRules(cond("fields.x') OR 1=1 --", 'eq', 'x'), { ...options, catalog: anything })
    expect(bad.ok).toBe(false)
    const good = compileRules(cond('fields.any_key_2', 'eq', 'x'), { ...options, catalog: anything })
    expect(good.ok && good.where).toBe("json_extract(contacts.fields, '$.any_key_2') COLLATE NOCASE = ?")
  })

  test('operators are matched against a fixed list', () => {
    const c = compileRules(cond('email', 'eq OR 1=1', 'x'), options)
    expect(c.ok).toBe(false)
    if (!c.ok) expect(Object.keys(c.errors)).toEqual(['rules.all.0.op'])
  })
})

describe('inlineParams (the WHERE of an indexed segment)', () => {
  test('writes numbers and quoted strings in place of the placeholders, leaving quoted text alone', () => {
    expect(inlineParams("a = ? AND b LIKE ? ESCAPE '\\' AND c IN (?, ?) AND d = '?'", ["it's", '50\\%', 1.5, -3])).toBe(
      "a = 'it''s' AND b LIKE '50\\%' ESCAPE '\\' AND c IN (1.5, -3) AND d = '?'",
    )
    expect(inlineParams('x = ?', ['?'])).toBe("x = '?'")
  })

  test('gives null for what SQL text cannot hold, and throws on a count mismatch', () => {
    expect(inlineParams('x = ?', ['a\u0000b'])).toBeNull()
    expect(inlineParams('x = ?', [Number.NaN])).toBeNull()
    expect(() => inlineParams('x = ? AND y = ?', [1])).toThrow()
    expect(() => inlineParams('x = ?', [1, 2])).toThrow()
  })

  test('the inlined text selects what the bound statement selects', () => {
    const db = new Database(':memory:')
    db.run('CREATE TABLE t (v)')
    for (const v of ["it's", "it''s", '?', 'x', 1.5, -3, 0]) db.run('INSERT INTO t VALUES (?)', [v])
    const where = '(v = ? OR v = ? OR v = ?)'
    for (const params of [
      ["it's", '?', -3],
      ["it''s", 1.5, 'none'],
    ] as Array<Array<string | number>>) {
      const bound = db.query(`SELECT v FROM t WHERE ${where} ORDER BY rowid`).all(...params)
      expect(bound.length).toBe(params[2] === 'none' ? 2 : 3)
      expect(db.query(`SELECT v FROM t WHERE ${inlineParams(where, params)} ORDER BY rowid`).all()).toEqual(bound)
    }
  })
})
