import { describe, expect, test } from 'bun:test'
import { drainStats } from '../../src/modules/stats/rollup'
import { emit } from '../../src/modules/events/service'
import { testApp } from '../support/app'
import { runScenarios } from '../support/scenarios'

/**
 * Two UTC days of events for two sending domains: one hour before midnight and one after,
 * so hour and day buckets differ. Domain a.example: 3 sent, 1 bounced, 1 complained on the
 * first day; domain b.example (unsigned): 1 sent, 1 failed on the second.
 */
function seeded() {
  const t = testApp()
  const admin = t.makeKey()
  const db = t.deps.db
  const c = db.$client
  c.run("INSERT INTO ip_pools (id, name, is_default, created_at, updated_at) VALUES (2, 'p', 0, 0, 0)")
  c.run(
    "INSERT INTO sending_domains (id, name, status, dkim_selector, dkim_private_key, dkim_public_key, return_path_host, created_at, updated_at) VALUES (1, 'a.example', 'verified', 'mr', '-', '-', 'rp.a.example', 0, 0)",
  )
  const message = c.prepare(
    "INSERT INTO messages (id, source, mail_from, from_address, subject, message_id_header, domain_id, pool_id, raw, size, created_at, bridge_id) VALUES (?, 'api', 'x@y', ?, 's', '<x>', ?, ?, X'00', 1, 0, ?)",
  )
  message.run('ma', 'news@a.example', 1, 2, 5)
  message.run('mb', 'hello@b.example', null, null, null)
  const day1 = Date.parse('2026-02-27T23:10:00Z')
  const day2 = Date.parse('2026-02-28T00:20:00Z')
  const ev = (at: number, kind: string, message_id: string | null, extra: Record<string, unknown> = {}) =>
    emit(db, at, { kind, message_id, recipient: 'r@example.net', ...extra, data: { source_ip: message_id === 'ma' ? '192.0.2.1' : '192.0.2.2' } })
  for (let i = 0; i < 3; i++) ev(day1, 'message.sent', 'ma')
  ev(day1, 'message.bounced', 'ma')
  ev(day1 + 60_000, 'message.complained', 'ma')
  ev(day2, 'message.sent', 'mb')
  ev(day2, 'message.failed', 'mb')
  emit(db, day2, { kind: 'contact.subscribed', contact_id: 1, list_id: 3, data: {} })
  drainStats(t.deps)
  const get = (query: string, key = admin.key) => t.call('GET', `/api/v2/stats?${query}`, { key })
  return { t, admin, get }
}

const RANGE = 'from=2026-02-27T00:00:00Z&to=2026-03-01T00:00:00Z'

