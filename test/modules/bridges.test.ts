import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { createSignerPool } from '../../src/delivery/signer-pool'
import { createTransport } from '../../src/delivery/transport'
import { createDeliveryEngine } from '../../src/delivery/scheduler'
import { createResolver } from '../../src/lib/dns'
import { authenticateBridge, bridgeAllowsAddress, bridgeForApiKey } from '../../src/modules/bridges/identity'
import { countBridge, takeBridgeQuota } from '../../src/modules/bridges/quotas'
import { createIpRotation } from '../../src/delivery/ip-rotation'
import { testApp } from '../support/app'
import { startDnsServer, type DnsServer } from '../support/dns-server'
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink'

const HOUR = 3_600_000

/** An app that accepts unverified senders (signing is tested in test/jobs), with an admin key and example.com as a sending domain. */
async function setup(overrides: Parameters<typeof testApp>[0] = {}) {
  const t = testApp({ allow_unverified_domains: true, ...overrides })
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown, key = admin.key) => t.call(method, path, { key, body })
  for (const name of ['example.com', 'other.example']) expect((await call('POST', '/api/v2/sending-domains', { name })).status).toBe(201)
  const createBridge = async (body: Record<string, unknown> = {}) => {
    const r = await call('POST', '/api/v2/bridges', { name: 'shop', domains: ['example.com'], ...body })
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body.data as { id: number; api_key: string; smtp: { host: string; port: number; username: string; password: string }; api_key_id: number }
  }
  const sendAs = (key: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    t.call('POST', '/v1/bridge/emails', {
      key,
      headers,
      body: { from: 'Shop <orders@example.com>', to: ['ada@example.net'], subject: 'Receipt', text: 'Thanks', ...body },
    })
  const bridge = async (id: number) => (await call('GET', `/api/v2/bridges/${id}`)).body.data
  return { ...t, admin, call, createBridge, sendAs, bridge }
}

