import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import SMTPConnection from 'nodemailer/lib/smtp-connection'
import { checkGuardrails } from '../../src/delivery/guardrails'
import { createIpRotation } from '../../src/delivery/ip-rotation'
import { createDeliveryEngine } from '../../src/delivery/scheduler'
import { BUSY_SPREAD_MS, createShaper, WAIT_DEPTH } from '../../src/delivery/shaping'
import { createSignerPool } from '../../src/delivery/signer-pool'
import { createTransport } from '../../src/delivery/transport'
import { createResolver } from '../../src/lib/dns'
import { tokenFromAddress } from '../../src/lib/return-path-token'
import { createAutomationRunner } from '../../src/modules/automations/runner'
import { startInboundListener } from '../../src/smtp/inbound/listener'
import { fixture, TOKENS } from '../smtp/reports/support'
import { testApp } from '../support/app'
import { startDnsServer, type DnsServer } from '../support/dns-server'
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink'
import { until } from '../support/server-process'

/**
 * Traffic shaping, warm-up and auto-pause through real sockets: the engine with its shaper
 * resolves example.net through the loopback DNS server (provider group 'mx:example.net') and
 * delivers to the recording sink, which answers ratelimit@ with Gmail's 421 4.7.28 and
 * listed@ with a Spamhaus block. The clock is fixed; each drain() delivers what is due.
 */
let sink: SmtpSink
let zone: DnsServer
const signer = createSignerPool({ size: 1 })
const GROUP = 'mx:example.net'

