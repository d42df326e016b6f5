import { describe, expect, test } from 'bun:test'
import SMTPConnection from 'nodemailer/lib/smtp-connection'
import { createTransport } from '../../../src/delivery/transport'
import { createDeliveryEngine } from '../../../src/delivery/scheduler'
import { createResolver } from '../../../src/lib/dns'
import { createIpRotation } from '../../../src/delivery/ip-rotation'
import { startInboundListener, type InboundListener } from '../../../src/smtp/inbound/listener'
import { tokenFromAddress } from '../../../src/lib/return-path-token'
import { testApp } from '../../support/app'
import { useMailWorld } from '../../support/mail-world'
import { fixture, TOKENS } from '../reports/support'

/**
 * The inbound listener end to end: a message is sent through the API and delivered by the
 * engine to a recording sink, so its return path carries a real signed token; then a real SMTP
 * client (nodemailer) hands the listener a DSN, a complaint or a DMARC report built from the
 * fixtures of real MTAs with that token and recipient written in.
 */
const world = useMailWorld({})
const { signer } = world

async function setup() {
  world.sink.reset()
  const t = testApp({ mx_port: world.sink.port, dns_servers: [world.zone.server] })
  const admin = t.makeKey()
  const transport = createTransport({
    resolver: createResolver(t.deps.config.dns_servers),
    mxPort: world.sink.port,
    totalConcurrency: 4,
    destinationConcurrency: 4,
    log: t.deps.log,
    ehlo: t.deps.config.hostname,
  })
  const engine = createDeliveryEngine(t.deps, { transport, signer, rotation: createIpRotation(t.deps), commits: t.deps.commits, random: () => 0.5 })

  // example.com, verified against the test DNS: mail from it is signed and gets a token return path.
  const created = await t.call('POST', '/api/v2/sending-domains', { key: admin.key, body: { name: 'example.com' } })
  world.zone.publishRecords(created.body.data.dns_records)
  const verified = await t.call('POST', `/api/v2/sending-domains/${created.body.data.id}/verify`, { key: admin.key })
  expect(verified.body.data.status).toBe('verified')

  const listener = await startInboundListener(t.deps, { host: '127.0.0.1', port: 0 })
  const db = t.deps.db.$client
  return {
    ...t,
    admin,
    domainId: created.body.data.id as number,
    listener,
    /** Sends through the API, delivers to the sink, and returns the message id and the return path it went out with. */
    async deliver(to: string[]) {
      const r = await t.call('POST', '/v1/emails', { key: admin.key, body: { from: 'Shop <news@example.com>', subject: 'Hello', text: 'Hi', to } })
      expect(r.status).toBe(202)
      const before = world.sink.messages.length
      await engine.drain()
      const got = world.sink.messages.slice(before)
      expect(got.length).toBe(1)
      return { id: r.body.data.id as string, returnPath: got[0]!.mailFrom }
    },
    state: (id: string) => db.query('SELECT address, state, last_enhanced FROM message_recipients WHERE message_id = ? ORDER BY id').all(id),
    kinds: (id: string) => (db.query('SELECT kind FROM events WHERE message_id = ? ORDER BY id').all(id) as Array<{ kind: string }>).map((e) => e.kind),
    events: (kind: string) =>
      db.query('SELECT kind, message_id, recipient, contact_id, list_id, data FROM events WHERE kind = ? ORDER BY id').all(kind) as any[],
    suppressions: () => db.query('SELECT value, reason, scope FROM suppressions ORDER BY id').all(),
    inbound: () =>
      db.query('SELECT kind, outcome, message_id, recipient, mail_from, rcpt_to, remote_ip, detail FROM inbound_messages ORDER BY id').all() as any[],
    async contact(email: string) {
      const list = await t.call('POST', '/api/v2/lists', { key: admin.key, body: { name: `List for ${email}` } })
      const c = await t.call('POST', '/api/v2/contacts', { key: admin.key, body: { email, list_id: list.body.data.id, status: 'subscribed' } })
      expect(c.status).toBe(201)
      return {
        id: c.body.data.id as number,
        listId: list.body.data.id as number,
        status: () => (db.query('SELECT status FROM contacts WHERE id = ?').get(c.body.data.id) as any).status,
      }
    },
    async close() {
      await listener.close()
      await transport.close()
    },
  }
}

