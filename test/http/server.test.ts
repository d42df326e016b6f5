import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SERVER_BODY_CAP } from '../../src/http/body'
import { testApp } from '../support/app'

/**
 * Real sockets on loopback. The server listens on [::] (dual-stack), so a client on
 * 127.0.0.1 is seen as ::ffff:127.0.0.1 and one on [::1] as ::1.
 */
const t = testApp({ max_body_bytes: 2048 })
let v4 = ''
let v6 = ''

beforeAll(() => {
  t.app.listen({ hostname: '::', port: 0, maxRequestBodySize: SERVER_BODY_CAP })
  v4 = `http://127.0.0.1:${t.app.server!.port}`
  v6 = `http://[::1]:${t.app.server!.port}`
})
afterAll(() => t.app.stop(true))

const get = (base: string, path: string, key: string) => fetch(base + path, { headers: { authorization: `Bearer ${key}` } })

describe('IP allowlist over real connections', () => {
  const vectors: Array<[allow: string[], v4Allowed: boolean, v6Allowed: boolean]> = [
    [[], true, true],
    [['127.0.0.1'], true, false],
    [['127.0.0.0/8'], true, false],
    [['127.0.0.1-127.0.0.9'], true, false],
    [['::ffff:127.0.0.1'], true, false],
    [['::1'], false, true],
    [['::1/128'], false, true],
    [['::/0'], false, true],
    [['192.0.2.0/24', '::1'], false, true],
    [['127.0.0.1', '::1'], true, true],
    [['10.0.0.0/8', '2001:db8::/32'], false, false],
  ]
  for (const [allow, okV4, okV6] of vectors) {
    test(`allow ${JSON.stringify(allow)}: IPv4 ${okV4 ? 'in' : 'out'}, IPv6 ${okV6 ? 'in' : 'out'}`, async () => {
      const k = t.makeKey({ allowed_ips: allow })
      for (const [base, ok] of [
        [v4, okV4],
        [v6, okV6],
      ] as const) {
        const res = await get(base, '/api/v2/permissions', k.key)
        expect(res.status).toBe(ok ? 200 : 403)
        if (!ok) expect(((await res.json()) as { error: { code: string } }).error.code).toBe('ip_not_allowed')
      }
    })
  }

  test('the allowlist is checked before the key status, the permission and the rate limit', async () => {
    const k = t.makeKey({ allowed_ips: ['::1'], permissions: [], rate_limit: 1 })
    const admin = t.makeKey()
    await t.call('PATCH', `/api/v2/api-keys/${k.id}`, { key: admin.key, body: { status: 'inactive' } })
    const res = await get(v4, '/api/v2/api-keys', k.key)
    expect(res.status).toBe(403)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('ip_not_allowed')
    expect(res.headers.get('x-ratelimit-limit')).toBeNull()
  })

  test('the last access address is the client address', async () => {
    const admin = t.makeKey()
    const k = t.makeKey()
    await get(v6, '/api/v2/permissions', k.key)
    const read = await t.call('GET', `/api/v2/api-keys/${k.id}`, { key: admin.key })
    expect(read.body.data.last_used_ip).toBe('::1')
  })
})

describe('rate limit under concurrency', () => {
  test('2N concurrent requests against a limit of N give exactly N successes', async () => {
    const N = 40
    const k = t.makeKey({ rate_limit: N })
    const responses = await Promise.all(Array.from({ length: 2 * N }, () => get(v4, '/api/v2/permissions', k.key)))
    const statuses = responses.map((r) => r.status)
    expect(statuses.filter((s) => s === 200)).toHaveLength(N)
    expect(statuses.filter((s) => s === 429)).toHaveLength(N)
    for (const r of responses) {
      expect(r.headers.get('x-ratelimit-limit')).toBe(String(N))
      expect(Number(r.headers.get('x-ratelimit-remaining'))).toBeGreaterThanOrEqual(0)
      expect(Number(r.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0)
      if (r.status === 429) {
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0)
        expect(((await r.json()) as { error: { code: string } }).error.code).toBe('rate_limited')
      }
    }
    const remaining = responses
      .filter((r) => r.status === 200)
      .map((r) => Number(r.headers.get('x-ratelimit-remaining')))
      .sort((a, b) => a - b)
    expect(remaining).toEqual(Array.from({ length: N }, (_, i) => i))
  })

  test('refused requests are not counted against the limit', async () => {
    const k = t.makeKey({ rate_limit: 2, permissions: ['roles.read'] })
    for (let i = 0; i < 5; i++) expect((await get(v4, '/api/v2/api-keys', k.key)).status).toBe(403)
    expect((await get(v4, '/api/v2/roles', k.key)).status).toBe(200)
    expect((await get(v4, '/api/v2/roles', k.key)).status).toBe(200)
    expect((await get(v4, '/api/v2/roles', k.key)).status).toBe(429)
  })

  test('a raised limit applies without rotating the key', async () => {
    const admin = t.makeKey()
    const k = t.makeKey({ rate_limit: 1 })
    expect((await get(v4, '/api/v2/roles', k.key)).status).toBe(200)
    expect((await get(v4, '/api/v2/roles', k.key)).status).toBe(429)
    await t.call('PATCH', `/api/v2/api-keys/${k.id}`, { key: admin.key, body: { rate_limit: 100 } })
    const res = await get(v4, '/api/v2/roles', k.key)
    expect(res.status).toBe(200)
    expect(res.headers.get('x-ratelimit-limit')).toBe('100')
  })
})

describe('request bodies on the wire', () => {
  test('a declared length over the limit gets 413 in the envelope', async () => {
    const k = t.makeKey()
    const res = await fetch(v4 + '/api/v2/roles', {
      method: 'POST',
      headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', description: 'd'.repeat(10_000), permissions: [] }),
    })
    expect(res.status).toBe(413)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('payload_too_large')
  })

  test('a huge declared length is refused at once, without the body being sent', async () => {
    const k = t.makeKey()
    const socket = await Bun.connect({
      hostname: '127.0.0.1',
      port: t.app.server!.port!,
      socket: {
        data(s, chunk) {
          ;(s.data as { reply: string }).reply += chunk.toString()
        },
      },
      data: { reply: '' },
    })
    socket.write(
      `POST /api/v2/roles HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${k.key}\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{`,
    )
    let reply = ''
    for (let i = 0; i < 200 && !reply.includes('payload_too_large'); i++) {
      await Bun.sleep(10)
      reply = (socket.data as { reply: string }).reply
    }
    socket.end()
    expect(reply).toStartWith('HTTP/1.1 413')
    expect(reply).toContain('"code":"payload_too_large"')
  })

  test('a chunked body over the limit gets 413 in the envelope', async () => {
    const k = t.makeKey()
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"name":"x","description":"'))
        for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode('d'.repeat(1000)))
        c.enqueue(new TextEncoder().encode('","permissions":[]}'))
        c.close()
      },
    })
    const res = await fetch(v4 + '/api/v2/roles', { method: 'POST', headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' }, body })
    expect(res.status).toBe(413)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('payload_too_large')
  })

  test('a chunked body within the limit is accepted', async () => {
    const k = t.makeKey()
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"name":"chunked",'))
        c.enqueue(new TextEncoder().encode('"permissions":[]}'))
        c.close()
      },
    })
    const res = await fetch(v4 + '/api/v2/roles', { method: 'POST', headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' }, body })
    expect(res.status).toBe(201)
  })
})
