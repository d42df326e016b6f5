import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Resend } from 'resend'
import { getMessage } from '../../src/modules/messages/service'
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
      text: null,
      cc: [],
      reply_to: null,
      last_event: 'queued',
      tags: [{ name: 'k', value: 'v' }],
    })
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