interface Reply {
  ok: boolean
  code: number | null
  response: string
  rejected: string[]
}

/** One SMTP transaction to the listener with nodemailer's client; the null reverse path by default, as DSNs use (RFC 5321 section 4.5.5). */
async function submit(listener: InboundListener, to: string[], raw: string | Buffer, from = ''): Promise<Reply> {
  const connection = new SMTPConnection({ host: '127.0.0.1', port: listener.port, ignoreTLS: true, name: 'mx.reporter.test', socketTimeout: 20_000 })
  await new Promise<void>((resolve, reject) => {
    connection.once('error', reject)
    connection.connect(() => resolve())
  })
  try {
    return await new Promise<Reply>((resolve) => {
      connection.send({ from, to }, raw, (err, info) => {
        if (err) {
          const e = err as Error & { responseCode?: number; response?: string; rejected?: string[] }
          resolve({ ok: false, code: e.responseCode ?? null, response: e.response ?? e.message, rejected: e.rejected ?? [] })
        } else resolve({ ok: true, code: 250, response: info.response, rejected: info.rejected ?? [] })
      })
    })
  } finally {
    connection.close()
  }
}

/** The Postfix hard bounce fixture, rewritten to be about `recipient` of the message behind `returnPath`. */
function postfixHard(returnPath: string, recipient: string): string {
  return fixture('postfix-hard.eml', true)
    .toString()
    .replaceAll(TOKENS.postfixHard!.token, tokenFromAddress(returnPath)!)
    .replace(/bob@example\.org/gi, recipient)
}

function postfixDelayed(returnPath: string, recipient: string): string {
  return fixture('postfix-delayed.eml', true)
    .toString()
    .replaceAll(TOKENS.postfixDelayed!.token, tokenFromAddress(returnPath)!)
    .replace(/carol@example\.net/gi, recipient)
}

function yahooArf(returnPath: string, recipient: string): string {
  return fixture('yahoo-arf.eml', true)
    .toString()
    .replaceAll(TOKENS.yahooArf!.token, tokenFromAddress(returnPath)!)
    .replace(/kate\.reader@yahoo\.com/gi, recipient)
}

describe('inbound listener: who may send to whom', () => {
  test('refuses every recipient that is not one of our addresses (550 5.7.1, never a relay)', async () => {
    const t = await setup()
    for (const to of ['someone@example.net', 'postmaster@example.com', 'news@example.com', 'bounces+abc@elsewhere.example', 'dmarc@example.net']) {
      const r = await submit(t.listener, [to], 'Subject: hi\r\n\r\nhello\r\n', 'relay@spammer.example')
      expect(r.ok, to).toBe(false)
      expect(r.response, to).toMatch(/^550 5\.7\.1 /)
    }
    expect(t.inbound()).toEqual([])
    await t.close()
  })

  test('accepts return-path addresses at a return-path host or the host name, and the DMARC address', async () => {
    const t = await setup()
    for (const to of ['bounces+aaaa@bounces.example.com', 'BOUNCES+aaaa@mailroom.test', 'dmarc@bounces.example.com']) {
      const r = await submit(t.listener, [to], 'Subject: hi\r\n\r\nhello\r\n')
      expect(r.ok, to).toBe(true)
    }
    // None of them was a report: each is logged as unparsed and changes nothing.
    expect(t.inbound().map((m) => m.outcome)).toEqual(['unparsed', 'unparsed', 'unparsed'])
    await t.close()
  })

  test('a feedback-loop address is accepted while its account is active', async () => {
    const t = await setup()
    const created = await t.call('POST', '/api/v2/feedback-loops', {
      key: t.admin.key,
      body: { name: 'Yahoo', kind: 'address', address: 'fbl@bounces.example.com' },
    })
    expect(created.status).toBe(201)
    expect((await submit(t.listener, ['fbl@bounces.example.com'], 'Subject: x\r\n\r\nx\r\n')).ok).toBe(true)
    await t.call('PATCH', `/api/v2/feedback-loops/${created.body.data.id}`, { key: t.admin.key, body: { active: false } })
    expect((await submit(t.listener, ['fbl@bounces.example.com'], 'Subject: x\r\n\r\nx\r\n')).response).toMatch(/^550 5\.7\.1/)
    await t.close()
  })

  test('a message over the size limit gets 552 and is not recorded', async () => {
    const t = await setup()
    await t.listener.close()
    const small = await startInboundListener(t.deps, { host: '127.0.0.1', port: 0, maxMessageBytes: 2000 })
    const r = await submit(small, ['dmarc@bounces.example.com'], `Subject: big\r\n\r\n${'x'.repeat(70)}\r\n`.repeat(100))
    expect(r.code).toBe(552)
    expect(t.inbound()).toEqual([])
    await small.close()
    await t.close()
  })
})