describe('bridges resource', () => {
  test('with a host name that is not public ("vm"), the SMTP host is a marked placeholder with the warning', async () => {
    const { createBridge } = await setup({ hostname: 'vm' })
    const created = await createBridge()
    expect(created.smtp.host).toBe('<public-host-name>')
    expect((created.smtp as { warning?: string }).warning).toContain('"vm" is a short name')
    const normal = await (await setup()).createBridge()
    expect(normal.smtp.host).toBe('mailroom.test')
    expect(normal.smtp).not.toHaveProperty('warning')
  })

  test('create shows the SMTP password and API key once; at rest only their hashes exist', async () => {
    const { call, createBridge, deps } = await setup()
    const created = await createBridge({ hourly_quota: 100, track_opens: true })
    expect(created).toMatchObject({
      name: 'shop',
      domains: ['example.com'],
      hourly_quota: 100,
      daily_quota: null,
      pool_id: null,
      node_id: null,
      allowed_ips: [],
      track_opens: true,
      track_clicks: false,
      active: true,
      counts: { accepted: 0, delivered: 0, bounced: 0, complained: 0 },
      usage: { this_hour: 0, today: 0 },
      smtp: { host: 'mailroom.test', port: deps.config.smtp_listen!.port },
    })
    expect(created.smtp.username).toMatch(/^br_[0-9a-f]{24}$/)
    expect(created.smtp.password.length).toBeGreaterThanOrEqual(43)
    expect(created.api_key).toMatch(/^mr_/)

    const row = deps.db.$client.query('SELECT * FROM bridges WHERE id = ?').get(created.id) as Record<string, unknown>
    expect(row.smtp_password_hash).toBe(createHash('sha256').update(created.smtp.password).digest('hex'))
    // Neither secret is anywhere in the database file's tables.
    for (const table of ['bridges', 'api_keys', 'activity_logs']) {
      const dump = JSON.stringify(deps.db.$client.query(`SELECT * FROM ${table}`).all())
      expect(dump).not.toContain(created.smtp.password)
      expect(dump).not.toContain(created.api_key)
    }

    const got = await call('GET', `/api/v2/bridges/${created.id}`)
    expect(got.status).toBe(200)
    expect(got.body.data.smtp_username).toBe(created.smtp.username)
    expect(got.body.data.api_key_prefix).toBe(created.api_key.slice(0, 15))
    expect(got.body.data).not.toHaveProperty('smtp')
    expect(got.body.data).not.toHaveProperty('api_key')
    expect(JSON.stringify(got.body)).not.toContain(created.smtp.password)

    // The key: named after the bridge, bound to the built-in Bridge role that only sends and reads.
    const key = (await call('GET', `/api/v2/api-keys/${created.api_key_id}`)).body.data
    expect(key.name).toBe('Bridge: shop')
    const role = (await call('GET', `/api/v2/roles/${key.role.id}`)).body.data
    expect(role).toMatchObject({ name: 'Bridge', builtin: true, permissions: ['transactional.read', 'transactional.send'] })
    expect((await call('PATCH', `/api/v2/roles/${role.id}`, { permissions: ['*'] })).status).toBe(409)
    // A second bridge reuses the role.
    const second = await call('POST', '/api/v2/bridges', { name: 'crm', domains: ['other.example'] })
    expect((await call('GET', `/api/v2/api-keys/${second.body.data.api_key_id}`)).body.data.role.id).toBe(role.id)
  })

  test('list, update (the key follows name and allowlist), validation, delete and bulk delete', async () => {
    const t = await setup()
    const { call, createBridge } = t
    const a = await createBridge()
    const b = await createBridge({ name: 'crm' })
    const page = await call('GET', '/api/v2/bridges?per_page=1')
    expect(page.body.meta).toEqual({ current_page: 1, per_page: 1, total: 2, last_page: 2 })
    expect(page.body.data.map((x: { id: number }) => x.id)).toEqual([a.id])

    const patched = await call('PATCH', `/api/v2/bridges/${a.id}`, {
      name: 'shop-eu',
      domains: ['Example.COM', 'other.example', 'example.com'],
      allowed_ips: ['10.0.0.0/8', ' 2001:db8::1 '],
      daily_quota: 10,
    })
    expect(patched.status).toBe(200)
    expect(patched.body.data).toMatchObject({
      name: 'shop-eu',
      domains: ['example.com', 'other.example'],
      allowed_ips: ['10.0.0.0/8', '2001:db8::1'],
      daily_quota: 10,
    })
    const key = (await call('GET', `/api/v2/api-keys/${a.api_key_id}`)).body.data
    expect(key).toMatchObject({ name: 'Bridge: shop-eu', allowed_ips: ['10.0.0.0/8', '2001:db8::1'] })

    const bad = await call('PATCH', `/api/v2/bridges/${a.id}`, { domains: ['nowhere.example', 'not a domain'], allowed_ips: ['10.0.0.0/33'] })
    expect(bad.status).toBe(422)
    const refused = await call('POST', '/api/v2/bridges', { name: 'x', domains: ['nowhere.example'] })
    expect(refused.status).toBe(422)
    expect(refused.body.error.details['domains.0'][0]).toContain('nowhere.example is not a sending domain')
    const badIps = await call('POST', '/api/v2/bridges', { name: 'x', domains: ['example.com'], allowed_ips: ['10.0.0.0/33'] })
    expect(badIps.body.error.details.allowed_ips).toEqual(['"10.0.0.0/33" is not a valid CIDR block: prefix length must be 0-32'])
    expect((await call('POST', '/api/v2/bridges', { name: 'x', domains: ['example.com'], pool_id: 99 })).body.error.details).toEqual({
      pool_id: ['no IP pool with id 99'],
    })
    expect((await call('POST', '/api/v2/bridges', { name: 'crm', domains: ['example.com'] })).status).toBe(409)
    expect((await call('PATCH', `/api/v2/bridges/${a.id}`, { name: 'crm' })).status).toBe(409)
    expect((await call('POST', '/api/v2/bridges', { name: 'x', domains: [] })).status).toBe(422)

    // Delete: the key stops working at once.
    await call('PATCH', `/api/v2/bridges/${a.id}`, { allowed_ips: [] })
    expect((await t.sendAs(a.api_key)).status).toBe(202)
    const del = await call('DELETE', `/api/v2/bridges/${a.id}`)
    expect(del.status).toBe(200)
    expect(del.body.data.name).toBe('shop-eu')
    expect((await call('GET', `/api/v2/bridges/${a.id}`)).status).toBe(404)
    expect((await t.sendAs(a.api_key)).status).toBe(401)
    expect((await call('GET', `/api/v2/api-keys/${a.api_key_id}`)).body.data).toMatchObject({ status: 'inactive', deleted_at: expect.any(String) })

    const bulk = await call('POST', '/api/v2/bridges/bulk-delete', { ids: [b.id, 999] })
    expect(bulk.body.data).toEqual({ deleted: [b.id], not_found: [999] })
    expect((await t.sendAs(b.api_key)).status).toBe(401)
    expect(authenticateBridge(t.deps, b.smtp.username, b.smtp.password)).toBeNull()
  })

  test('permissions: bridges.* guard the resource; minting sending credentials needs the sending permissions too', async () => {
    const { call, makeKey, createBridge } = await setup()
    const b = await createBridge()
    const sender = makeKey({ permissions: ['transactional.send', 'transactional.read'] })
    for (const [method, path, body] of [
      ['GET', '/api/v2/bridges', undefined],
      ['GET', `/api/v2/bridges/${b.id}`, undefined],
      ['POST', '/api/v2/bridges', { name: 'x', domains: ['example.com'] }],
      ['PATCH', `/api/v2/bridges/${b.id}`, { active: false }],
      ['DELETE', `/api/v2/bridges/${b.id}`, undefined],
      ['POST', `/api/v2/bridges/${b.id}/rotate-credentials`, {}],
    ] as const) {
      const r = await call(method, path, body, sender.key)
      expect(r.status, `${method} ${path}`).toBe(403)
      expect(r.body.error.code).toBe('forbidden')
    }
    const manager = makeKey({ permissions: ['bridges.create', 'bridges.update', 'bridges.read'] })
    const escalate = await call('POST', '/api/v2/bridges', { name: 'x', domains: ['example.com'] }, manager.key)
    expect(escalate.status).toBe(403)
    expect(escalate.body.error.message).toContain('transactional.send')
    expect((await call('POST', `/api/v2/bridges/${b.id}/rotate-credentials`, {}, manager.key)).status).toBe(403)
    expect((await call('PATCH', `/api/v2/bridges/${b.id}`, { hourly_quota: 5 }, manager.key)).status).toBe(200)
    const full = makeKey({ permissions: ['bridges.create', 'transactional.send', 'transactional.read'] })
    expect((await call('POST', '/api/v2/bridges', { name: 'y', domains: ['example.com'] }, full.key)).status).toBe(201)
  })
})

