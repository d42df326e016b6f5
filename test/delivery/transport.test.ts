import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import net from 'node:net'
import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'
import { createTransport, type DeliveryJob, type Transport, type TransportOptions } from '../../src/delivery/transport'
import { createResolver } from '../../src/lib/dns'
import { memoryLogger } from '../../src/lib/logger'
import { NULL_MX, startDnsServer, type DnsServer } from '../support/dns-server'
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink'

// Every MX connection goes to opts.mxPort, so the MX hosts differ by loopback address:
// 127.0.0.1 is the sink, 127.0.0.5 has nothing listening, 127.0.0.6 greets with 421, and
// 127.0.0.4 is a counting TCP proxy in front of the sink.

let dns: DnsServer
let sink: SmtpSink
let transport: Transport | null = null

const MX = (host: string, priority = 10) => ({ exchange: host, priority })

beforeAll(async () => {
  sink = await startSmtpSink({ host: '127.0.0.1' })
  dns = await startDnsServer({
    zones: {
      'direct.test': { MX: [MX('mx.direct.test')] },
      'mx.direct.test': { A: ['127.0.0.1'] },
      'other.test': { MX: [MX('mx.direct.test')] },
      'fallback.test': { MX: [MX('ok.fallback.test', 20), MX('dead.fallback.test', 10)] },
      'dead.fallback.test': { A: ['127.0.0.5'] },
      'ok.fallback.test': { A: ['127.0.0.1'] },
      'greeting.test': { MX: [MX('busy.greeting.test', 10), MX('ok.fallback.test', 20)] },
      'busy.greeting.test': { A: ['127.0.0.6'] },
      'amx.test': { A: ['127.0.0.1'] },
      'nullmx.test': { MX: [NULL_MX] },
      'proxied-a.test': { MX: [MX('proxy.test')] },
      'proxied-b.test': { MX: [MX('proxy.test')] },
      'proxy.test': { A: ['127.0.0.4'] },
      'brokentls.test': { MX: [MX('mx.brokentls.test')] },
      'mx.brokentls.test': { A: ['127.0.0.7'] },
    },
  })
})
afterAll(async () => {
  await sink.close()
  await dns.close()
})
beforeEach(() => sink.reset())
afterEach(async () => {
  await transport?.close()
  transport = null
})

function start(overrides: Partial<TransportOptions> = {}): Transport {
  transport = createTransport({
    resolver: createResolver([dns.server]),
    mxPort: sink.port,
    totalConcurrency: 10,
    destinationConcurrency: 4,
    log: memoryLogger(),
    ehlo: 'default.mailroom.test',
    connectTimeoutMs: 3000,
    ...overrides,
  })
  return transport
}

let counter = 0
function job(domain: string, locals: string[], extra: Partial<DeliveryJob> = {}): DeliveryJob {
  const n = ++counter
  return {
    domain,
    mailFrom: 'bounces@sender.test',
    recipients: locals.map((l) => `${l}@${domain}`),
    raw: Buffer.from(`From: a@sender.test\r\nTo: x@${domain}\r\nSubject: message ${n}\r\nMessage-ID: <${n}@sender.test>\r\n\r\nbody ${n}\r\n`),
    source: { address: '127.0.0.2', hostname: 'ip2.pool.test' },
    ...extra,
  }
}