describe('GET /api/v2/stats', () => {
  test('day buckets (UTC) with counts and rates', async () => {
    const { get } = seeded()
    const r = await get(`${RANGE}&bucket=day&kinds=message.sent,message.bounced,message.failed,message.complained,message.opened`)
    expect(r.status).toBe(200)
    const d = r.body.data
    expect(d).toMatchObject({ from: '2026-02-27T00:00:00.000Z', to: '2026-03-01T00:00:00.000Z', bucket: 'day', group_by: 'all' })
    expect(d.rows).toEqual([
      {
        bucket_start: '2026-02-27T00:00:00.000Z',
        group: null,
        counts: { 'message.sent': 3, 'message.bounced': 1, 'message.failed': 0, 'message.complained': 1, 'message.opened': 0 },
        rates: { delivery_rate: 0.75, bounce_rate: 0.25, complaint_rate: 0.3333, open_rate: 0, click_rate: 0, unsubscribe_rate: 0 },
      },
      {
        bucket_start: '2026-02-28T00:00:00.000Z',
        group: null,
        counts: { 'message.sent': 1, 'message.bounced': 0, 'message.failed': 1, 'message.complained': 0, 'message.opened': 0 },
        rates: { delivery_rate: 0.5, bounce_rate: 0, complaint_rate: 0, open_rate: 0, click_rate: 0, unsubscribe_rate: 0 },
      },
    ])
    expect(d.totals).toEqual([
      {
        group: null,
        counts: { 'message.sent': 4, 'message.bounced': 1, 'message.failed': 1, 'message.complained': 1, 'message.opened': 0 },
        rates: { delivery_rate: 0.6667, bounce_rate: 0.1667, complaint_rate: 0.25, open_rate: 0, click_rate: 0, unsubscribe_rate: 0 },
      },
    ])
  })

  test('hour buckets, and a range rounded out to whole buckets', async () => {
    const { get } = seeded()
    const r = await get('from=2026-02-27T23:30:00Z&to=2026-02-28T00:10:00Z&bucket=hour&kinds=message.sent,message.complained')
    expect(r.body.data.from).toBe('2026-02-27T23:00:00.000Z')
    expect(r.body.data.to).toBe('2026-02-28T01:00:00.000Z')
    expect(r.body.data.rows.map((row: any) => [row.bucket_start, row.counts])).toEqual([
      ['2026-02-27T23:00:00.000Z', { 'message.sent': 3, 'message.complained': 1 }],
      ['2026-02-28T00:00:00.000Z', { 'message.sent': 1, 'message.complained': 0 }],
    ])
  })

  test('every group_by splits the counts by its value', async () => {
    const { get } = seeded()
    const groups = async (by: string) =>
      Object.fromEntries((await get(`${RANGE}&group_by=${by}&kinds=message.sent,contact.subscribed`)).body.data.totals.map((x: any) => [x.group, x.counts]))
    expect(await groups('domain')).toEqual({
      'a.example': { 'message.sent': 3, 'contact.subscribed': 0 },
      'b.example': { 'message.sent': 1, 'contact.subscribed': 0 },
    })
    expect(await groups('ip')).toEqual({
      '192.0.2.1': { 'message.sent': 3, 'contact.subscribed': 0 },
      '192.0.2.2': { 'message.sent': 1, 'contact.subscribed': 0 },
    })
    expect(await groups('pool')).toEqual({ '2': { 'message.sent': 3, 'contact.subscribed': 0 } })
    expect(await groups('bridge')).toEqual({ '5': { 'message.sent': 3, 'contact.subscribed': 0 } })
    expect(await groups('list')).toEqual({ '3': { 'message.sent': 0, 'contact.subscribed': 1 } })
    expect(await groups('broadcast')).toEqual({})
    const byDomain = await get(`${RANGE}&group_by=domain&bucket=day&kinds=message.sent`)
    expect(byDomain.body.data.rows.map((r: any) => [r.bucket_start.slice(0, 10), r.group, r.counts['message.sent']])).toEqual([
      ['2026-02-27', 'a.example', 3],
      ['2026-02-28', 'b.example', 1],
    ])
  })

  test('rates are null without a denominator; all kinds are counted by default', async () => {
    const { get } = seeded()
    const r = await get(`${RANGE}&group_by=list`)
    const [only] = r.body.data.rows
    expect(only.rates).toEqual({ delivery_rate: null, bounce_rate: null, complaint_rate: null, open_rate: null, click_rate: null, unsubscribe_rate: null })
    expect(only.counts['contact.subscribed']).toBe(1)
    expect(Object.keys(only.counts)).toContain('message.clicked')
    expect(r.body.data.kinds).toEqual(Object.keys(only.counts))
  })

  test('the CSV export has the same rows', async () => {
    const { t, admin } = seeded()
    const res = await t.call('GET', `/api/v2/stats/export?${RANGE}&group_by=domain&kinds=message.sent,message.bounced`, { key: admin.key })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.body).toBe(
      [
        'bucket_start,group,message.sent,message.bounced,delivery_rate,bounce_rate,complaint_rate,open_rate,click_rate,unsubscribe_rate',
        '2026-02-27T00:00:00.000Z,a.example,3,1,0.75,0.25,0.3333,0,0,0',
        '2026-02-28T00:00:00.000Z,b.example,1,0,0.5,0,0,0,0,0',
        '',
      ].join('\r\n'),
    )
  })
})

const shared = seeded()
const other = { permissions: ['contacts.read'] }
runScenarios(
  'GET /api/v2/stats refuses bad ranges and unknown kinds; needs statistics.read',
  [
    { name: 'more than 31 days of hours', method: 'GET', url: '/api/v2/stats?from=2026-02-01T00:00:00Z&to=2026-03-05T00:00:00Z&bucket=hour', status: 422 },
    { name: 'the same range in days', method: 'GET', url: '/api/v2/stats?from=2026-02-01T00:00:00Z&to=2026-03-05T00:00:00Z&bucket=day', status: 200 },
    { name: 'a range that ends before it starts', method: 'GET', url: '/api/v2/stats?from=2026-03-01T00:00:00Z&to=2026-02-01T00:00:00Z', status: 422 },
    {
      name: 'an unknown kind',
      method: 'GET',
      url: '/api/v2/stats?kinds=message.sent,nope',
      status: 422,
      after: (_, r) => expect(r.body.error.details.kinds[0]).toContain('nope'),
    },
    { name: 'an unknown group_by', method: 'GET', url: '/api/v2/stats?group_by=country', status: 422 },
    { name: 'an unknown bucket', method: 'GET', url: '/api/v2/stats?bucket=week', status: 422 },
    { name: 'another permission', method: 'GET', url: `/api/v2/stats?${RANGE}`, key: other, status: 403 },
    { name: 'another permission, export', method: 'GET', url: `/api/v2/stats/export?${RANGE}`, key: other, status: 403 },
    { name: 'statistics.read', method: 'GET', url: `/api/v2/stats?${RANGE}`, key: { permissions: ['statistics.read'] }, status: 200 },
  ],
  { app: shared.t, admin: shared.admin.key },
)
