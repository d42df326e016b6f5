/**
 * The delivery engine against scripted receiving servers on loopback (issue 17, "What a
 * standards-minded MTA does"): each test here failed before its fix.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { isAscii } from 'node:buffer'
import { simpleParser } from 'mailparser'
import { downgradeTo7bit } from '../../src/delivery/downgrade'
import { createTransport, type DeliveryJob, type Transport, type TransportOptions } from '../../src/delivery/transport'
import { createResolver } from '../../src/lib/dns'
import { memoryLogger } from '../../src/lib/logger'
import { startDnsServer, type DnsServer } from '../support/dns-server'
import { startScriptedSmtp, type ScriptedServer, type ScriptedOptions } from '../support/scripted-smtp'

let dns: DnsServer
let transport: Transport | null = null
let server: ScriptedServer | null = null

beforeAll(async () => {
  dns = await startDnsServer({ zones: { 'scripted.test': { MX: [{ exchange: 'mx.scripted.test', priority: 10 }] }, 'mx.scripted.test': { A: ['127.0.0.1'] } } })
})
afterAll(async () => {
  await dns.close()
})
afterEach(async () => {
  await transport?.close()
  await server?.close()
  transport = null
  server = null
})

/** A scripted MX for scripted.test and a transport pointed at it. */
async function world(script: ScriptedOptions, overrides: Partial<TransportOptions> = {}) {
  server = await startScriptedSmtp(script)
  transport = createTransport({
    resolver: createResolver([dns.server]),
    mxPort: server.port,
    totalConcurrency: 4,
    destinationConcurrency: 2,
    log: memoryLogger(),
    ehlo: 'out.mailroom.test',
    // Long enough that only the per-command timeouts under test can fire.
    socketTimeoutMs: 60_000,
    ...overrides,
  })
  return { server, transport }
}

function job(raw = 'From: a@sender.test\r\nTo: bob@scripted.test\r\nSubject: hi\r\n\r\nhello\r\n', extra: Partial<DeliveryJob> = {}): DeliveryJob {
  return { domain: 'scripted.test', mailFrom: 'bounces@sender.test', recipients: ['bob@scripted.test'], raw: Buffer.from(raw), source: null, ...extra }
}

describe('RFC 5321 4.5.3.2 timeouts', () => {
  test('a banner slower than the connect timeout is waited for: the greeting has its own timeout', async () => {
    const w = await world({ greetingDelayMs: 600 }, { connectTimeoutMs: 150, timeouts: { greetingMs: 10_000 } })
    const [r] = await w.transport.deliver(job())
    expect(r).toMatchObject({ outcome: 'sent', code: 250 })
    expect(w.server.transactions).toHaveLength(1)
  })

  test('a banner slower than the greeting timeout is a timeout deferral', async () => {
    const w = await world({ greetingDelayMs: 5_000 }, { connectTimeoutMs: 10_000, timeouts: { greetingMs: 200 } })
    const [r] = await w.transport.deliver(job())
    expect(r).toMatchObject({ outcome: 'deferred', rule: 'timeout' })
  })

  for (const [stallOn, key] of [
    ['MAIL', 'mailMs'],
    ['RCPT', 'rcptMs'],
    ['DATA', 'dataMs'],
    ['DOT', 'dotMs'],
  ] as const) {
    test(`an unanswered ${stallOn === 'DOT' ? 'final dot' : stallOn} times out after its own timeout, not the session's`, async () => {
      const w = await world({ stallOn }, { timeouts: { [key]: 250 } })
      const [r] = await w.transport.deliver(job())
      expect(r).toMatchObject({ outcome: 'deferred', rule: 'timeout' })
    })
  }
})

describe('TLS recorded per attempt', () => {
  test('a plaintext session records no TLS', async () => {
    const w = await world({ extensions: ['PIPELINING'] })
    const [r] = await w.transport.deliver(job())
    expect(r).toMatchObject({ outcome: 'sent', tls: null })
  })
})

describe('8BITMIME (RFC 6152 section 3)', () => {
  const BOUNDARY = 'b1'
  // 8-bit bytes in a text part (UTF-8), in a binary part, and a 7-bit part that must stay as it is.
  const binary = Buffer.from([0x00, 0xff, 0x80, 0x41, 0x0d, 0x0a, 0xe9])
  const eightBit = Buffer.concat([
    Buffer.from(
      `From: a@sender.test\r\nTo: bob@scripted.test\r\nSubject: hi\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="${BOUNDARY}"\r\n\r\n` +
        `--${BOUNDARY}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nGrüße aus Köln, = sign and trailing space \r\n` +
        `--${BOUNDARY}\r\nContent-Type: application/octet-stream\r\n\r\n`,
    ),
    binary,
    Buffer.from(`\r\n--${BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nplain ascii\r\n--${BOUNDARY}--\r\n`),
  ])

  test('to a server without 8BITMIME the 7-bit form is sent: text parts quoted-printable, others base64, content intact', async () => {
    const w = await world({ extensions: ['PIPELINING'] })
    const [r] = await w.transport.deliver(job(undefined, { raw: eightBit, raw7bit: async () => downgradeTo7bit(eightBit) }))
    expect(r).toMatchObject({ outcome: 'sent' })
    const [got] = w.server.transactions
    expect(isAscii(got!.data)).toBe(true)
    expect(got!.mailFrom).not.toContain('8BITMIME')
    const text = got!.data.toString()
    expect(text).toContain('Content-Transfer-Encoding: quoted-printable\r\n\r\nGr=C3=BC=C3=9Fe aus K=C3=B6ln, =3D sign and trailing space=20\r\n')
    expect(text).toContain('Content-Type: text/plain\r\n\r\nplain ascii\r\n')
    const parsed = await simpleParser(got!.data)
    expect(parsed.text).toContain('Grüße aus Köln, = sign and trailing space \n')
    expect(parsed.attachments[0]!.content.equals(binary)).toBe(true)
  })

  test('to a server with 8BITMIME the message goes as it is, with BODY=8BITMIME', async () => {
    const w = await world({})
    const [r] = await w.transport.deliver(job(undefined, { raw: eightBit, raw7bit: async () => downgradeTo7bit(eightBit) }))
    expect(r).toMatchObject({ outcome: 'sent' })
    expect(w.server.transactions[0]!.mailFrom).toContain('BODY=8BITMIME')
    expect(w.server.transactions[0]!.data.equals(eightBit)).toBe(true)
  })

  test('without a 7-bit form, 8-bit data is not sent to a server without 8BITMIME: a content bounce', async () => {
    const w = await world({ extensions: ['PIPELINING'] })
    const [r] = await w.transport.deliver(job(undefined, { raw: eightBit }))
    expect(r).toMatchObject({ outcome: 'bounced', enhanced: '5.6.3', suppress: false })
    expect(w.server.transactions).toHaveLength(0)
  })
})
