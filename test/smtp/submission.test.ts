import { unpackMessage } from '../../src/lib/stored-message'
import { afterEach, describe, expect, test } from 'bun:test'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { connect, type Socket } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import nodemailer from 'nodemailer'
import { isAscii } from 'node:buffer'
import { simpleParser } from 'mailparser'
import { createTransport } from '../../src/delivery/transport'
import { createDeliveryEngine } from '../../src/delivery/scheduler'
import { createResolver } from '../../src/lib/dns'
import { createIpRotation } from '../../src/delivery/ip-rotation'
import { AUTH_FAILURE_LIMIT, AUTH_FAILURE_WINDOW_MS, startSubmissionListener, type SubmissionListener } from '../../src/smtp/submission/server'
import { testApp } from '../support/app'
import { useMailWorld } from '../support/mail-world'
import { startScriptedSmtp } from '../support/scripted-smtp'

/**
 * The submission listener through real sockets: nodemailer (a real SMTP client) submits with
 * bridge credentials over STARTTLS; raw sockets send what no well-behaved client would (bare
 * line endings, smuggled end-of-data sequences). What is accepted is checked in the database
 * and, for the success path, delivered by the engine to a recording sink with DKIM.
 */
const world = useMailWorld({ certificate: true })
const { signer } = world
const open: Array<{ close(): unknown }> = []

afterEach(async () => {
  for (const o of open.splice(0)) await o.close()
})

/** An app with example.com verified (its records in the test DNS), a bridge for it, and the listener on a free port. */
async function setup(overrides: Parameters<typeof testApp>[0] = {}, bridgeBody: Record<string, unknown> = {}) {
  world.sink.reset()
  const t = testApp({ mx_port: world.sink.port, dns_servers: [world.zone.server], smtp_listen: { host: '127.0.0.1', port: 0 }, ...overrides })
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  const created = await call('POST', '/api/v2/sending-domains', { name: 'example.com' })
  expect(created.status).toBe(201)
  world.zone.publishRecords(created.body.data.dns_records as Array<{ type: string; name: string; value: string }>)
  expect((await call('POST', `/api/v2/sending-domains/${created.body.data.id}/verify`)).body.data.status).toBe('verified')
  const b = await call('POST', '/api/v2/bridges', { name: 'shop', domains: ['example.com'], ...bridgeBody })
  expect(b.status, JSON.stringify(b.body)).toBe(201)
  const bridge = b.body.data as { id: number; smtp: { username: string; password: string } }
  const listener = await startSubmissionListener(t.deps, { certificate: world.certificate })
  open.push(listener)
  const port = listener.port!

  /** A nodemailer transport for this listener: STARTTLS required, the self-signed certificate accepted. */
  const client = (opts: Record<string, unknown> = {}) => {
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port,
      secure: false,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
      auth: { user: bridge.smtp.username, pass: bridge.smtp.password },
      ...opts,
    } as Parameters<typeof nodemailer.createTransport>[0])
    open.push(transport)
    return transport
  }
  const messages = () =>
    (
      t.deps.db.$client.query('SELECT id, source, bridge_id, api_key_id, from_address, subject, tags, raw FROM messages ORDER BY created_at').all() as Array<{
        id: string
        source: string
        bridge_id: number | null
        api_key_id: number | null
        from_address: string
        subject: string
        tags: string
        raw: Uint8Array
      }>
    ).map((m) => ({ ...m, raw: unpackMessage(m.raw) }))
  const recipients = (id: string) =>
    t.deps.db.$client.query('SELECT address, kind, state FROM message_recipients WHERE message_id = ? ORDER BY id').all(id) as Array<{
      address: string
      kind: string
      state: string
    }>
  return { ...t, admin, call, bridge, listener, port, client, messages, recipients }
}

const mail = (extra: Record<string, unknown> = {}) => ({
  from: 'Shop <orders@example.com>',
  to: 'ada@example.net',
  subject: 'Receipt',
  text: 'Thanks for your order.',
  ...extra,
})

