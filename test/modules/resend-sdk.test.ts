import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Resend } from 'resend'
import { decodeId, encodeId } from '../../src/modules/resend/ids'
import { createWebhookDispatcher } from '../../src/modules/webhooks/dispatcher'
import { testApp } from '../support/app'
import { startDnsServer, type DnsServer } from '../support/dns-server'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver'

/**
 * The official `resend` SDK (6.38) against the running server over a real socket, for the
 * method groups beyond emails (issue 19): domains, API keys, webhooks, and a Resend-format
 * webhook delivery that `resend.webhooks.verify` accepts unchanged.
 */
let dns: DnsServer
let rx: WebhookReceiver
let t: ReturnType<typeof testApp>
let admin: { key: string }
let base = ''

beforeAll(async () => {
  dns = await startDnsServer()
  t = testApp({ allow_unverified_domains: true, dns_servers: [dns.server], webhooks_allow_private: true })
  // Timestamps near the real time: `webhooks.verify` checks them against Date.now().
  t.deps.clock.set(Math.floor(Date.now() / 1000) * 1000)
  admin = t.makeKey()
  rx = await startWebhookReceiver()
  t.app.listen({ hostname: '127.0.0.1', port: 0 })
  base = `http://127.0.0.1:${t.app.server!.port}/compat/resend`
})
afterAll(async () => {
  await t.app.stop()
  await rx.close()
  await dns.close()
})

const client = (key = admin.key) => new Resend(key, { baseUrl: base })
const uniqueDomain = () => `r${Math.random().toString(36).slice(2, 10)}.example.com`

describe('ids', () => {
  test('round-trip, keep the UUID form, and refuse another kind', () => {
    const id = encodeId('webhook', 42)
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(decodeId('webhook', id)).toBe(42)
    expect(() => decodeId('domain', id)).toThrow('Domain not found.')
    expect(() => decodeId('domain', 'not-an-id')).toThrow('Domain not found.')
  })
})

describe('domains', () => {
  test('create answers the records to publish in Resend shape', async () => {
    const name = uniqueDomain()
    const { data, error } = await client().domains.create({ name, openTracking: true })
    expect(error).toBeNull()
    expect(data).toMatchObject({ name, status: 'not_started', region: 'us-east-1', open_tracking: true, click_tracking: false })
    expect(data!.capabilities).toEqual({ sending: 'enabled', receiving: 'disabled' })
    expect(data!.records.map((r) => `${r.record}:${r.type}`).sort()).toEqual(['DKIM:TXT', 'SPF:CNAME', 'SPF:TXT'])
    for (const r of data!.records) expect(r).toMatchObject({ ttl: 'Auto', status: 'not_started', name: expect.stringContaining(name) })
    // The same domain natively, with the tracking default set through the compat call.
    const native = await t.call('GET', `/api/v2/sending-domains/${decodeId('domain', data!.id)}`, { key: admin.key })
    expect(native.body.data).toMatchObject({ name, track_opens: true, track_clicks: false })
  })

  test('get, update, verify against published records, and remove', async () => {
    // An address in the default pool, so the SPF record names it (without one it holds a placeholder that cannot verify).
    const ip = await t.call('POST', '/api/v2/ips', { key: admin.key, body: { address: '127.0.0.2', hostname: 'mta1.example.net' } })
    await t.call('POST', '/api/v2/ip-pools', { key: admin.key, body: { name: 'main', is_default: true, members: [{ ip_id: ip.body.data.id }] } })
    const name = uniqueDomain()
    const created = (await client().domains.create({ name })).data!
    const got = await client().domains.get(created.id)
    expect(got.error).toBeNull()
    expect(got.data).toMatchObject({ object: 'domain', id: created.id, name, status: 'not_started', records: created.records })

    const updated = await client().domains.update({ id: created.id, clickTracking: true })
    expect(updated).toEqual({ data: { object: 'domain', id: created.id }, error: null, headers: expect.anything() })
    expect((await client().domains.get(created.id)).data!.click_tracking).toBe(true)

    for (const r of created.records) dns.setZone(r.name, r.type === 'CNAME' ? { CNAME: r.value } : { TXT: [r.value] })
    const verified = await client().domains.verify(created.id)
    expect(verified.error).toBeNull()
    expect(verified.data).toEqual({ object: 'domain', id: created.id })
    const after = (await client().domains.get(created.id)).data!
    expect(after.records.map((r) => r.status)).toEqual(['verified', 'verified', 'verified'])
    expect(after.status).toBe('verified')

    const removed = await client().domains.remove(created.id)
    expect(removed.data).toEqual({ object: 'domain', id: created.id, deleted: true })
    const gone = await client().domains.get(created.id)
    expect(gone.data).toBeNull()
    expect(gone.error).toMatchObject({ name: 'not_found', statusCode: 404 })
  })

  test('list pages with limit/after/before, newest first', async () => {
    const ids: string[] = []
    for (let i = 0; i < 3; i++) ids.push((await client().domains.create({ name: uniqueDomain() })).data!.id)
    const first = await client().domains.list({ limit: 2 })
    expect(first.error).toBeNull()
    expect(first.data).toMatchObject({ object: 'list', has_more: true })
    expect(first.data!.data.map((d) => d.id)).toEqual([ids[2]!, ids[1]!])
    expect(first.data!.data[0]).toMatchObject({ name: expect.any(String), status: 'not_started', region: 'us-east-1', created_at: expect.any(String) })
    const next = await client().domains.list({ limit: 1, after: ids[1]! })
    expect(next.data!.data.map((d) => d.id)).toEqual([ids[0]!])
    const back = await client().domains.list({ limit: 2, before: ids[0]! })
    expect(back.data!.data.map((d) => d.id)).toEqual([ids[2]!, ids[1]!])
    expect(back.data!.has_more).toBe(false)
  })

  test('an option Mailroom does not have is refused by name', async () => {
    const { data, error } = await client().domains.create({ name: uniqueDomain(), capabilities: { receiving: 'enabled' } })
    expect(data).toBeNull()
    expect(error).toMatchObject({ name: 'validation_error', statusCode: 422, message: expect.stringContaining('capabilities.receiving') })
  })
})

