import { unpackMessage } from '../../src/lib/stored-message'
import { describe, expect, test } from 'bun:test'
import { testApp } from '../support/app'

function setup() {
  const t = testApp({ allow_unverified_domains: true })
  const admin = t.makeKey()
  const send = async (body: Record<string, unknown>) => {
    const r = await t.call('POST', '/v1/emails', { key: admin.key, body: { from: 'Ada <ada@example.com>', text: 'Hi', ...body } })
    expect(r.status).toBe(202)
    t.deps.clock.advance(1000)
    return r.body.data.id as string
  }
  return { ...t, admin, send }
}

describe('GET /api/v2/messages', () => {
  test('newest first, each filter narrows, filters combine, pages carry meta', async () => {
    const t = setup()
    const first = await t.send({ to: ['Bob@Example.net'], subject: 'Invoice 100%' })
    const second = await t.send({ to: ['carol@example.net'], cc: ['bob@example.net'], subject: 'Welcome aboard' })
    const third = await t.send({ to: ['dave@example.net'], subject: 'invoice 101' })
    t.deps.db.$client.run("UPDATE message_recipients SET state = 'bounced' WHERE message_id = ?", [third])
    t.deps.db.$client.run('UPDATE messages SET bridge_id = 7 WHERE id = ?', [second])
    const ids = async (query: string) => {
      const r = await t.call('GET', `/api/v2/messages${query}`, { key: t.admin.key })
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      return r.body.data.map((m: { id: string }) => m.id)
    }

    expect(await ids('')).toEqual([third, second, first])
    expect(await ids('?recipient=BOB@example.net')).toEqual([second, first])
    expect(await ids('?subject=INVOICE')).toEqual([third, first])
    // % and _ are literal text, not wildcards.
    expect(await ids('?subject=100%25')).toEqual([first])
    expect(await ids('?subject=1_0')).toEqual([])
    expect(await ids(`?id=${second}`)).toEqual([second])
    expect(await ids('?bridge_id=7')).toEqual([second])
    expect(await ids('?status=bounced')).toEqual([third])
    expect(await ids('?status=queued&recipient=bob@example.net&subject=welcome')).toEqual([second])

    const page = await t.call('GET', '/api/v2/messages?per_page=2&page=2', { key: t.admin.key })
    expect(page.body.meta).toEqual({ current_page: 2, per_page: 2, total: 3, last_page: 2 })
    expect(page.body.data).toEqual([
      {
        id: first,
        source: 'api',
        from: 'ada@example.com',
        subject: 'Invoice 100%',
        bridge_id: null,
        size: expect.any(Number),
        status: 'queued',
        recipients: [{ address: 'bob@example.net', state: 'queued' }],
        created_at: '2026-03-01T12:00:30.000Z',
      },
    ])
    const bad = await t.call('GET', '/api/v2/messages?status=lost', { key: t.admin.key })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.error.details)).toEqual(['status'])
  })

  test('needs transactional.read', async () => {
    const t = setup()
    const other = t.makeKey({ permissions: ['contacts.read'] })
    expect((await t.call('GET', '/api/v2/messages')).status).toBe(401)
    expect((await t.call('GET', '/api/v2/messages', { key: other.key })).status).toBe(403)
  })

  test('the page and its total use indexes on a large table (EXPLAIN QUERY PLAN)', () => {
    const t = setup()
    const db = t.deps.db.$client
    // 20,000 messages so that the planner's choices are those of a real table (ANALYZE below).
    db.transaction(() => {
      const m = db.prepare(
        "INSERT INTO messages (id, source, mail_from, from_address, subject, message_id_header, raw, size, created_at, bridge_id) VALUES (?, 'api', 'a@example.com', 'a@example.com', ?, ?, x'00', 1, ?, ?)",
      )
      const r = db.prepare(
        "INSERT INTO message_recipients (message_id, address, domain, kind, state, created_at, updated_at) VALUES (?, ?, 'example.net', 'to', 'sent', 0, 0)",
      )
      for (let i = 0; i < 20_000; i++) {
        const id = `m${String(i).padStart(6, '0')}`
        m.run(id, `subject ${i}`, id, i, i % 50 === 0 ? i % 7 : null)
        r.run(id, `user${i}@example.net`)
      }
    })()
    db.run('ANALYZE')
    const plan = (sql: string, ...params: Array<string | number>) =>
      (db.query(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join(' | ')
    const page = (where: string) => `SELECT id FROM messages WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT 25`
    const byRecipient = "id IN (SELECT message_id FROM message_recipients WHERE lower(address) = lower('user5@example.net'))"
    expect(plan(page(byRecipient))).toContain('message_recipients_address_idx')
    expect(plan(`SELECT count(*) FROM (SELECT 1 FROM messages WHERE ${byRecipient} LIMIT 10000)`)).toContain('message_recipients_address_idx')
    expect(plan(page('bridge_id = 3'))).toContain('messages_bridge_idx')
    expect(plan(page("id = 'm000005'"))).toMatch(/sqlite_autoindex_messages_1|PRIMARY KEY/)
    // A subject: walk the time index newest first and stop after one page; only ties of created_at are sorted (by id).
    expect(plan(page("subject LIKE '%5%'"))).toContain('messages_created_idx')
    expect(plan(page("subject LIKE '%5%'"))).not.toContain('TEMP B-TREE FOR ORDER BY')
  })
})