/** What a failed sendMail reports: the reply code and the reply line. */
async function refusal(promise: Promise<unknown>): Promise<{ code: number | undefined; response: string; command?: string }> {
  try {
    await promise
  } catch (e) {
    const err = e as { responseCode?: number; response?: string; command?: string; message: string }
    return { code: err.responseCode, response: err.response ?? err.message, command: err.command }
  }
  throw new Error('the submission was accepted')
}

/** A line-level SMTP client on a raw socket, for what nodemailer would never send. */
async function rawSession(port: number) {
  const socket: Socket = connect(port, '127.0.0.1')
  open.push({ close: () => socket.destroy() })
  let buffer = ''
  const waiting: Array<() => void> = []
  socket.on('data', (d) => {
    buffer += d.toString('latin1')
    for (const w of waiting.splice(0)) w()
  })
  /** The next complete reply (all lines of a multi-line one). */
  const read = async (): Promise<{ code: number; text: string }> => {
    for (;;) {
      const m = /^(?:\d{3}-[^\r\n]*\r\n)*(\d{3}) [^\r\n]*\r\n/.exec(buffer)
      if (m) {
        buffer = buffer.slice(m[0].length)
        return { code: Number(m[1]), text: m[0].trimEnd() }
      }
      await new Promise<void>((resolve) => waiting.push(resolve))
    }
  }
  const send = (line: string) => {
    socket.write(`${line}\r\n`)
    return read()
  }
  const write = (bytes: string) => socket.write(Buffer.from(bytes, 'latin1'))
  expect((await read()).code).toBe(220)
  return { send, write, read, socket }
}

/** A raw session authenticated in plaintext (the test enables smtp_plain_auth_loopback), with MAIL, RCPT and DATA done. */
async function rawData(port: number, user: string, pass: string) {
  const s = await rawSession(port)
  expect((await s.send('EHLO client.test')).code).toBe(250)
  expect((await s.send(`AUTH PLAIN ${Buffer.from(`\0${user}\0${pass}`).toString('base64')}`)).code).toBe(235)
  const begin = async () => {
    expect((await s.send('MAIL FROM:<orders@example.com>')).code).toBe(250)
    expect((await s.send('RCPT TO:<ada@example.net>')).code).toBe(250)
    expect((await s.send('DATA')).code).toBe(354)
  }
  await begin()
  return { ...s, begin }
}

const HEAD = 'From: orders@example.com\r\nTo: ada@example.net\r\nSubject: Raw\r\n\r\n'