/** A TCP proxy on `host`:sink.port to the sink that records the most connections open at once. */
async function startCountingProxy(host: string) {
  let open = 0
  let max = 0
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    open++
    max = Math.max(max, open)
    const upstream = net.connect(sink.port, '127.0.0.1')
    sockets.add(client).add(upstream)
    client.pipe(upstream).pipe(client)
    // Counted down on the client's FIN already: the transport frees a slot only once its
    // socket is fully closed, which comes after this proxy has seen that FIN.
    const done = () => {
      if (!sockets.delete(client)) return
      open--
      client.destroy()
      upstream.destroy()
    }
    client.on('end', done).on('close', done).on('error', done)
    upstream.on('close', done).on('error', done)
  })
  await new Promise<void>((resolve) => server.listen(sink.port, host, resolve))
  return {
    max: () => max,
    close: () => {
      for (const s of sockets) s.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe('direct delivery', () => {
  test('delivers to the MX over the bound source address with its EHLO name, STARTTLS when offered', async () => {
    const t = start()
    const message = job('direct.test', ['alice'])
    const [result] = await t.deliver(message)
    expect(result).toMatchObject({
      address: 'alice@direct.test',
      outcome: 'sent',
      rule: 'accepted',
      suppress: false,
      code: 250,
      mx: 'mx.direct.test',
      source_ip: '127.0.0.2',
    })
    const [seen] = sink.messages
    expect(seen).toMatchObject({
      remoteAddress: '127.0.0.2',
      ehlo: 'ip2.pool.test',
      secure: true,
      mailFrom: 'bounces@sender.test',
      rcptTo: ['alice@direct.test'],
    })
    expect(seen!.raw.toString()).toBe(message.raw.toString())
  })

  test('lines starting with a dot, and several messages on one connection, arrive byte for byte', async () => {
    const t = start()
    const bodies = ['.\r\n..two\r\n.three\r\nend\r\n', 'no final line ending', '8-bit caf\u00e9\r\n.\r\n']
    for (const [i, body] of bodies.entries()) {
      const message = job('direct.test', [`dots${i}`], { raw: Buffer.from(`From: a@sender.test\r\nSubject: dots ${i}\r\n\r\n${body}`) })
      const [result] = await t.deliver(message)
      expect(result!.outcome).toBe('sent')
      const seen = sink.messages.find((m) => m.rcptTo[0] === `dots${i}@direct.test`)
      // A message without a final line ending gets one (RFC 5321 4.1.1.4: the data ends with CRLF . CRLF).
      expect(seen!.raw.toString()).toBe(message.raw.toString() + (body.endsWith('\r\n') ? '' : '\r\n'))
    }
  })

  test('another source address gives another connection from that address; job.ehlo overrides; no source uses the default EHLO', async () => {
    const t = start()
    await t.deliver(job('direct.test', ['a']))
    await t.deliver(job('direct.test', ['b'], { source: { address: '127.0.0.3', hostname: 'ip3.pool.test' } }))
    await t.deliver(job('direct.test', ['c'], { ehlo: 'override.pool.test' }))
    await t.deliver(job('direct.test', ['d'], { source: null }))
    const [a, b, c, d] = sink.messages
    expect([a!.remoteAddress, b!.remoteAddress, c!.remoteAddress]).toEqual(['127.0.0.2', '127.0.0.3', '127.0.0.2'])
    expect([a!.ehlo, b!.ehlo, c!.ehlo, d!.ehlo]).toEqual(['ip2.pool.test', 'ip3.pool.test', 'override.pool.test', 'default.mailroom.test'])
    expect(new Set(sink.messages.map((m) => m.connectionId)).size).toBe(4)
  })

  test('falls back to the next MX when the first refuses the connection', async () => {
    const [result] = await start().deliver(job('fallback.test', ['bob']))
    expect(result).toMatchObject({ outcome: 'sent', mx: 'ok.fallback.test' })
    expect(sink.messages).toHaveLength(1)
  })

  test('falls back to the next MX when the first greets with 421', async () => {
    const busy = net.createServer((socket) => socket.end('421 4.3.2 Too busy, come back later\r\n'))
    await new Promise<void>((resolve) => busy.listen(sink.port, '127.0.0.6', resolve))
    try {
      const [result] = await start().deliver(job('greeting.test', ['carol']))
      expect(result).toMatchObject({ outcome: 'sent', mx: 'ok.fallback.test' })
    } finally {
      await new Promise<void>((resolve) => busy.close(() => resolve()))
    }
  })

  test('a failed STARTTLS handshake is retried once in plaintext on the same MX (opportunistic TLS)', async () => {
    // In front of the sink: answers STARTTLS itself with 220 and then garbage instead of a TLS
    // handshake; a session that does not ask for STARTTLS is passed through untouched.
    const open = new Set<net.Socket>()
    const broken = net.createServer((client) => {
      const upstream = net.connect(sink.port, '127.0.0.1')
      open.add(client).add(upstream)
      upstream.pipe(client)
      client.on('data', (chunk: Buffer) => {
        if (/^STARTTLS\r\n/im.test(chunk.toString())) {
          upstream.unpipe(client)
          upstream.destroy()
          client.end('220 2.0.0 Ready to start TLS\r\nthis is not a TLS record\r\n')
        } else upstream.write(chunk)
      })
      client.on('error', () => upstream.destroy())
      upstream.on('error', () => client.destroy())
      upstream.on('close', () => client.destroy())
    })
    await new Promise<void>((resolve) => broken.listen(sink.port, '127.0.0.7', resolve))
    try {
      const log = memoryLogger()
      const [result] = await start({ log }).deliver(job('brokentls.test', ['erin']))
      expect(result).toMatchObject({ outcome: 'sent', mx: 'mx.brokentls.test' })
      expect(sink.messages[0]!.secure).toBe(false)
      expect(log.lines.some((l) => l.level === 'warn' && /STARTTLS handshake failed/.test(l.msg))).toBe(true)
    } finally {
      for (const socket of open) socket.destroy()
      await new Promise<void>((resolve) => broken.close(() => resolve()))
    }
  })

  test('a domain without MX is delivered to its A record', async () => {
    const [result] = await start().deliver(job('amx.test', ['dave']))
    expect(result).toMatchObject({ outcome: 'sent', mx: 'amx.test' })
    expect(sink.messages[0]!.rcptTo).toEqual(['dave@amx.test'])
  })

  test('null MX and NXDOMAIN bounce at once, with suppression, without connecting', async () => {
    const t = start()
    expect(await t.deliver(job('nullmx.test', ['x', 'y']))).toMatchObject([
      { address: 'x@nullmx.test', outcome: 'bounced', rule: 'null-mx', suppress: true, enhanced: '5.1.10', code: null, mx: null },
      { address: 'y@nullmx.test', outcome: 'bounced', rule: 'null-mx', suppress: true },
    ])
    expect(await t.deliver(job('nowhere.test', ['x']))).toMatchObject([{ outcome: 'bounced', rule: 'bad-domain', suppress: true, enhanced: '5.1.2' }])
    expect(sink.messages).toHaveLength(0)
  })

  test('every MX unreachable: deferred', async () => {
    dns.setZone('alldead.test', { MX: [MX('dead.fallback.test')] })
    const [result] = await start().deliver(job('alldead.test', ['x']))
    expect(result).toMatchObject({ outcome: 'deferred', rule: 'connection', mx: 'dead.fallback.test' })
  })
})

describe('per-recipient results', () => {
  test('mixed RCPT replies: only accepted recipients get the DATA outcome', async () => {
    const results = await start().deliver(job('direct.test', ['ok', 'permfail', 'tempfail', 'policy', 'ok2']))
    expect(results.map((r) => [r.address.split('@')[0], r.outcome, r.rule, r.suppress, r.code, r.enhanced])).toEqual([
      ['ok', 'sent', 'accepted', false, 250, null],
      ['permfail', 'bounced', 'bad-mailbox', true, 550, '5.1.1'],
      ['tempfail', 'deferred', 'temporary', false, 451, '4.3.0'],
      ['policy', 'bounced', 'policy', false, 550, '5.7.1'],
      ['ok2', 'sent', 'accepted', false, 250, null],
    ])
    expect(sink.messages[0]!.rcptTo).toEqual(['ok@direct.test', 'ok2@direct.test'])
  })

  test('greylisting defers, and the retry is accepted', async () => {
    const t = start()
    expect(await t.deliver(job('direct.test', ['greylist']))).toMatchObject([{ outcome: 'deferred', rule: 'greylisted', code: 450 }])
    expect(await t.deliver(job('direct.test', ['greylist']))).toMatchObject([{ outcome: 'sent' }])
  })

  test('a disconnect during DATA defers every accepted recipient; the next message gets a new connection', async () => {
    const t = start()
    const results = await t.deliver(job('direct.test', ['ok', 'disconnect', 'permfail']))
    expect(results.map((r) => [r.address.split('@')[0], r.outcome, r.rule])).toEqual([
      ['ok', 'deferred', 'disconnect'],
      ['disconnect', 'deferred', 'disconnect'],
      ['permfail', 'bounced', 'bad-mailbox'],
    ])
    expect(sink.aborted).toHaveLength(1)
    expect(sink.messages).toHaveLength(0)
    expect(await t.deliver(job('direct.test', ['after']))).toMatchObject([{ outcome: 'sent' }])
    expect(sink.messages[0]!.connectionId).not.toBe(sink.aborted[0]!.connectionId)
  })
})

describe('connection reuse and limits', () => {
  test('several messages travel over one connection, RSET after an aborted transaction', async () => {
    const t = start()
    await t.deliver(job('direct.test', ['one']))
    // All recipients refused: the transaction ends without DATA and the next one starts with RSET.
    expect(await t.deliver(job('direct.test', ['permfail']))).toMatchObject([{ outcome: 'bounced' }])
    await t.deliver(job('direct.test', ['two']))
    // other.test shares the MX, but connections are kept per destination domain.
    await t.deliver(job('other.test', ['three']))
    await t.deliver(job('direct.test', ['four']))
    const ids = sink.messages.map((m) => m.connectionId)
    expect(ids).toHaveLength(4)
    expect(ids[0]).toBe(ids[1]!)
    expect(ids[0]).toBe(ids[3]!)
    expect(ids[2]).not.toBe(ids[0]!)
    // smtp-server numbers only the transactions that reached DATA.
    expect(sink.messages.map((m) => m.transaction)).toEqual([1, 2, 1, 3])
  })

  test('a connection is closed after maxMessagesPerConnection', async () => {
    const t = start({ maxMessagesPerConnection: 2 })
    for (const l of ['a', 'b', 'c']) await t.deliver(job('direct.test', [l]))
    const ids = sink.messages.map((m) => m.connectionId)
    expect(ids[0]).toBe(ids[1]!)
    expect(ids[2]).not.toBe(ids[0]!)
  })

  test('an idle connection closed by the server is replaced transparently', async () => {
    const t = start()
    await t.deliver(job('direct.test', ['a']))
    await sink.close()
    sink = await startSmtpSink({ host: '127.0.0.1', port: sink.port })
    expect(await t.deliver(job('direct.test', ['b']))).toMatchObject([{ outcome: 'sent' }])
  })

  test('per-destination limit: 10 concurrent jobs never use more than 2 connections at once', async () => {
    const proxy = await startCountingProxy('127.0.0.4')
    try {
      const t = start({ destinationConcurrency: 2 })
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => t.deliver(job('proxied-a.test', [`r${i}`]))))
      expect(results.flat().every((r) => r.outcome === 'sent')).toBe(true)
      expect(proxy.max()).toBe(2)
      expect(new Set(sink.messages.map((m) => m.connectionId)).size).toBe(2)
      expect(t.stats()).toMatchObject({ open: 2, idle: 2, waiting: 0 })
    } finally {
      await proxy.close()
    }
  })

  test('total limit across destinations, with idle connections of one destination closed to let another in', async () => {
    const proxy = await startCountingProxy('127.0.0.4')
    try {
      const t = start({ destinationConcurrency: 2, totalConcurrency: 3 })
      const jobs = Array.from({ length: 12 }, (_, i) => job(i % 2 ? 'proxied-a.test' : 'proxied-b.test', [`r${i}`]))
      const results = await Promise.all(jobs.map((j) => t.deliver(j)))
      expect(results.flat().every((r) => r.outcome === 'sent')).toBe(true)
      expect(proxy.max()).toBeLessThanOrEqual(3)
      expect(sink.messages).toHaveLength(12)
    } finally {
      await proxy.close()
    }
  })

  test('close() answers later jobs with a deferral', async () => {
    const t = start()
    await t.deliver(job('direct.test', ['a']))
    await t.close()
    expect(await t.deliver(job('direct.test', ['b']))).toMatchObject([{ outcome: 'deferred', response: 'transport closed' }])
  })
})