describe('GET /api/v2/messages/:id/raw', () => {
  test('the stored RFC 5322 bytes as a message/rfc822 attachment', async () => {
    const t = setup()
    const id = await t.send({ to: ['bob@example.net'], subject: 'Raw please' })
    const r = await t.app.handle(new Request(`http://mailroom.test/api/v2/messages/${id}/raw`, { headers: { authorization: `Bearer ${t.admin.key}` } }))
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('message/rfc822')
    expect(r.headers.get('content-disposition')).toBe(`attachment; filename="${id}.eml"`)
    const stored = unpackMessage((t.deps.db.$client.query('SELECT raw FROM messages WHERE id = ?').get(id) as { raw: Uint8Array }).raw)
    expect(Buffer.from(await r.arrayBuffer()).equals(stored)).toBe(true)
    expect(stored.toString()).toContain('Subject: Raw please')
    expect((await t.call('GET', '/api/v2/messages/nope/raw', { key: t.admin.key })).status).toBe(404)
  })
})

describe('GET /api/v2/messages/:id/headers', () => {
  test('the header fields in order, names as written, folded values unfolded and encoded words decoded', async () => {
    const t = setup()
    // A long non-ASCII subject: the MIME builder encodes it (RFC 2047) and folds it over several lines.
    const subject = `Grüße aus Köln, ${'eine lange Betreffzeile '.repeat(4)}`.trim()
    const id = await t.send({ to: ['bob@example.net'], subject, headers: { 'X-Campaign': 'spring' } })
    const stored = unpackMessage((t.deps.db.$client.query('SELECT raw FROM messages WHERE id = ?').get(id) as { raw: Uint8Array }).raw).toString()
    expect(stored).toContain('=?')
    const r = await t.call('GET', `/api/v2/messages/${id}/headers`, { key: t.admin.key })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    const headers = r.body.data as Array<{ name: string; value: string }>
    const names = headers.map((h) => h.name)
    expect(names).toContain('X-Campaign')
    expect(names.indexOf('From')).toBeGreaterThanOrEqual(0)
    expect(headers.find((h) => h.name === 'Subject')!.value).toBe(subject)
    expect(headers.find((h) => h.name === 'X-Campaign')!.value).toBe('spring')
    expect(headers.find((h) => h.name === 'From')!.value).toBe('Ada <ada@example.com>')
    expect(headers.every((h) => !/[\r\n]/.test(h.value))).toBe(true)
    expect((await t.call('GET', '/api/v2/messages/nope/headers', { key: t.admin.key })).status).toBe(404)
  })
})