describe('inbound listener: bounces (RFC 3464)', () => {
  test('a hard DSN with a valid token bounces the recipient (even after sent), suppresses the address and marks its contacts', async () => {
    const t = await setup()
    const contact = await t.contact('bob@example.net')
    const { id, returnPath } = await t.deliver(['bob@example.net'])
    expect(t.state(id)).toMatchObject([{ state: 'sent' }])
    expect(returnPath).toEndWith('@bounces.example.com')

    const r = await submit(t.listener, [returnPath], postfixHard(returnPath, 'bob@example.net'), '')
    expect(r.ok).toBe(true)
    expect(r.response).toBe('250 2.0.0 Received') // the outcome (applied) is only in the log and inbound_messages, below
    expect(t.state(id)).toEqual([{ address: 'bob@example.net', state: 'bounced', last_enhanced: '5.1.1' }])
    expect(t.suppressions()).toEqual([{ value: 'bob@example.net', reason: 'hard_bounce', scope: 'global' }])
    expect(contact.status()).toBe('bounced')
    expect(t.kinds(id)).toEqual(['message.queued', 'message.sent', 'contact.bounced', 'message.bounced'])
    const [bounced] = t.events('message.bounced')
    expect(JSON.parse(bounced.data)).toMatchObject({
      source: 'dsn',
      status: '5.1.1',
      suppressed: true,
      previous_state: 'sent',
      reporting_mta: 'mx1.example.org',
    })
    expect(JSON.parse(bounced.data).diagnostic).toContain('User unknown')
    expect(t.events('contact.bounced')).toMatchObject([{ contact_id: contact.id, list_id: contact.listId, recipient: 'bob@example.net' }])
    expect(t.inbound()).toMatchObject([
      { kind: 'dsn', outcome: 'applied', message_id: id, recipient: 'bob@example.net', mail_from: '', remote_ip: '127.0.0.1' },
    ])

    // The same DSN again (a retried delivery of it) changes nothing more.
    expect((await submit(t.listener, [returnPath], postfixHard(returnPath, 'bob@example.net'))).ok).toBe(true)
    expect(t.inbound()[1]).toMatchObject({ outcome: 'duplicate' })
    expect(t.events('message.bounced').length).toBe(1)
    await t.close()
  })

  test('one transaction for several recipients (token recipient 0): the DSN is matched by address within the message', async () => {
    const t = await setup()
    const { id, returnPath } = await t.deliver(['ann@example.net', 'bob@example.net'])
    const r = await submit(t.listener, [returnPath], postfixHard(returnPath, 'bob@example.net'))
    expect(r.ok).toBe(true)
    expect(t.state(id)).toMatchObject([
      { address: 'ann@example.net', state: 'sent' },
      { address: 'bob@example.net', state: 'bounced' },
    ])
    await t.close()
  })

  test('a forged token changes nothing and is logged as forged', async () => {
    const t = await setup()
    const contact = await t.contact('bob@example.net')
    const { id, returnPath } = await t.deliver(['bob@example.net'])
    const token = tokenFromAddress(returnPath)!
    // One character changed: the HMAC no longer verifies.
    const forged = returnPath.replace(token, token.slice(0, -3) + (token.endsWith('aaa') ? 'bbb' : 'aaa'))
    const r = await submit(t.listener, [forged], postfixHard(forged, 'bob@example.net'))
    expect(r.ok).toBe(true)
    expect(t.state(id)).toMatchObject([{ state: 'sent' }])
    expect(t.suppressions()).toEqual([])
    expect(contact.status()).toBe('subscribed')
    expect(t.kinds(id)).toEqual(['message.queued', 'message.sent'])
    expect(t.inbound()).toMatchObject([{ kind: 'dsn', outcome: 'forged', message_id: null }])
    expect(t.deps.log.lines.some((l) => l.level === 'warn' && l.msg === 'inbound message changed nothing')).toBe(true)
    await t.close()
  })

  test('the reply is the same whether the token verified or not; the outcome is only in the log', async () => {
    const t = await setup()
    const { returnPath } = await t.deliver(['bob@example.net'])
    const token = tokenFromAddress(returnPath)!
    const forged = returnPath.replace(token, token.slice(0, -3) + (token.endsWith('aaa') ? 'bbb' : 'aaa'))
    const bad = await submit(t.listener, [forged], postfixHard(forged, 'bob@example.net'))
    const good = await submit(t.listener, [returnPath], postfixHard(returnPath, 'bob@example.net'))
    const again = await submit(t.listener, [returnPath], postfixHard(returnPath, 'bob@example.net'))
    expect([bad.ok, good.ok, again.ok]).toEqual([true, true, true])
    // A forger must not learn from the reply which tokens verify (applied vs forged vs duplicate).
    expect(bad.response).toBe(good.response)
    expect(again.response).toBe(good.response)
    expect(good.response).not.toMatch(/applied|forged|duplicate|ignored/)
    expect(t.inbound().map((r) => r.outcome)).toEqual(['forged', 'applied', 'duplicate'])
    const logged = t.deps.log.lines.filter((l) => l.msg.startsWith('inbound message')).map((l) => l.fields?.outcome)
    expect(logged).toEqual(['forged', 'applied', 'duplicate'])
    await t.close()
  })

  test('a DSN without any token changes nothing (ignored)', async () => {
    const t = await setup()
    const raw = fixture('postfix-hard.eml', true)
      .toString()
      .replace(/bounces\+[a-z0-9]+@bounces\.example\.com/g, 'news@example.com')
    const r = await submit(t.listener, ['dmarc@bounces.example.com'], raw)
    expect(r.ok).toBe(true)
    expect(t.inbound()).toMatchObject([{ kind: 'dsn', outcome: 'ignored' }])
    expect(t.suppressions()).toEqual([])
    await t.close()
  })

  test('a delayed DSN emits message.delayed and changes neither the state nor the suppressions', async () => {
    const t = await setup()
    const contact = await t.contact('carol@example.net')
    const { id, returnPath } = await t.deliver(['carol@example.net'])
    const r = await submit(t.listener, [returnPath], postfixDelayed(returnPath, 'carol@example.net'))
    expect(r.ok).toBe(true)
    expect(t.state(id)).toMatchObject([{ state: 'sent' }])
    expect(t.suppressions()).toEqual([])
    expect(contact.status()).toBe('subscribed')
    expect(t.kinds(id)).toEqual(['message.queued', 'message.sent', 'message.delayed'])
    expect(JSON.parse(t.events('message.delayed')[0].data)).toMatchObject({ source: 'dsn', action: 'delayed', status: '4.4.1', class: 'soft' })
    await t.close()
  })

  test('a policy block (5.7.1) bounces the message but suppresses no one', async () => {
    const t = await setup()
    const contact = await t.contact('bob@example.net')
    const { id, returnPath } = await t.deliver(['bob@example.net'])
    const raw = postfixHard(returnPath, 'bob@example.net')
      .replace('Status: 5.1.1', 'Status: 5.7.1')
      .replace(
        /Diagnostic-Code: smtp; 550 5\.1\.1[^\r]*\r\n[^\r]*/,
        'Diagnostic-Code: smtp; 554 5.7.1 Service unavailable; client [198.51.100.7] blocked using zen.spamhaus.org',
      )
    expect((await submit(t.listener, [returnPath], raw)).ok).toBe(true)
    expect(t.state(id)).toMatchObject([{ state: 'bounced', last_enhanced: '5.7.1' }])
    expect(t.suppressions()).toEqual([])
    expect(contact.status()).toBe('subscribed')
    expect(JSON.parse(t.events('message.bounced')[0].data)).toMatchObject({ suppressed: false, rule: 'policy' })
    await t.close()
  })
})