describe('SMTP identity (service functions for the submission listener)', () => {
  test('right, wrong, unknown, inactive, and after rotation', async () => {
    const t = await setup()
    const { call, createBridge, deps, admin } = t
    const b = await createBridge({ allowed_ips: ['192.0.2.0/24'] })
    const who = authenticateBridge(deps, b.smtp.username, b.smtp.password)
    expect(who).toEqual({
      id: b.id,
      name: 'shop',
      domains: ['example.com'],
      pool_id: null,
      node_id: null,
      allowed_ips: ['192.0.2.0/24'],
      api_key_id: b.api_key_id,
      active: true,
      tracking: { track_opens: false, track_clicks: false },
    })
    expect(bridgeAllowsAddress(who!, '192.0.2.7')).toBe(true)
    expect(bridgeAllowsAddress(who!, '::ffff:192.0.2.7')).toBe(true)
    expect(bridgeAllowsAddress(who!, '198.51.100.1')).toBe(false)
    expect(bridgeAllowsAddress(who!, null)).toBe(false)
    expect(bridgeAllowsAddress({ ...who!, allowed_ips: [] }, null)).toBe(true)
    expect(authenticateBridge(deps, b.smtp.username, b.smtp.password + 'x')).toBeNull()
    expect(authenticateBridge(deps, b.smtp.username, '')).toBeNull()
    expect(authenticateBridge(deps, 'br_nobody', b.smtp.password)).toBeNull()
    expect(bridgeForApiKey(deps, b.api_key_id)?.id).toBe(b.id)
    expect(bridgeForApiKey(deps, 999)).toBeNull()

    // Deactivation applies to the next AUTH (the cache is cleared by the change).
    await call('PATCH', `/api/v2/bridges/${b.id}`, { active: false })
    expect(authenticateBridge(deps, b.smtp.username, b.smtp.password)).toBeNull()
    expect(bridgeForApiKey(deps, b.api_key_id)?.active).toBe(false)
    await call('PATCH', `/api/v2/bridges/${b.id}`, { active: true })
    expect(authenticateBridge(deps, b.smtp.username, b.smtp.password)?.id).toBe(b.id)

    // Rotating only the API key keeps the password; rotating the password drops the old one at once.
    const keyOnly = await call('POST', `/api/v2/bridges/${b.id}/rotate-credentials`, { api_key: true, smtp: false })
    expect(keyOnly.status).toBe(200)
    expect(keyOnly.body.data.smtp).toBeUndefined()
    expect(keyOnly.body.data.api_key).toMatch(/^mr_/)
    expect(authenticateBridge(deps, b.smtp.username, b.smtp.password)?.id).toBe(b.id)
    // No body: both.
    const both = await t.call('POST', `/api/v2/bridges/${b.id}/rotate-credentials`, { key: admin.key })
    expect(both.status).toBe(200)
    expect(both.body.data.smtp.username).toBe(b.smtp.username)
    expect(authenticateBridge(deps, b.smtp.username, b.smtp.password)).toBeNull()
    expect(authenticateBridge(deps, b.smtp.username, both.body.data.smtp.password)?.id).toBe(b.id)
    expect(bridgeForApiKey(deps, both.body.data.api_key_id)?.id).toBe(b.id)
    expect(bridgeForApiKey(deps, b.api_key_id)).toBeNull()
    // The rotated key keeps the allowlist.
    expect((await call('GET', `/api/v2/api-keys/${both.body.data.api_key_id}`)).body.data.allowed_ips).toEqual(['192.0.2.0/24'])
    expect((await call('POST', `/api/v2/bridges/${b.id}/rotate-credentials`, { api_key: false, smtp: false })).status).toBe(422)
    expect((await call('POST', '/api/v2/bridges/999/rotate-credentials', {})).status).toBe(404)
  })

  test('takeBridgeQuota counts in bridge_usage and reports the quota that resets last; countBridge keeps totals', async () => {
    const { createBridge, deps, bridge } = await setup()
    const b = await createBridge({ hourly_quota: 3, daily_quota: 4 })
    const take = (n: number) => deps.db.$client.transaction(() => takeBridgeQuota(deps, b.id, n))()
    const now = deps.clock.now()
    const hourEnd = Math.floor(now / HOUR) * HOUR + HOUR
    // Counted in the caller's transaction: one that rolls back uses nothing.
    expect(() =>
      deps.db.$client.transaction(() => {
        expect(takeBridgeQuota(deps, b.id, 3)).toEqual({ ok: true })
        throw new Error('rollback')
      })(),
    ).toThrow('rollback')
    expect((await bridge(b.id)).usage).toEqual({ this_hour: 0, today: 0 })
    expect(take(2)).toEqual({ ok: true })
    expect(take(2)).toEqual({ ok: false, quota: 'hourly', resets_at: hourEnd })
    expect(take(1)).toEqual({ ok: true })
    deps.clock.advance(HOUR)
    expect(take(1)).toEqual({ ok: true })
    expect(take(1)).toEqual({ ok: false, quota: 'daily', resets_at: Date.parse('2026-03-02T00:00:00Z') })
    expect((await bridge(b.id)).usage).toEqual({ this_hour: 1, today: 4 })
    countBridge(deps.db, b.id, 'complained')
    countBridge(deps.db, b.id, 'bounced', 2)
    countBridge(deps.db, 999, 'complained') // a bridge deleted meanwhile: nothing to count, no error
    expect((await bridge(b.id)).counts).toEqual({ accepted: 0, delivered: 0, bounced: 2, complained: 1 })
  })
})

