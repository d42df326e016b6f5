import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Resend } from 'resend'
import { emit } from '../../src/modules/events/service'
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
    // A revoked key: Resend's invalid_api_key, 403 (src/modules/messages/resend-errors.ts).
    expect(refused.error).toMatchObject({ name: 'invalid_api_key', statusCode: 403 })
  })

  test('sending_access can send and nothing else', async () => {
    const { data } = await client().apiKeys.create({ name: 'app', permission: 'sending_access' })
    const native = await t.call('GET', `/api/v2/api-keys/${decodeId('api_key', data!.id)}`, { key: admin.key })
    expect(native.body.data.role.name).toBe('Sending access')
    const sent = await client(data!.token).emails.send({ from: 'hi@acme.example', to: 'bob@example.net', subject: 'Hi', text: 'hi' })
    expect(sent.error).toBeNull()
    const listed = await client(data!.token).domains.list()
    expect(listed.error).toMatchObject({ name: 'restricted_api_key', statusCode: 401 })
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
    // The delivery log: webhooks.events list, get (with the payload sent), attempts, replay.
    const events = await client().webhooks.events.list({ webhookId: hook.id })
    expect(events.error).toBeNull()
    expect(events.data).toMatchObject({ object: 'list', has_more: false })
    expect(events.data!.data.map((e) => `${e.type}:${e.status}`).sort()).toEqual(['domain.created:success', 'email.sent:success'])
    const sentEvent = events.data!.data.find((e) => e.type === 'email.sent')!
    const one = await client().webhooks.events.get({ webhookId: hook.id, eventId: sentEvent.id })
    expect(one.data).toEqual({
      object: 'webhook_event',
      id: sentEvent.id,
      type: 'email.sent',
      created_at: expect.any(String),
      status: 'success',
      next_attempt_at: null,
      payload: email,
    })
    const attempts = await client().webhooks.events.attempts.list({ webhookId: hook.id, eventId: sentEvent.id })
    expect(attempts.data).toEqual({
      object: 'list',
      has_more: false,
      data: [{ id: expect.any(String), http_status_code: 204, response: '', sent_at: expect.any(String) }],
    })
    const replayed = await client().webhooks.events.replay({ webhookId: hook.id, eventId: sentEvent.id })
    expect(replayed.data).toEqual({ object: 'webhook_event', id: expect.any(String) })
    expect((await client().webhooks.events.get({ webhookId: hook.id, eventId: replayed.data!.id })).data!.status).toBe('pending')

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

describe('webhook payloads: contacts', () => {
  test('contact.created and contact.updated carry Resend contact data', async () => {
    t.deps.clock.set(t.deps.clock.now() + 1000)
    const hook = (await client().webhooks.create({ endpoint: rx.url, events: ['contact.created', 'contact.updated'] })).data!
    rx.received.length = 0
    const seg = (await client().segments.create({ name: 'Hooked' })).data!
    const c = (await client().contacts.create({ email: 'hooked@example.com', firstName: 'Hoo', segments: [{ id: seg.id }] })).data!
    await client().contacts.update({ id: c.id, unsubscribed: true })
    const dispatcher = createWebhookDispatcher(t.deps)
    await dispatcher.drain()
    await dispatcher.stop()
    // Only this webhook's requests (an earlier test's replayed delivery goes out in the same drain).
    const mine = rx.received.filter((r) => r.headers['svix-id']!.endsWith(`_${decodeId('webhook', hook.id)}`))
    const parsed = mine.map((r) =>
      client().webhooks.verify({
        payload: r.body,
        headers: { id: r.headers['svix-id']!, timestamp: r.headers['svix-timestamp']!, signature: r.headers['svix-signature']! },
        webhookSecret: hook.signing_secret,
      }),
    )
    expect(parsed.map((p) => p.type)).toEqual(['contact.created', 'contact.updated'])
    expect(parsed[0]!.data).toEqual({
      id: c.id,
      audience_id: seg.id,
      segment_ids: [seg.id],
      created_at: expect.any(String),
      updated_at: expect.any(String),
      email: 'hooked@example.com',
      first_name: 'Hoo',
      last_name: null,
      unsubscribed: expect.any(Boolean),
    })
    expect(parsed[1]!.data).toMatchObject({ id: c.id, unsubscribed: true })
    await client().webhooks.remove(hook.id)
  })
})

describe('webhook payloads: email outcomes', () => {
  test('email.bounced carries bounce, email.clicked carries click, from the events the engine and tracker write', async () => {
    t.deps.clock.set(t.deps.clock.now() + 1000)
    const hook = (await client().webhooks.create({ endpoint: rx.url, events: ['email.bounced', 'email.clicked', 'email.opened'] })).data!
    rx.received.length = 0
    const sent = (
      await client().emails.send({ from: 'hi@acme.example', to: 'gone@example.net', subject: 'Hi', html: '<a href="https://acme.example/x">x</a>' })
    ).data!
    // The events as the delivery engine (src/delivery/scheduler.ts) and the tracker (src/modules/tracking/service.ts) write them.
    const now = t.deps.clock.now()
    emit(t.deps.db, now, {
      kind: 'message.bounced',
      message_id: sent.id,
      recipient: 'gone@example.net',
      data: { code: 550, enhanced_code: '5.1.1', response: '550 5.1.1 no such user', suppressed: true },
    })
    emit(t.deps.db, now, {
      kind: 'message.clicked',
      message_id: sent.id,
      recipient: 'gone@example.net',
      data: { url: 'https://acme.example/x', first: true, ip: '203.0.113.7', user_agent: 'Mail/1.0' },
    })
    emit(t.deps.db, now, { kind: 'message.opened', message_id: sent.id, recipient: 'gone@example.net', data: { first: true, ip: null, user_agent: null } })
    const dispatcher = createWebhookDispatcher(t.deps)
    await dispatcher.drain()
    await dispatcher.stop()
    const mine = rx.received.filter((r) => r.headers['svix-id']!.endsWith(`_${decodeId('webhook', hook.id)}`))
    const parsed = mine.map((r) =>
      client().webhooks.verify({
        payload: r.body,
        headers: { id: r.headers['svix-id']!, timestamp: r.headers['svix-timestamp']!, signature: r.headers['svix-signature']! },
        webhookSecret: hook.signing_secret,
      }),
    )
    expect(parsed.map((p) => p.type)).toEqual(['email.bounced', 'email.clicked', 'email.opened'])
    expect(parsed[0]!.data).toMatchObject({
      email_id: sent.id,
      to: ['gone@example.net'],
      bounce: { type: 'Permanent', subType: 'General', message: '550 5.1.1 no such user' },
    })
    expect(parsed[1]!.data).toMatchObject({
      email_id: sent.id,
      click: { link: 'https://acme.example/x', ipAddress: '203.0.113.7', userAgent: 'Mail/1.0', timestamp: new Date(now).toISOString() },
    })
    expect(parsed[2]!.data).toMatchObject({ email_id: sent.id, subject: 'Hi' })
    await client().webhooks.remove(hook.id)
  })
})

describe('suppressions', () => {
  test('add, get by id and address, list with origin, remove, batch', async () => {
    const added = await client().suppressions.add({ email: 'Blocked@Example.net' })
    expect(added.error).toBeNull()
    expect(added.data).toEqual({ object: 'suppression', id: expect.any(String) })
    const byId = await client().suppressions.get(added.data!.id)
    expect(byId.data).toEqual({
      object: 'suppression',
      id: added.data!.id,
      email: 'blocked@example.net',
      origin: 'manual',
      source_id: null,
      created_at: expect.any(String),
    })
    expect((await client().suppressions.get('blocked@example.net')).data!.id).toBe(added.data!.id)
    // The native suppression stops a send to that address.
    const native = await t.call('GET', `/api/v2/suppressions/${decodeId('suppression', added.data!.id)}`, { key: admin.key })
    expect(native.body.data).toMatchObject({ scope: 'global', type: 'email', value: 'blocked@example.net', reason: 'manual' })

    const listed = await client().suppressions.list({ origin: 'manual' })
    expect(listed.data).toMatchObject({ object: 'list', has_more: false })
    expect(listed.data!.data.map((s) => s.email)).toContain('blocked@example.net')
    expect((await client().suppressions.list({ origin: 'bounce' })).data!.data).toEqual([])

    expect((await client().suppressions.remove('blocked@example.net')).data).toEqual({ object: 'suppression', id: added.data!.id, deleted: true })
    expect((await client().suppressions.get(added.data!.id)).error).toMatchObject({ name: 'not_found', statusCode: 404 })

    const batch = await client().suppressions.batch.add({ emails: ['a@example.net', 'b@example.net'] })
    expect(batch.data!.data).toEqual([
      { object: 'suppression', id: expect.any(String) },
      { object: 'suppression', id: expect.any(String) },
    ])
    const removed = await client().suppressions.batch.remove({ ids: [batch.data!.data[0]!.id, encodeId('suppression', 999_999)] })
    expect(removed.data!.data).toEqual([
      { object: 'suppression', id: batch.data!.data[0]!.id, deleted: true },
      { object: 'suppression', id: encodeId('suppression', 999_999), deleted: false },
    ])
    const byEmail = await client().suppressions.batch.remove({ emails: ['b@example.net'] })
    expect(byEmail.data!.data).toEqual([{ object: 'suppression', id: batch.data!.data[1]!.id, deleted: true }])
  })

  test('an invalid address is refused', async () => {
    const { error } = await client().suppressions.add({ email: 'not an address' })
    expect(error).toMatchObject({ name: 'validation_error', statusCode: 422 })
  })
})

describe('segments and contacts', () => {
  test('segments are lists: create, get, list, update, remove', async () => {
    const created = await client().segments.create({ name: 'Newsletter' })
    expect(created.error).toBeNull()
    expect(created.data).toEqual({ object: 'segment', id: expect.any(String), name: 'Newsletter' })
    const native = await t.call('GET', `/api/v2/lists/${decodeId('segment', created.data!.id)}`, { key: admin.key })
    expect(native.body.data.name).toBe('Newsletter')
    expect((await client().segments.get(created.data!.id)).data).toEqual({
      object: 'segment',
      id: created.data!.id,
      name: 'Newsletter',
      created_at: expect.any(String),
    })
    expect((await client().segments.update(created.data!.id, { name: 'Weekly' })).data).toEqual({ object: 'segment', id: created.data!.id })
    const listed = await client().segments.list()
    expect(listed.data!.data.find((s) => s.id === created.data!.id)).toEqual({ id: created.data!.id, name: 'Weekly', created_at: expect.any(String) })
    // The SDK's deprecated audiences are the same paths.
    expect((await client().audiences.get(created.data!.id)).data!.name).toBe('Weekly')
    expect((await client().segments.remove(created.data!.id)).data).toEqual({ object: 'segment', id: created.data!.id, deleted: true })
    expect((await client().segments.get(created.data!.id)).error).toMatchObject({ name: 'not_found' })
  })

  test('a contact across segments: create, get, list, update, segments add/list/remove, remove', async () => {
    const a = (await client().segments.create({ name: 'A' })).data!
    const b = (await client().segments.create({ name: 'B' })).data!
    const made = await client().contacts.create({ email: 'Jane@Example.com', firstName: 'Jane', segments: [{ id: a.id }] })
    expect(made.error).toBeNull()
    expect(made.data).toEqual({ object: 'contact', id: expect.any(String) })

    const got = await client().contacts.get(made.data!.id)
    expect(got.data).toEqual({
      object: 'contact',
      id: made.data!.id,
      email: 'jane@example.com',
      first_name: 'Jane',
      last_name: null,
      created_at: expect.any(String),
      unsubscribed: false,
      properties: {},
    })
    expect((await client().contacts.get({ email: 'jane@example.com' })).data!.id).toBe(made.data!.id)

    expect((await client().contacts.segments.add({ contactId: made.data!.id, segmentId: b.id })).data).toEqual({ id: b.id })
    const segs = await client().contacts.segments.list({ email: 'jane@example.com' })
    expect(segs.data).toMatchObject({ object: 'list', has_more: false })
    expect(segs.data!.data.map((s) => s.name)).toEqual(['A', 'B'])
    // Listed once overall, and once in each segment.
    const all = await client().contacts.list()
    expect(all.data!.data.filter((c) => c.email === 'jane@example.com')).toHaveLength(1)
    expect((await client().contacts.list({ segmentId: b.id })).data!.data.map((c) => c.email)).toEqual(['jane@example.com'])

    expect((await client().contacts.update({ email: 'jane@example.com', lastName: 'Doe', unsubscribed: true })).data).toEqual({
      object: 'contact',
      id: made.data!.id,
    })
    const rows = await t.call('GET', '/api/v2/contacts?email=jane@example.com', { key: admin.key })
    expect(rows.body.data.map((r: { last_name: string; status: string }) => `${r.last_name}:${r.status}`)).toEqual(['Doe:unsubscribed', 'Doe:unsubscribed'])

    const out = await client().contacts.segments.remove({ email: 'jane@example.com', segmentId: a.id })
    expect(out.data).toMatchObject({ id: a.id, deleted: true })
    // The id was that of the Mailroom contact on A (docs/api.md: a contact's id is its oldest list entry's); the address still names it.
    expect((await client().contacts.segments.list({ contactId: made.data!.id })).error).toMatchObject({ name: 'not_found' })
    expect((await client().contacts.get({ email: 'jane@example.com' })).data!.id).not.toBe(made.data!.id)
    expect((await client().contacts.segments.list({ email: 'jane@example.com' })).data!.data.map((s) => s.name)).toEqual(['B'])

    expect((await client().contacts.remove({ email: 'jane@example.com' })).data).toEqual({ object: 'contact', contact: 'jane@example.com', deleted: true })
    expect((await client().contacts.get({ email: 'jane@example.com' })).error).toMatchObject({ name: 'not_found', statusCode: 404 })
  })

  test('a contact without a segment goes to the General list; audience paths work on one list', async () => {
    const made = (await client().contacts.create({ email: 'solo@example.com' })).data!
    const native = await t.call('GET', `/api/v2/contacts/${decodeId('contact', made.id)}`, { key: admin.key })
    const list = await t.call('GET', `/api/v2/lists/${native.body.data.list_id}`, { key: admin.key })
    expect(list.body.data.name).toBe('General')

    const audience = (await client().audiences.create({ name: 'Legacy' })).data!
    const legacy = await client().contacts.create({ audienceId: audience.id, email: 'old@example.com', lastName: 'Old' })
    expect(legacy.data).toEqual({ object: 'contact', id: expect.any(String) })
    expect((await client().contacts.get({ audienceId: audience.id, email: 'old@example.com' })).data).toMatchObject({ last_name: 'Old' })
    expect((await client().contacts.update({ audienceId: audience.id, id: legacy.data!.id, firstName: 'O' })).data).toEqual({
      object: 'contact',
      id: legacy.data!.id,
    })
    expect((await client().contacts.remove({ audienceId: audience.id, email: 'old@example.com' })).data).toMatchObject({ deleted: true })
    expect((await client().contacts.get({ audienceId: audience.id, email: 'old@example.com' })).error).toMatchObject({ name: 'not_found' })
  })

  test('contact properties are custom fields; a contact carries their values', async () => {
    const made = await client().contactProperties.create({ key: 'company', type: 'string', fallbackValue: 'none' })
    expect(made.error).toBeNull()
    expect(made.data).toEqual({ object: 'contact_property', id: expect.any(String) })
    const plan = (await client().contactProperties.create({ key: 'seats', type: 'number' })).data!
    const native = await t.call('GET', `/api/v2/custom-fields/${decodeId('contact_property', made.data!.id)}`, { key: admin.key })
    expect(native.body.data).toMatchObject({ key: 'company', type: 'text', default_value: 'none' })

    const got = await client().contactProperties.get(made.data!.id)
    expect(got.data).toEqual({
      object: 'contact_property',
      id: made.data!.id,
      key: 'company',
      type: 'string',
      fallbackValue: 'none',
      createdAt: expect.any(String),
    })
    const listed = await client().contactProperties.list()
    expect(listed.data!.data.map((p) => p.key)).toEqual(['seats', 'company'])
    expect((await client().contactProperties.update({ id: plan.id, fallbackValue: 1 })).data).toEqual({ object: 'contact_property', id: plan.id })
    expect((await client().contactProperties.get(plan.id)).data).toMatchObject({ type: 'number', fallbackValue: 1 })

    const c = (await client().contacts.create({ email: 'props@example.com', properties: { company: 'Acme', seats: 5 } })).data!
    expect((await client().contacts.get(c.id)).data!.properties).toEqual({ company: { type: 'string', value: 'Acme' }, seats: { type: 'number', value: 5 } })

    expect((await client().contactProperties.remove(plan.id)).data).toEqual({ object: 'contact_property', id: plan.id, deleted: true })
    expect((await client().contactProperties.get(plan.id)).error).toMatchObject({ name: 'not_found' })
  })
})

describe('templates', () => {
  test('create, get, list, update as a draft, publish onto version activation, duplicate, remove', async () => {
    const made = await client().templates.create({
      name: 'Welcome',
      subject: 'Hi {{{NAME}}}',
      html: '<p>Hello {{{NAME}}}</p>',
      from: 'Acme <hi@acme.example>',
      replyTo: 'help@acme.example',
      variables: [{ key: 'NAME', type: 'string' }],
    })
    expect(made.error).toBeNull()
    expect(made.data).toEqual({ object: 'template', id: expect.any(String) })
    const id = made.data!.id
    const nativeId = decodeId('template', id)

    const got = await client().templates.get(id)
    expect(got.data).toEqual({
      object: 'template',
      id,
      name: 'Welcome',
      status: 'published',
      published_at: expect.any(String),
      alias: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      subject: 'Hi {{{NAME}}}',
      html: '<p>Hello {{{NAME}}}</p>',
      text: null,
      variables: null,
      from: 'Acme <hi@acme.example>',
      reply_to: ['help@acme.example'],
      has_unpublished_versions: false,
      current_version_id: expect.any(String),
    })

    // An update is a draft: a new version, while sends keep the active one.
    expect((await client().templates.update(id, { html: '<p>Welcome {{{NAME}}}</p>' })).data).toEqual({ object: 'template', id })
    let native = await t.call('GET', `/api/v2/templates/${nativeId}`, { key: admin.key })
    expect(native.body.data).toMatchObject({ active_version: 1, versions_count: 2, html: '<p>Hello {{{NAME}}}</p>' })
    expect((await client().templates.get(id)).data).toMatchObject({ status: 'draft', has_unpublished_versions: true, html: '<p>Welcome {{{NAME}}}</p>' })

    expect((await client().templates.publish(id)).data).toEqual({ object: 'template', id })
    native = await t.call('GET', `/api/v2/templates/${nativeId}`, { key: admin.key })
    expect(native.body.data).toMatchObject({ active_version: 2, html: '<p>Welcome {{{NAME}}}</p>' })
    expect((await client().templates.get(id)).data).toMatchObject({ status: 'published', has_unpublished_versions: false })

    const listed = await client().templates.list()
    expect(listed.data).toMatchObject({ object: 'list', has_more: false })
    expect(listed.data!.data.find((x) => x.id === id)).toEqual({
      id,
      name: 'Welcome',
      status: 'published',
      published_at: expect.any(String),
      alias: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    })

    const copy = await client().templates.duplicate(id)
    expect(copy.data).toEqual({ object: 'template', id: expect.any(String) })
    expect((await client().templates.get(copy.data!.id)).data).toMatchObject({ name: 'Welcome (copy)', html: '<p>Welcome {{{NAME}}}</p>' })

    expect((await client().templates.remove(id)).data).toEqual({ object: 'template', id, deleted: true })
    expect((await client().templates.get(id)).error).toMatchObject({ name: 'not_found', statusCode: 404 })
  })

  test('create(...).publish() chains; a fallback value is refused by name', async () => {
    const chained = await client().templates.create({ name: 'Chained', subject: 'S', html: '<p>x</p>' }).publish()
    expect(chained.data).toEqual({ object: 'template', id: expect.any(String) })
    const refused = await client().templates.create({
      name: 'F',
      subject: 'S',
      html: '<p>{{{X}}}</p>',
      variables: [{ key: 'X', type: 'string', fallbackValue: 'y' }],
    })
    expect(refused.error).toMatchObject({ name: 'validation_error', statusCode: 422, message: expect.stringContaining('variables.0.fallback_value') })
  })
})

describe('contact imports', () => {
  test('a CSV imports into the named segment through the native import; get and list show its progress', async () => {
    const seg = (await client().segments.create({ name: 'Imported' })).data!
    const tier = (await client().contactProperties.create({ key: 'tier', type: 'string' })).data!
    const csv = 'E-mail,Given,Tier\nann@example.com,Ann,gold\nbob@example.com,Bob,silver\nnot-an-address,X,none\n'
    const made = await client().contacts.imports.create({
      file: new Blob([csv], { type: 'text/csv' }),
      columnMap: { email: 'E-mail', firstName: 'Given', properties: { tier: { column: 'Tier' } } },
      segments: [{ id: seg.id }],
    })
    expect(made.error).toBeNull()
    expect(made.data).toEqual({ object: 'contact_import', id: expect.any(String) })
    await t.imports.idle()

    const got = await client().contacts.imports.get(made.data!.id)
    expect(got.data).toEqual({
      object: 'contact_import',
      id: made.data!.id,
      status: 'completed',
      created_at: expect.any(String),
      completed_at: expect.any(String),
      counts: { total: 3, created: 2, updated: 0, skipped: 0, failed: 1 },
    })
    const contactsIn = await client().contacts.list({ segmentId: seg.id })
    expect(contactsIn.data!.data.map((c) => `${c.email}:${c.first_name}`).sort()).toEqual(['ann@example.com:Ann', 'bob@example.com:Bob'])
    expect((await client().contacts.get({ email: 'ann@example.com' })).data!.properties).toMatchObject({ tier: { type: 'string', value: 'gold' } })

    const listed = await client().contacts.imports.list({ status: 'completed' })
    expect(listed.data).toMatchObject({ object: 'list', has_more: false })
    expect(listed.data!.data.map((i) => i.id)).toContain(made.data!.id)
    expect((await client().contacts.imports.list({ status: 'queued' })).data!.data).toEqual([])
    await client().contactProperties.remove(tier.id)
  })

  test('a column map naming a missing column is refused', async () => {
    const { error } = await client().contacts.imports.create({ file: new Blob(['email\na@example.com\n']), columnMap: { email: 'Mail' } })
    expect(error).toMatchObject({ name: 'validation_error', statusCode: 422, message: expect.stringContaining('Mail') })
  })
})

describe('broadcasts', () => {
  test('create a draft, get, list with cursors, update, duplicate, remove', async () => {
    const seg = (await client().segments.create({ name: 'Readers' })).data!
    const made = await client().broadcasts.create({
      name: 'Issue 1',
      segmentId: seg.id,
      from: 'News <news@acme.example>',
      subject: 'Hello {{first_name}}',
      html: '<p>Hi</p>',
      replyTo: 'editor@acme.example',
    })
    expect(made.error).toBeNull()
    expect(made.data).toEqual({ id: expect.any(String) })
    const id = made.data!.id
    // The same broadcast natively: a draft to the segment's list.
    const native = await t.call('GET', `/api/v2/broadcasts/${decodeId('broadcast', id)}`, { key: admin.key })
    expect(native.body.data).toMatchObject({ status: 'draft', list_ids: [decodeId('segment', seg.id)], reply_to: 'editor@acme.example', name: 'Issue 1' })

    const got = await client().broadcasts.get(id)
    expect(got.error).toBeNull()
    expect(got.data).toEqual({
      object: 'broadcast',
      id,
      name: 'Issue 1',
      audience_id: seg.id,
      segment_id: seg.id,
      from: 'News <news@acme.example>',
      subject: 'Hello {{first_name}}',
      reply_to: ['editor@acme.example'],
      preview_text: null,
      status: 'draft',
      created_at: expect.any(String),
      scheduled_at: null,
      sent_at: null,
      topic_id: null,
      html: '<p>Hi</p>',
      text: null,
    })

    const updated = await client().broadcasts.update(id, { subject: 'Issue one', text: 'Hi', replyTo: [] })
    expect(updated).toEqual({ data: { id }, error: null, headers: expect.anything() })
    expect((await client().broadcasts.get(id)).data).toMatchObject({ subject: 'Issue one', text: 'Hi', reply_to: null })

    // No name: named after its subject. The deprecated audience_id is the same segment.
    const second = (await client().broadcasts.create({ audienceId: seg.id, from: 'news@acme.example', subject: 'Second', text: 'Two' })).data!
    expect((await client().broadcasts.get(second.id)).data).toMatchObject({ name: 'Second', segment_id: seg.id })
    const copy = await client().broadcasts.duplicate(second.id)
    expect(copy.data).toEqual({ object: 'broadcast', id: expect.any(String) })

    // Newest first; `after` walks to older ones.
    const first = await client().broadcasts.list({ limit: 2 })
    expect(first.data).toMatchObject({ object: 'list', has_more: true })
    expect(first.data!.data.map((b) => b.id)).toEqual([copy.data!.id, second.id])
    expect(first.data!.data[1]).toEqual({
      id: second.id,
      name: 'Second',
      audience_id: seg.id,
      segment_id: seg.id,
      status: 'draft',
      created_at: expect.any(String),
      scheduled_at: null,
      sent_at: null,
    })
    const next = await client().broadcasts.list({ limit: 2, after: second.id })
    expect(next.data!.data[0]!.id).toBe(id)

    for (const b of [id, second.id, copy.data!.id]) expect((await client().broadcasts.remove(b)).data).toEqual({ object: 'broadcast', id: b, deleted: true })
    expect((await client().broadcasts.get(id)).error).toMatchObject({ name: 'not_found', statusCode: 404, message: 'Broadcast not found.' })
  })

  test('send with scheduled_at schedules it; cancel before it starts makes it a draft again', async () => {
    const seg = (await client().segments.create({ name: 'Later' })).data!
    const id = (await client().broadcasts.create({ segmentId: seg.id, from: 'news@acme.example', subject: 'Later', html: '<p>Later</p>' })).data!.id
    const at = new Date(t.deps.clock.now() + 86_400_000).toISOString()
    expect((await client().broadcasts.send(id, { scheduledAt: at })).data).toEqual({ id })
    expect((await client().broadcasts.get(id)).data).toMatchObject({ status: 'scheduled', scheduled_at: at })
    const native = await t.call('GET', `/api/v2/broadcasts/${decodeId('broadcast', id)}`, { key: admin.key })
    expect(native.body.data).toMatchObject({ status: 'scheduled', send_at: at })
    // Sending again while scheduled is refused.
    expect((await client().broadcasts.send(id)).error).toMatchObject({ statusCode: 409 })

    expect((await client().broadcasts.cancel(id)).data).toEqual({ object: 'broadcast', id })
    expect((await client().broadcasts.get(id)).data!.status).toBe('draft')
    // A draft again: editable and sendable (now = queued for the engine).
    expect((await client().broadcasts.update(id, { subject: 'Now' })).error).toBeNull()
    expect((await client().broadcasts.send(id)).error).toBeNull()
    expect((await client().broadcasts.get(id)).data!.status).toBe('queued')
    // A due broadcast cancelled is cancelled for good.
    await client().broadcasts.cancel(id)
    expect<string>((await client().broadcasts.get(id)).data!.status).toBe('canceled')
    expect((await client().broadcasts.send(id)).error).toMatchObject({ statusCode: 409 })

    // Created and scheduled in one call, in Resend's words for a time.
    const both = await client().broadcasts.create({
      segmentId: seg.id,
      from: 'news@acme.example',
      subject: 'Both',
      text: 'x',
      send: true,
      scheduledAt: 'in 1 day',
    })
    expect((await client().broadcasts.get(both.data!.id)).data).toMatchObject({ status: 'scheduled', scheduled_at: at })
  })

  test('what Mailroom cannot keep is refused by name, and nothing is left behind', async () => {
    const seg = (await client().segments.create({ name: 'Refusals' })).data!
    const before = (await t.call('GET', '/api/v2/broadcasts?per_page=100', { key: admin.key })).body.meta.total
    const base = { segmentId: seg.id, from: 'news@acme.example', subject: 'S', html: '<p>x</p>' }
    const cases: Array<[object, string]> = [
      [{ previewText: 'Peek' }, 'preview_text'],
      [{ topicId: 'topic' }, 'topic_id'],
      [{ replyTo: ['a@acme.example', 'b@acme.example'] }, 'reply_to'],
      [{ send: true, scheduledAt: 'some day soon' }, 'scheduled_at'],
      [{ segmentId: encodeId('segment', 999_999) }, 'Segment not found'],
    ]
    for (const [extra, word] of cases) {
      const { data, error } = await client().broadcasts.create({ ...base, ...extra } as Parameters<ReturnType<typeof client>['broadcasts']['create']>[0])
      expect(data).toBeNull()
      expect(error!.message).toContain(word)
    }
    // A from on an invalid address fails natively after nothing was created.
    expect((await client().broadcasts.create({ ...base, from: 'not an address', send: true })).error).toMatchObject({
      statusCode: 422,
      message: expect.stringContaining('from'),
    })
    expect((await t.call('GET', '/api/v2/broadcasts?per_page=100', { key: admin.key })).body.meta.total).toBe(before)

    // Create-and-send needs the send permission; create alone does not.
    const creator = t.makeKey({ permissions: ['broadcasts.create', 'lists.read'] })
    expect((await client(creator.key).broadcasts.create({ ...base, send: true })).error).toMatchObject({ name: 'restricted_api_key' })
    expect((await client(creator.key).broadcasts.create(base)).error).toBeNull()
  })
})