describe('inbound listener: complaints (RFC 5965)', () => {
  test('an ARF complaint marks the contacts complained, suppresses the address and emits the events', async () => {
    const t = await setup()
    const contact = await t.contact('kate@example.net')
    const { id, returnPath } = await t.deliver(['kate@example.net'])
    const account = await t.call('POST', '/api/v2/feedback-loops', { key: t.admin.key, body: { name: 'Yahoo', kind: 'address', address: 'fbl@mailroom.test' } })
    expect(account.status).toBe(201)

    const r = await submit(t.listener, ['fbl@mailroom.test'], yahooArf(returnPath, 'kate@example.net'), 'feedback@arf.mail.yahoo.com')
    expect(r.ok).toBe(true)
    expect(contact.status()).toBe('complained')
    expect(t.suppressions()).toEqual([{ value: 'kate@example.net', reason: 'complaint', scope: 'global' }])
    expect(t.events('contact.complained')).toMatchObject([{ contact_id: contact.id, list_id: contact.listId, message_id: id, recipient: 'kate@example.net' }])
    expect(JSON.parse(t.events('contact.complained')[0].data)).toMatchObject({ source: 'arf', feedback_type: 'abuse' })
    expect(t.events('message.complained')).toMatchObject([{ message_id: id, recipient: 'kate@example.net' }])
    // The message state is not a complaint's business: it was delivered.
    expect(t.state(id)).toMatchObject([{ state: 'sent' }])
    expect(t.inbound()).toMatchObject([{ kind: 'arf', outcome: 'applied', message_id: id, recipient: 'kate@example.net' }])

    // Providers resend reports; the second copy is a duplicate.
    expect((await submit(t.listener, ['fbl@mailroom.test'], yahooArf(returnPath, 'kate@example.net'))).ok).toBe(true)
    expect(t.inbound()[1]).toMatchObject({ outcome: 'duplicate' })
    expect(t.events('message.complained').length).toBe(1)
    await t.close()
  })

  test('a complaint with a forged token changes nothing', async () => {
    const t = await setup()
    const contact = await t.contact('kate@example.net')
    const { returnPath } = await t.deliver(['kate@example.net'])
    const token = tokenFromAddress(returnPath)!
    const forged = returnPath.replace(
      token,
      token.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')),
    )
    expect((await submit(t.listener, [returnPath], yahooArf(forged, 'kate@example.net'))).ok).toBe(true)
    expect(contact.status()).toBe('subscribed')
    expect(t.suppressions()).toEqual([])
    expect(t.inbound()).toMatchObject([{ kind: 'arf', outcome: 'forged' }])
    await t.close()
  })

  test('a not-spam report is not a complaint', async () => {
    const t = await setup()
    const { returnPath } = await t.deliver(['kate@example.net'])
    const raw = yahooArf(returnPath, 'kate@example.net').replace('Feedback-Type: abuse', 'Feedback-Type: not-spam')
    expect((await submit(t.listener, [returnPath], raw)).ok).toBe(true)
    expect(t.suppressions()).toEqual([])
    expect(t.inbound()).toMatchObject([{ kind: 'arf', outcome: 'ignored' }])
    await t.close()
  })
})

