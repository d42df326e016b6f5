import { afterEach, beforeAll, describe, expect, test } from 'bun:test'
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { generate } from 'selfsigned'
import { Webhook } from 'standardwebhooks'
import { createWebhookDispatcher } from '../../src/modules/webhooks/dispatcher'
import { emit } from '../../src/modules/events/service'
import type { Lookup } from '../../src/modules/webhooks/address'
import { generateSecret, postWebhook, signatureHeaders } from '../../src/modules/webhooks/post'
import { createWebhook, listAttempts, listDeliveries } from '../../src/modules/webhooks/service'
import { testApp } from '../support/app'

/**
 * Webhooks to an https endpoint given by host name, through real TLS on loopback. post.ts
 * resolves the name itself (an injected lookup stands in for DNS: hooks.mailroom.test is
 * 127.0.0.1), checks the address, and connects to that address; the TLS handshake must still
 * be about the name: SNI (RFC 6066 section 3) and the certificate's subjectAltName
 * (RFC 9110 section 4.3.4, RFC 6125). Certificates are self-signed per test run, with the
 * `selfsigned` package as src/smtp/tls.ts makes its own, and trusted through the https.Agent
 * that postWebhook accepts.
 */
const HOST = 'hooks.mailroom.test'
type Pem = { key: string; cert: string }
let hooks: Pem
let other: Pem

async function certificateFor(name: string): Promise<Pem> {
  const pems = await generate([{ name: 'commonName', value: name }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: name }] },
    ],
  })
  return { key: pems.private, cert: pems.cert }
}

beforeAll(async () => {
  hooks = await certificateFor(HOST)
  other = await certificateFor('other.mailroom.test')
})

interface Seen {
  sni: string | false | null
  host: string | undefined
  body: string
  headers: Record<string, string>
}

