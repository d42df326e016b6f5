import { describe, expect, test } from 'bun:test'
import { prng } from '../../bench/support/prng'
import { join } from 'node:path'
import { runCli } from '../../src/cli'
import { systemClock } from '../../src/lib/clock'
import { MAX_INDEXED_SEGMENTS } from '../../src/modules/segments/rules'
import { countSegment, createSegment, segmentSource } from '../../src/modules/segments/service'
import { testApp, testDeps } from '../support/app'
import { tempDir } from '../support/temp-dirs'

/**
 * Indexed segments (`indexed: true`): the members are kept in a partial index of their own
 * (segments/service.ts). The index must hold exactly the contacts the rules match, through
 * every kind of condition and every write to contacts, so each test compares an indexed
 * segment with the same rules unindexed (a scan), and looks at SQLite's own schema and plans.
 */

const FIRST = ["O'Brien", 'Ann', 'anna', 'Zoë', 'Bob?', '50%', null]
const LAST = ['Smith', 'Jones', null]
const STATUSES = ['subscribed', 'subscribed', 'unsubscribed', 'bounced']
const PLANS = ['free', 'pro', 'team', undefined]

/** Two lists, five custom fields (one of each type) and 80 contacts with mixed values, all through the API. */
async function audience() {
  const t = testApp()
  const admin = t.makeKey()
  const call = async (method: string, path: string, body?: unknown, status = method === 'POST' ? 201 : 200) => {
    const r = await t.call(method, path, { key: admin.key, body })
    if (r.status !== status) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body.data
  }
  for (const name of ['news', 'vip']) await call('POST', '/api/v2/lists', { name })
  for (const f of [
    { key: 'plan', name: 'Plan', type: 'one_of', options: ['free', 'pro', 'team'] },
    { key: 'age', name: 'Age', type: 'number' },
    { key: 'vip', name: 'VIP', type: 'boolean' },
    { key: 'renews', name: 'Renews', type: 'date' },
    { key: 'note', name: 'Note', type: 'text' },
  ])
    await call('POST', '/api/v2/custom-fields', f)
  const rand = prng(18) // seeded: a failure can be replayed
  const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)]!
  const contactBody = (i: number) => {
    const fields: Record<string, unknown> = {}
    const plan = pick(PLANS)
    if (plan) fields.plan = plan
    if (rand() < 0.8) fields.age = Math.floor(rand() * 60) + (rand() < 0.2 ? 0.5 : 0)
    if (rand() < 0.5) fields.vip = rand() < 0.5
    if (rand() < 0.5) fields.renews = `2026-0${1 + Math.floor(rand() * 9)}-1${Math.floor(rand() * 9)}`
    if (rand() < 0.5) fields.note = pick(["it's fine", 'call?', 'x', ''])
    const first = pick(FIRST)
    const last = pick(LAST)
    return {
      email: `c${i}@${pick(['example.com', 'mail.test'])}`,
      list_id: rand() < 0.7 ? 1 : 2,
      status: pick(STATUSES),
      fields,
      ...(first === null ? {} : { first_name: first }),
      ...(last === null ? {} : { last_name: last }),
    }
  }
  const ids: number[] = []
  for (let i = 1; i <= 80; i++) ids.push((await call('POST', '/api/v2/contacts', contactBody(i))).id)
  return { t, admin, call, rand, pick, ids, contactBody }
}

type Audience = Awaited<ReturnType<typeof audience>>