describe('api keys', () => {
  test('full_access makes an Administrator key that works; remove revokes it', async () => {
    const { data, error } = await client().apiKeys.create({ name: 'onboarding', permission: 'full_access' })
    expect(error).toBeNull()
    expect(data).toEqual({ id: expect.any(String), token: expect.any(String) })
    const native = await t.call('GET', `/api/v2/api-keys/${decodeId('api_key', data!.id)}`, { key: admin.key })
    expect(native.body.data.role.name).toBe('Administrator')
    expect((await client(data!.token).domains.list()).error).toBeNull()

    const listed = await client().apiKeys.list()
    expect(listed.data).toMatchObject({ object: 'list', has_more: false })
    expect(listed.data!.data.find((k) => k.id === data!.id)).toEqual({ id: data!.id, name: 'onboarding', created_at: expect.any(String), last_used_at: null })

    expect((await client().apiKeys.update(data!.id, { name: 'renamed' })).data).toEqual({ object: 'api_key', id: data!.id })
    expect((await client().apiKeys.list()).data!.data.find((k) => k.id === data!.id)!.name).toBe('renamed')

    expect((await client().apiKeys.remove(data!.id)).data).toEqual({ object: 'api_key', id: data!.id, deleted: true })
    expect((await client().apiKeys.list()).data!.data.some((k) => k.id === data!.id)).toBe(false)
    const refused = await client(data!.token).domains.list()
    expect(refused.error).toMatchObject({ statusCode: 401 })
  })

  test('sending_access can send and nothing else', async () => {
    const { data } = await client().apiKeys.create({ name: 'app', permission: 'sending_access' })
    const native = await t.call('GET', `/api/v2/api-keys/${decodeId('api_key', data!.id)}`, { key: admin.key })
    expect(native.body.data.role.name).toBe('Sending access')
    const sent = await client(data!.token).emails.send({ from: 'hi@acme.example', to: 'bob@example.net', subject: 'Hi', text: 'hi' })
    expect(sent.error).toBeNull()
    const listed = await client(data!.token).domains.list()
    expect(listed.error).toMatchObject({ name: 'restricted_api_key', statusCode: 403 })
    // A second sending key reuses the role.
    await client().apiKeys.create({ name: 'app 2', permission: 'sending_access' })
    const roles = await t.call('GET', '/api/v2/roles?per_page=100', { key: admin.key })
    expect(roles.body.data.filter((r: { name: string }) => r.name === 'Sending access')).toHaveLength(1)
  })
})