describe('inbound listener: DMARC aggregate reports (RFC 7489)', () => {
  test('stored once, listed and summarised per sending domain by source IP', async () => {
    const t = await setup()
    const google = fixture('dmarc-google.eml', true)
    expect((await submit(t.listener, ['dmarc@bounces.example.com'], google, 'noreply-dmarc-support@google.com')).ok).toBe(true)
    expect((await submit(t.listener, ['dmarc@bounces.example.com'], fixture('dmarc-yahoo.eml', true))).ok).toBe(true)
    // Google sends the same report again: stored once.
    expect((await submit(t.listener, ['dmarc@bounces.example.com'], google)).ok).toBe(true)
    expect(t.inbound().map((m) => [m.kind, m.outcome])).toEqual([
      ['dmarc', 'applied'],
      ['dmarc', 'applied'],
      ['dmarc', 'duplicate'],
    ])

    const list = await t.call('GET', '/api/v2/dmarc-reports?domain=example.com', { key: t.admin.key })
    expect(list.status).toBe(200)
    expect(list.body.meta.total).toBe(2)
    expect(list.body.data.map((r: any) => r.org_name).sort()).toEqual(['Yahoo', 'google.com'])
    const googleReport = list.body.data.find((r: any) => r.org_name === 'google.com')
    expect(googleReport).toMatchObject({
      domain: 'example.com',
      report_id: '12345678901234567890',
      begin_at: '2026-03-02T00:00:00.000Z',
      records: 2,
      messages: 1426,
    })
    const one = await t.call('GET', `/api/v2/dmarc-reports/${googleReport.id}`, { key: t.admin.key })
    expect(one.body.data.rows).toContainEqual({
      source_ip: '2001:db8::25',
      count: 3,
      disposition: 'quarantine',
      dkim: 'fail',
      spf: 'fail',
      header_from: 'example.com',
    })
    expect((await t.call('GET', '/api/v2/dmarc-reports?domain=other.example', { key: t.admin.key })).body.meta.total).toBe(0)

    const summary = await t.call('GET', `/api/v2/sending-domains/${t.domainId}/dmarc?from=2026-03-01T00:00:00Z&to=2026-03-10T00:00:00Z`, { key: t.admin.key })
    expect(summary.status).toBe(200)
    const google198 = summary.body.data.sources.find((s: any) => s.source_ip === '198.51.100.7')
    expect(google198.messages).toBeGreaterThanOrEqual(1423)
    expect(google198.dkim.pass + google198.dkim.fail).toBe(google198.messages)
    expect(summary.body.data.sources.find((s: any) => s.source_ip === '2001:db8::25')).toMatchObject({
      messages: 3,
      dkim: { pass: 0, fail: 3 },
      spf: { pass: 0, fail: 3 },
      disposition: { quarantine: 3 },
    })
    expect(summary.body.data).toMatchObject({ domain: 'example.com', reports: 2 })
    const total = summary.body.data.sources.reduce((n: number, s: any) => n + s.messages, 0)
    expect(summary.body.data.totals.messages).toBe(total)
    // Outside the range: nothing.
    const before = await t.call('GET', `/api/v2/sending-domains/${t.domainId}/dmarc?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z`, { key: t.admin.key })
    expect(before.body.data).toMatchObject({ reports: 0, sources: [], totals: { messages: 0 } })
    await t.close()
  })

  test('the summary needs sending_domains.read; a range the wrong way round is refused', async () => {
    const t = await setup()
    const weak = t.makeKey({ permissions: ['lists.read'] })
    expect((await t.call('GET', `/api/v2/sending-domains/${t.domainId}/dmarc`, { key: weak.key })).status).toBe(403)
    expect((await t.call('GET', '/api/v2/dmarc-reports', { key: weak.key })).status).toBe(403)
    const reader = t.makeKey({ permissions: ['sending_domains.read'] })
    expect((await t.call('GET', `/api/v2/sending-domains/${t.domainId}/dmarc`, { key: reader.key })).status).toBe(200)
    const wrong = await t.call('GET', `/api/v2/sending-domains/${t.domainId}/dmarc?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z`, { key: reader.key })
    expect(wrong.status).toBe(422)
    expect((await t.call('GET', '/api/v2/sending-domains/999/dmarc', { key: reader.key })).status).toBe(404)
    await t.close()
  })
})