/** Rules of every condition kind an index can hold: each field type and operator family, negations, nested groups, values with quotes, `?`, `%`. */
const RULES: Array<Record<string, unknown>> = [
  {
    all: [
      { field: 'status', op: 'eq', value: 'subscribed' },
      { field: 'fields.plan', op: 'eq', value: 'pro' },
      { field: 'fields.age', op: 'gte', value: 20 },
    ],
  },
  { all: [{ field: 'fields.age', op: 'between', value: [10.5, 40] }] },
  { all: [{ field: 'fields.age', op: 'neq', value: 30 }] },
  { all: [{ field: 'fields.age', op: 'is_not_set' }] },
  { all: [{ field: 'fields.plan', op: 'not_in', value: ['free', 'team'] }] },
  {
    all: [
      { field: 'fields.plan', op: 'is_set' },
      { field: 'status', op: 'neq', value: 'bounced' },
    ],
  },
  { all: [{ field: 'fields.vip', op: 'eq', value: true }] },
  { all: [{ field: 'fields.renews', op: 'lt', value: '2026-05-01' }] },
  { all: [{ field: 'fields.note', op: 'eq', value: "IT'S FINE" }] },
  { all: [{ field: 'fields.note', op: 'contains', value: '?' }] },
  { all: [{ field: 'fields.note', op: 'is_not_set' }] },
  { all: [{ field: 'first_name', op: 'eq', value: "o'brien" }] },
  { all: [{ field: 'first_name', op: 'starts_with', value: 'ann' }] },
  { all: [{ field: 'first_name', op: 'not_contains', value: '%' }] },
  { all: [{ field: 'first_name', op: 'in', value: ['Bob?', 'Zoë'] }] },
  { all: [{ field: 'last_name', op: 'is_set' }] },
  { all: [{ field: 'email', op: 'eq', value: 'C7@Example.com' }] },
  { all: [{ field: 'email', op: 'in', value: ['c1@example.com', 'c2@mail.test', 'c3@example.com'] }] },
  { all: [{ field: 'email', op: 'starts_with', value: 'c1' }] },
  { all: [{ field: 'email', op: 'ends_with', value: '@mail.test' }] },
  { all: [{ field: 'status', op: 'not_in', value: ['subscribed'] }] },
  { all: [{ field: 'list_id', op: 'eq', value: 2 }] },
  { all: [{ field: 'created_at', op: 'gte', value: '2020-01-01T00:00:00Z' }] },
  { all: [{ field: 'updated_at', op: 'lt', value: '2020-01-01' }] },
  {
    any: [
      {
        all: [
          { field: 'fields.plan', op: 'eq', value: 'team' },
          { field: 'fields.vip', op: 'eq', value: false },
        ],
      },
      {
        all: [
          { field: 'first_name', op: 'ends_with', value: 'N' },
          { field: 'status', op: 'in', value: ['subscribed', 'bounced'] },
        ],
      },
      { field: 'fields.age', op: 'lt', value: 5 },
    ],
  },
]

/** Creates each rule set twice, indexed and not: [indexed id, scanned id] pairs. */
async function pairs(a: Audience) {
  const out: Array<[number, number]> = []
  for (const [k, rules] of RULES.entries()) {
    const indexed = await a.call('POST', '/api/v2/segments', { name: `i${k}`, rules, indexed: true })
    expect(indexed.indexed).toBe(true)
    expect(segmentSource(a.t.deps, indexed.id)).toMatchObject({ from: `contacts INDEXED BY segment_members_${indexed.id}`, params: [], indexed: true })
    const scanned = await a.call('POST', '/api/v2/segments', { name: `s${k}`, rules })
    expect(scanned.indexed).toBe(false)
    expect(segmentSource(a.t.deps, scanned.id)).toMatchObject({ from: 'contacts', indexed: false })
    out.push([indexed.id, scanned.id])
  }
  return out
}

async function members(a: Audience, id: number): Promise<number[]> {
  const ids: number[] = []
  for (let page = 1; ; page++) {
    const body = (await a.t.call('GET', `/api/v2/segments/${id}/contacts?per_page=7&page=${page}`, { key: a.admin.key })).body
    ids.push(...body.data.map((c: { id: number }) => c.id))
    if (body.meta.current_page >= body.meta.last_page) return ids
  }
}

/** Every pair agrees on the count and on the members, page by page; and the pairs are not all empty or all full. */
async function expectSameMembers(a: Audience, list: Array<[number, number]>) {
  const counts: number[] = []
  for (const [indexed, scanned] of list) {
    const n = (await a.call('GET', `/api/v2/segments/${indexed}/count`)).count as number
    expect({ rules: indexed, count: n }).toEqual({ rules: indexed, count: (await a.call('GET', `/api/v2/segments/${scanned}/count`)).count })
    expect(await members(a, indexed)).toEqual(await members(a, scanned))
    counts.push(n)
  }
  expect(counts.filter((n) => n > 0 && n < a.ids.length).length).toBeGreaterThan(RULES.length / 2)
}

function indexNames(a: Audience): string[] {
  return a.t.deps.db.$client
    .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'segment_members_%' ORDER BY name")
    .all()
    .map((r) => r.name)
}

