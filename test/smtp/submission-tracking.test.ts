import { unpackMessage } from '../../src/lib/stored-message'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import nodemailer from 'nodemailer'
import { generate } from 'selfsigned'
import { startSubmissionListener } from '../../src/smtp/submission/server'
import { testApp } from '../support/app'

/**
 * Open and click tracking of mail submitted over SMTP: nodemailer (a real client, which
 * builds its own MIME) submits to the listener with a bridge's credentials; the stored
 * message's HTML carries the links, and following them on a listening app records
 * message.opened / message.clicked with the bridge's id.
 */
let certificate: { key: string; cert: string }
const open: Array<{ close(): unknown }> = []

beforeAll(async () => {
  const pems = await generate([{ name: 'commonName', value: 'mailroom.test' }], { keySize: 2048, algorithm: 'sha256' })
  certificate = { key: pems.private, cert: pems.cert }
})

afterEach(async () => {
  for (const o of open.splice(0)) await o.close()
})

afterAll(async () => {
  for (const o of open.splice(0)) await o.close()
})

/**
 * An app serving HTTP on loopback, the sending domain example.com (verified when `domain` is
 * given, with those tracking defaults; else unverified and allowed), a bridge for it, and the
 * submission listener.
 */
async function setup(bridgeBody: Record<string, unknown>, domain?: Record<string, unknown>) {
  const t = testApp({ smtp_listen: { host: '127.0.0.1', port: 0 }, allow_unverified_domains: !domain })
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  expect((await call('POST', '/api/v2/sending-domains', { name: 'example.com', ...domain })).status).toBe(201)
  // Verification itself is tested with a DNS server in sending-domains.test.ts.
  if (domain) t.deps.db.$client.run("UPDATE sending_domains SET status = 'verified'")
  const b = await call('POST', '/api/v2/bridges', { name: 'shop', domains: ['example.com'], ...bridgeBody })
  expect(b.status, JSON.stringify(b.body)).toBe(201)
  const bridge = b.body.data as { id: number; smtp: { username: string; password: string } }
  const listener = await startSubmissionListener(t.deps, { certificate })
  open.push(listener)
  const server = t.app.listen({ hostname: '127.0.0.1', port: 0 })
  open.push({ close: () => server.stop() })
  const base = `http://127.0.0.1:${server.server!.port}`

  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: listener.port!,
    secure: false,
    requireTLS: true,
    tls: { rejectUnauthorized: false },
    auth: { user: bridge.smtp.username, pass: bridge.smtp.password },
  })
  open.push(transport)
  /** Submits a message; resolves to the queued message's id. */
  const submit = async (headers: Record<string, string> = {}) => {
    const info = await transport.sendMail({
      from: 'Shop <orders@example.com>',
      to: 'ada@example.net',
      subject: 'Your order',
      text: 'Your order: https://shop.example/order?id=7',
      html: '<p>Grüße! Your <a href="https://shop.example/order?id=7&amp;ref=mail">order</a>.</p>',
      headers,
    })
    const id = /^250 2\.6\.0 Queued as (\S+)$/.exec(info.response)?.[1]
    expect(id, info.response).toBeDefined()
    return id!
  }
  const stored = (id: string) => unpackMessage((t.deps.db.$client.query('SELECT raw FROM messages WHERE id = ?').get(id) as { raw: Uint8Array }).raw)
  /** Follows a link from a message: same path, on the listening server. */
  const follow = (url: string) => {
    expect(url.startsWith(`${t.deps.config.public_url}/t/`)).toBe(true)
    return fetch(base + url.slice(t.deps.config.public_url.length), { redirect: 'manual', headers: { 'user-agent': 'TestMail/1.0' } })
  }
  const eventsOf = (id: string) =>
    t.deps.db.$client
      .query<{ kind: string; recipient: string | null; bridge_id: number | null; data: string }, [string]>(
        "SELECT kind, recipient, bridge_id, data FROM events WHERE message_id = ? AND kind IN ('message.opened', 'message.clicked') ORDER BY id",
      )
      .all(id)
      .map((e) => ({ ...e, data: JSON.parse(e.data) as Record<string, unknown> }))
  return { ...t, call, bridge, transport, submit, stored, follow, eventsOf }
}