/** An https receiver on 127.0.0.1 presenting `pem`; it records every TCP connection and every request with the SNI name it came with. */
async function startReceiver(pem: Pem) {
  const requests: Seen[] = []
  let connections = 0
  const server = https.createServer({ key: pem.key, cert: pem.cert }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      requests.push({
        sni: (req.socket as TLSSocket).servername,
        host: req.headers.host,
        body: Buffer.concat(chunks).toString('utf8'),
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
      })
      res.writeHead(204).end()
    })
  })
  const sockets = new Set<Socket>()
  server.on('connection', (s: Socket) => {
    connections++
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `https://${HOST}:${port}/hooks/mailroom`,
    requests,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

const open: Array<{ close(): unknown }> = []
afterEach(async () => {
  for (const o of open.splice(0)) await o.close()
})

/** A resolver that knows one name, and remembers what it was asked. */
function lookupTo(address: string): Lookup & { asked: string[] } {
  const asked: string[] = []
  const lookup = async (host: string) => {
    asked.push(host)
    if (host !== HOST) throw Object.assign(new Error(`queryA ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return [{ address, family: 4 }]
  }
  return Object.assign(lookup, { asked })
}

/** Agents that trust the given self-signed certificates (and nothing else). */
function agentsTrusting(...certs: string[]) {
  const agents = { http: new http.Agent(), https: new https.Agent({ ca: certs }) }
  open.push({ close: () => (agents.http.destroy(), agents.https.destroy()) })
  return agents
}

/** One signed POST, as the dispatcher makes it. */
async function post(url: string, opts: { allowPrivate: boolean; lookup: Lookup; agents?: ReturnType<typeof agentsTrusting> }) {
  const secret = generateSecret()
  const body = JSON.stringify({ type: 'contact.subscribed', timestamp: new Date().toISOString(), data: { id: 1, kind: 'contact.subscribed' } })
  const now = Date.now()
  const headers = signatureHeaders([secret], 'evt_1_1', Math.floor(now / 1000), body)
  const result = await postWebhook({ url, headers, body, timeoutMs: 5000, now, ...opts })
  return { secret, body, result }
}

describe('webhooks to https://<name>', () => {
  test('arrives: the name is resolved once, the socket goes to the checked address, SNI and the certificate check use the name, the signature verifies', async () => {
    const rx = await startReceiver(hooks)
    open.push(rx)
    const lookup = lookupTo('127.0.0.1')
    const { secret, body, result } = await post(rx.url, { allowPrivate: true, lookup, agents: agentsTrusting(hooks.cert) })
    expect(result).toMatchObject({ ok: true, status: 204, error: null })
    // Resolved once, by post.ts: the request's own lookup hook hands over the checked address instead of asking again.
    expect(lookup.asked).toEqual([HOST])
    expect(rx.requests).toHaveLength(1)
    const [got] = rx.requests
    expect(got!.sni).toBe(HOST)
    expect(got!.host).toBe(new URL(rx.url).host)
    expect(got!.body).toBe(body)
    expect(new Webhook(secret).verify(got!.body, got!.headers)).toEqual(JSON.parse(body))
  })

  test('a certificate for another name fails the delivery with the host-name error, before anything is posted', async () => {
    const rx = await startReceiver(other)
    open.push(rx)
    // Trusted, but for other.mailroom.test: only the host-name check can refuse it.
    const { result } = await post(rx.url, { allowPrivate: true, lookup: lookupTo('127.0.0.1'), agents: agentsTrusting(hooks.cert, other.cert) })
    expect(result.ok).toBe(false)
    expect(result.status).toBeNull()
    expect(result.error).toContain('ERR_TLS_CERT_ALTNAME_INVALID')
    expect(result.error).toContain(HOST)
    expect(rx.requests).toEqual([])
  })

  test('through the dispatcher: an untrusted certificate is a failed attempt, its error recorded on the delivery', async () => {
    const rx = await startReceiver(hooks)
    open.push(rx)
    const t = testApp({ webhooks_allow_private: true })
    const hook = await createWebhook(t.deps, { endpoint: rx.url, events: ['*'] })
    // The dispatcher's own agents trust the system's authorities only; a self-signed certificate is refused.
    const d = createWebhookDispatcher(t.deps, { lookup: lookupTo('127.0.0.1'), random: () => 0.5 })
    open.push({ close: () => d.stop() })
    emit(t.deps.db, t.deps.clock.now(), { kind: 'contact.subscribed', contact_id: 1, list_id: 1, data: { email: 'a@example.com' } })
    await d.drain()
    const deliveries = listDeliveries(t.deps, hook.id, {}).items
    expect(deliveries).toHaveLength(1)
    const delivery = deliveries[0]!
    expect(delivery).toMatchObject({ state: 'pending', attempts: 1, last_status: null })
    expect(delivery.last_error).toMatch(/self[- ]signed/i)
    const attempt = listAttempts(t.deps, hook.id, delivery.id, {}).items[0]!
    expect(attempt.error).toBe(delivery.last_error)
    expect(rx.requests).toEqual([])
  })

  test('private addresses not allowed: the name resolving to 127.0.0.1 is refused before any connection', async () => {
    const rx = await startReceiver(hooks)
    open.push(rx)
    const { result } = await post(rx.url, { allowPrivate: false, lookup: lookupTo('127.0.0.1'), agents: agentsTrusting(hooks.cert) })
    expect(result).toMatchObject({ ok: false, status: null })
    expect(result.error).toBe(`${HOST} resolves to 127.0.0.1, a private, loopback, link-local or reserved address`)

    // The same through the dispatcher, for a webhook created while the name resolved to a public
    // address and now answering with loopback (DNS rebinding): refused at connect time, and recorded.
    const t = testApp({ webhooks_allow_private: false })
    const hook = await createWebhook(t.deps, { endpoint: rx.url, events: ['*'] }, { lookup: lookupTo('8.8.8.8') })
    const d = createWebhookDispatcher(t.deps, { lookup: lookupTo('127.0.0.1'), random: () => 0.5 })
    open.push({ close: () => d.stop() })
    emit(t.deps.db, t.deps.clock.now(), { kind: 'contact.subscribed', contact_id: 1, list_id: 1, data: { email: 'a@example.com' } })
    await d.drain()
    const deliveries = listDeliveries(t.deps, hook.id, {}).items
    expect(deliveries).toHaveLength(1)
    expect(deliveries[0]).toMatchObject({ state: 'pending', last_error: result.error })
    expect(rx.connections()).toBe(0)
  })
})