describe('POST /v1/bridge/emails', () => {
  test("applies the bridge's domains, counts the message, and refuses keys that are not a bridge's", async () => {
    const { createBridge, sendAs, admin, deps, bridge, call } = await setup()
    const b = await createBridge()
    const sent = await sendAs(b.api_key)
    expect(sent.status).toBe(202)
    expect(sent.body.data).toMatchObject({ status: 'queued', queued: 1, suppressed: [] })
    const row = deps.db.$client.query('SELECT bridge_id, api_key_id, source FROM messages WHERE id = ?').get(sent.body.data.id)
    expect(row).toEqual({ bridge_id: b.id, api_key_id: b.api_key_id, source: 'api' })
    expect((await bridge(b.id)).counts.accepted).toBe(1)
    expect((await bridge(b.id)).usage).toEqual({ this_hour: 1, today: 1 })

    const foreign = await sendAs(b.api_key, { from: 'x@other.example' })
    expect(foreign.status).toBe(403)
    expect(foreign.body.error).toMatchObject({ code: 'forbidden', message: expect.stringContaining('other.example') })
    // The same rules hold when the bridge key calls the general endpoint.
    expect((await call('POST', '/v1/emails', { from: 'x@other.example', to: ['a@example.net'], subject: 's', text: 't' }, b.api_key)).status).toBe(403)
    // Invalid requests and refusals use no quota and count nothing.
    expect((await sendAs(b.api_key, { to: ['not an address'] })).status).toBe(422)
    expect((await bridge(b.id)).counts.accepted).toBe(1)

    const plain = await sendAs(admin.key)
    expect(plain.status).toBe(403)
    expect(plain.body.error.message).toContain('bridge')

    await call('PATCH', `/api/v2/bridges/${b.id}`, { active: false })
    const inactive = await sendAs(b.api_key)
    expect(inactive.status).toBe(403)
    expect(inactive.body.error.message).toContain('inactive')
  })

  test('hourly quota 2: the third send gets 429 with Retry-After; the next hour works again', async () => {
    const { createBridge, sendAs, deps, bridge } = await setup()
    const b = await createBridge({ hourly_quota: 2 })
    expect((await sendAs(b.api_key)).status).toBe(202)
    expect((await sendAs(b.api_key)).status).toBe(202)
    const third = await sendAs(b.api_key)
    expect(third.status).toBe(429)
    expect(third.body.error.code).toBe('rate_limited')
    expect(third.body.error.message).toContain('hourly quota of 2')
    expect(third.body.error.message).toContain('2026-03-01T13:00:00.000Z')
    // The fixed clock stands at 12:00:30: 59.5 minutes to the next hour.
    expect(third.headers.get('retry-after')).toBe('3570')
    expect(deps.db.$client.query('SELECT count(*) AS n FROM messages WHERE bridge_id = ?').get(b.id)).toEqual({ n: 2 })
    expect((await bridge(b.id)).counts.accepted).toBe(2)
    deps.clock.advance(HOUR)
    expect((await sendAs(b.api_key)).status).toBe(202)
    expect((await bridge(b.id)).usage).toEqual({ this_hour: 1, today: 3 })
  })

  test("the bridge's pool and node win over the request's", async () => {
    const { createBridge, sendAs, deps, call } = await setup()
    const pool = (await call('POST', '/api/v2/ip-pools', { name: 'bridge pool' })).body.data.id
    const other = (await call('POST', '/api/v2/ip-pools', { name: 'other pool' })).body.data.id
    const node = (await call('POST', '/api/v2/sending-nodes', { name: 'relay', kind: 'relay', relay_host: 'smtp.example.org' })).body.data.id
    const b = await createBridge({ pool_id: pool, node_id: node })
    const sent = await sendAs(b.api_key, { ip_pool_id: other })
    expect(sent.status).toBe(202)
    expect(deps.db.$client.query('SELECT pool_id, node_id FROM messages WHERE id = ?').get(sent.body.data.id)).toEqual({ pool_id: pool, node_id: node })
    // Without a bridge choice the request's stands.
    await call('PATCH', `/api/v2/bridges/${b.id}`, { pool_id: null, node_id: null })
    const free = await sendAs(b.api_key, { ip_pool_id: other })
    expect(deps.db.$client.query('SELECT pool_id, node_id FROM messages WHERE id = ?').get(free.body.data.id)).toEqual({ pool_id: other, node_id: null })
  })

  test("the IP allowlist is enforced through the bridge's key", async () => {
    const { createBridge, sendAs, call } = await setup({ trust_proxy: true })
    const b = await createBridge({ allowed_ips: ['192.0.2.0/24'] })
    expect((await sendAs(b.api_key, {}, { 'x-forwarded-for': '192.0.2.10' })).status).toBe(202)
    const refused = await sendAs(b.api_key, {}, { 'x-forwarded-for': '198.51.100.1' })
    expect(refused.status).toBe(403)
    expect(refused.body.error.code).toBe('ip_not_allowed')
    // A changed allowlist applies to the key at once.
    await call('PATCH', `/api/v2/bridges/${b.id}`, { allowed_ips: ['198.51.100.0/24'] })
    expect((await sendAs(b.api_key, {}, { 'x-forwarded-for': '198.51.100.1' })).status).toBe(202)
    await call('PATCH', `/api/v2/bridges/${b.id}`, { allowed_ips: [] })
    expect((await sendAs(b.api_key, {}, { 'x-forwarded-for': '203.0.113.9' })).status).toBe(202)
  })
})

