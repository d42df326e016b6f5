import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { createSignerPool } from '../../src/delivery/signer-pool'
import { createTransport } from '../../src/delivery/transport'
import { backoffMs, createDeliveryEngine } from '../../src/delivery/scheduler'
import { createResolver } from '../../src/lib/dns'
import { createIpRotation } from '../../src/delivery/ip-rotation'
import { serverSecret } from '../../src/modules/system/secrets'
import { parseReturnPathToken, tokenFromAddress } from '../../src/lib/return-path-token'
import { testApp } from '../support/app'
import { NULL_MX, startDnsServer, type DnsServer } from '../support/dns-server'
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink'

/**
 * The whole path through real sockets: the send API commits, the engine claims, resolves MX
 * through a real DNS server on loopback, signs in a worker thread, binds the pool's source
 * address and delivers to a recording SMTP sink; outcomes come back as states and events.
 * Retries run on the fixed clock: each `drain()` delivers what is due at the clock's time.
 */
let sink: SmtpSink
let zone: DnsServer
const signer = createSignerPool({ size: 1 })

beforeAll(async () => {
  sink = await startSmtpSink({ host: '127.0.0.1' })
  zone = await startDnsServer({
    zones: {
      'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] },
      'mx.example.net': { A: ['127.0.0.1'] },
      // No MX: delivery falls back to the domain's own address (RFC 5321 section 5.1).
      'a-only.example': { A: ['127.0.0.1'] },
      'nomail.example': { MX: [NULL_MX] },
      // This server's own name (the hostname setting): the SPF record's a: mechanism names it.
      'mailroom.test': { A: ['127.0.0.1'] },
    },
  })
})

afterAll(async () => {
  await sink.close()
  await zone.close()
  await signer.close()
})

async function setup(overrides: Parameters<typeof testApp>[0] = {}) {
  sink.reset()
  const t = testApp({ mx_port: sink.port, dns_servers: [zone.server], max_message_age_seconds: 3600, ...overrides })
  const admin = t.makeKey()
  const transport = createTransport({
    resolver: createResolver(t.deps.config.dns_servers),
    mxPort: sink.port,
    totalConcurrency: 8,
    destinationConcurrency: 4,
    log: t.deps.log,
    ehlo: t.deps.config.hostname,
  })
  const engine = createDeliveryEngine(t.deps, { transport, signer, rotation: createIpRotation(t.deps), commits: t.deps.commits, random: () => 0.5 })
  const state = (id: string) =>
    t.deps.db.$client
      .query('SELECT address, state, attempts, next_attempt_at, last_code, last_enhanced, last_ip FROM message_recipients WHERE message_id = ? ORDER BY id')
      .all(id) as Array<{
      address: string
      state: string
      attempts: number
      next_attempt_at: number | null
      last_code: number | null
      last_enhanced: string | null
      last_ip: string | null
    }>
  const kinds = (id: string) =>
    (t.deps.db.$client.query('SELECT kind FROM events WHERE message_id = ? ORDER BY id').all(id) as Array<{ kind: string }>).map((e) => e.kind)
  const send = async (body: Record<string, unknown>) => {
    const r = await t.call('POST', '/v1/emails', { key: admin.key, body: { from: 'Ada <ada@example.com>', subject: 'Hello', text: 'Hi there', ...body } })
    expect(r.status, JSON.stringify(r.body)).toBe(202)
    return r.body.data.id as string
  }
  return { ...t, admin, engine, transport, state, kinds, send, close: () => transport.close() }
}

/** Creates example.com through the API, publishes its records in the test DNS and verifies it. */
async function verifiedDomain(t: Awaited<ReturnType<typeof setup>>) {
  const created = await t.call('POST', '/api/v2/sending-domains', { key: t.admin.key, body: { name: 'example.com' } })
  expect(created.status).toBe(201)
  zone.publishRecords(created.body.data.dns_records)
  const verified = await t.call('POST', `/api/v2/sending-domains/${created.body.data.id}/verify`, { key: t.admin.key })
  expect(verified.body.data.status, JSON.stringify(verified.body.data.dns_records)).toBe('verified')
  return created.body.data as { id: number; dkim_selector?: string }
}

