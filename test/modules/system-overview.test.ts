import { describe, expect, test } from 'bun:test'
import { testApp } from '../support/app'

describe('GET /api/v2/system/overview', () => {
  test('queue depth and oldest waiting message; warnings for an unverified domain, no public host name and a disabled webhook', async () => {
    const t = testApp({ allow_unverified_domains: true })
    const { key } = t.makeKey({ permissions: ['statistics.read'] })
    const sender = t.makeKey()
    const empty = await t.call('GET', '/api/v2/system/overview', { key })
    expect(empty.status).toBe(200)
    expect(empty.body.data).toEqual({ queue: { depth: 0, queued: 0, deferred: 0, sending: 0, oldest_queued_at: null }, warnings: [] })

    const oldest = t.deps.clock.now()
    for (const to of [['a@example.net', 'b@example.net'], ['c@example.net']]) {
      expect((await t.call('POST', '/v1/emails', { key: sender.key, body: { from: 'ada@example.com', to, subject: 'x', text: 'y' } })).status).toBe(202)
      t.deps.clock.advance(5000)
    }
    t.deps.db.$client.run("UPDATE message_recipients SET state = 'deferred' WHERE address = 'b@example.net'")
    t.deps.db.$client.run("UPDATE message_recipients SET state = 'sent' WHERE address = 'a@example.net'")
    const domain = await t.call('POST', '/api/v2/sending-domains', { key: sender.key, body: { name: 'example.com' } })
    expect(domain.status).toBe(201)
    t.deps.db.$client.run(
      "INSERT INTO webhooks (url, kinds, secret, enabled, disabled_reason, disabled_at, created_at, updated_at) VALUES ('https://hooks.example.com/x', '[\"*\"]', 'whsec_x', 0, 'failures', 1, 1, 1)",
    )

    const r = await t.call('GET', '/api/v2/system/overview', { key })
    expect(r.body.data.queue).toEqual({ depth: 2, queued: 1, deferred: 1, sending: 0, oldest_queued_at: new Date(oldest).toISOString() })
    expect(r.body.data.warnings.map((w: { kind: string }) => w.kind)).toEqual(['domain_not_verified', 'webhook_disabled'])
    expect(r.body.data.warnings[0]).toEqual({
      kind: 'domain_not_verified',
      message: expect.stringContaining('example.com is not verified'),
      href: `/admin/sending/domains/${domain.body.data.id}`,
    })

    const local = testApp({ hostname: 'mailroom' })
    const localKey = local.makeKey().key
    const warned = await local.call('GET', '/api/v2/system/overview', { key: localKey })
    expect(warned.body.data.warnings).toEqual([{ kind: 'no_public_host_name', message: expect.stringContaining('short name'), href: '/admin/settings' }])
  })
})

describe('GET /api/v2/system/settings', () => {
  test('the effective settings, never a secret; needs settings.read', async () => {
    const secret = Buffer.alloc(32, 7).toString('base64')
    const t = testApp({ secret_key: secret, default_from: 'Acme <hello@acme.example>' })
    const reader = t.makeKey({ permissions: ['settings.read'] })
    const other = t.makeKey({ permissions: ['statistics.read'] })
    expect((await t.call('GET', '/api/v2/system/settings', { key: other.key })).status).toBe(403)
    const r = await t.call('GET', '/api/v2/system/settings', { key: reader.key })
    expect(r.status).toBe(200)
    expect(r.body.data).toMatchObject({
      hostname: 'mailroom.test',
      hostname_is_public: true,
      public_url: 'http://127.0.0.1:8825',
      tracking_base_url: 'http://127.0.0.1:8825',
      listeners: { http: '127.0.0.1:8825', smtp: '127.0.0.1:2587', smtp_tls: null, mx: null },
      defaults: { from: 'Acme <hello@acme.example>', rate_limit: 600 },
      console: { session_idle_minutes: 60, session_max_hours: 12, trust_proxy: false },
    })
    // Every field says how it is changed: its environment variable and flag.
    expect(r.body.data.sources.hostname).toMatchObject({ env: 'MAILROOM_HOSTNAME', flag: '--hostname' })
    expect(r.body.data.sources['listeners.smtp']).toMatchObject({ env: 'MAILROOM_SMTP_LISTEN', flag: '--smtp-listen' })
    expect(r.body.data.sources['defaults.rate_limit']).toMatchObject({ env: 'MAILROOM_DEFAULT_RATE_LIMIT', flag: '--default-rate-limit' })
    expect(r.body.data.sources.tracking_base_url).toMatchObject({ env: 'MAILROOM_PUBLIC_URL', flag: '--public-url' })
    const text = JSON.stringify(r.body)
    expect(text).not.toContain(secret)
    expect(text).not.toContain('secret')
  })
})
