/**
 * The delivery engine against scripted receiving servers on loopback (issue 17, "What a
 * standards-minded MTA does"): each test here failed before its fix.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
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
