import { describe, expect, test } from 'bun:test'
import { emit } from '../../src/modules/events/service'
import { testApp } from '../support/app'

const T0 = Date.parse('2026-03-01T12:00:00Z')

/** An app with an admin key and a small event log written through emit(), as the code that changes things writes it. */
function seeded() {
  const t = testApp()
  const admin = t.makeKey()
  const get = async (query: string) => t.call('GET', `/api/v2/events${query ? `?${query}` : ''}`, { key: admin.key })
  const db = t.deps.db
  // id 1..8, one minute apart
  emit(db, T0, { kind: 'message.queued', message_id: 'm1', recipient: 'a@example.com', data: { kind: 'to' } })
  emit(db, T0 + 60_000, { kind: 'message.sent', message_id: 'm1', recipient: 'a@example.com', data: { code: 250, source_ip: '192.0.2.1' } })
  emit(db, T0 + 120_000, { kind: 'message.queued', message_id: 'm2', recipient: 'b@example.com', bridge_id: 3, data: {} })
  emit(db, T0 + 180_000, { kind: 'message.bounced', message_id: 'm2', recipient: 'b@example.com', bridge_id: 3, data: { code: 550 } })
  emit(db, T0 + 240_000, { kind: 'contact.subscribed', contact_id: 7, list_id: 2, recipient: 'c@example.com', data: { email: 'c@example.com' } })
  emit(db, T0 + 300_000, { kind: 'contact.bounced', contact_id: 8, list_id: 2, message_id: 'm2', recipient: 'b@example.com', data: {} })
  emit(db, T0 + 360_000, { kind: 'broadcast.sent', broadcast_id: 5, data: {} })
  emit(db, T0 + 420_000, { kind: 'message.complained', message_id: 'm1', recipient: 'a@example.com', data: { source: 'arf' } })
  return { t, admin, get }
}

const ids = (r: { body: { data: Array<{ id: number }> } }) => r.body.data.map((e) => e.id)

describe('GET /api/v2/events', () => {
  test('lists every event newest first, with its subjects and payload', async () => {
    const { get } = seeded()
    const all = await get('')
    expect(all.status).toBe(200)
    expect(all.body.meta).toEqual({ current_page: 1, per_page: 25, total: 8, last_page: 1 })
    expect(ids(all)).toEqual([8, 7, 6, 5, 4, 3, 2, 1])
    expect(all.body.data[6]).toEqual({
      id: 2,
      kind: 'message.sent',
      created_at: '2026-03-01T12:01:00.000Z',
      message_id: 'm1',
      recipient: 'a@example.com',
      contact_id: null,
      list_id: null,
      broadcast_id: null,
      bridge_id: null,
      data: { code: 250, source_ip: '192.0.2.1' },
    })
  })

  test('each filter narrows the list', async () => {
    const { get } = seeded()
    expect(ids(await get('kind=message.queued'))).toEqual([3, 1])
    expect(ids(await get('kind=message.queued,message.bounced'))).toEqual([4, 3, 1])
    expect(ids(await get('message_id=m2'))).toEqual([6, 4, 3])
    expect(ids(await get('recipient=B@Example.com'))).toEqual([6, 4, 3])
    expect(ids(await get('contact_id=7'))).toEqual([5])
    expect(ids(await get('list_id=2'))).toEqual([6, 5])
    expect(ids(await get('broadcast_id=5'))).toEqual([7])
    expect(ids(await get('bridge_id=3'))).toEqual([4, 3])
    expect(ids(await get('from=2026-03-01T12:02:00Z&to=2026-03-01T12:04:00Z'))).toEqual([4, 3])
    expect(ids(await get('from=2026-03-01T12:06:00Z'))).toEqual([8, 7])
    expect(ids(await get('kind=message.queued,message.sent&message_id=m1&to=2026-03-01T12:01:00Z'))).toEqual([1])
    expect((await get('kind=message.opened')).body.meta.total).toBe(0) // reserved: known, nothing emits it yet
  })

  test('pages walk the log without gaps or repeats, deep pages too', async () => {
    const { get } = seeded()
    const seen: number[] = []
    for (let page = 1; page <= 3; page++) {
      const r = await get(`per_page=3&page=${page}`)
      expect(r.body.meta).toEqual({ current_page: page, per_page: 3, total: 8, last_page: 3 })
      seen.push(...ids(r))
    }
    expect(seen).toEqual([8, 7, 6, 5, 4, 3, 2, 1])
    expect((await get('per_page=3&page=4')).body.data).toEqual([])
    expect(ids(await get('kind=message.queued,message.sent,message.bounced&per_page=2&page=2'))).toEqual([2, 1])
  })

  test('refuses unknown kinds, bad times and an empty range', async () => {
    const { get } = seeded()
    const typo = await get('kind=message.sent,message.snet')
    expect(typo.status).toBe(422)
    expect(typo.body.error.details.kind[0]).toContain('message.snet')
    expect((await get('from=yesterday')).status).toBe(422)
    expect((await get('from=2026-03-01T12:00:00Z&to=2026-03-01T12:00:00Z')).status).toBe(422)
    expect((await get('per_page=101')).status).toBe(422)
  })

  test('events written by the API itself are listed (contact.subscribed on a new contact)', async () => {
    const { t, admin } = seeded()
    const list = (await t.call('POST', '/api/v2/lists', { key: admin.key, body: { name: 'News' } })).body.data.id
    const made = await t.call('POST', '/api/v2/contacts', { key: admin.key, body: { list_id: list, email: 'New@Example.com' } })
    expect(made.status).toBe(201)
    const r = await t.call('GET', `/api/v2/events?kind=contact.subscribed&list_id=${list}`, { key: admin.key })
    expect(r.body.data).toHaveLength(1)
    expect(r.body.data[0]).toMatchObject({ kind: 'contact.subscribed', contact_id: made.body.data.id, list_id: list, recipient: 'new@example.com' })
  })

  test('needs statistics.read', async () => {
    const { t } = seeded()
    const other = t.makeKey({ permissions: ['contacts.read'] })
    const reader = t.makeKey({ permissions: ['statistics.read'] })
    expect((await t.call('GET', '/api/v2/events')).status).toBe(401)
    expect((await t.call('GET', '/api/v2/events', { key: other.key })).status).toBe(403)
    expect((await t.call('GET', '/api/v2/events', { key: reader.key })).status).toBe(200)
  })
})

describe('event filters are index lookups', () => {
  test('each subject filter, and its page total, uses its own index', () => {
    const { deps } = testApp()
    const plan = (sql: string) => (deps.db.$client.query(`EXPLAIN QUERY PLAN ${sql}`).all(1) as Array<{ detail: string }>).map((r) => r.detail).join(' | ')
    for (const [column, index] of [
      ['recipient', 'events_recipient_idx'],
      ['contact_id', 'events_contact_idx'],
      ['list_id', 'events_list_idx'],
      ['broadcast_id', 'events_broadcast_idx'],
      ['bridge_id', 'events_bridge_idx'],
      ['message_id', 'events_message_idx'],
    ] as const) {
      const page = plan(`SELECT * FROM events WHERE ${column} = ? ORDER BY created_at DESC, id DESC LIMIT 25`)
      expect(page, column).toContain(`USING INDEX ${index}`)
      const total = plan(`SELECT COUNT(*) FROM events WHERE ${column} = ?`)
      expect(total, column).toContain(index)
    }
  })
})