describe('indexed segments', () => {
  test('hold exactly the contacts the same rules match by a scan, for every kind of condition', async () => {
    const a = await audience()
    const list = await pairs(a)
    expect(indexNames(a)).toEqual(list.map(([id]) => `segment_members_${id}`).sort())
    await expectSameMembers(a, list)
  })

  test('follow every write to contacts: creates, updates of fields, names, status and list, deletes', async () => {
    const a = await audience()
    const list = await pairs(a)
    for (let i = 0; i < 60; i++) {
      const id = a.pick(a.ids)
      const roll = a.rand()
      if (roll < 0.25) {
        const body = a.contactBody(1000 + i)
        a.ids.push((await a.call('POST', '/api/v2/contacts', body)).id)
      } else if (roll < 0.85) {
        const { fields, status, first_name } = a.contactBody(id)
        await a.call('PATCH', `/api/v2/contacts/${id}`, { fields: { ...fields, plan: fields.plan ?? null }, status, first_name: first_name ?? 'X' })
      } else {
        await a.call('DELETE', `/api/v2/contacts/${id}`)
        a.ids.splice(a.ids.indexOf(id), 1)
      }
    }
    await expectSameMembers(a, list)
  })

  test('a count reads the index alone: no condition evaluated, no row read', async () => {
    const a = await audience()
    const [indexed] = (await pairs(a))[0]!
    const where = a.t.deps.db.$client.query<{ index_where: string }, [number]>('SELECT index_where FROM segments WHERE id = ?').get(indexed)!.index_where
    // The parameters are written in: a partial index is used only for a WHERE that implies its own.
    expect(where).toContain("'subscribed'")
    const client = a.t.deps.db.$client
    for (const sql of [
      `SELECT COUNT(*) FROM contacts INDEXED BY segment_members_${indexed} WHERE ${where}`,
      `SELECT id FROM contacts INDEXED BY segment_members_${indexed} WHERE ${where} ORDER BY id LIMIT 5`,
    ]) {
      const plan = client.query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${sql}`).all()
      expect(plan.map((r) => r.detail)).toEqual([`SCAN contacts USING INDEX segment_members_${indexed}`])
      // SQLite drops the terms the index implies: the program walks the index, reads no column
      // of the table (its seek is deferred until a column is needed) and calls no function.
      const opcodes = client
        .query<{ opcode: string }, []>(`EXPLAIN ${sql}`)
        .all()
        .map((r) => r.opcode)
      expect(opcodes).toContain('DeferredSeek')
      expect(opcodes.filter((op) => op === 'Column' || op === 'Function' || op === 'PureFunc')).toEqual([])
    }
  })

  test('PATCH turns the index on and off and rebuilds it with new rules; DELETE and bulk delete drop it', async () => {
    const a = await audience()
    const rules = RULES[0]
    const id = (await a.call('POST', '/api/v2/segments', { name: 'pro', rules })).id as number
    expect(indexNames(a)).toEqual([])
    expect((await a.call('PATCH', `/api/v2/segments/${id}`, { indexed: true })).indexed).toBe(true)
    expect(indexNames(a)).toEqual([`segment_members_${id}`])
    const before = (await a.call('GET', `/api/v2/segments/${id}/count`)).count

    // New rules on an indexed segment: still indexed, on the new rules.
    const vip = { all: [{ field: 'fields.vip', op: 'eq', value: true }] }
    const changed = await a.call('PATCH', `/api/v2/segments/${id}`, { rules: vip })
    expect(changed.indexed).toBe(true)
    const scanned = (await a.call('POST', '/api/v2/segments', { name: 'vip', rules: vip })).id
    expect((await a.call('GET', `/api/v2/segments/${id}/count`)).count).toBe((await a.call('GET', `/api/v2/segments/${scanned}/count`)).count)
    expect((await a.call('GET', `/api/v2/segments/${id}/count`)).count).not.toBe(before)

    // A rename leaves the index alone, and so do the same rules sent again (as the console's save does): no schema change.
    const schemaVersion = () => a.t.deps.db.$client.query<{ schema_version: number }, []>('PRAGMA schema_version').get()!.schema_version
    const version = schemaVersion()
    expect((await a.call('PATCH', `/api/v2/segments/${id}`, { name: 'vips' })).indexed).toBe(true)
    expect((await a.call('PATCH', `/api/v2/segments/${id}`, { name: 'vips', rules: vip, indexed: true })).indexed).toBe(true)
    expect(schemaVersion()).toBe(version)
    expect((await a.call('PATCH', `/api/v2/segments/${id}`, { indexed: false })).indexed).toBe(false)
    expect(indexNames(a)).toEqual([])
    expect(a.t.deps.db.$client.query('SELECT index_where FROM segments WHERE id = ?').get(id)).toEqual({ index_where: null })

    await a.call('PATCH', `/api/v2/segments/${id}`, { indexed: true })
    const other = (await a.call('POST', '/api/v2/segments', { name: 'other', rules, indexed: true })).id
    const third = (await a.call('POST', '/api/v2/segments', { name: 'third', rules, indexed: true })).id
    expect(indexNames(a).length).toBe(3)
    await a.call('DELETE', `/api/v2/segments/${id}`)
    expect(indexNames(a)).toEqual([`segment_members_${other}`, `segment_members_${third}`])
    expect(await a.call('POST', '/api/v2/segments/bulk-delete', { ids: [other, third, 999] }, 200)).toEqual({ deleted: [other, third], not_found: [999] })
    expect(indexNames(a)).toEqual([])
  })

  test('rules an index cannot hold are refused on `indexed`, and nothing is saved', async () => {
    const a = await audience()
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ all: [{ field: 'created_at', op: 'gte', value: { days_ago: 30 } }] }, 'relative dates'],
      [{ all: [{ field: 'fields.renews', op: 'lt', value: { days_from_now: 7 } }] }, 'relative dates'],
      [{ any: [{ in_list: 2 }, { field: 'status', op: 'eq', value: 'subscribed' }] }, 'in_list'],
      [{ all: [{ not_in_list: 1 }] }, 'in_list'],
      [{ all: [{ field: 'fields.note', op: 'eq', value: 'a\u0000b' }] }, 'NUL'],
    ]
    for (const [rules, reason] of refusals) {
      const r = await a.t.call('POST', '/api/v2/segments', { key: a.admin.key, body: { name: 'no', rules, indexed: true } })
      expect(r.status).toBe(422)
      expect(r.body.error.code).toBe('validation_failed')
      expect(r.body.error.details.indexed[0]).toContain(reason)
    }
    expect((await a.call('GET', '/api/v2/segments')).length).toBe(0)

    // On update: the segment keeps its rules and its index.
    const id = (await a.call('POST', '/api/v2/segments', { name: 'pro', rules: RULES[0], indexed: true })).id
    const r = await a.t.call('PATCH', `/api/v2/segments/${id}`, { key: a.admin.key, body: { rules: refusals[0]![0] } })
    expect(r.status).toBe(422)
    expect(await a.call('GET', `/api/v2/segments/${id}`)).toMatchObject({ rules: RULES[0], indexed: true })
    expect(indexNames(a)).toEqual([`segment_members_${id}`])
    // The same rules unindexed are fine.
    expect((await a.call('PATCH', `/api/v2/segments/${id}`, { rules: refusals[0]![0], indexed: false })).indexed).toBe(false)
  })

  test(`at most ${MAX_INDEXED_SEGMENTS} segments are indexed at once: every one costs every contact write`, async () => {
    const a = await audience()
    const ids: number[] = []
    for (let i = 0; i < MAX_INDEXED_SEGMENTS; i++)
      ids.push((await a.call('POST', '/api/v2/segments', { name: `s${i}`, rules: RULES[i % RULES.length], indexed: true })).id)
    const over = await a.t.call('POST', '/api/v2/segments', { key: a.admin.key, body: { name: 'one more', rules: RULES[0], indexed: true } })
    expect(over.status).toBe(422)
    expect(over.body.error.details.indexed[0]).toContain(`at most ${MAX_INDEXED_SEGMENTS} segments can be indexed`)
    const plain = (await a.call('POST', '/api/v2/segments', { name: 'plain', rules: RULES[0] })).id
    expect((await a.t.call('PATCH', `/api/v2/segments/${plain}`, { key: a.admin.key, body: { indexed: true } })).status).toBe(422)
    // An indexed segment saved again, or with new rules, is not one more.
    expect((await a.call('PATCH', `/api/v2/segments/${ids[0]}`, { rules: RULES[1], indexed: true })).indexed).toBe(true)
    await a.call('PATCH', `/api/v2/segments/${ids[1]}`, { indexed: false })
    expect((await a.call('PATCH', `/api/v2/segments/${plain}`, { indexed: true })).indexed).toBe(true)
    expect(indexNames(a).length).toBe(MAX_INDEXED_SEGMENTS)
  })

  test('when the rules no longer compile to the index text, the count scans (same answer); a deleted custom field is a 409 as for any segment', async () => {
    const a = await audience()
    const [indexed, scanned] = (await pairs(a))[0]!
    const expected = (await a.call('GET', `/api/v2/segments/${scanned}/count`)).count
    // What a release with another compiler would find: a text that is not this one's.
    a.t.deps.db.$client.run("UPDATE segments SET index_where = '1' WHERE id = ?", [indexed])
    expect(segmentSource(a.t.deps, indexed).indexed).toBe(false)
    expect((await a.call('GET', `/api/v2/segments/${indexed}/count`)).count).toBe(expected)
    expect(await members(a, indexed)).toEqual(await members(a, scanned))
    // Saving it again rebuilds the index on the current text.
    await a.call('PATCH', `/api/v2/segments/${indexed}`, { indexed: true })
    expect(segmentSource(a.t.deps, indexed).indexed).toBe(true)

    await a.call('DELETE', '/api/v2/custom-fields/2') // age
    expect((await a.t.call('GET', `/api/v2/segments/${indexed}/count`, { key: a.admin.key })).status).toBe(409)
  })

  test('a member index lost to a rebuild of the contacts table: counts scan meanwhile, and the next start builds it again', async () => {
    const dir = tempDir('mailroom-segment-index-')
    const file = join(dir, 'mailroom.db')
    const startOnce = () =>
      runCli({
        argv: ['migrate', '--data-dir', dir, '--log-level', 'error'],
        env: {},
        clock: systemClock,
        out: () => {},
        err: () => {},
        stopSignal: new Promise<string>(() => {}),
      })
    expect(await startOnce()).toBe(0)
    let deps = testDeps({}, file)
    const client = deps.db.$client
    client.run("INSERT INTO lists (name, description, created_at, updated_at) VALUES ('news', '', 1, 1)")
    for (let i = 1; i <= 20; i++)
      client.run("INSERT INTO contacts (list_id, email, status, fields, created_at, updated_at) VALUES (1, ?, ?, '{}', 1, 1)", [
        `c${i}@example.com`,
        i % 3 ? 'subscribed' : 'bounced',
      ])
    const rules = { all: [{ field: 'status', op: 'eq', value: 'bounced' }] }
    const id = createSegment(deps, { name: 'bounced', rules, indexed: true }).id
    expect(await countSegment(deps, id)).toEqual({ count: 6 })
    // What drizzle-kit writes for some column changes: a new table, the rows copied, the old one dropped, which takes its indexes.
    const table = client.query<{ sql: string }, []>("SELECT sql FROM sqlite_master WHERE name = 'contacts'").get()!.sql
    client.run('PRAGMA foreign_keys = OFF')
    client.run(table.replace('CREATE TABLE `contacts`', 'CREATE TABLE `__new_contacts`'))
    client.run('INSERT INTO __new_contacts SELECT * FROM contacts')
    client.run('DROP TABLE contacts')
    client.run('ALTER TABLE __new_contacts RENAME TO contacts')
    expect(client.query("SELECT name FROM sqlite_master WHERE name LIKE 'segment_members_%'").all()).toEqual([])
    expect(segmentSource(deps, id).indexed).toBe(false)
    expect(await countSegment(deps, id)).toEqual({ count: 6 })
    client.close()

    expect(await startOnce()).toBe(0)
    deps = testDeps({}, file)
    expect(deps.db.$client.query("SELECT name FROM sqlite_master WHERE name LIKE 'segment_members_%'").all()).toEqual([{ name: `segment_members_${id}` }])
    expect(segmentSource(deps, id).indexed).toBe(true)
    expect(await countSegment(deps, id)).toEqual({ count: 6 })
    deps.db.$client.close()
  })
})