const hrefs = (html: string) => [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replaceAll('&amp;', '&'))
const pixelOf = (html: string) => /<img src="([^"]+)" width="1"/.exec(html)?.[1]

describe('tracking of SMTP submissions', () => {
  test('a bridge tracking clicks, and a control header turning opens on: links in the HTML, events with the bridge id', async () => {
    const s = await setup({ track_clicks: true })
    const id = await s.submit({ 'X-Mailroom-Track-Opens': 'true' })
    const raw = s.stored(id)
    const head = raw.toString('latin1').split('\r\n\r\n')[0]!
    expect(head).not.toMatch(/^X-Mailroom-Track/im)
    // The client's own List-Unsubscribe or none: SMTP mail gets no unsubscribe header of ours.
    expect(head).not.toMatch(/^List-Unsubscribe/im)
    const mail = await simpleParser(raw)
    const html = mail.html as string
    expect(html).toContain('Grüße!')
    const [link] = hrefs(html)
    expect(link).toStartWith(`${s.deps.config.public_url}/t/c/`)
    expect(mail.text!.trim()).toBe('Your order: https://shop.example/order?id=7')

    const image = await s.follow(pixelOf(html)!)
    expect(image.status).toBe(200)
    expect(image.headers.get('content-type')).toBe('image/gif')
    const click = await s.follow(link!)
    expect(click.status).toBe(302)
    expect(click.headers.get('location')).toBe('https://shop.example/order?id=7&ref=mail')
    expect(s.eventsOf(id)).toEqual([
      { kind: 'message.opened', recipient: 'ada@example.net', bridge_id: s.bridge.id, data: { first: true, ip: '127.0.0.1', user_agent: 'TestMail/1.0' } },
      {
        kind: 'message.clicked',
        recipient: 'ada@example.net',
        bridge_id: s.bridge.id,
        data: { url: 'https://shop.example/order?id=7&ref=mail', first: true, ip: '127.0.0.1', user_agent: 'TestMail/1.0' },
      },
    ])
  })

  test('control headers override the bridge: opens off keeps the clicks; both off sends the HTML as written', async () => {
    const s = await setup({ track_opens: true, track_clicks: true })
    const noOpens = (await simpleParser(s.stored(await s.submit({ 'X-Mailroom-Track-Opens': 'false' })))).html as string
    expect(pixelOf(noOpens)).toBeUndefined()
    expect(hrefs(noOpens)[0]).toContain('/t/c/')
    const off = (await simpleParser(s.stored(await s.submit({ 'X-Mailroom-Track-Opens': 'False', 'X-Mailroom-Track-Clicks': 'false' })))).html as string
    expect(off.trim()).toBe('<p>Grüße! Your <a href="https://shop.example/order?id=7&amp;ref=mail">order</a>.</p>')
  })

  test('a control header that is not true or false is refused with 550 5.6.0', async () => {
    const s = await setup({})
    const refused = await s.submit({ 'X-Mailroom-Track-Clicks': 'yes' }).then(
      () => null,
      (e: { responseCode?: number; response?: string }) => e,
    )
    expect(refused?.responseCode).toBe(550)
    expect(refused?.response).toContain('5.6.0 X-Mailroom-Track-Clicks must be true or false')
  })

  test("a verified sending domain's defaults apply to the bridge's mail", async () => {
    const s = await setup({}, { track_opens: true })
    const html = (await simpleParser(s.stored(await s.submit()))).html as string
    expect(pixelOf(html)).toStartWith(`${s.deps.config.public_url}/t/o/`)
    expect(hrefs(html)[0]).toBe('https://shop.example/order?id=7&ref=mail')
  })
})
