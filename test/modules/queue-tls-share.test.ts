import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createIpRotation } from '../../src/delivery/ip-rotation'
import { createDeliveryEngine } from '../../src/delivery/scheduler'
import { createShaper } from '../../src/delivery/shaping'
import { createSignerPool } from '../../src/delivery/signer-pool'
import { createTransport } from '../../src/delivery/transport'
import { createResolver } from '../../src/lib/dns'
import { drainStats } from '../../src/modules/stats/rollup'
import { testApp } from '../support/app'
import { startDnsServer, type DnsServer } from '../support/dns-server'
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink'

/**
 * The share of TLS deliveries per provider group (issue 17) through real sockets: two recording
 * sinks, one offering STARTTLS and one not, each behind its own delivery engine on the same
 * database; gmail.com is a built-in group (no DNS needed), example.net and example.org share
 * the MX mx.example.net and so the learned group 'mx:example.net'. The statistics rollup counts
 * the message.sent events (and those with data.tls) by provider; GET /api/v2/queue and
 * GET /api/v2/stats?group_by=provider read those counters.
 */
let tlsSink: SmtpSink
let plainSink: SmtpSink
let zone: DnsServer
const signer = createSignerPool({ size: 1 })

beforeAll(async () => {
  tlsSink = await startSmtpSink({ host: '127.0.0.1' })
  plainSink = await startSmtpSink({ host: '127.0.0.1', starttls: false })
  zone = await startDnsServer({
    zones: {
      'gmail.com': { MX: [{ exchange: 'mx.gmail.test', priority: 10 }] },
      'mx.gmail.test': { A: ['127.0.0.1'] },
      'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] },
      'example.org': { MX: [{ exchange: 'mx.example.net', priority: 10 }] },
      'mx.example.net': { A: ['127.0.0.1'] },
      'slow.example': { MX: [{ exchange: 'mx.slow.example', priority: 10 }] },
      'mx.slow.example': { A: ['127.0.0.1'] },
    },
  })
})

afterAll(async () => {
  await tlsSink.close()
  await plainSink.close()
  await zone.close()
  await signer.close()
})

async function setup() {
  tlsSink.reset()
  plainSink.reset()
  const t = testApp({ dns_servers: [zone.server], allow_unverified_domains: true })
  const admin = t.makeKey()
  const transports: Array<ReturnType<typeof createTransport>> = []
  const engineTo = (sink: SmtpSink) => {
    const transport = createTransport({
      resolver: createResolver(t.deps.config.dns_servers),
      mxPort: sink.port,
      totalConcurrency: 4,
      destinationConcurrency: 4,
      log: t.deps.log,
      ehlo: t.deps.config.hostname,
    })
    transports.push(transport)
    const shaper = createShaper(t.deps, { mxHosts: (d) => transport.mxHosts(d) })
    return createDeliveryEngine(t.deps, { transport, signer, rotation: createIpRotation(t.deps), commits: t.deps.commits, random: () => 0.5, shaper })
  }
  const send = async (to: string) => {
    const r = await t.call('POST', '/v1/emails', { key: admin.key, body: { from: 'Ada <ada@example.com>', to: [to], subject: 'Hello', text: 'Hi' } })
    expect(r.status, JSON.stringify(r.body)).toBe(202)
  }
  const providers = async () => {
    const q = await t.call('GET', '/api/v2/queue', { key: admin.key })
    expect(q.status).toBe(200)
    return q.body.data.providers as Array<{ provider: string; sent_24h: number; tls_share: number | null; deferred: number }>
  }
  return {
    t,
    admin,
    send,
    providers,
    tlsEngine: engineTo(tlsSink),
    plainEngine: engineTo(plainSink),
    close: () => Promise.all(transports.map((x) => x.close())),
  }
}

describe('TLS share per provider', () => {
  test('the queue view and the statistics count deliveries over TLS per provider group over the last 24 hours', async () => {
    const s = await setup()
    const { t } = s
    // Over STARTTLS: two to Gmail, one to example.net.
    await s.send('a@gmail.com')
    await s.send('b@gmail.com')
    await s.send('c@example.net')
    await s.tlsEngine.drain()
    expect(tlsSink.messages).toHaveLength(3)
    expect(tlsSink.messages.every((m) => m.secure)).toBe(true)
    // In plain text (the MX offers no STARTTLS): one to Gmail, one to example.org (same MX as example.net);
    // one that waits for a retry (tempfail@): a group with mail waiting and nothing delivered.
    await s.send('d@gmail.com')
    await s.send('e@example.org')
    await s.send('tempfail@slow.example')
    await s.plainEngine.drain()
    expect(plainSink.messages).toHaveLength(2)
    expect(plainSink.messages.every((m) => !m.secure)).toBe(true)

    // Not counted before the rollup has seen the events.
    expect((await s.providers()).find((p) => p.provider === 'gmail')?.tls_share ?? null).toBeNull()
    drainStats(t.deps)
    let rows = await s.providers()
    expect(rows.find((p) => p.provider === 'gmail')).toMatchObject({ sent_24h: 3, tls_share: 0.6667 })
    expect(rows.find((p) => p.provider === 'mx:example.net')).toMatchObject({ sent_24h: 2, tls_share: 0.5 })
    expect(rows.find((p) => p.provider === 'mx:slow.example')).toMatchObject({ deferred: 1, sent_24h: 0, tls_share: null })

    // The same counters in the statistics, grouped by provider.
    const stats = await t.call('GET', '/api/v2/stats?bucket=hour&group_by=provider&kinds=message.sent,message.sent.tls,message.deferred', { key: s.admin.key })
    expect(stats.status).toBe(200)
    const totals = Object.fromEntries((stats.body.data.totals as Array<{ group: string; counts: Record<string, number> }>).map((r) => [r.group, r.counts]))
    expect(totals).toEqual({
      gmail: { 'message.sent': 3, 'message.sent.tls': 2, 'message.deferred': 0 },
      'mx:example.net': { 'message.sent': 2, 'message.sent.tls': 1, 'message.deferred': 0 },
      'mx:slow.example': { 'message.sent': 0, 'message.sent.tls': 0, 'message.deferred': 1 },
    })
    // The TLS counter is not an event: the event count (which reads the same counters) is unchanged.
    const events = await t.call('GET', '/api/v2/events?per_page=1', { key: s.admin.key })
    expect(events.body.meta.total).toBe((t.deps.db.$client.query('SELECT count(*) AS n FROM events').get() as { n: number }).n)

    // The window is the current hour and the 23 before it.
    const sentAt = t.deps.clock.now()
    t.deps.clock.set(Math.floor(sentAt / 3_600_000) * 3_600_000 + 23 * 3_600_000 + 3_599_000)
    expect((await s.providers()).find((p) => p.provider === 'gmail')).toMatchObject({ sent_24h: 3, tls_share: 0.6667 })
    t.deps.clock.advance(1_000)
    rows = await s.providers()
    expect(rows.find((p) => p.provider === 'gmail')).toBeUndefined()
    await s.close()
  })
})