describe('end to end', () => {
  let sink: SmtpSink
  let zone: DnsServer
  const signer = createSignerPool({ size: 1 })

  beforeAll(async () => {
    sink = await startSmtpSink({ host: '127.0.0.1' })
    zone = await startDnsServer({
      zones: {
        'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] },
        'mx.example.net': { A: ['127.0.0.1'] },
      },
    })
  })
  afterAll(async () => {
    await sink.close()
    await zone.close()
    await signer.close()
  })

  test('a message sent through /v1/bridge/emails reaches the MX; delivered and bounced are counted per recipient', async () => {
    const t = await setup({ mx_port: sink.port, dns_servers: [zone.server] })
    const transport = createTransport({
      resolver: createResolver(t.deps.config.dns_servers),
      mxPort: sink.port,
      totalConcurrency: 4,
      destinationConcurrency: 2,
      log: t.deps.log,
      ehlo: t.deps.config.hostname,
    })
    const engine = createDeliveryEngine(t.deps, { transport, signer, rotation: createIpRotation(t.deps), commits: t.deps.commits, random: () => 0.5 })
    try {
      const b = await t.createBridge()
      const sent = await t.sendAs(b.api_key, { to: ['ada@example.net', 'permfail@example.net'] })
      expect(sent.status).toBe(202)
      await engine.drain()
      const states = t.deps.db.$client.query('SELECT address, state FROM message_recipients WHERE message_id = ? ORDER BY id').all(sent.body.data.id)
      expect(states).toEqual([
        { address: 'ada@example.net', state: 'sent' },
        { address: 'permfail@example.net', state: 'bounced' },
      ])
      const got = sink.messages.find((m) => m.rcptTo.includes('ada@example.net'))
      expect(got!.raw.toString()).toContain('Subject: Receipt')
      expect((await t.bridge(b.id)).counts).toEqual({ accepted: 1, delivered: 1, bounced: 1, complained: 0 })
    } finally {
      await engine.stop()
      await transport.close()
    }
  })

  test("a bridge's key cannot be changed, deleted or restored through /api/v2/api-keys (409)", async () => {
    const t = testApp()
    const admin = t.makeKey()
    await t.call('POST', '/api/v2/sending-domains', { key: admin.key, body: { name: 'example.com' } })
    const bridge = await t.call('POST', '/api/v2/bridges', { key: admin.key, body: { name: 'app', domains: ['example.com'] } })
    expect(bridge.status).toBe(201)
    const keyId = (t.deps.db.$client.query('SELECT api_key_id FROM bridges WHERE id = ?').get(bridge.body.data.id) as { api_key_id: number }).api_key_id
    for (const [method, path, body] of [
      ['PATCH', `/api/v2/api-keys/${keyId}`, { allowed_ips: [] }],
      ['DELETE', `/api/v2/api-keys/${keyId}`, undefined],
      ['POST', `/api/v2/api-keys/${keyId}/restore`, undefined],
    ] as const) {
      const r = await t.call(method, path, { key: admin.key, body })
      expect(r.status, `${method} ${path}`).toBe(409)
      expect(r.body.error.message).toContain('/api/v2/bridges/')
    }
  })
})