describe('webhooks', () => {
  test('create, get, list, update, rotate and remove in Resend shape', async () => {
    const created = await client().webhooks.create({ endpoint: rx.url, events: ['email.sent', 'email.delivered', 'domain.created'] })
    expect(created.error).toBeNull()
    expect(created.data).toEqual({ object: 'webhook', id: expect.any(String), signing_secret: expect.stringMatching(/^whsec_/) })
    const id = created.data!.id

    const got = await client().webhooks.get(id)
    expect(got.data).toEqual({
      object: 'webhook',
      id,
      endpoint: rx.url,
      created_at: expect.any(String),
      status: 'enabled',
      events: ['email.sent', 'email.delivered', 'domain.created'],
      signing_secret: created.data!.signing_secret,
    })
    // Natively it is a webhook of format resend on the native kinds.
    const native = await t.call('GET', `/api/v2/webhooks/${decodeId('webhook', id)}`, { key: admin.key })
    expect(native.body.data).toMatchObject({ format: 'resend', events: ['message.queued', 'message.sent', 'domain.created'] })

    const listed = await client().webhooks.list({ limit: 100 })
    expect(listed.data).toMatchObject({ object: 'list', has_more: false })
    expect(listed.data!.data.find((w) => w.id === id)).toEqual({
      id,
      endpoint: rx.url,
      created_at: expect.any(String),
      status: 'enabled',
      events: got.data!.events,
    })

    expect((await client().webhooks.update(id, { status: 'disabled', events: ['email.bounced'] })).data).toEqual({ object: 'webhook', id })
    expect((await client().webhooks.get(id)).data).toMatchObject({ status: 'disabled', events: ['email.bounced'] })

    const rotated = await client().webhooks.rotateSigningSecret(id)
    expect(rotated.data).toEqual({ object: 'webhook', id, signing_secret: expect.stringMatching(/^whsec_/) })
    expect(rotated.data!.signing_secret).not.toBe(created.data!.signing_secret)

    expect((await client().webhooks.remove(id)).data).toEqual({ object: 'webhook', id, deleted: true })
    expect((await client().webhooks.get(id)).error).toMatchObject({ name: 'not_found', statusCode: 404 })
  })

  test('an event Mailroom does not emit is refused, naming it', async () => {
    const { error } = await client().webhooks.create({ endpoint: rx.url, events: ['email.sent', 'email.received'] })
    expect(error).toMatchObject({ name: 'validation_error', statusCode: 422, message: expect.stringContaining('email.received') })
  })

  test('a Mailroom-format webhook is not on this surface; format is settable natively', async () => {
    const made = await t.call('POST', '/api/v2/webhooks', { key: admin.key, body: { endpoint: rx.url, events: ['*'] } })
    expect(made.body.data.format).toBe('mailroom')
    expect((await client().webhooks.get(encodeId('webhook', made.body.data.id))).error).toMatchObject({ name: 'not_found' })
    const changed = await t.call('PATCH', `/api/v2/webhooks/${made.body.data.id}`, { key: admin.key, body: { format: 'resend' } })
    expect(changed.body.data.format).toBe('resend')
    expect((await client().webhooks.get(encodeId('webhook', made.body.data.id))).data).toMatchObject({ status: 'enabled' })
    await t.call('DELETE', `/api/v2/webhooks/${made.body.data.id}`, { key: admin.key })
  })

  test('a delivered Resend-format payload verifies and parses with resend.webhooks.verify', async () => {
    // A webhook gets the events from its creation on; a second later, the other tests' events are before it.
    t.deps.clock.set(t.deps.clock.now() + 1000)
    const hook = (await client().webhooks.create({ endpoint: rx.url, events: ['email.sent', 'domain.created'] })).data!
    rx.received.length = 0
    const sent = (
      await client().emails.send({ from: 'Acme <hi@acme.example>', to: ['bob@example.net'], subject: 'Welcome', text: 'hi', tags: [{ name: 'k', value: 'v' }] })
    ).data!
    const domain = (await client().domains.create({ name: uniqueDomain() })).data!
    const dispatcher = createWebhookDispatcher(t.deps)
    await dispatcher.drain()
    await dispatcher.stop()

    expect(rx.received).toHaveLength(2)
    const parsed = rx.received.map((r) => {
      expect(r.headers['webhook-id']).toBeUndefined()
      return client().webhooks.verify({
        payload: r.body,
        headers: { id: r.headers['svix-id']!, timestamp: r.headers['svix-timestamp']!, signature: r.headers['svix-signature']! },
        webhookSecret: hook.signing_secret,
      })
    })
    const email = parsed.find((p) => p.type === 'email.sent')!
    expect(email).toEqual({
      type: 'email.sent',
      created_at: expect.any(String),
      data: {
        email_id: sent.id,
        created_at: expect.any(String),
        message_id: expect.stringMatching(/^<.+@.+>$/),
        from: 'hi@acme.example',
        to: ['bob@example.net'],
        subject: 'Welcome',
        tags: { k: 'v' },
      },
    })
    const dom = parsed.find((p) => p.type === 'domain.created')!
    expect(dom.data).toMatchObject({ id: domain.id, name: domain.name, status: 'pending', region: 'us-east-1', created_at: domain.created_at })
    expect((dom.data as { records: unknown[] }).records).toHaveLength(3)
    // A wrong secret does not verify.
    expect(() =>
      client().webhooks.verify({
        payload: rx.received[0]!.body,
        headers: {
          id: rx.received[0]!.headers['svix-id']!,
          timestamp: rx.received[0]!.headers['svix-timestamp']!,
          signature: rx.received[0]!.headers['svix-signature']!,
        },
        webhookSecret: 'whsec_' + Buffer.alloc(24, 1).toString('base64'),
      }),
    ).toThrow()
  })
})
