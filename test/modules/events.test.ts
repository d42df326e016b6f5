import { describe, expect, test } from 'bun:test'
import { drainStats } from '../../src/modules/stats/rollup'
import { emit, listEvents } from '../../src/modules/events/service'
import { testApp } from '../support/app'
import { runScenarios } from '../support/scenarios'

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

  test('events written by the API itself are listed (contact.subscribed on a new contact)', async () => {
    const { t, admin } = seeded()
    const list = (await t.call('POST', '/api/v2/lists', { key: admin.key, body: { name: 'News' } })).body.data.id
    const made = await t.call('POST', '/api/v2/contacts', { key: admin.key, body: { list_id: list, email: 'New@Example.com' } })
    expect(made.status).toBe(201)
    const r = await t.call('GET', `/api/v2/events?kind=contact.subscribed&list_id=${list}`, { key: admin.key })
    expect(r.body.data).toHaveLength(1)
    expect(r.body.data[0]).toMatchObject({ kind: 'contact.subscribed', contact_id: made.body.data.id, list_id: list, recipient: 'new@example.com' })
  })
})

const shared = seeded()
runScenarios(
  'GET /api/v2/events refuses unknown kinds, bad times and an empty range; needs statistics.read',
  [
    {
      name: 'a typo in a kind',
      method: 'GET',
      url: '/api/v2/events?kind=message.sent,message.snet',
      status: 422,
      after: (_, r) => expect(r.body.error.details.kind[0]).toContain('message.snet'),
    },
    { name: 'a time that is not ISO 8601', method: 'GET', url: '/api/v2/events?from=yesterday', status: 422 },
    { name: 'an empty range', method: 'GET', url: '/api/v2/events?from=2026-03-01T12:00:00Z&to=2026-03-01T12:00:00Z', status: 422 },
    { name: 'per_page over 100', method: 'GET', url: '/api/v2/events?per_page=101', status: 422 },
    { name: 'no key', method: 'GET', url: '/api/v2/events', key: null, status: 401 },
    { name: 'another permission', method: 'GET', url: '/api/v2/events', key: { permissions: ['contacts.read'] }, status: 403 },
    { name: 'statistics.read', method: 'GET', url: '/api/v2/events', key: { permissions: ['statistics.read'] }, status: 200 },
  ],
  { app: shared.t, admin: shared.admin.key },
)

