import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { createIpRotation } from '../../src/delivery/ip-rotation'
import { createDeliveryEngine } from '../../src/delivery/scheduler'
import { createSignerPool } from '../../src/delivery/signer-pool'
import { createTransport } from '../../src/delivery/transport'
import { createResolver } from '../../src/lib/dns'
import { parseScheduledAt } from '../../src/modules/messages/schedule'
import { testApp } from '../support/app'
import { startDnsServer, type DnsServer } from '../support/dns-server'
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink'

/**
 * Scheduled sends natively (issue 19), through the real engine and a recording SMTP sink on
 * a fixed clock: a scheduled message waits as `scheduled` and goes out when the clock reaches
 * its time; it can be moved or cancelled until then.
 */
let sink: SmtpSink
let zone: DnsServer
const signer = createSignerPool({ size: 1 })
const NOW = Date.parse('2026-03-01T12:00:30Z')
const MIN = 60_000

beforeAll(async () => {
  sink = await startSmtpSink({ host: '127.0.0.1' })
  zone = await startDnsServer({
    zones: { 'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] }, 'mx.example.net': { A: ['127.0.0.1'] } },
  })
})
afterAll(async () => {
  await sink.close()
  await zone.close()
  await signer.close()
})

function setup() {
  sink.reset()
  const t = testApp({ mx_port: sink.port, dns_servers: [zone.server], allow_unverified_domains: true })
  const admin = t.makeKey()
  const transport = createTransport({
    resolver: createResolver(t.deps.config.dns_servers),
    mxPort: sink.port,
    totalConcurrency: 4,
    destinationConcurrency: 4,
    log: t.deps.log,
    ehlo: t.deps.config.hostname,
  })
  const engine = createDeliveryEngine(t.deps, { transport, signer, rotation: createIpRotation(t.deps), commits: t.deps.commits, random: () => 0.5 })
  const send = async (body: Record<string, unknown>, path = '/v1/emails') => {
    const r = await t.call('POST', path, { key: admin.key, body: { from: 'ada@example.com', subject: 'Hello', text: 'Hi', to: ['bob@example.net'], ...body } })
    expect(r.status, JSON.stringify(r.body)).toBe(202)
    return r.body.data as { id: string; status: string; scheduled_at?: string }
  }
  const states = (id: string) =>
    (t.deps.db.$client.query('SELECT state FROM message_recipients WHERE message_id = ?').all(id) as Array<{ state: string }>).map((r) => r.state)
  const kinds = (id: string) =>
    (t.deps.db.$client.query('SELECT kind FROM events WHERE message_id = ? ORDER BY id').all(id) as Array<{ kind: string }>).map((e) => e.kind)
  const subjects = () => sink.messages.map((m) => /^Subject: (.*)$/m.exec(m.raw.toString())![1]!.trim())
  return { ...t, admin, engine, send, states, kinds, subjects, close: () => transport.close() }
}

describe('parseScheduledAt', () => {
  const cases: Array<[string, string | null]> = [
    ['2026-03-01T13:00:00Z', '2026-03-01T13:00:00.000Z'],
    ['2026-03-01T15:00:00+02:00', '2026-03-01T13:00:00.000Z'],
    ['in 1 min', '2026-03-01T12:01:30.000Z'],
    ['in 2 hours', '2026-03-01T14:00:30.000Z'],
    ['in an hour', '2026-03-01T13:00:30.000Z'],
    ['in 3 days', '2026-03-04T12:00:30.000Z'],
    ['tomorrow at 9am', '2026-03-02T09:00:00.000Z'],
    ['Tomorrow 9:30 pm UTC', '2026-03-02T21:30:00.000Z'],
    ['today at 18:00', '2026-03-01T18:00:00.000Z'],
    // 2026-03-01 is a Sunday.
    ['friday at 3pm', '2026-03-06T15:00:00.000Z'],
    ['next sunday at noon', '2026-03-08T12:00:00.000Z'],
    ['tomorrow', '2026-03-02T12:00:30.000Z'],
    // Now or past: send at once.
    ['2026-03-01T12:00:00Z', null],
    ['now', null],
    ['today at 9am', null],
  ]
  for (const [text, want] of cases) {
    test(`"${text}"`, () => {
      const at = parseScheduledAt(text, NOW)
      expect(at === null ? null : new Date(at).toISOString()).toBe(want)
    })
  }
  test('refused: no offset, unknown words or units, a time zone name, past the 30 days', () => {
    for (const text of ['2026-03-01T13:00:00', 'soon', 'in 5 fortnights', 'friday at 3pm ET', 'tomorrow at 25:00', 'in 31 days', '2026-05-01T00:00:00Z']) {
      expect(() => parseScheduledAt(text, NOW), text).toThrow()
    }
  })
})

describe('scheduled sends', () => {
  test('a scheduled message waits as scheduled and goes out when its time comes, in time order', async () => {
    const t = setup()
    const later = await t.send({ subject: 'Later', scheduled_at: 'in 20 min' })
    const sooner = await t.send({ subject: 'Sooner', scheduled_at: new Date(NOW + 10 * MIN).toISOString() })
    expect(later).toMatchObject({ status: 'scheduled', scheduled_at: '2026-03-01T12:20:30.000Z' })
    expect(t.states(later.id)).toEqual(['scheduled'])
    const got = await t.call('GET', `/api/v2/messages/${later.id}`, { key: t.admin.key })
    expect(got.body.data).toMatchObject({ status: 'scheduled', scheduled_at: '2026-03-01T12:20:30.000Z' })
    expect(t.kinds(later.id)).toEqual(['message.scheduled'])

    await t.engine.drain()
    expect(sink.messages).toHaveLength(0)
    t.deps.clock.advance(10 * MIN)
    await t.engine.drain()
    expect(t.subjects()).toEqual(['Sooner'])
    expect(t.states(sooner.id)).toEqual(['sent'])
    expect(t.states(later.id)).toEqual(['scheduled'])
    t.deps.clock.advance(10 * MIN)
    await t.engine.drain()
    expect(t.subjects()).toEqual(['Sooner', 'Later'])
    expect(t.kinds(later.id)).toEqual(['message.scheduled', 'message.sent'])
    await t.close()
  })

  test('/v1/send and the template send take scheduled_at; a time now or past sends at once', async () => {
    const t = setup()
    const simple = await t.call('POST', '/v1/send', {
      key: t.admin.key,
      body: { from: 'ada@example.com', to: 'bob@example.net', subject: 'S', text: 'x', scheduled_at: 'tomorrow at 9am' },
    })
    expect(simple.body.data).toMatchObject({ status: 'scheduled', scheduled_at: '2026-03-02T09:00:00.000Z' })
    const tpl = await t.call('POST', '/api/v2/templates', {
      key: t.admin.key,
      body: { name: 'welcome', subject: 'Welcome', html: '<p>Hi {{name}}</p>', from: 'ada@example.com' },
    })
    expect(tpl.status, JSON.stringify(tpl.body)).toBe(201)
    const viaTemplate = await t.call('POST', `/api/v2/dynamicTemplate/${tpl.body.data.id}`, {
      key: t.admin.key,
      body: { to: 'bob@example.net', variables: { name: 'Bob' }, scheduled_at: 'in 5 min' },
    })
    expect(viaTemplate.status, JSON.stringify(viaTemplate.body)).toBe(202)
    expect(viaTemplate.body.data).toMatchObject({ status: 'scheduled', scheduled_at: '2026-03-01T12:05:30.000Z' })
    const past = await t.send({ scheduled_at: '2026-01-01T00:00:00Z' })
    expect(past.status).toBe('queued')
    expect(past.scheduled_at).toBeUndefined()
    const bad = await t.call('POST', '/v1/emails', {
      key: t.admin.key,
      body: { from: 'ada@example.com', to: ['bob@example.net'], subject: 'x', text: 'x', scheduled_at: 'whenever' },
    })
    expect(bad.status).toBe(422)
    expect(bad.body.error.details.scheduled_at).toBeDefined()
    await t.close()
  })

  test('PATCH /api/v2/messages/{id} moves a scheduled send; POST .../cancel calls it off', async () => {
    const t = setup()
    const moved = await t.send({ subject: 'Moved', scheduled_at: 'in 5 min' })
    const cancelled = await t.send({ subject: 'Cancelled', scheduled_at: 'in 5 min' })
    const patch = await t.call('PATCH', `/api/v2/messages/${moved.id}`, { key: t.admin.key, body: { scheduled_at: 'in 30 min' } })
    expect(patch.status, JSON.stringify(patch.body)).toBe(200)
    expect(patch.body.data).toMatchObject({ status: 'scheduled', scheduled_at: '2026-03-01T12:30:30.000Z' })
    const cancel = await t.call('POST', `/api/v2/messages/${cancelled.id}/cancel`, { key: t.admin.key })
    expect(cancel.status).toBe(200)
    expect(cancel.body.data.status).toBe('canceled')
    expect(t.kinds(cancelled.id)).toEqual(['message.scheduled', 'message.canceled'])

    t.deps.clock.advance(10 * MIN)
    await t.engine.drain()
    expect(sink.messages).toHaveLength(0)
    t.deps.clock.advance(20 * MIN)
    await t.engine.drain()
    expect(t.subjects()).toEqual(['Moved'])
    expect(t.states(cancelled.id)).toEqual(['canceled'])

    // Once sent or cancelled there is nothing left to move or cancel: 409; an unknown id: 404.
    expect((await t.call('POST', `/api/v2/messages/${moved.id}/cancel`, { key: t.admin.key })).status).toBe(409)
    expect((await t.call('PATCH', `/api/v2/messages/${cancelled.id}`, { key: t.admin.key, body: { scheduled_at: 'in 1 min' } })).status).toBe(409)
    const now = await t.send({ subject: 'Now' })
    expect((await t.call('POST', `/api/v2/messages/${now.id}/cancel`, { key: t.admin.key })).body.error.code).toBe('conflict')
    expect((await t.call('POST', '/api/v2/messages/0190c1d2-0000-7000-8000-000000000000/cancel', { key: t.admin.key })).status).toBe(404)
    await t.close()
  })

  test('a reader key may not cancel or reschedule', async () => {
    const t = setup()
    const m = await t.send({ scheduled_at: 'in 5 min' })
    const reader = t.makeKey({ permissions: ['transactional.read'] })
    expect((await t.call('POST', `/api/v2/messages/${m.id}/cancel`, { key: reader.key })).status).toBe(403)
    expect((await t.call('PATCH', `/api/v2/messages/${m.id}`, { key: reader.key, body: { scheduled_at: 'in 1 min' } })).status).toBe(403)
    expect(t.states(m.id)).toEqual(['scheduled'])
    await t.close()
  })
})

describe('what goes out', () => {
  test('an HTML-only message gets a generated text part; an attachment without a type gets it from its name', async () => {
    const t = setup()
    await t.send({
      text: undefined,
      html: '<h1>Welcome</h1><p>Read the <a href="https://example.org/guide">guide</a>.</p>',
      attachments: [
        { filename: 'invoice.pdf', content: Buffer.from('%PDF-1.4').toString('base64') },
        { filename: 'data.bin', content: 'AAEC' },
      ],
    })
    await t.engine.drain()
    const parsed = await simpleParser(sink.messages[0]!.raw)
    expect(parsed.html).toContain('<h1>Welcome</h1>')
    expect(sink.messages[0]!.raw.toString()).toMatch(/Content-Type: text\/plain; charset=utf-8/)
    expect(parsed.text).toContain('WELCOME')
    expect(parsed.text).toContain('guide [https://example.org/guide]')
    expect(parsed.attachments.map((a) => [a.filename, a.contentType])).toEqual([
      ['invoice.pdf', 'application/pdf'],
      ['data.bin', 'application/octet-stream'],
    ])
    await t.close()
  })
})

describe('GET /api/v2/messages: tag, time and cursor', () => {
  test('filters by tag, status and creation time; walks by cursor both ways', async () => {
    const t = setup()
    const sent: string[] = []
    for (let i = 0; i < 5; i++) {
      sent.push((await t.send({ subject: `M${i}`, tags: i % 2 ? ['odd'] : ['even'] })).id)
      t.deps.clock.advance(MIN)
    }
    const ids = sent as [string, string, string, string, string]
    const scheduled = (await t.send({ subject: 'S', tags: ['odd'], scheduled_at: 'in 1 hour' })).id
    const list = async (query: string) => {
      const r = await t.call('GET', `/api/v2/messages?${query}`, { key: t.admin.key })
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      return r.body as { data: Array<{ id: string }>; meta: Record<string, unknown> }
    }
    expect((await list('tag=odd')).data.map((m) => m.id)).toEqual([scheduled, ids[3], ids[1]])
    expect((await list('tag=odd&status=scheduled')).data.map((m) => m.id)).toEqual([scheduled])
    expect((await list('created_after=2026-03-01T12:01:30Z&created_before=2026-03-01T12:03:30Z')).data.map((m) => m.id)).toEqual([ids[2], ids[1]])
    // Cursor pages, newest first.
    const first = await list('per_page=2&after=' + scheduled)
    expect(first.data.map((m) => m.id)).toEqual([ids[4], ids[3]])
    expect(first.meta).toEqual({ per_page: 2, has_more: true, after: ids[3], before: ids[4] })
    const second = await list(`per_page=2&after=${first.meta.after}`)
    expect(second.data.map((m) => m.id)).toEqual([ids[2], ids[1]])
    const last = await list(`per_page=2&after=${second.meta.after}`)
    expect(last.data.map((m) => m.id)).toEqual([ids[0]])
    expect(last.meta.has_more).toBe(false)
    const back = await list(`per_page=2&before=${second.meta.before}`)
    expect(back.data.map((m) => m.id)).toEqual([ids[4], ids[3]])
    expect(back.meta.has_more).toBe(true)
    // Pages still work, with their totals.
    expect((await list('per_page=2&page=2')).meta).toEqual({ current_page: 2, per_page: 2, total: 6, last_page: 3 })
    expect((await t.call('GET', '/api/v2/messages?after=0190c1d2-0000-7000-8000-000000000000', { key: t.admin.key })).status).toBe(404)
    expect((await t.call('GET', '/api/v2/messages?created_after=yesterday', { key: t.admin.key })).status).toBe(422)
    await t.close()
  })
})