describe('delivery', () => {
  test('a verified domain: delivered over SMTP with a DKIM signature a real verifier accepts', async () => {
    const t = await setup()
    await verifiedDomain(t)
    const id = await t.send({ to: ['bob@example.net'], html: '<p>Hi\nthere</p>' })
    await t.engine.drain()
    expect(t.state(id)).toMatchObject([{ address: 'bob@example.net', state: 'sent', attempts: 1, last_code: 250 }])
    expect(t.kinds(id)).toEqual(['message.queued', 'message.sent'])
    const [got] = sink.messages
    expect(got!.rcptTo).toEqual(['bob@example.net'])
    // The return path carries a signed token naming the message and the recipient row.
    expect(got!.mailFrom).toEndWith('@bounces.example.com')
    const recipientRow = t.deps.db.$client.query('SELECT id FROM message_recipients WHERE message_id = ?').get(id) as { id: number }
    expect(parseReturnPathToken(serverSecret(t.deps, 'return-path'), tokenFromAddress(got!.mailFrom)!)).toEqual({ messageId: id, recipientId: recipientRow.id })
    expect(got!.ehlo).toBe('mailroom.test')
    // Bun's resolver loses TXT record boundaries (oven-sh/bun#21370); ours keeps them.
    const result = await dkimVerify(got!.raw, { resolver: createResolver([zone.server]).resolve as never })
    expect(result.results.map((r) => r.status?.result)).toEqual(['pass'])
    expect(result.results[0]!.signingDomain).toBe('example.com')
    expect(got!.raw.toString()).toMatch(/^DKIM-Signature: .*c=relaxed\/relaxed/)
    await t.close()
  })

  test('the opened signing key is cached per domain, and a changed key or status takes effect at the next message', async () => {
    const t = await setup({ allow_unverified_domains: true })
    const domain = await verifiedDomain(t)
    const verdict = async (raw: Buffer) =>
      (await dkimVerify(raw, { resolver: createResolver([zone.server]).resolve as never })).results.map((r) => r.status?.result)
    await t.send({ to: ['bob@example.net'] })
    await t.send({ to: ['carol@example.net'] })
    await t.engine.drain()
    expect(sink.messages.length).toBe(2)
    for (const m of sink.messages) expect(await verdict(m.raw)).toEqual(['pass'])
    // A key the published record does not match: the next message must be signed with it (and so fail).
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
    t.deps.db.$client.query('UPDATE sending_domains SET dkim_private_key = ? WHERE id = ?').run(t.deps.secrets.seal(other), domain.id)
    sink.reset()
    await t.send({ to: ['dave@example.net'] })
    await t.engine.drain()
    expect(sink.messages[0]!.raw.toString()).toStartWith('DKIM-Signature: ')
    expect(await verdict(sink.messages[0]!.raw)).not.toEqual(['pass'])
    // No longer verified: the next message goes out unsigned.
    t.deps.db.$client.query("UPDATE sending_domains SET status = 'failed' WHERE id = ?").run(domain.id)
    sink.reset()
    await t.send({ to: ['erin@example.net'] })
    await t.engine.drain()
    expect(sink.messages[0]!.raw.toString()).not.toContain('DKIM-Signature')
    await t.close()
  })

  test('unverified domains allowed by configuration go out unsigned', async () => {
    const t = await setup({ allow_unverified_domains: true })
    const id = await t.send({ from: 'ops@unverified.example', to: ['bob@example.net'] })
    await t.engine.drain()
    expect(t.state(id)[0]!.state).toBe('sent')
    expect(sink.messages[0]!.raw.toString()).not.toContain('DKIM-Signature')
    expect(sink.messages[0]!.mailFrom).toBe('ops@unverified.example')
    await t.close()
  })

  test('per-recipient outcomes in one transaction: sent, bounced with suppression, policy block without, deferred', async () => {
    const t = await setup({ allow_unverified_domains: true })
    const list = await t.call('POST', '/api/v2/lists', { key: t.admin.key, body: { name: 'News' } })
    await t.call('POST', '/api/v2/contacts', { key: t.admin.key, body: { email: 'permfail@example.net', list_id: list.body.data.id, status: 'subscribed' } })
    const id = await t.send({ to: ['ok@example.net', 'permfail@example.net', 'policy@example.net', 'tempfail@example.net'] })
    await t.engine.drain()
    const rows = t.state(id)
    expect(rows.map((r) => [r.address, r.state, r.state === 'sent' ? r.last_code : r.last_enhanced])).toEqual([
      ['ok@example.net', 'sent', 250],
      ['permfail@example.net', 'bounced', '5.1.1'],
      ['policy@example.net', 'bounced', '5.7.1'],
      ['tempfail@example.net', 'deferred', '4.3.0'],
    ])
    // Why, on each row (docs/api.md "Bounce reasons"): a reputation block is not a dead address.
    const reasons = t.deps.db.$client.query('SELECT last_reason FROM message_recipients WHERE message_id = ? ORDER BY id').all(id) as Array<{
      last_reason: string | null
    }>
    expect(reasons.map((r) => r.last_reason)).toEqual([null, 'user_unknown', 'spam_block', 'other'])
    // Backoff after attempt 1: 60 s with the jitter source at its middle.
    expect(rows[3]!.next_attempt_at).toBe(t.deps.clock.now() + 60_000)
    expect(sink.messages.map((m) => m.rcptTo)).toEqual([['ok@example.net']])
    const suppressed = await t.call('GET', '/api/v2/suppressions?search=permfail', { key: t.admin.key })
    expect(suppressed.body.data.map((s: { value: string; reason: string }) => [s.value, s.reason])).toEqual([['permfail@example.net', 'hard_bounce']])
    const contact = await t.call('GET', `/api/v2/contacts?list_id=${list.body.data.id}`, { key: t.admin.key })
    expect(contact.body.data[0].status).toBe('bounced')
    // The hard-bounced address is now suppressed for the next send.
    const again = await t.call('POST', '/v1/send', { key: t.admin.key, body: { from: 'ada@example.com', to: 'permfail@example.net', subject: 'x', text: 'x' } })
    expect(t.state(again.body.data.id)[0]!.state).toBe('suppressed')
    await t.close()
  })

  test('deferred recipients are retried with backoff on the clock, then fail when too old', async () => {
    const t = await setup({ allow_unverified_domains: true, max_message_age_seconds: 600 })
    const id = await t.send({ to: ['tempfail@example.net', 'greylist@example.net'] })
    await t.engine.drain()
    expect(t.state(id).map((r) => r.state)).toEqual(['deferred', 'deferred'])
    await t.engine.drain() // nothing is due yet at the same clock time
    expect(t.state(id).map((r) => r.attempts)).toEqual([1, 1])
    t.deps.clock.advance(60_000)
    await t.engine.drain()
    // The greylist lets the second try through; tempfail stays deferred with a doubled delay.
    expect(t.state(id).map((r) => [r.state, r.attempts])).toEqual([
      ['deferred', 2],
      ['sent', 2],
    ])
    expect(t.state(id)[0]!.next_attempt_at).toBe(t.deps.clock.now() + 120_000)
    while (t.state(id)[0]!.state === 'deferred') {
      t.deps.clock.advance(t.state(id)[0]!.next_attempt_at! - t.deps.clock.now())
      await t.engine.drain()
    }
    expect(t.state(id)[0]!.state).toBe('failed')
    expect(t.kinds(id).filter((k) => k !== 'message.queued')).toEqual([
      'message.deferred',
      'message.deferred',
      'message.deferred',
      'message.sent',
      'message.deferred',
      'message.deferred',
      'message.failed',
    ])
    await t.close()
  })

  test('a deferred recipient is retried until the maximum age has passed, with a last attempt at the limit', async () => {
    const t = await setup({ allow_unverified_domains: true, max_message_age_seconds: 600 })
    const start = t.deps.clock.now()
    const id = await t.send({ to: ['tempfail@example.net'] })
    const attemptsAt: number[] = []
    await t.engine.drain()
    attemptsAt.push(t.deps.clock.now() - start)
    while (t.state(id)[0]!.state === 'deferred') {
      t.deps.clock.advance(t.state(id)[0]!.next_attempt_at! - t.deps.clock.now())
      await t.engine.drain()
      attemptsAt.push(t.deps.clock.now() - start)
    }
    // Backoff 1, 2, 4 minutes; the next (8 minutes) would pass the limit, so it is moved to it.
    expect(attemptsAt).toEqual([0, 60_000, 180_000, 420_000, 600_000])
    expect(t.state(id)[0]).toMatchObject({ state: 'failed', attempts: 5 })
    const failed = t.deps.db.$client.query(`SELECT data FROM events WHERE message_id = ? AND kind = 'message.failed'`).get(id) as { data: string }
    expect(JSON.parse(failed.data)).toMatchObject({ reason: 'expired', max_age_seconds: 600, attempt: 5 })
    await t.close()
  })

  test('a null MX fails at once; a domain without MX is delivered to its A record', async () => {
    const t = await setup({ allow_unverified_domains: true })
    const id = await t.send({ to: ['x@nomail.example', 'y@a-only.example'] })
    await t.engine.drain()
    expect(t.state(id).map((r) => [r.address, r.state])).toEqual([
      ['x@nomail.example', 'bounced'],
      ['y@a-only.example', 'sent'],
    ])
    await t.close()
  })

  test('the pool decides the source address: 127.0.0.2 for one pool, 127.0.0.3 for the other', async () => {
    const t = await setup({ allow_unverified_domains: true })
    const ip2 = await t.call('POST', '/api/v2/ips', { key: t.admin.key, body: { address: '127.0.0.2', hostname: 'out2.mailroom.test' } })
    const ip3 = await t.call('POST', '/api/v2/ips', { key: t.admin.key, body: { address: '127.0.0.3', hostname: 'out3.mailroom.test' } })
    expect([ip2.status, ip3.status]).toEqual([201, 201])
    const poolA = await t.call('POST', '/api/v2/ip-pools', {
      key: t.admin.key,
      body: { name: 'a', is_default: true, members: [{ ip_id: ip2.body.data.id, weight: 1 }] },
    })
    const poolB = await t.call('POST', '/api/v2/ip-pools', { key: t.admin.key, body: { name: 'b', members: [{ ip_id: ip3.body.data.id, weight: 1 }] } })
    expect([poolA.status, poolB.status]).toEqual([201, 201])
    const viaDefault = await t.send({ to: ['one@example.net'] })
    const viaB = await t.send({ to: ['two@example.net'], ip_pool_id: poolB.body.data.id })
    await t.engine.drain()
    const byRcpt = new Map(sink.messages.map((m) => [m.rcptTo[0], m]))
    expect(byRcpt.get('one@example.net')).toMatchObject({ remoteAddress: '127.0.0.2', ehlo: 'out2.mailroom.test' })
    expect(byRcpt.get('two@example.net')).toMatchObject({ remoteAddress: '127.0.0.3', ehlo: 'out3.mailroom.test' })
    expect(t.state(viaDefault)[0]!.last_ip).toBe('127.0.0.2')
    expect(t.state(viaB)[0]!.last_ip).toBe('127.0.0.3')
    await t.close()
  })

  test('a message GET shows the delivery outcome per recipient', async () => {
    const t = await setup({ allow_unverified_domains: true })
    const id = await t.send({ to: ['ok@example.net', 'permfail@example.net'] })
    await t.engine.drain()
    const r = await t.call('GET', `/api/v2/messages/${id}`, { key: t.admin.key })
    expect(r.body.data.status).toBe('sent')
    expect(r.body.data.recipients[1]).toMatchObject({
      address: 'permfail@example.net',
      state: 'bounced',
      attempts: 1,
      last_response: { code: 550, enhanced_code: '5.1.1' },
      mx: expect.any(String),
    })
    expect(r.body.data.events.map((e: { kind: string }) => e.kind)).toEqual(['message.queued', 'message.queued', 'message.sent', 'message.bounced'])
    // The sink offers STARTTLS with a self-signed certificate: encrypted, not verified, and said so.
    const tls = { version: expect.stringMatching(/^TLSv1\.[23]$/), cipher: expect.any(String), verified: false, verify_error: expect.any(String) }
    expect(r.body.data.recipients[0].tls).toMatchObject(tls)
    expect(r.body.data.events[2].data.tls).toMatchObject(tls)
    expect([r.body.data.events[2].data.tls.version]).toEqual([sink.messages[0]!.tlsProtocol])
    await t.close()
  })

  test('a relay node carries mail to its smart host, within its hourly cap; the rest waits for the next hour', async () => {
    const t = await setup({ allow_unverified_domains: true })
    const node = await t.call('POST', '/api/v2/sending-nodes', {
      key: t.admin.key,
      body: { name: 'smarthost', kind: 'relay', relay_host: '127.0.0.1', relay_port: sink.port, relay_tls: 'none', hourly_cap: 1, is_default: true },
    })
    expect(node.status, JSON.stringify(node.body)).toBe(201)
    // relay-only.example has no DNS records at all: only the relay can deliver it.
    const first = await t.send({ to: ['one@relay-only.example'] })
    const second = await t.send({ to: ['two@relay-only.example'] })
    await t.engine.drain()
    expect(t.state(first)[0]!.state).toBe('sent')
    const waiting = t.state(second)[0]!
    const nextHour = Math.floor(t.deps.clock.now() / 3600_000) * 3600_000 + 3600_000
    // Held back by the cap: not an attempt, due at the start of the next clock hour.
    expect(waiting).toMatchObject({ state: 'deferred', attempts: 0, next_attempt_at: nextHour })
    expect(sink.messages.map((m) => m.rcptTo[0])).toEqual(['one@relay-only.example'])
    t.deps.clock.set(nextHour)
    await t.engine.drain()
    expect(t.state(second)[0]!.state).toBe('sent')
    await t.close()
  })

  test('a lease that runs out puts the row back in the queue; it is then delivered', async () => {
    const t = await setup({ allow_unverified_domains: true })
    const id = await t.send({ to: ['ok@example.net'] })
    // As if a delivery had been claimed and never reported back.
    t.deps.db.$client.run(`UPDATE message_recipients SET state = 'sending', lease_until = ?, attempts = 1 WHERE message_id = ?`, [
      t.deps.clock.now() + 1000,
      id,
    ])
    expect(t.engine.requeueExpiredLeases()).toBe(0)
    await t.engine.drain()
    expect(t.state(id)[0]!.state).toBe('sending')
    t.deps.clock.advance(1001)
    expect(t.engine.requeueExpiredLeases()).toBe(1)
    await t.engine.drain()
    expect(t.state(id)[0]).toMatchObject({ state: 'sent', attempts: 2 })
    await t.close()
  })
})

describe('backoff', () => {
  test('doubles from one minute up to six hours, with +-20 % jitter', () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 0.5))).toEqual([60_000, 120_000, 240_000, 480_000])
    expect(backoffMs(30, 0.5)).toBe(6 * 3600_000)
    expect(backoffMs(1, 0)).toBe(48_000)
    expect(backoffMs(1, 0.999999)).toBeCloseTo(72_000, -1)
  })
})
