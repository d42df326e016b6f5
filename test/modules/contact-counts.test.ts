import { expect, test } from 'bun:test'
import { testApp } from '../support/app'

test('contact_counts stays equal to a real count through inserts, status and list changes, deletes and list deletion', async () => {
  const t = testApp()
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  const a = (await call('POST', '/api/v2/lists', { name: 'A' })).body.data.id
  const b = (await call('POST', '/api/v2/lists', { name: 'B' })).body.data.id
  const check = () => {
    const real = t.deps.db.$client.query('SELECT list_id, status, count(*) AS n FROM contacts GROUP BY list_id, status ORDER BY list_id, status').all()
    const kept = t.deps.db.$client.query('SELECT list_id, status, n FROM contact_counts WHERE n > 0 ORDER BY list_id, status').all()
    expect(kept).toEqual(real)
  }
  await call('POST', '/api/v2/contacts/batch', {
    list_id: a,
    contacts: Array.from({ length: 12 }, (_, i) => ({ email: `u${i}@example.com`, status: i % 4 === 0 ? 'unsubscribed' : 'subscribed' })),
  })
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