describe('event filters are index lookups', () => {
  test('each subject filter, and its page total, uses its own index', () => {
    const { deps } = testApp()
    // Raw SQL on purpose: query plans are about the indexes themselves.
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

describe('page totals over a large log come from the statistics rollups', () => {
  const HOUR = 3_600_000
  const DAY = 24 * HOUR
  /** Events over four days at uneven times (some in the tail after the rollup cursor, some of them back in time), and the direct count to compare with. */
  function log() {
    const { deps } = testApp()
    let seed = 7
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    const kinds = ['message.sent', 'message.bounced', 'message.opened', 'contact.subscribed']
    const write = (n: number) => {
      for (let i = 0; i < n; i++) {
        const kind = kinds[Math.floor(random() * kinds.length)]!
        const list = kind === 'contact.subscribed' || random() < 0.2 ? 1 + Math.floor(random() * 2) : null
        emit(deps.db, T0 + Math.floor(random() * 4 * DAY), {
          kind,
          list_id: list,
          broadcast_id: random() < 0.1 ? 5 : null,
          // A first open is also a unique-open counter of the rollup, which is not an event.
          data: kind === 'message.opened' ? { first: true } : {},
        })
      }
    }
    write(1500)
    drainStats({ db: deps.db, clock: deps.clock }, 400)
    write(300)
    // Raw SQL on purpose: the rollup is checked against a count of the stored rows, not against the code under test.
    const direct = (where: string, params: Array<string | number>) =>
      (deps.db.$client.query(`SELECT count(*) AS n FROM events WHERE ${where || 'true'}`).get(...params) as { n: number }).n
    return { deps, direct }
  }

  test('the total equals a direct count for kinds, lists, broadcasts and ranges aligned to days, hours or neither', () => {
    const { deps, direct } = log()
    const iso = (ms: number) => new Date(ms).toISOString()
    const bounds: Array<[number | undefined, number | undefined]> = [
      [undefined, undefined],
      [T0 + DAY, undefined],
      [undefined, T0 + 2 * DAY + 5 * HOUR],
      [T0 - 12 * HOUR, T0 + 2 * DAY], // whole days only (T0 is noon: days start at T0 + 12 h)
      [T0 + 12 * HOUR, T0 + 3 * DAY + 12 * HOUR],
      [T0 + 3 * HOUR, T0 + 2 * DAY + 7 * HOUR],
      [T0 + 3 * HOUR + 1234, T0 + 2 * DAY + 7 * HOUR + 98_765],
      [T0 + 30 * 60_000, T0 + 70 * 60_000], // less than an hour, across an hour's start
      [T0 + 5 * HOUR + 1, T0 + 5 * HOUR + 999], // inside one hour
      [T0 + 3 * DAY + 40 * 60_000, T0 + 4 * DAY + 2 * HOUR + 1],
    ]
    let checked = 0
    for (const [from, to] of bounds)
      for (const kind of [undefined, 'message.sent', 'message.bounced,contact.subscribed', 'message.opened'])
        for (const subject of [{}, { list_id: 1 }, { broadcast_id: 5 }, { list_id: 2, broadcast_id: 5 }] as Array<Record<string, number>>) {
          const where: string[] = []
          const params: Array<string | number> = []
          if (kind) (where.push(`kind IN (${kind.split(',').map(() => '?')})`), params.push(...kind.split(',')))
          for (const [column, value] of Object.entries(subject)) (where.push(`${column} = ?`), params.push(value))
          if (from !== undefined) (where.push('created_at >= ?'), params.push(from))
          if (to !== undefined) (where.push('created_at < ?'), params.push(to))
          const filter = { kind, ...subject, from: from === undefined ? undefined : iso(from), to: to === undefined ? undefined : iso(to) }
          expect(listEvents(deps, filter).meta.total, JSON.stringify(filter)).toBe(direct(where.join(' AND '), params))
          checked++
        }
    expect(checked).toBe(160)
  })

  test('the counters answer, not a scan: the events not yet rolled up are counted by id range', () => {
    const { deps, direct } = log()
    const total = direct('', [])
    expect(listEvents(deps, {}).meta.total).toBe(total)
    // A counter changed behind the job's back shows in the total, so the total was read from the counters.
    deps.db.$client.run(
      `UPDATE stats_hourly SET count = count + 1000 WHERE dim = 'all.day' AND kind = 'message.sent' AND hour = (SELECT min(hour) FROM stats_hourly WHERE dim = 'all.day')`,
    )
    expect(listEvents(deps, {}).meta.total).toBe(total + 1000)
    expect(listEvents(deps, { kind: 'message.bounced' }).meta.total).toBe(direct(`kind = 'message.bounced'`, []))
    const plan = (
      deps.db.$client.query(`EXPLAIN QUERY PLAN SELECT count(*) FROM events NOT INDEXED WHERE kind IN (?) AND id > ?`).all('message.sent', 1) as Array<{
        detail: string
      }>
    )
      .map((r) => r.detail)
      .join(' | ')
    expect(plan).toContain('USING INTEGER PRIMARY KEY (rowid>?)')

    // A rollup far behind (here: an event id 60,000 past the cursor) is not trusted for the total: counted directly, the changed counter no longer shows.
    deps.db.$client.run(`INSERT INTO events (id, kind, created_at, data) VALUES (100000, 'message.sent', ?, '{}')`, [T0 + DAY])
    expect(listEvents(deps, {}).meta.total).toBe(total + 1)
    const from = new Date(T0 + 5 * HOUR + 17).toISOString()
    expect(listEvents(deps, { kind: 'message.sent', from }).meta.total).toBe(direct(`kind = 'message.sent' AND created_at >= ?`, [T0 + 5 * HOUR + 17]))
  })

  test('a bridge, message or recipient filter is counted directly', () => {
    const { deps, direct } = log()
    deps.db.$client.run(`UPDATE stats_hourly SET count = count + 1000 WHERE dim = 'bridge'`)
    emit(deps.db, T0, { kind: 'message.sent', message_id: 'm9', recipient: 'x@example.com', bridge_id: 4, data: {} })
    expect(listEvents(deps, { bridge_id: 4 }).meta.total).toBe(1)
    expect(listEvents(deps, { message_id: 'm9', kind: 'message.sent' }).meta.total).toBe(1)
    expect(listEvents(deps, { recipient: 'X@example.com' }).meta.total).toBe(direct(`recipient = 'x@example.com'`, []))
  })
})
