/**
 * Outbound TLS policy (issue 17, "Guardrails") through real sockets: opportunistic STARTTLS by
 * default, a per-domain "require TLS", and MTA-STS (RFC 8461) fetched by mailauth over HTTPS
 * from a policy host on loopback (port 443, a certificate from a throwaway CA that this
 * process trusts) and enforced against the recipient's MX.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import tls from 'node:tls'
import type { AddressInfo } from 'node:net'
import { generate } from 'selfsigned'
import { SMTPServer } from 'smtp-server'
import { createMtaStsCache } from '../../src/delivery/mta-sts'
import { createTransport, type DeliveryJob, type Transport, type TransportOptions } from '../../src/delivery/transport'
import { createResolver } from '../../src/lib/dns'
import { memoryLogger } from '../../src/lib/logger'
import { startDnsServer, type DnsServer } from '../support/dns-server'
import { startScriptedSmtp, type ScriptedServer } from '../support/scripted-smtp'
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink'

const POLICY_HOST = '127.0.0.43'
const MX = (exchange: string) => ({ exchange, priority: 10 })

let dns: DnsServer
let https: HttpsServer
let policyFetches: string[] = []
let trusted: { port: number; received: string[]; close(): Promise<void> }
let untrusted: SmtpSink
let plain: ScriptedServer
let transport: Transport | null = null
let clock = 1_800_000_000_000

const POLICIES: Record<string, string> = {
  'mta-sts.sts.test': 'version: STSv1\r\nmode: enforce\r\nmx: mx.sts.test\r\nmax_age: 86400\r\n',
  'mta-sts.wrongmx.test': 'version: STSv1\r\nmode: enforce\r\nmx: mx.wrongmx.test\r\nmax_age: 86400\r\n',
  'mta-sts.testing.test': 'version: STSv1\r\nmode: testing\r\nmx: mx.testing.test\r\nmax_age: 86400\r\n',
}

beforeAll(async () => {
  const ca = await generate([{ name: 'commonName', value: 'Mailroom test CA' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  })
  const leaf = (names: string[]) =>
    generate([{ name: 'commonName', value: names[0]! }], {
      keySize: 2048,
      algorithm: 'sha256',
      ca: { key: ca.private, cert: ca.cert },
      extensions: [{ name: 'subjectAltName', altNames: names.map((value) => ({ type: 2, value })) }],
    })
  // This process trusts the throwaway CA, as a real MTA trusts the public ones.
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), ca.cert])
  const policyCert = await leaf(Object.keys(POLICIES))
  https = createHttpsServer({ key: policyCert.private, cert: policyCert.cert }, (req, res) => {
    const host = (req.headers.host ?? '').toLowerCase()
    policyFetches.push(host)
    const policy = req.url === '/.well-known/mta-sts.txt' ? POLICIES[host] : undefined
    res.writeHead(policy ? 200 : 404, { 'Content-Type': 'text/plain' }).end(policy ?? 'not found')
  })
  await new Promise<void>((resolve) => https.listen(443, POLICY_HOST, resolve))

  const mxCert = await leaf(['mx.sts.test'])
  const received: string[] = []
  const server = new SMTPServer({
    key: mxCert.private,
    cert: mxCert.cert,
    authOptional: true,
    disabledCommands: ['AUTH'],
    logger: false,
    onData(stream, session, callback) {
      stream.resume()
      stream.on('end', () => {
        received.push(session.envelope.rcptTo.map((r) => r.address).join(','))
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  trusted = { port: (server.server.address() as AddressInfo).port, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
  untrusted = await startSmtpSink({ host: '127.0.0.1' })
  plain = await startScriptedSmtp({ extensions: ['PIPELINING', '8BITMIME'] })

  const sts = (id: string) => ({ TXT: [`v=STSv1; id=${id};`] })
  dns = await startDnsServer({
    zones: {
      'sts.test': { MX: [MX('mx.sts.test')] },
      'mx.sts.test': { A: ['127.0.0.1'] },
      '_mta-sts.sts.test': sts('20261124'),
      'mta-sts.sts.test': { A: [POLICY_HOST] },
      'wrongmx.test': { MX: [MX('mx.elsewhere.test')] },
      'mx.elsewhere.test': { A: ['127.0.0.1'] },
      '_mta-sts.wrongmx.test': sts('1'),
      'mta-sts.wrongmx.test': { A: [POLICY_HOST] },
      'testing.test': { MX: [MX('mx.testing.test')] },
      'mx.testing.test': { A: ['127.0.0.1'] },
      '_mta-sts.testing.test': sts('1'),
      'mta-sts.testing.test': { A: [POLICY_HOST] },
      'plain.test': { MX: [MX('mx.plain.test')] },
      'mx.plain.test': { A: ['127.0.0.1'] },
    },
  })
})

afterAll(async () => {
  await new Promise<void>((resolve) => https.close(() => resolve()))
  await trusted.close()
  await untrusted.close()
  await plain.close()
  await dns.close()
})
afterEach(async () => {
  await transport?.close()
  transport = null
  policyFetches = []
})

function start(mxPort: number, overrides: Partial<TransportOptions> = {}): Transport {
  const resolver = createResolver([dns.server])
  transport = createTransport({
    resolver,
    mxPort,
    totalConcurrency: 4,
    destinationConcurrency: 2,
    log: memoryLogger(),
    ehlo: 'out.mailroom.test',
    connectTimeoutMs: 3000,
    mtaSts: createMtaStsCache({ resolver, now: () => clock, log: memoryLogger() }),
    ...overrides,
  })
  return transport
}

const job = (domain: string): DeliveryJob => ({
  domain,
  mailFrom: 'bounces@sender.test',
  recipients: [`bob@${domain}`],
  raw: Buffer.from(`From: a@sender.test\r\nTo: bob@${domain}\r\nSubject: hi\r\n\r\nhello\r\n`),
  source: null,
})

describe('MTA-STS (RFC 8461)', () => {
  test('enforce: delivered over STARTTLS with the certificate verified for the MX host; the policy is fetched once and cached', async () => {
    const t = start(trusted.port)
    const [first] = await t.deliver(job('sts.test'))
    expect(first).toMatchObject({ outcome: 'sent', mx: 'mx.sts.test', tls: { verified: true, verify_error: null } })
    const [second] = await t.deliver(job('sts.test'))
    expect(second).toMatchObject({ outcome: 'sent' })
    expect(trusted.received).toEqual(['bob@sts.test', 'bob@sts.test'])
    expect(policyFetches).toEqual(['mta-sts.sts.test'])
  })

  test('a cached policy is used for its max_age and fetched again once it has run out', async () => {
    const t = start(trusted.port)
    await t.deliver(job('sts.test'))
    clock += 3 * 3600_000 // past the hourly TXT check: same id, so no new fetch
    await t.deliver(job('sts.test'))
    expect(policyFetches).toEqual(['mta-sts.sts.test'])
    clock += 86_400_000 // past max_age
    const [r] = await t.deliver(job('sts.test'))
    expect(r).toMatchObject({ outcome: 'sent', tls: { verified: true } })
    expect(policyFetches).toEqual(['mta-sts.sts.test', 'mta-sts.sts.test'])
  })

  test('enforce: an MX certificate that does not verify is deferred, never sent in plaintext', async () => {
    untrusted.reset()
    const [r] = await start(untrusted.port).deliver(job('sts.test'))
    expect(r).toMatchObject({ outcome: 'deferred', rule: 'tls' })
    expect(untrusted.messages).toHaveLength(0)
  })

  test('enforce: an MX that does not offer STARTTLS is deferred', async () => {
    const before = plain.transactions.length
    const [r] = await start(plain.port).deliver(job('sts.test'))
    expect(r).toMatchObject({ outcome: 'deferred', rule: 'tls' })
    expect(plain.transactions).toHaveLength(before)
  })

  test('enforce: an MX host the policy does not name is not connected to', async () => {
    const before = plain.commands.length
    const [r] = await start(plain.port).deliver(job('wrongmx.test'))
    expect(r).toMatchObject({ outcome: 'deferred', enhanced: '4.7.5', mx: null })
    expect(r!.response).toContain('MTA-STS')
    expect(plain.commands).toHaveLength(before)
  })

  test('testing mode and domains without a policy: opportunistic, plaintext allowed', async () => {
    const t = start(plain.port)
    const results = [...(await t.deliver(job('testing.test'))), ...(await t.deliver(job('plain.test')))]
    expect(results.map((r) => [r.outcome, r.tls])).toEqual([
      ['sent', null],
      ['sent', null],
    ])
  })
})

describe('require TLS per domain', () => {
  test('a domain configured to require TLS is deferred by an MX without STARTTLS; other domains are not', async () => {
    const t = start(plain.port, { requireTlsDomains: ['plain.test'], mtaSts: undefined })
    const [required] = await t.deliver(job('plain.test'))
    expect(required).toMatchObject({ outcome: 'deferred', rule: 'tls' })
    const [other] = await t.deliver(job('testing.test'))
    expect(other).toMatchObject({ outcome: 'sent', tls: null })
  })

  test('with STARTTLS offered it is delivered encrypted, certificate not required to verify', async () => {
    untrusted.reset()
    const [r] = await start(untrusted.port, { requireTlsDomains: ['plain.test'], mtaSts: undefined }).deliver(job('plain.test'))
    expect(r).toMatchObject({ outcome: 'sent', tls: { verified: false } })
    expect(untrusted.messages[0]!.secure).toBe(true)
  })
})
