import { expect, test } from 'bun:test'
import type { Deps } from '../../src/deps'
import { createContactWriter } from '../../src/modules/contacts/writer'
import { testApp, testDeps } from '../support/app'

/** contact_counts holds exactly the real number of contacts per list and status (raw SQL on purpose: the counter table is the thing under test). */
function expectCountsExact(deps: Deps): void {
  const real = deps.db.$client.query('SELECT list_id, status, count(*) AS n FROM contacts GROUP BY list_id, status ORDER BY list_id, status').all()
  const kept = deps.db.$client.query('SELECT list_id, status, n FROM contact_counts WHERE n > 0 ORDER BY list_id, status').all()
  expect(kept).toEqual(real)
}

test('contact_counts stays equal to a real count through inserts, status and list changes, deletes and list deletion', async () => {
  const t = testApp()
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  const a = (await call('POST', '/api/v2/lists', { name: 'A' })).body.data.id
  const b = (await call('POST', '/api/v2/lists', { name: 'B' })).body.data.id
  const check = () => expectCountsExact(t.deps)
  await call('POST', '/api/v2/contacts/batch', {
    list_id: a,
    contacts: Array.from({ length: 12 }, (_, i) => ({ email: `u${i}@example.com`, status: i % 4 === 0 ? 'unsubscribed' : 'subscribed' })),
  })
  await call('POST', '/api/v2/contacts', { list_id: b, email: 'single@example.com', status: 'unconfirmed' })
  await call('POST', '/api/v2/contacts', { list_id: b, email: 'single@example.com' }) // 409: not counted
  check()
  const ids = (await call('GET', `/api/v2/contacts?list_id=${a}`)).body.data.map((c: { id: number }) => c.id)
  await call('PATCH', `/api/v2/contacts/${ids[1]}`, { status: 'bounced' })
  await call('PATCH', `/api/v2/contacts/${ids[2]}`, { list_id: b })
  await call('PATCH', `/api/v2/contacts/${ids[3]}`, { first_name: 'no count change' })
  check()
  await call('POST', '/api/v2/contacts/batch-delete', { ids: [ids[4], ids[5]] })
  check()
  expect((await call('GET', `/api/v2/lists/${a}`)).body.data.counts).toEqual({
    subscribed: 6,
    unconfirmed: 0,
    unsubscribed: 2,
    bounced: 1,
    complained: 0,
    total: 9,
  })
  await call('DELETE', `/api/v2/lists/${a}`)
  check()
  expect(t.deps.db.$client.query('SELECT count(*) AS n FROM contact_counts WHERE list_id = ?').get(a)).toEqual({ n: 0 })
})

test('every page is the same whether read from the start or from the far end', async () => {
  const t = testApp()
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  const l = (await call('POST', '/api/v2/lists', { name: 'L' })).body.data.id
  await call('POST', '/api/v2/contacts/batch', {
    list_id: l,
    contacts: Array.from({ length: 53 }, (_, i) => ({ email: `p${i}@example.com`, status: i % 5 === 0 ? 'unsubscribed' : 'subscribed' })),
  })
  const all = t.deps.db.$client
    .query("SELECT id FROM contacts WHERE list_id = ? AND status = 'subscribed' ORDER BY id")
    .all(l)
    .map((r) => (r as { id: number }).id)
  for (const perPage of [1, 7, 10, 42, 100]) {
    const lastPage = Math.max(1, Math.ceil(all.length / perPage))
    for (let page = 1; page <= lastPage + 1; page++) {
      const r = (await call('GET', `/api/v2/contacts?list_id=${l}&status=subscribed&per_page=${perPage}&page=${page}`)).body
      expect(r.meta).toEqual({ current_page: page, per_page: perPage, total: all.length, last_page: lastPage })
      expect(r.data.map((c: { id: number }) => c.id)).toEqual(all.slice((page - 1) * perPage, page * perPage))
    }
  }
})

test('imports count their new contacts once per batch and keep contact_counts exact (skip and update, statuses, suppressions)', async () => {
  const t = testApp()
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  const upload = async (listId: number, csv: string, query = '') => {
    const res = await t.app.handle(
      new Request(`http://mailroom.test/api/v2/imports?list_id=${listId}${query}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin.key}`, 'content-type': 'text/csv' },
        body: csv,
      }),
    )
    const id = ((await res.json()) as { data: { id: number } }).data.id
    await t.imports.idle()
    return (await call('GET', `/api/v2/imports/${id}`)).body.data
  }
  const check = () => expectCountsExact(t.deps)
  const a = (await call('POST', '/api/v2/lists', { name: 'A' })).body.data.id
  await call('POST', '/api/v2/contacts', { list_id: a, email: 'old@example.com', status: 'unconfirmed' })
  await call('POST', '/api/v2/suppressions/batch', { type: 'email', reason: 'complaint', entries: ['angry@example.com'] })
  const rows = ['email,status', 'old@example.com,subscribed', 'angry@example.com,subscribed', 'bad-address,subscribed', 'u1@example.com,unsubscribed']
  rows.push(...Array.from({ length: 40 }, (_, i) => `n${i}@example.com,${i % 3 === 0 ? 'unconfirmed' : 'subscribed'}`))
  expect(await upload(a, rows.join('\n'))).toMatchObject({ status: 'completed', created: 42, skipped: 1, invalid: 1 })
  check()
  expect(await upload(a, 'email,status\nold@example.com,bounced\nn0@example.com,subscribed\nnew@example.com,subscribed\n', '&mode=update')).toMatchObject({
    status: 'completed',
    created: 1,
    updated: 2,
  })
  check()
  expect((await call('GET', `/api/v2/lists/${a}`)).body.data.counts).toMatchObject({ bounced: 1, complained: 1, unsubscribed: 1 })
})

test('the contact writer writes only inside a transaction; rolled back, it leaves no rows or counts behind', () => {
  const deps = testDeps()
  const client = deps.db.$client
  const listId = (client.query("INSERT INTO lists (name, description, created_at, updated_at) VALUES ('L', '', 0, 0) RETURNING id").get() as { id: number }).id
  const writer = createContactWriter(deps, { listId, defs: new Map(), mode: 'skip' })
  const state = () => ({
    contacts: client.query('SELECT count(*) AS n FROM contacts').get(),
    counts: client.query('SELECT status, n FROM contact_counts WHERE n > 0 ORDER BY status').all(),
  })
  expect(() => writer.batch(() => 0)).toThrow(/inside a transaction/)
  expect(() => writer.write({ email: 'z@example.com' })).toThrow(/inside a transaction/)
  const failing = client.transaction(() =>
    writer.batch(() => {
      writer.write({ email: 'a@example.com' })
      throw new Error('boom')
    }),
  )
  expect(() => failing()).toThrow('boom')
  expect(state()).toEqual({ contacts: { n: 0 }, counts: [] })
  client.transaction(() =>
    writer.batch(() => {
      writer.write({ email: 'a@example.com' })
      writer.write({ email: 'b@example.com', status: 'unsubscribed' })
      writer.write({ email: 'a@example.com' }) // skipped: counted once
    }),
  )()
  // Outside a batch each insert is counted at once.
  client.transaction(() => writer.write({ email: 'c@example.com' }))()
  expect(state()).toEqual({
    contacts: { n: 3 },
    counts: [
      { status: 'subscribed', n: 2 },
      { status: 'unsubscribed', n: 1 },
    ],
  })
})
