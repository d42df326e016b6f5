import { unpackMessage } from '../../src/lib/stored-message'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Resend } from 'resend'
import type { GetEmailResponseSuccess, ListEmail } from 'resend'
import { getMessage } from '../../src/modules/messages/service'
import { htmlToText } from '../../src/lib/html-text'
import { createTextPool } from '../../src/lib/html-text-pool'
import { testApp } from '../support/app'

/**
 * The official `resend` SDK, pointed at Mailroom by its base URL, over a real HTTP socket.
 */
const t = testApp({ allow_unverified_domains: true })
const admin = t.makeKey()
let base = ''

beforeAll(() => {
  t.app.listen({ hostname: '127.0.0.1', port: 0 })
  base = `http://127.0.0.1:${t.app.server!.port}/compat/resend`
})
afterAll(() => t.app.stop())

const client = (key = admin.key) => new Resend(key, { baseUrl: base })
const states = (id: string) => getMessage(t.deps, id).recipients.map((r) => `${r.kind}:${r.address}:${r.state}`)
// No service counts messages or recipients across the store: those counts (here and in the idempotency test) stay raw SQL.
const messageCount = () => (t.deps.db.$client.query('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n

/** Every key the SDK's GetEmailResponseSuccess declares, with its type (tags and topic_id are optional there). */
function expectEmailShape(e: GetEmailResponseSuccess) {
  expect(e.object).toBe('email')
  expect(typeof e.html === 'string' || e.html === null).toBe(true)
  expect(typeof e.text === 'string' || e.text === null).toBe(true)
  expect(Array.isArray(e.tags)).toBe(true)
  expectListShape(e)
}

/** Every key of the SDK's ListEmail, with its type. */
function expectListShape(e: ListEmail) {
  for (const k of ['id', 'from', 'created_at', 'subject', 'message_id', 'last_event'] as const) expect(typeof e[k]).toBe('string')
  for (const k of ['to', 'cc', 'bcc'] as const) expect(Array.isArray(e[k])).toBe(true)
  expect(e.reply_to === null || Array.isArray(e.reply_to)).toBe(true)
  expect(e.scheduled_at === null || typeof e.scheduled_at === 'string').toBe(true)
}

describe('resend SDK against /compat/resend', () => {
  test('emails.send queues the message and answers { id }', async () => {
    const { data, error } = await client().emails.send({
      from: 'Acme <onboarding@acme.example>',
      to: ['delivered@example.net'],
      cc: 'carol@example.net',
      bcc: ['dave@example.net'],
      replyTo: 'support@acme.example',
      subject: 'Hello World',
      html: '<strong>It works!</strong>',
      text: 'It works!',
      headers: { 'X-Entity-Ref-ID': '123' },
      tags: [{ name: 'category', value: 'confirm_email' }],
      attachments: [{ filename: 'note.txt', content: Buffer.from('hello') }],
    })
    expect(error).toBeNull()
    expect(data).toEqual({ id: expect.any(String) })
    expect(states(data!.id)).toEqual(['to:delivered@example.net:queued', 'cc:carol@example.net:queued', 'bcc:dave@example.net:queued'])
  })

  test("emails.get returns Resend's shape", async () => {
    const sent = await client().emails.send({
      from: 'Acme <hi@acme.example>',
      to: 'bob@example.net',
      subject: 'Hi',
      html: '<p>Hi</p>',
      tags: [{ name: 'k', value: 'v' }],
    })
    const { data, error } = await client().emails.get(sent.data!.id)
    expect(error).toBeNull()
    expect(data).toMatchObject({
      object: 'email',
      id: sent.data!.id,
      to: ['bob@example.net'],
      from: 'Acme <hi@acme.example>',
      subject: 'Hi',
      html: '<p>Hi</p>',
      cc: [],
      reply_to: null,
      last_event: 'queued',
      scheduled_at: null,
      message_id: `<${sent.data!.id}@acme.example>`,
      tags: [{ name: 'k', value: 'v' }],
    })
    // An HTML-only send gets a generated text part, and get shows it.
    expect(data!.text).toBe('Hi')
    expectEmailShape(data!)
  })

  test('emails.get: display names kept in to and cc; the HTML as sent, not the tracked copy; last_event follows opens', async () => {
    const html = '<p>Read the <a href="https://example.org/guide">guide</a></p>'
    // A native send with tracking: emails.get reads any message.
    const native = await fetch(`${base.replace('/compat/resend', '')}/v1/emails`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        from: 'Acme Team <hi@acme.example>',
        to: ['Bob Example <bob@example.net>', 'plain@example.net'],
        cc: ['"Carol, C." <carol@example.net>'],
        subject: 'Tracked',
        html,
        track_opens: true,
        track_clicks: true,
      }),
    })
    expect(native.status).toBe(202)
    const id = ((await native.json()) as { data: { id: string } }).data.id
    const { data } = await client().emails.get(id)
    expect(data).toMatchObject({
      from: 'Acme Team <hi@acme.example>',
      to: ['Bob Example <bob@example.net>', 'plain@example.net'],
      cc: ['"Carol, C." <carol@example.net>'],
      html,
      last_event: 'queued',
    })
    // The stored message is the tracked one: follow its open pixel.
    const raw = unpackMessage((t.deps.db.$client.query('SELECT raw FROM messages WHERE id = ?').get(id) as { raw: Uint8Array }).raw)
    const pixel = /<img[^>]+src=3D"([^"]+)"|<img[^>]+src="([^"]+)"/.exec(Buffer.from(raw).toString().replace(/=\r\n/g, ''))
    expect(pixel).not.toBeNull()
    const url = new URL((pixel![1] ?? pixel![2]!).replace(/=3D/g, '='))
    const opened = await fetch(`${base.replace('/compat/resend', '')}${url.pathname}${url.search}`)
    expect(opened.status).toBe(200)
    expect((await client().emails.get(id)).data!.last_event).toBe('opened')
  })

  test('scheduledAt: emails.send schedules, emails.update moves, emails.cancel calls off', async () => {
    const sent = await client().emails.send({ from: 'hi@acme.example', to: 'later@example.net', subject: 'Later', text: 'x', scheduledAt: 'in 1 hour' })
    expect(sent.error).toBeNull()
    const id = sent.data!.id
    const got = await client().emails.get(id)
    expect(got.data).toMatchObject({ scheduled_at: '2026-03-01T13:00:30.000Z', last_event: 'scheduled' })
    expect(states(id)).toEqual(['to:later@example.net:scheduled'])
    const updated = await client().emails.update({ id, scheduledAt: '2026-03-02T08:00:00Z' })
    expect(updated).toMatchObject({ data: { object: 'email', id }, error: null })
    expect((await client().emails.get(id)).data!.scheduled_at).toBe('2026-03-02T08:00:00.000Z')
    const cancelled = await client().emails.cancel(id)
    expect(cancelled).toMatchObject({ data: { object: 'email', id }, error: null })
    expect((await client().emails.get(id)).data!.last_event).toBe('canceled')
    expect(states(id)).toEqual(['to:later@example.net:canceled'])
    const again = await client().emails.cancel(id)
    expect(again.error).toMatchObject({ statusCode: 409, name: 'validation_error' })
    const bad = await client().emails.update({ id, scheduledAt: 'someday' })
    expect(bad.error).toMatchObject({ statusCode: 422, name: 'validation_error' })
    const unknown = await client().emails.cancel('0190c1d2-0000-7000-8000-000000000000')
    expect(unknown.error).toMatchObject({ statusCode: 404, name: 'not_found' })
  })

  test('emails.list: newest first, cursor pages with limit/after/before and has_more', async () => {
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      t.deps.clock.advance(1000)
      ids.push((await client().emails.send({ from: 'hi@acme.example', to: `list${i}@example.net`, subject: `L${i}`, text: 'x' })).data!.id)
    }
    const sent = ids as [string, string, string]
    const first = await client().emails.list({ limit: 2 })
    expect(first.error).toBeNull()
    expect(first.data!.object).toBe('list')
    expect(first.data!.has_more).toBe(true)
    expect(first.data!.data.map((e) => e.id)).toEqual([sent[2], sent[1]])
    first.data!.data.forEach(expectListShape)
    expect(first.data!.data[0]).toMatchObject({ to: ['list2@example.net'], subject: 'L2', last_event: 'queued', scheduled_at: null })
    const next = await client().emails.list({ limit: 2, after: first.data!.data[1]!.id })
    expect(next.data!.data[0]!.id).toBe(sent[0])
    const prev = await client().emails.list({ limit: 1, before: sent[1]! })
    expect(prev.data).toMatchObject({ has_more: false, data: [{ id: sent[2] }] })
    const tooMany = await client().emails.list({ limit: 101 })
    expect(tooMany.error).toMatchObject({ statusCode: 422, name: 'validation_error' })
  })

  test('batch.send permissive: the valid emails are sent, the others listed by index', async () => {
    const before = messageCount()
    const { data, error } = await client().batch.send(
      [
        { from: 'hi@acme.example', to: ['p1@example.net'], subject: 'One', text: '1' },
        { from: 'hi@acme.example', to: ['not-an-address'], subject: 'Two', text: '2' },
        { from: 'hi@acme.example', to: ['p3@example.net'], subject: 'Three', text: '3', scheduledAt: 'in 5 min' },
        { from: 'hi@acme.example', to: ['p4@example.net'], subject: 'Four', text: '4', scheduledAt: 'never' },
      ],
      { batchValidation: 'permissive' },
    )
    expect(error).toBeNull()
    expect(data!.data).toHaveLength(2)
    expect(data!.errors.map((e) => e.index)).toEqual([1, 3])
    expect(data!.errors[0]!.message).toContain('to.0')
    expect(data!.errors[1]!.message).toContain('scheduled_at')
    expect(states(data!.data[0]!.id)).toEqual(['to:p1@example.net:queued'])
    expect(states(data!.data[1]!.id)).toEqual(['to:p3@example.net:scheduled'])
    expect(messageCount()).toBe(before + 2)
  })

  test('batch.send permissive with the text worker: HTML-only emails get their text part there, errors stay by index', async () => {
    const html = '<h1>Receipt</h1><p>Thanks &amp; welcome</p>'
    const pool = createTextPool(t.deps.log)
    const asked: string[] = []
    t.deps.textPool = { toText: (h) => (asked.push(h), pool.toText(h)), close: () => pool.close() }
    try {
      const { data, error } = await client().batch.send(
        [
          { from: 'hi@acme.example', to: ['w1@example.net'], subject: 'One', html },
          { from: 'hi@acme.example', to: ['w2@example.net'], subject: 'Two', html, scheduledAt: 'never' },
          { from: 'hi@acme.example', to: ['not-an-address'], subject: 'Three', html },
          { from: 'hi@acme.example', to: ['w4@example.net'], subject: 'Four', html },
        ],
        { batchValidation: 'permissive' },
      )
      expect(error).toBeNull()
      expect(data!.errors.map((e) => e.index)).toEqual([1, 2])
      expect(data!.data).toHaveLength(2)
      // Asked for every email that got past reading (index 1 did not), the one refused later too.
      expect(asked).toHaveLength(3)
      for (const { id } of data!.data) expect((await client().emails.get(id)).data!.text).toBe(htmlToText(html))
    } finally {
      await pool.close()
      t.deps.textPool = undefined
    }
  })

  test('a base URL ending in "/" works', async () => {
    const slashed = new Resend(admin.key, { baseUrl: `${base}/` })
    const sent = await slashed.emails.send({ from: 'hi@acme.example', to: 'slash@example.net', subject: 'Slash', text: 'x' })
    expect(sent.error).toBeNull()
    expect((await slashed.emails.get(sent.data!.id)).data!.to).toEqual(['slash@example.net'])
    expect((await slashed.emails.list({ limit: 1 })).data!.data[0]!.id).toBe(sent.data!.id)
  })

  test('batch.send sends each email and answers their ids in order', async () => {
    const { data, error } = await client().batch.send([
      { from: 'hi@acme.example', to: ['one@example.net'], subject: 'One', text: '1' },
      { from: 'hi@acme.example', to: ['two@example.net'], subject: 'Two', text: '2' },
    ])
    expect(error).toBeNull()
    expect(data!.data).toHaveLength(2)
    expect(states(data!.data[0]!.id)).toEqual(['to:one@example.net:queued'])
    expect(states(data!.data[1]!.id)).toEqual(['to:two@example.net:queued'])
  })

  test('a batch with one invalid email sends nothing and names the entry', async () => {
    const before = messageCount()
    const { data, error } = await client().batch.send([
      { from: 'hi@acme.example', to: ['ok@example.net'], subject: 'One', text: '1' },
      { from: 'hi@acme.example', to: ['not-an-address'], subject: 'Two', text: '2' },
    ])
    expect(data).toBeNull()
    expect(error).toMatchObject({ statusCode: 422, name: 'validation_error' })
    expect(error!.message).toContain('1.to.0')
    expect(messageCount()).toBe(before)
  })

  test("errors carry Resend's names and statuses", async () => {
    const email = { from: 'hi@acme.example', to: 'bob@example.net', subject: 'x', text: 'x' }
    const invalid = await client().emails.send({ ...email, to: 'not-an-address' })
    expect(invalid.error).toMatchObject({ statusCode: 422, name: 'validation_error' })
    const badFrom = await client().emails.send({ ...email, from: 'nobody' })
    expect(badFrom.error).toMatchObject({ statusCode: 422, name: 'invalid_from_address' })
    const noSubject = await client().emails.send({ ...email, subject: undefined } as never)
    expect(noSubject.error).toMatchObject({ statusCode: 422, name: 'missing_required_field' })
    const badKey = await client('mr_not_a_key').emails.send(email)
    expect(badKey.error).toMatchObject({ statusCode: 403, name: 'invalid_api_key' })
    // The SDK refuses to run without a key, so the request without one is made by hand.
    const noKey = await fetch(`${base}/emails`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(email) })
    expect(noKey.status).toBe(401)
    expect(await noKey.json()).toMatchObject({ statusCode: 401, name: 'missing_api_key' })
    const reader = t.makeKey({ permissions: ['transactional.read'] })
    const restricted = await client(reader.key).emails.send(email)
    expect(restricted.error).toMatchObject({ statusCode: 401, name: 'restricted_api_key' })
    const longKey = await client().emails.send(email, { idempotencyKey: 'k'.repeat(300) })
    expect(longKey.error).toMatchObject({ statusCode: 400, name: 'invalid_idempotency_key' })
    const limited = t.makeKey({ rate_limit: 1 })
    await client(limited.key).emails.get('0190c1d2-0000-7000-8000-000000000000')
    const tooMany = await client(limited.key).emails.get('0190c1d2-0000-7000-8000-000000000000')
    expect(tooMany.error).toMatchObject({ statusCode: 429, name: 'rate_limit_exceeded' })
    const missing = await client().emails.get('0190c1d2-0000-7000-8000-000000000000')
    expect(missing.error).toMatchObject({ statusCode: 404, name: 'not_found' })
    const unsupported = await client().emails.send({ ...email, topicId: 'news' })
    expect(unsupported.error).toMatchObject({ statusCode: 422, name: 'validation_error' })
    expect(unsupported.error!.message).toContain('topic_id')
  })

  test('idempotencyKey: a retry answers the same id and sends once; another body is refused', async () => {
    const email = { from: 'hi@acme.example', to: 'idem@example.net', subject: 'Once', text: 'once' }
    const a = await client().emails.send(email, { idempotencyKey: 'welcome-user-42' })
    const b = await client().emails.send(email, { idempotencyKey: 'welcome-user-42' })
    expect(b.data!.id).toBe(a.data!.id)
    expect(b.headers?.['idempotent-replayed']).toBe('true')
    const n = (t.deps.db.$client.query("SELECT COUNT(*) AS n FROM message_recipients WHERE address = 'idem@example.net'").get() as { n: number }).n
    expect(n).toBe(1)
    const c = await client().emails.send({ ...email, subject: 'Changed' }, { idempotencyKey: 'welcome-user-42' })
    expect(c.error).toMatchObject({ statusCode: 409, name: 'invalid_idempotent_request' })
  })
})
