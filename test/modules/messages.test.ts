import { unpackMessage } from '../../src/lib/stored-message'
import { describe, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { testApp } from '../support/app'

/** A test app that accepts unverified senders (signing is tested in test/delivery). */
function setup(overrides: Parameters<typeof testApp>[0] = {}) {
  const t = testApp({ allow_unverified_domains: true, ...overrides })
  const admin = t.makeKey()
  // bun:sqlite returns BLOBs as Uint8Array.
  const rawOf = (id: string) => unpackMessage((t.deps.db.$client.query('SELECT raw FROM messages WHERE id = ?').get(id) as { raw: Uint8Array }).raw)
  const recipients = (id: string) =>
    t.deps.db.$client.query('SELECT address, kind, state, next_attempt_at FROM message_recipients WHERE message_id = ? ORDER BY id').all(id) as Array<{
      address: string
      kind: string
      state: string
      next_attempt_at: number | null
    }>
  return { ...t, admin, rawOf, recipients }
}

const simple = { from: 'Ada <ada@example.com>', to: 'bob@example.net', subject: 'Hello', text: 'Hi Bob' }

describe('POST /v1/send', () => {
  test('202 queued with a string id, committed with its recipient row and event', async () => {
    const { call, admin, rawOf, recipients, deps } = setup()
    const r = await call('POST', '/v1/send', { key: admin.key, body: simple })
    expect(r.status).toBe(202)
    expect(r.body).toEqual({ success: true, data: { id: expect.any(String), status: 'queued' } })
    const id = r.body.data.id
    expect(recipients(id)).toEqual([{ address: 'bob@example.net', kind: 'to', state: 'queued', next_attempt_at: deps.clock.now() }])
    const mail = await simpleParser(rawOf(id))
    expect(mail.subject).toBe('Hello')
    expect(mail.from?.value[0]).toEqual({ name: 'Ada', address: 'ada@example.com' })
    expect(mail.messageId).toBe(`<${id}@example.com>`)
    expect(mail.text?.trim()).toBe('Hi Bob')
    expect(rawOf(id).toString('latin1')).not.toMatch(/[^\r]\n/)
    const events = deps.db.$client.query("SELECT kind, recipient FROM events WHERE message_id = ? AND kind LIKE 'message.%'").all(id)
    expect(events).toEqual([{ kind: 'message.queued', recipient: 'bob@example.net' }])
  })

  test('needs a subject and valid addresses; every problem is named', async () => {
    const { call, admin } = setup()
    const r = await call('POST', '/v1/send', { key: admin.key, body: { from: 'not an address', to: 'bob@', subject: '' } })
    expect(r.status).toBe(422)
    expect(r.body.error.code).toBe('validation_failed')
    expect(Object.keys(r.body.error.details).sort()).toEqual(['from', 'subject', 'to.0'])
    // /v1/emails still needs html or text (named with the rest).
    const emails = await call('POST', '/v1/emails', { key: admin.key, body: { from: 'not an address', to: ['bob@'], subject: '' } })
    expect(Object.keys(emails.body.error.details).sort()).toEqual(['from', 'html', 'subject', 'to.0'])
  })

  test("the spec's simple send, from, to and subject only: 202, with an empty text body", async () => {
    const { call, admin, rawOf } = setup()
    const r = await call('POST', '/v1/send', { key: admin.key, body: { from: 'ada@example.com', to: 'bob@example.net', subject: 'Ping' } })
    expect(r.status).toBe(202)
    expect(r.body.data.status).toBe('queued')
    const raw = rawOf(r.body.data.id)
    const mail = await simpleParser(raw)
    expect(mail.subject).toBe('Ping')
    expect((mail.text ?? '').trim()).toBe('')
    expect(mail.html).toBe(false)
    expect(raw.toString('latin1')).toContain('Content-Type: text/plain')
  })

  test('a key without transactional.send gets 403', async () => {
    const { call, makeKey } = setup()
    const reader = makeKey({ permissions: ['transactional.read'] })
    const r = await call('POST', '/v1/send', { key: reader.key, body: simple })
    expect(r.status).toBe(403)
  })

  test('an unverified sender domain is refused unless the operator allows it', async () => {
    const { call, admin } = setup({ allow_unverified_domains: false })
    const r = await call('POST', '/v1/send', { key: admin.key, body: simple })
    expect(r.status).toBe(403)
    expect(r.body.error.code).toBe('domain_not_verified')
    expect(r.body.error.message).toContain('example.com')
  })
})

describe('header injection', () => {
  test('CR or LF in the subject, a name, a header name or value is refused', async () => {
    const { call, admin } = setup()
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ subject: 'Hi\r\nBcc: victim@example.org' }, 'subject'],
      [{ from: 'Ada\r\nBcc: victim@example.org <ada@example.com>' }, 'from'],
      [{ to: ['bob@example.net\nBcc: victim@example.org'] }, 'to.0'],
      [{ headers: { 'X-Campaign': 'a\r\nBcc: victim@example.org' } }, 'headers.X-Campaign'],
      [{ headers: { 'X-Bad Name': 'x' } }, 'headers.X-Bad Name'],
      [{ headers: { Bcc: 'victim@example.org' } }, 'headers.Bcc'],
      [{ attachments: [{ filename: 'a\r\n.txt', content: 'aGk=' }] }, 'attachments.0.filename'],
    ]
    for (const [patch, field] of cases) {
      const body = { from: 'ada@example.com', to: ['bob@example.net'], subject: 'Hi', text: 'x', ...patch }
      const r = await call('POST', '/v1/emails', { key: admin.key, body })
      expect(r.status, JSON.stringify(patch)).toBe(422)
      expect(Object.keys(r.body.error.details)).toContain(field)
    }
  })

  test('allowed custom headers and non-ASCII subjects are encoded, never split into new header lines', async () => {
    const { call, admin, rawOf } = setup()
    const r = await call('POST', '/v1/emails', {
      key: admin.key,
      body: { from: 'ada@example.com', to: ['bob@example.net'], subject: 'Grüße — ünïcode', html: '<p>x</p>', headers: { 'X-Campaign': 'spring' } },
    })
    expect(r.status).toBe(202)
    const mail = await simpleParser(rawOf(r.body.data.id))
    expect(mail.subject).toBe('Grüße — ünïcode')
    expect(mail.headers.get('x-campaign')).toBe('spring')
  })
})