describe('smtp submission', () => {
  test('accepted through STARTTLS, committed before the 250, then delivered to the MX with a DKIM signature', async () => {
    const t = await setup()
    const info = await t
      .client()
      .sendMail(mail({ cc: 'bob@example.net', bcc: 'carol@example.net', headers: { 'X-Mailroom-Tags': 'receipt, shop', 'X-Custom': 'kept' } }))
    const id = /^250 2\.6\.0 Queued as (\S+)$/.exec(info.response)?.[1]
    expect(id, info.response).toBeDefined()
    // The 250 came after the commit: the rows are there the moment the client has its answer.
    const [stored] = t.messages()
    expect(stored).toMatchObject({ id, source: 'smtp', bridge_id: t.bridge.id, from_address: 'orders@example.com', subject: 'Receipt' })
    expect(JSON.parse(stored!.tags)).toEqual(['receipt', 'shop'])
    const raw = Buffer.from(stored!.raw).toString()
    expect(raw).toContain('X-Custom: kept')
    expect(raw).not.toMatch(/^X-Mailroom-Tags:/im)
    expect(raw).not.toMatch(/^Bcc:/im)
    expect(t.recipients(id!)).toEqual([
      { address: 'ada@example.net', kind: 'to', state: 'queued' },
      { address: 'bob@example.net', kind: 'cc', state: 'queued' },
      { address: 'carol@example.net', kind: 'bcc', state: 'queued' },
    ])
    expect((await t.call('GET', `/api/v2/bridges/${t.bridge.id}`)).body.data.counts.accepted).toBe(1)

    const transport = createTransport({
      resolver: createResolver(t.deps.config.dns_servers),
      mxPort: world.sink.port,
      totalConcurrency: 4,
      destinationConcurrency: 4,
      log: t.deps.log,
      ehlo: t.deps.config.hostname,
    })
    const engine = createDeliveryEngine(t.deps, { transport, signer, rotation: createIpRotation(t.deps), commits: t.deps.commits, random: () => 0.5 })
    await engine.drain()
    await transport.close()
    expect(t.recipients(id!).map((r) => r.state)).toEqual(['sent', 'sent', 'sent'])
    const [got] = world.sink.messages
    expect(got!.rcptTo.sort()).toEqual(['ada@example.net', 'bob@example.net', 'carol@example.net'])
    expect(got!.raw.toString()).toContain('Thanks for your order.')
    const verified = await dkimVerify(got!.raw, { resolver: createResolver([world.zone.server]).resolve as never })
    expect(verified.results.map((r) => r.status?.result)).toEqual(['pass'])
    expect(verified.results[0]!.signingDomain).toBe('example.com')
  })

  test('the implicit-TLS port accepts too, and the greeting and EHLO carry the host name, SIZE and only PLAIN and LOGIN', async () => {
    const t = await setup({ smtp_tls_listen: { host: '127.0.0.1', port: 0 } })
    expect(t.listener.tlsPort).toBeGreaterThan(0)
    const info = await t.client({ port: t.listener.tlsPort, secure: true, requireTLS: false }).sendMail(mail())
    expect(info.response).toMatch(/^250 2\.6\.0 Queued as /)

    const s = await rawSession(t.port)
    const ehlo = await s.send('EHLO client.test')
    expect(ehlo.text).toStartWith('250-mailroom.test')
    expect(ehlo.text).toMatch(new RegExp(`^250[- ]SIZE ${t.deps.config.smtp_max_message_bytes}\r?$`, 'm'))
    expect(ehlo.text).toContain('STARTTLS')
    expect(ehlo.text).toMatch(/AUTH PLAIN LOGIN\r?$/m)
    expect(ehlo.text).not.toContain('REQUIRETLS')
  })

  test('no AUTH: 530 at MAIL FROM, nothing queued (never an open relay)', async () => {
    const t = await setup()
    const r = await refusal(t.client({ auth: undefined }).sendMail(mail()))
    expect(r.code).toBe(530)
    expect(r.response).toContain('5.7.0')
    expect(t.messages()).toHaveLength(0)
  })

  test('wrong password and unknown user: 535 5.7.8, for PLAIN and LOGIN', async () => {
    const t = await setup()
    for (const method of ['PLAIN', 'LOGIN']) {
      const r = await refusal(t.client({ authMethod: method, auth: { user: t.bridge.smtp.username, pass: 'wrong' } }).sendMail(mail()))
      expect([r.code, r.response]).toEqual([535, '535 5.7.8 Authentication credentials invalid'])
    }
    const unknown = await refusal(t.client({ auth: { user: 'br_nobody', pass: t.bridge.smtp.password } }).sendMail(mail()))
    expect(unknown.code).toBe(535)
    const login = await t.client({ authMethod: 'LOGIN' }).sendMail(mail())
    expect(login.response).toMatch(/^250 /)
    expect(t.messages()).toHaveLength(1)
  })

  test('AUTH over plaintext is refused (538) unless the client is on loopback and the operator allowed it', async () => {
    const t = await setup()
    const r = await refusal(t.client({ ignoreTLS: true, requireTLS: false }).sendMail(mail()))
    expect(r.code).toBe(538)
    expect(t.messages()).toHaveLength(0)

    const loose = await setup({ smtp_plain_auth_loopback: true })
    const info = await loose.client({ ignoreTLS: true, requireTLS: false }).sendMail(mail())
    expect(info.response).toMatch(/^250 /)
  })

  test("the bridge's IP allowlist applies at AUTH", async () => {
    const t = await setup({}, { allowed_ips: ['192.0.2.0/24'] })
    const r = await refusal(t.client().sendMail(mail()))
    expect([r.code, r.response]).toEqual([535, '535 5.7.1 This bridge may not be used from your address'])
    const ok = await setup({}, { allowed_ips: ['127.0.0.0/8'] })
    expect((await ok.client().sendMail(mail())).response).toMatch(/^250 /)
  })

  test("a MAIL FROM or From outside the bridge's domains: 550 5.7.1", async () => {
    const t = await setup({ allow_unverified_domains: true })
    const envelope = await refusal(t.client().sendMail(mail({ envelope: { from: 'orders@other.example', to: ['ada@example.net'] } })))
    expect(envelope.code).toBe(550)
    expect(envelope.response).toStartWith('550 5.7.1 ')
    const header = await refusal(
      t.client().sendMail(mail({ from: 'CEO <ceo@other.example>', envelope: { from: 'orders@example.com', to: ['ada@example.net'] } })),
    )
    expect(header.code).toBe(550)
    expect(header.response).toStartWith('550 5.7.1 This sender may not send from other.example')
    const nullSender = await refusal(t.client().sendMail(mail({ envelope: { from: '', to: ['ada@example.net'] } })))
    expect(nullSender.code).toBe(550)
    expect(t.messages()).toHaveLength(0)
  })

  test('a Sender header is refused as on the send API (550 5.6.0), whatever its case or domain; nothing is queued', async () => {
    const t = await setup()
    const foreign = await refusal(t.client().sendMail(mail({ sender: 'CEO <ceo@bank.example>' })))
    expect(foreign.code).toBe(550)
    expect(foreign.response).toStartWith('550 5.6.0 The message has a header that is not accepted.')
    expect(foreign.response).toContain('Sender would name a mailbox other than the checked From')
    const lower = await refusal(t.client().sendMail(mail({ headers: { sender: 'orders@example.com' } })))
    expect(lower.code).toBe(550)
    expect(t.messages()).toHaveLength(0)
    // The send API refuses it with the same words, from the same rule.
    const api = await t.call('POST', '/v1/emails', { ...mail({ to: ['ada@example.net'] }), headers: { Sender: 'ceo@bank.example' } })
    expect(api.status).toBe(422)
    expect(foreign.response).toContain(api.body.error.details['headers.Sender'][0])
    // Without it the same message goes through.
    await t.client().sendMail(mail())
    expect(t.messages()).toHaveLength(1)
  })

  test('oversized: 552 5.3.4 at MAIL when SIZE is declared, and after DATA when it is not', async () => {
    const t = await setup({ smtp_max_message_bytes: 2000, smtp_plain_auth_loopback: true })
    const big = mail({ text: 'x'.repeat(3000) })
    const declared = await refusal(t.client().sendMail(big))
    expect(declared.code).toBe(552)
    expect(declared.response).toContain('5.3.4')

    const s = await rawData(t.port, t.bridge.smtp.username, t.bridge.smtp.password)
    s.write(`${HEAD}${'y'.repeat(78)}\r\n`.repeat(40) + '.\r\n')
    const reply = await s.read()
    expect(reply.code).toBe(552)
    expect(reply.text).toContain('5.3.4')
    expect(t.messages()).toHaveLength(0)
  })

  test('too many recipients: 452 4.5.3 for those past the limit', async () => {
    const t = await setup({ smtp_max_recipients: 2 })
    const info = await t.client().sendMail(mail({ to: ['a@example.net', 'b@example.net', 'c@example.net'] }))
    expect(info.accepted).toEqual(['a@example.net', 'b@example.net'])
    expect(info.rejected).toEqual(['c@example.net'])
    const err = (info as unknown as { rejectedErrors: Array<{ responseCode: number; response: string }> }).rejectedErrors[0]!
    expect(err.responseCode).toBe(452)
    expect(err.response).toContain('4.5.3')
    const [stored] = t.messages()
    expect(t.recipients(stored!.id).map((r) => r.address)).toEqual(['a@example.net', 'b@example.net'])
  })

  test('REQUIRETLS is refused (555), as delivery does not enforce it', async () => {
    const t = await setup()
    const s = await rawSession(t.port)
    await s.send('EHLO client.test')
    expect((await s.send('STARTTLS')).code).toBe(220)
    // REQUIRETLS is only valid over TLS (RFC 8689 section 4.1), so the session is upgraded first.
    const secure = tlsConnect({ socket: s.socket, rejectUnauthorized: false })
    await new Promise<void>((resolve) => secure.once('secureConnect', () => resolve()))
    open.push({ close: () => secure.destroy() })
    let buffer = ''
    const say = (line: string) =>
      new Promise<string>((resolve) => {
        const check = () => {
          const m = /^(?:\d{3}-[^\r\n]*\r\n)*\d{3} [^\r\n]*\r\n/.exec(buffer)
          if (!m) return void secure.once('data', (d) => ((buffer += d.toString()), check()))
          buffer = buffer.slice(m[0].length)
          resolve(m[0].trimEnd())
        }
        secure.write(`${line}\r\n`)
        check()
      })
    expect(await say('EHLO client.test')).not.toContain('REQUIRETLS')
    expect(await say(`AUTH PLAIN ${Buffer.from(`\0${t.bridge.smtp.username}\0${t.bridge.smtp.password}`).toString('base64')}`)).toStartWith('235')
    expect(await say('MAIL FROM:<orders@example.com> REQUIRETLS')).toBe('555 5.5.4 REQUIRETLS is not supported here')
    expect(await say('MAIL FROM:<orders@example.com>')).toStartWith('250')
  })

  test('SMTPUTF8 is not offered, and its parameter is refused (555), as UTF-8 local parts are not supported', async () => {
    const t = await setup({ smtp_plain_auth_loopback: true })
    const s = await rawSession(t.port)
    const ehlo = await s.send('EHLO client.test')
    expect(ehlo.code).toBe(250)
    expect(JSON.stringify(ehlo)).not.toContain('SMTPUTF8')
    expect(JSON.stringify(ehlo)).toContain('8BITMIME')
    expect((await s.send(`AUTH PLAIN ${Buffer.from(`\0${t.bridge.smtp.username}\0${t.bridge.smtp.password}`).toString('base64')}`)).code).toBe(235)
    expect(await s.send('MAIL FROM:<orders@example.com> SMTPUTF8')).toEqual({ code: 555, text: '555 5.5.4 SMTPUTF8 is not supported here' })
    expect((await s.send('MAIL FROM:<orders@example.com>')).code).toBe(250)
  })

  // Each variant would end the message early at a lenient later hop and turn the rest into
  // a second, forged transaction. They must all be refused whole, with nothing queued.
  const SMUGGLED = 'MAIL FROM:<ceo@example.com>\r\nRCPT TO:<victim@example.net>\r\nDATA\r\nFrom: ceo@example.com\r\nSubject: forged\r\n\r\nPay now\r\n'
  const variants: Array<[string, string]> = [
    ['bare LF in a line', `${HEAD}one\ntwo\r\n.\r\n`],
    ['bare CR in a line', `${HEAD}one\rtwo\r\n.\r\n`],
    ['<LF>.<LF>', `${HEAD}hello\n.\n${SMUGGLED}.\r\n`],
    ['<CR>.<LF>', `${HEAD}hello\r.\n${SMUGGLED}.\r\n`],
    ['<LF>.<CR><LF>', `${HEAD}hello\n.\r\n${SMUGGLED}.\r\n`],
    ['<CR><LF>.<LF>', `${HEAD}hello\r\n.\n${SMUGGLED}.\r\n`],
    ['<CR>.<CR><LF>', `${HEAD}hello\r.\r\n${SMUGGLED}.\r\n`],
    ['<CR><LF>.<CR>', `${HEAD}hello\r\n.\r${SMUGGLED}.\r\n`],
    ['a header ending in bare LF', `From: orders@example.com\nTo: ada@example.net\r\nSubject: x\r\n\r\nbody\r\n.\r\n`],
  ]
  test.each(variants)('smuggling: %s is refused with 554 5.6.0 and nothing is queued', async (_name, data) => {
    const t = await setup({ smtp_plain_auth_loopback: true })
    const s = await rawData(t.port, t.bridge.smtp.username, t.bridge.smtp.password)
    s.write(data)
    const reply = await s.read()
    expect(reply.text).toStartWith('554 5.6.0 Bare CR or LF')
    // No second transaction ran: the next reply is to our own next command.
    expect((await s.send('NOOP')).code).toBe(250)
    expect(t.messages()).toHaveLength(0)
    // The session is still usable for a well-formed message.
    await s.begin()
    s.write(`${HEAD}fine\r\n.\r\n`)
    expect((await s.read()).text).toMatch(/^250 2\.6\.0 Queued as /)
    expect(t.messages().map((m) => m.subject)).toEqual(['Raw'])
  })

  test('an 8-bit body goes to an MX without 8BITMIME as quoted-printable, signed after the conversion (RFC 6152 section 3)', async () => {
    const t = await setup({ smtp_plain_auth_loopback: true })
    const s = await rawData(t.port, t.bridge.smtp.username, t.bridge.smtp.password)
    const body = 'Grüße aus Köln\r\n'
    s.write(
      Buffer.from(`From: orders@example.com\r\nTo: ada@example.net\r\nSubject: Raw\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}.\r\n`).toString(
        'latin1',
      ),
    )
    expect((await s.read()).text).toMatch(/^250 2\.6\.0 Queued as /)
    const mx = await startScriptedSmtp({ extensions: ['PIPELINING'] })
    open.push(mx)
    const transport = createTransport({
      resolver: createResolver(t.deps.config.dns_servers),
      mxPort: mx.port,
      totalConcurrency: 4,
      destinationConcurrency: 4,
      log: t.deps.log,
      ehlo: t.deps.config.hostname,
    })
    const engine = createDeliveryEngine(t.deps, { transport, signer, rotation: createIpRotation(t.deps), commits: t.deps.commits, random: () => 0.5 })
    await engine.drain()
    await transport.close()
    const [got] = mx.transactions
    expect(isAscii(got!.data)).toBe(true)
    expect(got!.data.toString()).toContain('Content-Transfer-Encoding: quoted-printable')
    expect((await simpleParser(got!.data)).text).toBe('Grüße aus Köln\n')
    const verified = await dkimVerify(got!.data, { resolver: createResolver([world.zone.server]).resolve as never })
    expect(verified.results.map((r) => r.status?.result)).toEqual(['pass'])
  })

  describe('DSNs for submitted mail (RFC 3464, RFC 5321 6.1)', () => {
    /** Submits one message over SMTP (envelope sender orders@example.com) and runs the engine until nothing is due. */
    async function submitAndDeliver(t: Awaited<ReturnType<typeof setup>>, to: string[]) {
      await t.client().sendMail({ ...mail({ to, subject: 'Order 42' }), envelope: { from: 'orders@example.com', to } })
      const transport = createTransport({
        resolver: createResolver(t.deps.config.dns_servers),
        mxPort: world.sink.port,
        totalConcurrency: 4,
        destinationConcurrency: 4,
        log: t.deps.log,
        ehlo: t.deps.config.hostname,
      })
      const engine = createDeliveryEngine(t.deps, { transport, signer, rotation: createIpRotation(t.deps), commits: t.deps.commits, random: () => 0.5 })
      return {
        engine,
        drain: async () => {
          await engine.drain()
        },
        close: () => transport.close(),
      }
    }
    const dsns = (t: Awaited<ReturnType<typeof setup>>) =>
      (
        t.deps.db.$client.query(`SELECT id, mail_from, raw FROM messages WHERE source = 'dsn' ORDER BY created_at`).all() as Array<{
          id: string
          mail_from: string
          raw: Uint8Array
        }>
      ).map((m) => ({ ...m, raw: unpackMessage(m.raw) }))

    test('a bounced recipient gets a DSN to the envelope sender, sent with the null reverse-path', async () => {
      const t = await setup()
      // The DSN's own destination: example.com's MX is the sink.
      world.zone.setZone('example.com', { MX: [{ exchange: 'mx.example.net', priority: 10 }] })
      const run = await submitAndDeliver(t, ['ada@example.net', 'permfail@example.net'])
      await run.drain()
      await run.close()
      const [dsn] = dsns(t)
      expect(dsn!.mail_from).toBe('')
      const delivered = world.sink.messages.find((m) => m.rcptTo.includes('orders@example.com'))!
      expect(delivered.mailFrom).toBe('')
      const parsed = await simpleParser(delivered.raw)
      expect(parsed.headers.get('auto-submitted')).toBe('auto-replied')
      expect(String(parsed.headers.get('content-type') && (parsed.headers.get('content-type') as { value: string }).value)).toBe('multipart/report')
      const raw = delivered.raw.toString()
      expect(raw).toContain('report-type=delivery-status')
      expect(raw).toContain(
        'Final-Recipient: rfc822; permfail@example.net\r\nAction: failed\r\nStatus: 5.1.1\r\nRemote-MTA: dns; mx.example.net\r\nDiagnostic-Code: smtp; 550',
      )
      expect(raw).not.toContain('Final-Recipient: rfc822; ada@example.net')
      expect(raw).toMatch(/Content-Type: text\/rfc822-headers[\s\S]*Subject: Order 42/)
    })

    test('a DSN that cannot be delivered produces no DSN of its own (loop protection)', async () => {
      const t = await setup()
      world.zone.setZone('example.com', undefined) // NXDOMAIN: the DSN itself bounces
      const run = await submitAndDeliver(t, ['permfail@example.net'])
      await run.drain()
      await run.close()
      expect(dsns(t)).toHaveLength(1)
      const states = t.deps.db.$client.query(`SELECT state FROM message_recipients WHERE message_id = ?`).all(dsns(t)[0]!.id) as Array<{ state: string }>
      expect(states.map((r) => r.state)).toEqual(['bounced'])
    })

    test('an expired recipient gets a DSN with its last status', async () => {
      const t = await setup({ max_message_age_seconds: 120 })
      world.zone.setZone('example.com', undefined)
      const run = await submitAndDeliver(t, ['tempfail@example.net'])
      for (let i = 0; i < 4 && dsns(t).length === 0; i++) {
        await run.drain()
        t.deps.clock.advance(60_000)
      }
      await run.close()
      const raw = Buffer.from(dsns(t)[0]!.raw).toString()
      expect(raw).toContain('Final-Recipient: rfc822; tempfail@example.net\r\nAction: failed\r\nStatus: 4.3.0')
      expect(raw).toContain('delivery time expired')
    })

    test('none when the bridge has send_dsn off, and none for API mail', async () => {
      const t = await setup({}, { send_dsn: false })
      expect(t.bridge).toMatchObject({ send_dsn: false })
      const run = await submitAndDeliver(t, ['permfail@example.net'])
      const api = await t.call('POST', '/v1/emails', { from: 'orders@example.com', to: ['permfail@example.net'], subject: 'API', text: 'x' })
      expect(api.status, JSON.stringify(api.body)).toBe(202)
      await run.drain()
      await run.close()
      expect(t.deps.db.$client.query(`SELECT count(*) AS n FROM message_recipients WHERE state = 'bounced'`).get()).toEqual({ n: 2 })
      expect(dsns(t)).toHaveLength(0)
    })
  })

  test('Idempotency-Key: a resubmission (new Date and Message-ID) answers the first id and queues nothing new; other content with the key is refused', async () => {
    const t = await setup()
    const headers = { 'Idempotency-Key': 'order-1234' }
    const first = await t.client().sendMail(mail({ headers }))
    const second = await t.client().sendMail(mail({ headers, date: new Date('2026-03-01T13:00:00Z') }))
    expect(second.response).toBe(first.response)
    expect(t.messages()).toHaveLength(1)
    expect(Buffer.from(t.messages()[0]!.raw).toString()).not.toMatch(/^Idempotency-Key:/im)
    const other = await refusal(t.client().sendMail(mail({ headers, text: 'Another order' })))
    expect(other.code).toBe(550)
    expect(other.response).toContain('Idempotency-Key')
    // The same message asking for other tracking is other content too.
    const tracked = await refusal(t.client().sendMail(mail({ headers: { ...headers, 'X-Mailroom-Track-Opens': 'true' } })))
    expect(tracked.code).toBe(550)
    expect(t.messages()).toHaveLength(1)
  })

  test('a non-ASCII subject is stored and shown decoded; the message keeps its encoded words', async () => {
    const t = await setup()
    const info = await t.client().sendMail(mail({ subject: 'Grüße aus Köln ✓ (order 7)' }))
    const id = /^250 2\.6\.0 Queued as (\S+)$/.exec(info.response)?.[1]
    const [stored] = t.messages()
    expect(stored!.subject).toBe('Grüße aus Köln ✓ (order 7)')
    expect(Buffer.from(stored!.raw).toString()).toMatch(/^Subject: =\?UTF-8\?/m)
    expect((await t.call('GET', `/v1/emails/${id}`)).body.data.subject).toBe('Grüße aus Köln ✓ (order 7)')
  })

  test('a suppressed recipient is accepted and recorded as suppressed, as on the send API', async () => {
    const t = await setup()
    await t.call('POST', '/api/v2/suppressions/batch', { type: 'email', reason: 'complaint', entries: ['angry@example.net'] })
    const info = await t.client().sendMail(mail({ to: ['ada@example.net', 'angry@example.net'] }))
    expect(info.response).toMatch(/^250 2\.6\.0 Queued as \S+ \(1 recipient\(s\) suppressed\)$/)
    expect(t.recipients(t.messages()[0]!.id)).toEqual([
      { address: 'ada@example.net', kind: 'to', state: 'queued' },
      { address: 'angry@example.net', kind: 'to', state: 'suppressed' },
    ])
  })

  test('a bridge quota used up: 451 4.7.1; a disabled bridge stops sessions already authenticated (421)', async () => {
    const t = await setup({ smtp_plain_auth_loopback: true }, { hourly_quota: 1 })
    const transport = t.client()
    expect((await transport.sendMail(mail())).response).toMatch(/^250 /)
    const over = await refusal(transport.sendMail(mail()))
    expect(over.code).toBe(451)
    expect(over.response).toStartWith('451 4.7.1 The hourly quota')

    const s = await rawSession(t.port)
    await s.send('EHLO client.test')
    expect((await s.send(`AUTH PLAIN ${Buffer.from(`\0${t.bridge.smtp.username}\0${t.bridge.smtp.password}`).toString('base64')}`)).code).toBe(235)
    expect((await t.call('PATCH', `/api/v2/bridges/${t.bridge.id}`, { active: false })).status).toBe(200)
    expect((await s.send('MAIL FROM:<orders@example.com>')).text).toStartWith('421 4.7.0 The bridge is disabled')
    expect(t.messages()).toHaveLength(1)
  })

  test(`failed AUTH is throttled per address: after ${AUTH_FAILURE_LIMIT} failures even the right password gets 421 until the window passes`, async () => {
    const t = await setup()
    for (let i = 0; i < AUTH_FAILURE_LIMIT; i++) {
      const r = await refusal(t.client({ auth: { user: t.bridge.smtp.username, pass: `guess-${i}` } }).sendMail(mail()))
      expect(r.code).toBe(535)
    }
    const blocked = await refusal(t.client().sendMail(mail()))
    expect(blocked.code).toBe(421)
    expect(blocked.response).toContain('4.7.0 Too many failed authentication attempts')
    expect(t.messages()).toHaveLength(0)
    t.deps.clock.advance(AUTH_FAILURE_WINDOW_MS)
    expect((await t.client().sendMail(mail())).response).toMatch(/^250 /)
  })

  test('close() says 421 to open sessions and stops listening', async () => {
    const t = await setup()
    const transport = t.client({ pool: true, maxConnections: 1 })
    await transport.sendMail(mail())
    await t.listener.close()
    const after = await refusal(transport.sendMail(mail()))
    // The pooled session was told 421 (or, having seen the 421, the client found the port closed).
    expect(after.code === 421 || /ECONNREFUSED/.test(after.response)).toBe(true)
    expect(await refusal(t.client().sendMail(mail())).then((r) => r.response)).toMatch(/ECONNREFUSED/)
    expect(t.messages()).toHaveLength(1)
  })
})