describe('relay routes', () => {
  let relay: SMTPServer
  let relayPort = 0
  const auths: string[] = []
  const received: string[] = []

  beforeAll(async () => {
    relay = new SMTPServer({
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      authMethods: ['PLAIN', 'LOGIN'],
      disableReverseLookup: true,
      logger: false,
      onAuth(auth, _session, callback) {
        auths.push(auth.username ?? '')
        if (auth.username === 'relay-user' && auth.password === 'secret') return callback(null, { user: auth.username })
        callback(Object.assign(new Error('5.7.8 Authentication credentials invalid'), { responseCode: 535 }))
      },
      onData(stream, session, callback) {
        stream.resume()
        stream.on('end', () => {
          received.push(`${session.user}:${session.envelope.rcptTo.map((r) => r.address).join(',')}`)
          callback()
        })
      },
    })
    relay.on('error', () => {})
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
    relayPort = (relay.server.address() as AddressInfo).port
  })
  afterAll(() => new Promise<void>((resolve) => relay.close(() => resolve())))

  test('AUTH over a plain relay, no DNS involved', async () => {
    const before = dns.queries.length
    const [result] = await start().deliver(
      job('anywhere.example', ['x'], { route: { kind: 'relay', host: '127.0.0.1', port: relayPort, tls: 'none', username: 'relay-user', password: 'secret' } }),
    )
    expect(result).toMatchObject({ outcome: 'sent', mx: '127.0.0.1' })
    expect(received).toContain('relay-user:x@anywhere.example')
    expect(dns.queries.length).toBe(before)
  })

  test('refused credentials defer (a configuration problem, not the recipient)', async () => {
    const [result] = await start().deliver(
      job('anywhere.example', ['y'], { route: { kind: 'relay', host: '127.0.0.1', port: relayPort, tls: 'none', username: 'relay-user', password: 'wrong' } }),
    )
    expect(result).toMatchObject({ outcome: 'deferred', rule: 'session-refused', code: 535 })
  })

  test('required STARTTLS: used when offered (certificate check can be turned off), deferred when not offered or not trusted', async () => {
    const t = start()
    const route = { kind: 'relay' as const, host: '127.0.0.1', port: sink.port, tls: 'starttls' as const }
    expect(await t.deliver(job('r.example', ['a'], { route: { ...route, verifyTls: false } }))).toMatchObject([{ outcome: 'sent' }])
    expect(sink.messages[0]!.secure).toBe(true)
    // The sink's certificate is self-signed: refused when verification is on (the default).
    expect(await t.deliver(job('r.example', ['b'], { route }))).toMatchObject([{ outcome: 'deferred', rule: 'tls' }])
    // The plain relay offers no STARTTLS.
    expect(await t.deliver(job('r.example', ['c'], { route: { ...route, port: relayPort, verifyTls: false } }))).toMatchObject([
      { outcome: 'deferred', rule: 'tls' },
    ])
    expect(sink.messages).toHaveLength(1)
  })
})