describe('MIME', () => {
  test('no line passes 998 octets (RFC 5322 2.1.1), whatever the subject, names and recipients', async () => {
    const { call, admin, rawOf } = setup()
    const names = Array.from({ length: 50 }, (_, i) => `Recipient Number ${i} With A Rather Long Display Name <r${i}@example.net>`)
    const r = await call('POST', '/v1/emails', {
      key: admin.key,
      body: { from: 'Ada <ada@example.com>', to: names, subject: `${'x'.repeat(950)} tail`, html: `<p>${'y'.repeat(5000)}</p>`, text: 'ünïcode '.repeat(400) },
    })
    expect(r.status).toBe(202)
    const raw = rawOf(r.body.data.id).toString('latin1')
    const longest = Math.max(...raw.split('\r\n').map((l) => l.length))
    expect(longest).toBeLessThanOrEqual(998)
    const mail = await simpleParser(rawOf(r.body.data.id))
    expect(mail.subject).toBe(`${'x'.repeat(950)} tail`)
    expect((mail.to as { value: unknown[] }).value).toHaveLength(50)
    expect(mail.html).toContain('y'.repeat(5000))
    expect(mail.text?.trim()).toBe('ünïcode '.repeat(400).trim())
  })
})

describe('POST /v1/emails', () => {
  test('cc and bcc are recipients; bcc never appears in the headers; duplicates go once', async () => {
    const { call, admin, rawOf, recipients } = setup()
    const r = await call('POST', '/v1/emails', {
      key: admin.key,
      body: {
        from: 'ada@example.com',
        to: ['bob@example.net', 'BOB@example.net'],
        cc: ['carol@example.org'],
        bcc: ['dave@example.org'],
        reply_to: 'help@example.com',
        subject: 'Hi',
        html: '<p>Hi</p>',
        tags: ['welcome'],
      },
    })
    expect(r.status).toBe(202)
    expect(r.body.data).toMatchObject({ status: 'queued', queued: 3, suppressed: [] })
    const id = r.body.data.id
    expect(recipients(id).map((x) => [x.address, x.kind])).toEqual([
      ['bob@example.net', 'to'],
      ['carol@example.org', 'cc'],
      ['dave@example.org', 'bcc'],
    ])
    const raw = rawOf(id).toString()
    expect(raw).not.toContain('dave@example.org')
    const mail = await simpleParser(rawOf(id))
    expect(mail.replyTo?.value[0]?.address).toBe('help@example.com')
  })

  test('attachments are base64 in, MIME parts out', async () => {
    const { call, admin, rawOf } = setup()
    const content = Buffer.from('%PDF-1.4 tiny').toString('base64')
    const r = await call('POST', '/v1/emails', {
      key: admin.key,
      body: {
        from: 'ada@example.com',
        to: ['bob@example.net'],
        subject: 'Invoice',
        text: 'attached',
        attachments: [{ filename: 'invoice.pdf', content, content_type: 'application/pdf' }],
      },
    })
    expect(r.status).toBe(202)
    const mail = await simpleParser(rawOf(r.body.data.id))
    expect(mail.attachments).toHaveLength(1)
    expect(mail.attachments[0]!.filename).toBe('invoice.pdf')
    expect(mail.attachments[0]!.contentType).toBe('application/pdf')
    expect(mail.attachments[0]!.content.toString()).toBe('%PDF-1.4 tiny')
  })

  test('more than 50 recipients in all is refused', async () => {
    const { call, admin } = setup()
    const to = Array.from({ length: 30 }, (_, i) => `a${i}@example.net`)
    const cc = Array.from({ length: 21 }, (_, i) => `c${i}@example.net`)
    const r = await call('POST', '/v1/emails', { key: admin.key, body: { from: 'ada@example.com', to, cc, subject: 'x', text: 'x' } })
    expect(r.status).toBe(422)
    expect(r.body.error.details.to[0]).toContain('50')
  })

  test('a suppressed recipient is recorded with the suppression and never queued', async () => {
    const { call, admin, recipients, deps } = setup()
    await call('POST', '/api/v2/suppressions/batch', { key: admin.key, body: { type: 'domain', reason: 'manual', entries: ['blocked.example'] } })
    const r = await call('POST', '/v1/emails', {
      key: admin.key,
      body: { from: 'ada@example.com', to: ['bob@example.net', 'eve@blocked.example'], subject: 'x', text: 'x' },
    })
    expect(r.status).toBe(202)
    expect(r.body.data.queued).toBe(1)
    expect(r.body.data.suppressed).toEqual([{ address: 'eve@blocked.example', reason: 'manual', scope: 'global' }])
    expect(recipients(r.body.data.id).map((x) => x.state)).toEqual(['queued', 'suppressed'])
    const ev = deps.db.$client.query("SELECT data FROM events WHERE kind = 'message.suppressed'").get() as { data: string }
    expect(JSON.parse(ev.data).suppression).toMatchObject({ type: 'domain', value: 'blocked.example', reason: 'manual' })
  })

  test('an unknown IP pool is a 422 on ip_pool_id', async () => {
    const { call, admin } = setup()
    const r = await call('POST', '/v1/emails', {
      key: admin.key,
      body: { from: 'ada@example.com', to: ['bob@example.net'], subject: 'x', text: 'x', ip_pool_id: 999 },
    })
    expect(r.status).toBe(422)
    expect(r.body.error.details).toHaveProperty('ip_pool_id')
  })
})