beforeAll(async () => {
  sink = await startSmtpSink({ host: '127.0.0.1' })
  zone = await startDnsServer({
    zones: {
      'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] },
      'mx.example.net': { A: ['127.0.0.1'] },
      // Same MX, so the same group; a second domain for a second permfail@ (the first is suppressed).
      'example.org': { MX: [{ exchange: 'mx.example.net', priority: 10 }] },
      // The server's host name: the SPF check of a verified sending domain without pool IPs resolves it.
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
  const t = testApp({ mx_port: sink.port, dns_servers: [zone.server], max_message_age_seconds: 86_400 * 3, allow_unverified_domains: true, ...overrides })
  const admin = t.makeKey()
  const transport = createTransport({
    resolver: createResolver(t.deps.config.dns_servers),
    mxPort: sink.port,
    totalConcurrency: 32,
    destinationConcurrency: 32,
    log: t.deps.log,
    ehlo: t.deps.config.hostname,
  })
  const shaper = createShaper(t.deps, { mxHosts: (d) => transport.mxHosts(d) })
  const engine = createDeliveryEngine(t.deps, { transport, signer, rotation: createIpRotation(t.deps), commits: t.deps.commits, random: () => 0.5, shaper })
  const db = t.deps.db.$client
  const row = (id: string) =>
    db.query('SELECT state, attempts, next_attempt_at, last_code, last_ip FROM message_recipients WHERE message_id = ?').get(id) as {
      state: string
      attempts: number
      next_attempt_at: number | null
      last_code: number | null
      last_ip: string | null
    }
  const pair = (ip = '') =>
    db.query('SELECT state, rate_per_minute, hold_until, reason FROM shaping_states WHERE provider = ? AND ip = ?').get(GROUP, ip) as {
      state: string
      rate_per_minute: number | null
      hold_until: number | null
      reason: string | null
    } | null
  const send = async (to: string, extra: Record<string, unknown> = {}) => {
    const r = await t.call('POST', '/v1/emails', { key: admin.key, body: { from: 'Ada <ada@example.com>', to: [to], subject: 'Hello', text: 'Hi', ...extra } })
    expect(r.status, JSON.stringify(r.body)).toBe(202)
    return r.body.data.id as string
  }
  const ip = async (address: string) => {
    const r = await t.call('POST', '/api/v2/ips', { key: admin.key, body: { address, hostname: `out${address.split('.').pop()}.mailroom.test` } })
    expect(r.status).toBe(201)
    return r.body.data.id as number
  }
  const pool = async (name: string, ipIds: number[], isDefault = false) => {
    const r = await t.call('POST', '/api/v2/ip-pools', {
      key: admin.key,
      body: { name, is_default: isDefault, members: ipIds.map((ip_id) => ({ ip_id, weight: 1 })) },
    })
    expect(r.status).toBe(201)
    return r.body.data.id as number
  }
  const broadcast = (name: string, poolId: number | null, status = 'sending') =>
    Number(
      db
        .prepare(
          `INSERT INTO broadcasts (name, status, from_address, subject, pool_id, archive_id, created_at, updated_at) VALUES (?, ?, 'Ada <ada@example.com>', 'Hi', ?, ?, 0, 0)`,
        )
        .run(name, status, poolId, `arch-${name}`).lastInsertRowid,
    )
  const broadcastStatus = (id: number) =>
    db.query('SELECT status, status_reason FROM broadcasts WHERE id = ?').get(id) as { status: string; status_reason: string | null }
  const alerts = () =>
    (db.query(`SELECT data FROM events WHERE kind = 'deliverability.alert' ORDER BY id`).all() as Array<{ data: string }>).map(
      (e) => JSON.parse(e.data) as Record<string, any>,
    )
  const sentFrom = (address: string) => sink.messages.filter((m) => m.remoteAddress === address).length
  return { ...t, admin, engine, row, pair, send, ip, pool, broadcast, broadcastStatus, alerts, sentFrom, db, close: () => transport.close() }
}

describe('traffic shaping', () => {
  test('a 421 rate reply halves the pair rate and holds it; sustained success raises it back to the ceiling', async () => {
    const t = await setup({ shaping_limits: { other: { per_minute: 40 } } })
    const start = t.deps.clock.now()
    const limited = await t.send('ratelimit@example.net')
    await t.engine.drain()
    expect(t.row(limited)).toMatchObject({ state: 'deferred', last_code: 421 })
    expect(t.pair()).toMatchObject({ state: 'throttled', rate_per_minute: 20, hold_until: start + 60_000 })
    expect(t.pair()!.reason).toContain('4.7.28')
    // The retry of that recipient would throttle again; take it out of the way.
    t.db.prepare(`UPDATE message_recipients SET state = 'failed', next_attempt_at = NULL WHERE message_id = ?`).run(limited)

    // During the hold nothing leaves for the group: the row waits without spending an attempt.
    const held = await t.send('first@example.net')
    await t.engine.drain()
    expect(t.row(held)).toMatchObject({ state: 'deferred', attempts: 0, next_attempt_at: start + 60_000 })
    expect(sink.messages).toHaveLength(0)
    const q = await t.call('GET', '/api/v2/queue', { key: t.admin.key })
    expect(q.status).toBe(200)
    expect(q.body.data.pairs).toContainEqual(
      expect.objectContaining({ provider: GROUP, ip: null, state: 'throttled', rate_per_minute: 20, ceiling_per_minute: 40 }),
    )
    expect(q.body.data.providers).toContainEqual(expect.objectContaining({ provider: GROUP, deferred: 1, state: 'throttled' }))

    // After the hold: 20 a minute, so 20 of 26 leave now, the rest at the next minute.
    t.deps.clock.advance(60_000)
    const ids = [held]
    for (let i = 0; i < 25; i++) ids.push(await t.send(`r${i}@example.net`))
    await t.engine.drain()
    expect(sink.messages).toHaveLength(20)
    // 10 successes: 30 a minute; 20: 45, over the ceiling, so normal again.
    expect(t.pair()).toMatchObject({ state: 'normal', rate_per_minute: null, hold_until: null })
    const waiting = ids.filter((id) => t.row(id).state === 'deferred')
    expect(waiting).toHaveLength(6)
    expect(t.row(waiting[0]!).attempts).toBe(0)
    t.deps.clock.set(Math.ceil(t.deps.clock.now() / 60_000) * 60_000)
    await t.engine.drain()
    expect(ids.every((id) => t.row(id).state === 'sent')).toBe(true)
    await t.close()
  })

  test('at the connections limit a delivery waits for one in progress to end, instead of being postponed', async () => {
    const t = await setup({ shaping_limits: { other: { connections: 2 } } })
    const ids: string[] = []
    for (let i = 0; i < 10; i++) ids.push(await t.send(`c${i}@example.net`))
    await t.engine.drain()
    // The clock stands still: a postponed row would still be deferred here.
    expect(ids.map((id) => t.row(id))).toEqual(ids.map(() => expect.objectContaining({ state: 'sent', attempts: 1 })))
    expect(sink.messages).toHaveLength(10)
    expect(new Set(sink.messages.map((m) => m.connectionId)).size).toBeLessThanOrEqual(2)
    await t.close()
  })

  test('beyond WAIT_DEPTH jobs a connection, the rest are postponed without spending an attempt, in a line served at that rate', async () => {
    const t = await setup({ shaping_limits: { other: { connections: 1 } } })
    const ids: string[] = []
    for (let i = 0; i < 3 * WAIT_DEPTH; i++) ids.push(await t.send(`d${i}@example.net`))
    const start = t.deps.clock.now()
    // The destination holds its replies: the pair's one delivery stays in progress.
    const release = sink.hold()
    const drained = t.engine.drain()
    const postponed = () => ids.map((id) => t.row(id)).filter((r) => r.state === 'deferred')
    await until('the jobs beyond the waiting room are postponed', () => postponed().length === 3 * WAIT_DEPTH - 1 - WAIT_DEPTH)
    // One in flight and WAIT_DEPTH waiting in memory; the others come back from a second on,
    // WAIT_DEPTH a second, each second's together at its end (one claim and one postponing
    // transaction for them all).
    expect(postponed()).toEqual(postponed().map(() => expect.objectContaining({ attempts: 0 })))
    const times = postponed()
      .map((r) => r.next_attempt_at!)
      .sort((a, b) => a - b)
    expect(times).toEqual(times.map((_, k) => Math.ceil((start + 1000 + (k * 1000) / WAIT_DEPTH) / 1000) * 1000))
    expect(new Set(times).size).toBeLessThan(times.length)
    release()
    await drained
    // Once the pair had a free connection and nobody waiting, its line was pulled forward: all
    // delivered in the same drain with the clock standing still, each in one attempt.
    expect(ids.map((id) => t.row(id))).toEqual(ids.map(() => expect.objectContaining({ state: 'sent', attempts: 1 })))
    expect(sink.messages).toHaveLength(3 * WAIT_DEPTH)
    await t.close()
  })

  test('a cold burst to one destination is not held to the line it was written in: the line follows the pair', async () => {
    const t = await setup({ shaping_limits: { other: { connections: 2 } } })
    const ids: string[] = []
    // Forty seconds of the line's first pace (WAIT_DEPTH a connection a second).
    for (let i = 0; i < 2 + 2 * WAIT_DEPTH * 41; i++) ids.push(await t.send(`b${i}@example.net`))
    const start = t.deps.clock.now()
    // The first (and only) drain, with the clock standing still: without the pull every job
    // postponed into the line would still be deferred a second or more ahead.
    await t.engine.drain()
    expect(t.deps.clock.now()).toBe(start)
    expect(ids.map((id) => t.row(id))).toEqual(ids.map(() => expect.objectContaining({ state: 'sent', attempts: 1 })))
    expect(sink.messages).toHaveLength(ids.length)
    await t.close()
  })

  test('postponed jobs are spread at most BUSY_SPREAD_MS ahead, however long the line', async () => {
    const t = await setup({ shaping_limits: { other: { connections: 1 } } })
    const ids: string[] = []
    const spreadS = BUSY_SPREAD_MS / 1000
    // 1 in flight, WAIT_DEPTH waiting, and five seconds' worth (WAIT_DEPTH a second) more than the line holds, postponed.
    for (let i = 0; i < 1 + WAIT_DEPTH + (spreadS + 5) * WAIT_DEPTH; i++) ids.push(await t.send(`l${i}@example.net`))
    const start = t.deps.clock.now()
    const release = sink.hold()
    const drained = t.engine.drain()
    const postponedTimes = () =>
      ids
        .map((id) => t.row(id))
        .filter((r) => r.state === 'deferred')
        .map((r) => r.next_attempt_at!)
    await until('the line is written', () => postponedTimes().length === (spreadS + 5) * WAIT_DEPTH)
    const times = postponedTimes()
    // Whole clock seconds: the first a second ahead, the last BUSY_SPREAD_MS ahead (both rounded up).
    const second = (at: number) => Math.ceil(at / 1000) * 1000
    expect(times.every((at) => at % 1000 === 0)).toBe(true)
    expect(Math.min(...times)).toBe(second(start + 1000))
    expect(Math.max(...times)).toBe(second(start + BUSY_SPREAD_MS))
    // The line up to the cap: WAIT_DEPTH a second; the rest wait at the cap.
    const cap = second(start + BUSY_SPREAD_MS)
    const perSecond = new Map<number, number>()
    for (const at of times) perSecond.set(at, (perSecond.get(at) ?? 0) + 1)
    for (let at = second(start + 2000); at < cap; at += 1000) expect(perSecond.get(at)).toBe(WAIT_DEPTH)
    expect(perSecond.get(cap)).toBeGreaterThan(WAIT_DEPTH)
    // While the pair's delivery does not end, nothing of the line comes back.
    await Bun.sleep(100)
    expect(postponedTimes()).toEqual(times)
    release()
    await drained
    await t.close()
  })

  test('a pair that finished more deliveries in the last second than WAIT_DEPTH a connection may hold that many waiters', async () => {
    const t = await setup({ shaping_limits: { other: { connections: 1 } } })
    const first: string[] = []
    for (let i = 0; i < 3 * WAIT_DEPTH; i++) first.push(await t.send(`f${i}@example.net`))
    await t.engine.drain()
    // The clock stands still, so all of it is this second.
    expect(first.every((id) => t.row(id).state === 'sent')).toBe(true)
    const done = first.length
    const second: string[] = []
    for (let i = 0; i < done + 4; i++) second.push(await t.send(`s${i}@example.net`))
    const release = sink.hold()
    const drained = t.engine.drain()
    const postponed = () => second.filter((id) => t.row(id).state === 'deferred')
    // The pair has finished `done` deliveries this second: that many may wait, one more is in flight, the rest are postponed.
    await until('the jobs beyond the waiting room are postponed', () => postponed().length === second.length - 1 - done)
    expect(postponed().map((id) => t.row(id))).toEqual(postponed().map(() => expect.objectContaining({ state: 'deferred', attempts: 0 })))
    release()
    await drained
    expect(second.every((id) => t.row(id).state === 'sent')).toBe(true)
    await t.close()
  })

  test('a Spamhaus block suspends the group on that IP, raises an alert, pauses its running broadcasts; mail spills to the other IP', async () => {
    const t = await setup()
    const ip2 = await t.ip('127.0.0.2')
    const ip3 = await t.ip('127.0.0.3')
    const ip4 = await t.ip('127.0.0.4')
    const main = await t.pool('main', [ip2, ip3], true)
    const other = await t.pool('other', [ip4])
    const inMain = t.broadcast('in-main', main)
    const viaDefault = t.broadcast('via-default', null)
    const inOther = t.broadcast('in-other', other)
    const draft = t.broadcast('draft', main, 'draft')

    const blocked = await t.send('listed@example.net')
    await t.engine.drain()
    expect(t.row(blocked)).toMatchObject({ state: 'bounced', last_code: 554, last_ip: '127.0.0.2' })
    const now = t.deps.clock.now()
    expect(t.pair('127.0.0.2')).toMatchObject({ state: 'suspended', hold_until: now + 240 * 60_000 })
    expect(t.pair('127.0.0.3')).toBeNull()

    const [suspended, listed] = t.alerts()
    expect(suspended).toMatchObject({ type: 'suspended', provider: GROUP, ip: '127.0.0.2', code: 554, enhanced_code: '5.7.1' })
    expect(listed).toMatchObject({ type: 'ip_listed', ip: '127.0.0.2', scope: 'pool', scope_id: main, paused_broadcast_ids: [inMain, viaDefault] })
    expect(t.broadcastStatus(inMain).status).toBe('paused')
    expect(t.broadcastStatus(inMain).status_reason).toContain('IP 127.0.0.2 is listed')
    expect(t.broadcastStatus(viaDefault).status).toBe('paused')
    expect(t.broadcastStatus(inOther).status).toBe('sending')
    expect(t.broadcastStatus(draft).status).toBe('draft')

    // Everything to the group now leaves over 127.0.0.3.
    for (let i = 0; i < 4; i++) await t.send(`ok${i}@example.net`)
    await t.engine.drain()
    expect([t.sentFrom('127.0.0.2'), t.sentFrom('127.0.0.3')]).toEqual([0, 4])

    const q = await t.call('GET', '/api/v2/queue', { key: t.admin.key })
    expect(q.body.data.ips.find((i: { address: string }) => i.address === '127.0.0.2')).toMatchObject({ state: 'suspended' })
    expect(q.body.data.pairs).toContainEqual(
      expect.objectContaining({ provider: GROUP, ip: '127.0.0.2', state: 'suspended', hold_until: new Date(now + 240 * 60_000).toISOString() }),
    )

    // During the suspension a pool with only that IP waits; when it ends the pair resumes, throttled at half the ceiling.
    const only2 = await t.pool('only2', [ip2])
    const waits = await t.send('after@example.net', { ip_pool_id: only2 })
    await t.engine.drain()
    expect(t.row(waits)).toMatchObject({ state: 'deferred', attempts: 0, next_attempt_at: now + 240 * 60_000 })
    t.deps.clock.advance(240 * 60_000)
    await t.engine.drain()
    expect(t.row(waits)).toMatchObject({ state: 'sent', last_ip: '127.0.0.2' })
    expect(t.pair('127.0.0.2')).toMatchObject({ state: 'throttled', rate_per_minute: 60, hold_until: null })
    await t.close()
  })
})

describe('IP warm-up', () => {
  test("caps hold per UTC day and group: over-cap mail spills to the pool's other IP, or waits for the next day", async () => {
    const t = await setup()
    const ip2 = await t.ip('127.0.0.2')
    const ip3 = await t.ip('127.0.0.3')
    await t.pool('main', [ip2, ip3], true)
    const solo = await t.pool('solo', [ip2])
    const schedule = [
      { day: 1, caps: { other: 2 } },
      { day: 2, caps: { other: 3 } },
    ]
    const set = await t.call('PUT', `/api/v2/ips/${ip2}/warmup`, { key: t.admin.key, body: { schedule } })
    expect(set.status, JSON.stringify(set.body)).toBe(200)
    expect(set.body.data).toMatchObject({ active: true, day: 1, days_total: 2, schedule_kind: 'custom', today: [{ provider: 'other', cap: 2, sent: 0 }] })

    for (let i = 0; i < 6; i++) await t.send(`w${i}@example.net`)
    await t.engine.drain()
    expect([t.sentFrom('127.0.0.2'), t.sentFrom('127.0.0.3')]).toEqual([2, 4])
    const today = await t.call('GET', `/api/v2/ips/${ip2}/warmup`, { key: t.admin.key })
    expect(today.body.data.today).toEqual([
      { provider: GROUP, cap: 2, sent: 2 },
      { provider: 'other', cap: 2, sent: 0 },
    ])

    // A pool with only the warming IP: the message waits for the next UTC day, no attempt spent.
    const waits = await t.send('later@example.net', { ip_pool_id: solo })
    await t.engine.drain()
    const midnight = Date.parse('2026-03-02T00:00:00Z')
    expect(t.row(waits)).toMatchObject({ state: 'deferred', attempts: 0, next_attempt_at: midnight })
    const q = await t.call('GET', '/api/v2/queue', { key: t.admin.key })
    expect(q.body.data.ips.find((i: { address: string }) => i.address === '127.0.0.2')).toMatchObject({ warmup: { day: 1, days_total: 2 } })

    t.deps.clock.set(midnight)
    await t.engine.drain()
    expect(t.row(waits)).toMatchObject({ state: 'sent', last_ip: '127.0.0.2' })
    const day2 = await t.call('GET', `/api/v2/ips/${ip2}/warmup`, { key: t.admin.key })
    expect(day2.body.data).toMatchObject({
      day: 2,
      today: [
        { provider: GROUP, cap: 3, sent: 1 },
        { provider: 'other', cap: 3, sent: 0 },
      ],
    })

    // Stopped: no cap any more.
    const stopped = await t.call('DELETE', `/api/v2/ips/${ip2}/warmup`, { key: t.admin.key })
    expect(stopped.body.data).toMatchObject({ active: false, started_at: null })
    for (let i = 0; i < 4; i++) await t.send(`s${i}@example.net`, { ip_pool_id: solo })
    await t.engine.drain()
    expect(t.sentFrom('127.0.0.2')).toBe(2 + 1 + 4)
    await t.close()
  })

  test('warm-up routes: the default ramp, permissions, 404 and 422', async () => {
    const t = await setup()
    const ip2 = await t.ip('127.0.0.2')
    const started = await t.call('PUT', `/api/v2/ips/${ip2}/warmup`, { key: t.admin.key, body: {} })
    expect(started.body.data).toMatchObject({
      active: true,
      day: 1,
      days_total: 30,
      schedule_kind: 'default',
      schedule: null,
      today: [{ provider: '*', cap: 50, sent: 0 }],
    })
    const reader = t.makeKey({ permissions: ['ips.read'] })
    expect((await t.call('GET', `/api/v2/ips/${ip2}/warmup`, { key: reader.key })).status).toBe(200)
    expect((await t.call('GET', '/api/v2/queue', { key: reader.key })).status).toBe(200)
    expect((await t.call('PUT', `/api/v2/ips/${ip2}/warmup`, { key: reader.key, body: {} })).status).toBe(403)
    expect((await t.call('GET', '/api/v2/queue')).status).toBe(401)
    expect((await t.call('GET', '/api/v2/queue', { key: t.makeKey({ permissions: ['lists.read'] }).key })).status).toBe(403)
    expect((await t.call('GET', '/api/v2/ips/999/warmup', { key: t.admin.key })).status).toBe(404)
    const dup = await t.call('PUT', `/api/v2/ips/${ip2}/warmup`, {
      key: t.admin.key,
      body: {
        schedule: [
          { day: 1, caps: { '*': 5 } },
          { day: 1, caps: { '*': 6 } },
        ],
      },
    })
    expect(dup.status).toBe(422)
    expect(dup.body.error.details.schedule[0]).toContain('day 1 appears twice')
    await t.close()
  })
})

describe('guardrails', () => {
  test('a pool whose bounce rate crosses the threshold pauses its running broadcasts, once, with deliverability.alert', async () => {
    const t = await setup({ guardrail_min_sent: 4 })
    const ip2 = await t.ip('127.0.0.2')
    const main = await t.pool('main', [ip2], true)
    const running = t.broadcast('running', null)
    // Sending while its snapshot is still copied (runner.ts) counts as running too.
    const copying = t.broadcast('copying', null, 'preparing')
    const drafted = t.broadcast('drafted', null, 'draft')
    expect(checkGuardrails(t.deps).paused).toEqual([])
    await t.send('ok1@example.net')
    await t.send('permfail@example.net')
    await t.engine.drain()
    // Under the minimum volume: one bounce in two is no signal yet.
    expect(checkGuardrails(t.deps).paused).toEqual([])
    await t.send('ok2@example.net')
    await t.send('permfail@example.org')
    await t.engine.drain()
    expect(checkGuardrails(t.deps).paused).toEqual([running, copying])
    expect(t.broadcastStatus(running)).toEqual({ status: 'paused', status_reason: 'pool main: bounce rate 50.0 % over 5.0 % in the last 60 minutes' })
    expect(t.broadcastStatus(copying).status).toBe('paused')
    expect(t.broadcastStatus(drafted).status).toBe('draft')
    expect(t.alerts()).toEqual([
      expect.objectContaining({ type: 'bounce_rate', scope: 'pool', scope_id: main, outcomes: 4, bounce_rate: 0.5, paused_broadcast_ids: [running, copying] }),
    ])
    // Nothing left running: no second alert.
    expect(checkGuardrails(t.deps).paused).toEqual([])
    expect(t.alerts()).toHaveLength(1)
    // Outside the window the rate no longer counts.
    const again = t.broadcast('again', main)
    t.deps.clock.advance(61 * 60_000)
    expect(checkGuardrails(t.deps).paused).toEqual([])
    expect(t.broadcastStatus(again).status).toBe('sending')
    const kinds = await t.call('GET', '/api/v2/webhooks/event-kinds', { key: t.admin.key })
    expect(kinds.body.data.map((k: { kind: string }) => k.kind)).toContain('deliverability.alert')
    await t.close()
  })

  /** Drips and sending domains through the API, and the automation engine turned by hand on the fixed clock. */
  async function automationsOf(t: Awaited<ReturnType<typeof setup>>) {
    const runner = createAutomationRunner(t.deps, { pollMs: 10 })
    runner.prepare()
    const api = async (method: string, path: string, body?: unknown) => {
      const r = await t.call(method, path, { key: t.admin.key, body })
      expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBeLessThan(300)
      return r.body.data
    }
    const listId = (await api('POST', '/api/v2/lists', { name: 'news' })).id as number
    /** An active drip of the list: a send from `from`, a day's wait, a second send. */
    const drip = async (name: string, from: string) =>
      (
        await api('POST', '/api/v2/drips', {
          name,
          status: 'active',
          list_ids: [listId],
          graph: {
            steps: [
              { id: 'day1', kind: 'send', settings: { from, subject: `${name} 1`, text: 'One' }, edges: { next: 'wait' } },
              { id: 'wait', kind: 'wait', settings: { duration_seconds: 86_400 }, edges: { next: 'day2' } },
              { id: 'day2', kind: 'send', settings: { from, subject: `${name} 2`, text: 'Two' } },
            ],
          },
        })
      ).id as number
    /** A sending domain with its records published on the loopback DNS server, verified. */
    const verifiedDomain = async (name: string, poolId: number | null = null) => {
      const created = await api('POST', '/api/v2/sending-domains', { name, pool_id: poolId })
      zone.publishRecords(created.dns_records as Array<{ type: string; name: string; value: string }>)
      expect((await api('POST', `/api/v2/sending-domains/${created.id}/verify`)).status).toBe('verified')
      return created.id as number
    }
    const automation = (id: number) => api('GET', `/api/v2/drips/${id}`) as Promise<{ status: string; status_reason: string | null }>
    const subjects = () =>
      (t.db.query(`SELECT subject FROM messages WHERE source = 'automation' ORDER BY rowid`).all() as Array<{ subject: string }>).map((m) => m.subject)
    return { runner, api, listId, drip, verifiedDomain, automation, subjects }
  }

  test('a sending domain whose complaint rate crosses the threshold pauses its running broadcast and drip, once; the waiting run goes on at resume', async () => {
    // No IP pool at all: only the domain is measured, and the default 0.3 % complaint threshold applies.
    const t = await setup({ guardrail_min_sent: 4 })
    const a = await automationsOf(t)
    const inbound = await startInboundListener(t.deps, { host: '127.0.0.1', port: 0 })
    const domainId = await a.verifiedDomain('example.com')
    const running = t.broadcast('running', null)
    const elsewhere = Number(
      t.db
        .prepare(
          `INSERT INTO broadcasts (name, status, from_address, subject, archive_id, created_at, updated_at) VALUES ('elsewhere', 'sending', 'Bo <bo@other.example>', 'Hi', 'arch-elsewhere', 0, 0)`,
        )
        .run().lastInsertRowid,
    )
    const drip = await a.drip('Course', 'Ada <ada@example.com>')
    const otherDrip = await a.drip('Other', 'Bo <bo@other.example>')
    await a.api('POST', '/api/v2/contacts', { list_id: a.listId, email: 'ann@example.net' })
    await a.runner.tick()
    expect(a.subjects().sort()).toEqual(['Course 1', 'Other 1'])
    for (const to of ['ok1@example.net', 'ok2@example.net', 'ok3@example.net']) await t.send(to)
    await t.engine.drain()
    expect(checkGuardrails(t.deps)).toEqual({ paused: [], paused_automations: [] })

    // A feedback-loop report (ARF, RFC 5965) about one of the four delivered from example.com
    // (not the drip's contact: a complaint unsubscribes its sender, which would end her runs).
    const complained = sink.messages.find((m) => m.rcptTo[0] === 'ok1@example.net')!
    expect(complained.mailFrom).toStartWith('bounces+')
    const raw = fixture('yahoo-arf.eml', true)
      .toString()
      .replaceAll(TOKENS.yahooArf!.token, tokenFromAddress(complained.mailFrom)!)
      .replace(/kate\.reader@yahoo\.com/gi, complained.rcptTo[0]!)
    const connection = new SMTPConnection({ host: '127.0.0.1', port: inbound.port, ignoreTLS: true, name: 'mx.reporter.test' })
    await new Promise<void>((resolve, reject) => {
      connection.once('error', reject)
      connection.connect(() => resolve())
    })
    const reply = await new Promise<string>((resolve, reject) =>
      connection.send({ from: '', to: [complained.mailFrom] }, raw, (err, info) => (err ? reject(err) : resolve(info.response))),
    )
    connection.close()
    await inbound.close()
    expect(reply).toBe('250 2.0.0 Received')

    const reason = 'domain example.com: complaint rate 25.00 % over 0.30 % in the last 60 minutes'
    expect(checkGuardrails(t.deps)).toEqual({ paused: [running], paused_automations: [drip] })
    expect(t.broadcastStatus(running)).toEqual({ status: 'paused', status_reason: reason })
    expect(t.broadcastStatus(elsewhere).status).toBe('sending')
    expect(await a.automation(drip)).toMatchObject({ status: 'paused', status_reason: reason })
    expect(await a.automation(otherDrip)).toMatchObject({ status: 'active', status_reason: null })
    expect(t.alerts()).toEqual([
      expect.objectContaining({
        type: 'complaint_rate',
        scope: 'domain',
        scope_id: domainId,
        scope_name: 'example.com',
        delivered: 4,
        complaints: 1,
        complaint_rate: 0.25,
        paused_broadcast_ids: [running],
        paused_automation_ids: [drip],
      }),
    ])
    // The rate is still over, but nothing is left running there: no second alert.
    expect(checkGuardrails(t.deps)).toEqual({ paused: [], paused_automations: [] })
    expect(t.alerts()).toHaveLength(1)

    // The run waits where it was while the drip is paused; resume continues it.
    t.deps.clock.advance(86_400_000 + 1000)
    await a.runner.tick()
    expect(a.subjects().sort()).toEqual(['Course 1', 'Other 1', 'Other 2'])
    const runs = await a.api('GET', `/api/v2/drips/${drip}/runs`)
    expect(runs.map((r: { state: string; step_id: string }) => [r.state, r.step_id])).toEqual([['waiting', 'wait']])
    expect(await a.api('POST', `/api/v2/drips/${drip}/resume`)).toMatchObject({ status: 'active', status_reason: null })
    await a.runner.tick()
    expect(a.subjects().sort()).toEqual(['Course 1', 'Course 2', 'Other 1', 'Other 2'])
    await t.close()
  })

  test('a pool whose bounce rate crosses the threshold pauses the drips and triggers sending through it too', async () => {
    const t = await setup({ guardrail_min_sent: 4, default_from: 'Shop <shop@example.com>' })
    const a = await automationsOf(t)
    const main = await t.pool('main', [await t.ip('127.0.0.2')], true)
    const other = await t.pool('other', [await t.ip('127.0.0.4')])
    // Unverified example.com sends over the default pool; news.example is verified onto "other".
    await a.verifiedDomain('news.example', other)
    const viaDefault = await a.drip('Default', 'Ada <ada@example.com>')
    const viaOther = await a.drip('Other', 'News <news@news.example>')
    // A trigger whose send takes its From from the server's default_from (example.com too).
    const trigger = (
      await a.api('POST', '/api/v2/triggers', {
        name: 'Order',
        status: 'active',
        event_name: 'order.placed',
        graph: { steps: [{ id: 'thanks', kind: 'send', settings: { subject: 'Thanks', text: 'Thanks' } }] },
      })
    ).id as number
    await t.send('ok1@example.net')
    await t.send('ok2@example.net')
    await t.send('ok3@example.net')
    await t.send('permfail@example.net')
    await t.engine.drain()
    const reason = 'pool main: bounce rate 25.0 % over 5.0 % in the last 60 minutes'
    expect(checkGuardrails(t.deps)).toEqual({ paused: [], paused_automations: [viaDefault, trigger] })
    expect(await a.automation(viaDefault)).toMatchObject({ status: 'paused', status_reason: reason })
    expect(await a.api('GET', `/api/v2/triggers/${trigger}`)).toMatchObject({ status: 'paused', status_reason: reason })
    expect(await a.automation(viaOther)).toMatchObject({ status: 'active' })
    expect(t.alerts()).toEqual([
      expect.objectContaining({ type: 'bounce_rate', scope: 'pool', scope_id: main, paused_broadcast_ids: [], paused_automation_ids: [viaDefault, trigger] }),
    ])
    expect(checkGuardrails(t.deps).paused_automations).toEqual([])
    expect(t.alerts()).toHaveLength(1)
    await t.close()
  })

  test('a listed IP (a block reply) pauses the automations of its pools, not those of other pools', async () => {
    const t = await setup()
    const a = await automationsOf(t)
    const main = await t.pool('main', [await t.ip('127.0.0.2')], true)
    const other = await t.pool('other', [await t.ip('127.0.0.4')])
    await a.verifiedDomain('news.example', other)
    const viaDefault = await a.drip('Default', 'Ada <ada@example.com>')
    const viaOther = await a.drip('Other', 'News <news@news.example>')
    await t.send('listed@example.net')
    await t.engine.drain()
    const listed = t.alerts().find((e) => e.type === 'ip_listed')
    expect(listed).toMatchObject({ ip: '127.0.0.2', scope: 'pool', scope_id: main, paused_broadcast_ids: [], paused_automation_ids: [viaDefault] })
    expect((await a.automation(viaDefault)).status_reason).toContain('IP 127.0.0.2 is listed')
    expect((await a.automation(viaOther)).status).toBe('active')
    await t.close()
  })
})