describe('inbound listener: malformed input', () => {
  test.each(['garbage.bin', 'truncated.eml', 'no-boundary.eml', 'nested-rfc822.eml', 'dmarc-zip-bomb.eml', 'xml-entity-bomb.eml'])(
    '%s: answered, recorded, nothing changed, the listener goes on',
    async (name) => {
      const t = await setup()
      const r = await submit(t.listener, ['dmarc@bounces.example.com'], fixture(name, name !== 'garbage.bin'))
      expect(r.ok).toBe(true)
      const [logged] = t.inbound()
      expect(['unparsed', 'ignored', 'forged']).toContain(logged.outcome)
      expect(t.suppressions()).toEqual([])
      // Still serving.
      expect((await submit(t.listener, ['dmarc@bounces.example.com'], 'Subject: next\r\n\r\nok\r\n')).ok).toBe(true)
      await t.close()
    },
  )

  test('a bomb is recorded as unparsed with the reason', async () => {
    const t = await setup()
    expect((await submit(t.listener, ['dmarc@bounces.example.com'], fixture('dmarc-zip-bomb.eml', true))).ok).toBe(true)
    const [logged] = t.inbound()
    expect(logged).toMatchObject({ kind: 'unknown', outcome: 'unparsed' })
    expect(JSON.parse(logged.detail).reason).toContain('dmarc attachment refused')
    await t.close()
  })
})