describe('Idempotency-Key', () => {
  test('the same key and body within 24 h replays the first answer and sends nothing more', async () => {
    const { call, admin, deps } = setup()
    const headers = { 'idempotency-key': 'order-1234' }
    const first = await call('POST', '/v1/send', { key: admin.key, body: simple, headers })
    const again = await call('POST', '/v1/send', { key: admin.key, body: { ...simple }, headers })
    expect(again.status).toBe(202)
    expect(again.body).toEqual(first.body)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    expect((deps.db.$client.query('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n).toBe(1)
  })

  test('the same key with another body is 409 idempotency_key_reused', async () => {
    const { call, admin } = setup()
    const headers = { 'idempotency-key': 'k1' }
    await call('POST', '/v1/send', { key: admin.key, body: simple, headers })
    const r = await call('POST', '/v1/send', { key: admin.key, body: { ...simple, subject: 'Other' }, headers })
    expect(r.status).toBe(409)
    expect(r.body.error.code).toBe('idempotency_key_reused')
  })

  test('keys are scoped to the API key, and expire after 24 hours', async () => {
    const { call, admin, makeKey, deps } = setup()
    const other = makeKey()
    const headers = { 'idempotency-key': 'shared-name' }
    const a = await call('POST', '/v1/send', { key: admin.key, body: simple, headers })
    const b = await call('POST', '/v1/send', { key: other.key, body: simple, headers })
    expect(b.status).toBe(202)
    expect(b.body.data.id).not.toBe(a.body.data.id)
    deps.clock.advance(24 * 3600 * 1000 + 1)
    const c = await call('POST', '/v1/send', { key: admin.key, body: simple, headers })
    expect(c.body.data.id).not.toBe(a.body.data.id)
  })

  test('a duplicate arriving while the first is still running is 409 idempotency_in_progress', async () => {
    const { call, admin } = setup()
    const headers = { 'idempotency-key': 'racing' }
    // Both start before either commits: the second sees the first in flight.
    const [a, b] = await Promise.all([
      call('POST', '/v1/send', { key: admin.key, body: simple, headers }),
      call('POST', '/v1/send', { key: admin.key, body: simple, headers }),
    ])
    expect([a.status, b.status].sort()).toEqual([202, 409])
    expect([a, b].find((r) => r.status === 409)!.body.error.code).toBe('idempotency_in_progress')
  })

  test('a failed request stores nothing: the same key works once the body is fixed', async () => {
    const { call, admin } = setup()
    const headers = { 'idempotency-key': 'fix-me' }
    const bad = await call('POST', '/v1/send', { key: admin.key, body: { ...simple, to: 'nobody' }, headers })
    expect(bad.status).toBe(422)
    const good = await call('POST', '/v1/send', { key: admin.key, body: simple, headers })
    expect(good.status).toBe(202)
  })

  test('a key longer than 256 characters is refused', async () => {
    const { call, admin } = setup()
    const r = await call('POST', '/v1/send', { key: admin.key, body: simple, headers: { 'idempotency-key': 'x'.repeat(257) } })
    expect(r.status).toBe(422)
    expect(r.body.error.details).toHaveProperty('Idempotency-Key')
  })
})

describe('GET a message', () => {
  test('recipients with their states and the events', async () => {
    const { call, admin, makeKey } = setup()
    const sent = await call('POST', '/v1/emails', {
      key: admin.key,
      body: { from: 'ada@example.com', to: ['bob@example.net'], cc: ['carol@example.org'], subject: 'x', text: 'x', tags: ['t1'] },
    })
    const id = sent.body.data.id
    for (const path of [`/v1/emails/${id}`, `/api/v2/messages/${id}`]) {
      const r = await call('GET', path, { key: admin.key })
      expect(r.status).toBe(200)
      expect(r.body.data).toMatchObject({ id, from: 'ada@example.com', subject: 'x', tags: ['t1'], status: 'queued', signed: false })
      expect(r.body.data.recipients.map((x: { address: string; state: string }) => [x.address, x.state])).toEqual([
        ['bob@example.net', 'queued'],
        ['carol@example.org', 'queued'],
      ])
      expect(r.body.data.events.map((e: { kind: string }) => e.kind)).toEqual(['message.queued', 'message.queued'])
    }
    expect((await call('GET', '/v1/emails/nope', { key: admin.key })).status).toBe(404)
    const sender = makeKey({ permissions: ['transactional.send'] })
    expect((await call('GET', `/v1/emails/${id}`, { key: sender.key })).status).toBe(403)
  })
})

describe('POST /api/v2/dynamicTemplate/{template_id}', () => {
  test('renders the active version for the recipient and queues it (202), recording the version', async () => {
    const { call, admin, rawOf, deps } = setup()
    const tpl = await call('POST', '/api/v2/templates', {
      key: admin.key,
      body: { name: 'welcome', subject: 'Welcome, {{name}}', html: '<p>Hello {{name}} from {{company}}</p>', text: 'Hello {{name}}' },
    })
    expect(tpl.status).toBe(201)
    const r = await call('POST', `/api/v2/dynamicTemplate/${tpl.body.data.id}`, {
      key: admin.key,
      body: { to: 'bob@example.net', from: 'ada@example.com', variables: { name: '<Bob>', company: 'Acme' } },
    })
    expect(r.status).toBe(202)
    expect(r.body.data).toEqual({ id: expect.any(String), status: 'queued' })
    const mail = await simpleParser(rawOf(r.body.data.id))
    expect(mail.subject).toBe('Welcome, <Bob>')
    expect(mail.html).toContain('Hello &lt;Bob&gt; from Acme')
    expect(mail.text?.trim()).toBe('Hello <Bob>')
    const row = deps.db.$client.query('SELECT source, template_id, template_version_id FROM messages WHERE id = ?').get(r.body.data.id)
    expect(row).toMatchObject({ source: 'template', template_id: tpl.body.data.id, template_version_id: expect.any(Number) })
  })

  test('the spec body (to, variables) is enough when default_from is configured; without it `from` is required', async () => {
    const withDefault = setup({ default_from: 'Acme <hello@acme.example>' })
    const tpl = await withDefault.call('POST', '/api/v2/templates', { key: withDefault.admin.key, body: { name: 't', subject: 'Hi', text: 'Hi {{name}}' } })
    const ok = await withDefault.call('POST', `/api/v2/dynamicTemplate/${tpl.body.data.id}`, {
      key: withDefault.admin.key,
      body: { to: 'bob@example.net', variables: { name: 'Bob' } },
    })
    expect(ok.status).toBe(202)
    expect((await simpleParser(withDefault.rawOf(ok.body.data.id))).from?.value[0]?.address).toBe('hello@acme.example')

    const without = setup()
    const tpl2 = await without.call('POST', '/api/v2/templates', { key: without.admin.key, body: { name: 't', subject: 'Hi', text: 'Hi' } })
    const refused = await without.call('POST', `/api/v2/dynamicTemplate/${tpl2.body.data.id}`, {
      key: without.admin.key,
      body: { to: 'bob@example.net', variables: {} },
    })
    expect(refused.status).toBe(422)
    expect(refused.body.error.details).toHaveProperty('from')
  })

  test("the spec's exact body (to, variables) sends from the template's from and reply_to, without default_from", async () => {
    const { call, admin, rawOf, deps } = setup()
    expect(deps.config.default_from).toBeFalsy()
    const tpl = await call('POST', '/api/v2/templates', {
      key: admin.key,
      body: { name: 'receipt', subject: 'Your order, {{name}}', text: 'Thanks {{name}}', from: 'Acme Shop <shop@acme.example>', reply_to: 'help@acme.example' },
    })
    expect(tpl.status).toBe(201)
    expect(tpl.body.data).toMatchObject({ from: 'Acme Shop <shop@acme.example>', reply_to: 'help@acme.example' })
    const r = await call('POST', `/api/v2/dynamicTemplate/${tpl.body.data.id}`, { key: admin.key, body: { to: 'bob@example.net', variables: { name: 'Bob' } } })
    expect(r.status).toBe(202)
    const mail = await simpleParser(rawOf(r.body.data.id))
    expect(mail.from?.value[0]).toEqual({ name: 'Acme Shop', address: 'shop@acme.example' })
    expect(mail.replyTo?.value[0]?.address).toBe('help@acme.example')
    expect(mail.subject).toBe('Your order, Bob')

    // A from in the request still wins over the template's.
    const own = await call('POST', `/api/v2/dynamicTemplate/${tpl.body.data.id}`, {
      key: admin.key,
      body: { to: 'bob@example.net', variables: { name: 'Bob' }, from: 'ada@example.com' },
    })
    expect(own.status).toBe(202)
    expect((await simpleParser(rawOf(own.body.data.id))).from?.value[0]?.address).toBe('ada@example.com')
  })

  test('an unknown template is 404', async () => {
    const { call, admin } = setup()
    const r = await call('POST', '/api/v2/dynamicTemplate/999', { key: admin.key, body: { to: 'bob@example.net', from: 'ada@example.com', variables: {} } })
    expect(r.status).toBe(404)
  })
})
