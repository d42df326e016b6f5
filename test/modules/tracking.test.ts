import { unpackMessage } from '../../src/lib/stored-message'
import { afterAll, describe, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { signMessage } from '../../src/delivery/dkim'
import { drainStats } from '../../src/modules/stats/rollup'
import { queryStats, ratesOf } from '../../src/modules/stats/service'
import { decodeAttribute, rewriteHtml } from '../../src/modules/tracking/rewrite'
import { signToken, verifyToken } from '../../src/modules/tracking/tokens'
import { testApp } from '../support/app'

const MESSAGE_ID = '01234567-89ab-7def-8123-456789abcdef'

describe('tracking tokens', () => {
  const { deps } = testApp()

  test('round-trip the message and the value, for their own kind only', () => {
    const token = signToken(deps, { kind: 'click', messageId: MESSAGE_ID, value: 'https://example.com/a?b=ü' })
    expect(token).toMatch(/^[\w-]+\.[\w-]{22}$/)
    expect(verifyToken(deps, token, 'click')).toEqual({ kind: 'click', messageId: MESSAGE_ID, value: 'https://example.com/a?b=ü' })
    expect(verifyToken(deps, token, 'open')).toBeNull()
    expect(verifyToken(deps, token, 'unsubscribe')).toBeNull()
  })

  test('a changed payload or MAC is refused (no redirect to a URL of the caller’s choosing)', () => {
    const token = signToken(deps, { kind: 'click', messageId: MESSAGE_ID, value: 'https://example.com/' })
    const [payload, mac] = token.split('.') as [string, string]
    const forged = Buffer.from(payload, 'base64url')
    forged.write('https://evil.test/', 17)
    expect(verifyToken(deps, `${forged.toString('base64url')}.${mac}`, 'click')).toBeNull()
    // A MAC with its first characters changed (to ones it cannot already have, so the check always tests a change).
    const changed = (mac[0] === 'A' ? 'B' : 'A') + mac.slice(1)
    expect(verifyToken(deps, `${payload}.${changed}`, 'click')).toBeNull()
    // Every other spelling of the same bytes (the spare bits of the last base64 character) is refused too.
    const last = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    const sibling = last[last.indexOf(mac.at(-1)!) ^ 1]!
    expect(Buffer.from(mac.slice(0, -1) + sibling, 'base64url')).toEqual(Buffer.from(mac, 'base64url'))
    expect(verifyToken(deps, `${payload}.${mac.slice(0, -1)}${sibling}`, 'click')).toBeNull()
    expect(verifyToken(deps, payload, 'click')).toBeNull()
    expect(verifyToken(deps, `${payload}.`, 'click')).toBeNull()
    // Another server (another secret) does not accept this one's tokens.
    expect(verifyToken(testApp().deps, token, 'click')).toBeNull()
  })
})

describe('rewriteHtml', () => {
  const tracking = { pixelUrl: 'https://t.test/o', clickUrl: (u: string) => `https://t.test/c?u=${encodeURIComponent(u)}` }

  test('rewrites http(s) links only, with their character references decoded', () => {
    const { html, links } = rewriteHtml(
      '<p><a href="https://example.com/?a=1&amp;b=2">one</a> <A HREF=\' HTTP://example.com/x \'>two</A> <a href="mailto:a@example.com">m</a> <a href="tel:+1">t</a> <a href="#top">f</a> <a href="/relative">r</a> <a>none</a></p>',
      { clickUrl: tracking.clickUrl },
    )
    expect(links).toBe(2)
    expect(html).toContain(`href="https://t.test/c?u=${encodeURIComponent('https://example.com/?a=1&b=2')}"`)
    expect(html).toContain(`HREF="https://t.test/c?u=${encodeURIComponent('HTTP://example.com/x')}"`)
    for (const kept of ['mailto:a@example.com', 'tel:+1', '#top', '/relative']) expect(html).toContain(`href="${kept}"`)
    expect(html).not.toContain('<img')
  })

  test('leaves links marked data-mailroom-no-track, and drops the marker', () => {
    const { html, links } = rewriteHtml('<a data-mailroom-no-track href="https://example.com/">x</a>', tracking)
    expect(links).toBe(0)
    expect(html).toStartWith('<a href="https://example.com/">x</a>')
  })

  test('puts the open image at the end of the body, or of the document without one', () => {
    const full = rewriteHtml('<html><body><p>Hi</p></body></html>', { pixelUrl: tracking.pixelUrl }).html
    expect(full).toMatch(/<p>Hi<\/p><img src="https:\/\/t\.test\/o" width="1" height="1" alt=""[^>]*\/><\/body><\/html>$/)
    expect(rewriteHtml('<p>Hi</p>', { pixelUrl: tracking.pixelUrl }).html).toMatch(/^<p>Hi<\/p><img src="https:\/\/t\.test\/o"/)
  })

  test('decodes numeric and named character references', () => {
    expect(decodeAttribute('a&amp;b&#61;c&#x3D;d&quot;&unknown;&#0;')).toBe('a&b=c=d"&unknown;&#0;')
  })
})

/** An app listening on a real loopback socket; tracking links are followed through it. */
function served(overrides: Parameters<typeof testApp>[0] = {}) {
  const t = testApp({ allow_unverified_domains: true, ...overrides })
  const admin = t.makeKey()
  const server = t.app.listen({ hostname: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${server.server!.port}`
  servers.push(server)
  /** Follows a link from a message: same path, on the listening server. */
  const follow = (url: string, init: RequestInit = {}) => {
    expect(url.startsWith(`${t.deps.config.public_url}/t/`)).toBe(true)
    return fetch(base + url.slice(t.deps.config.public_url.length), { redirect: 'manual', ...init })
  }
  const rawOf = (id: string) => unpackMessage((t.deps.db.$client.query('SELECT raw FROM messages WHERE id = ?').get(id) as { raw: Uint8Array }).raw)
  const send = async (body: Record<string, unknown>) => {
    const r = await t.call('POST', '/v1/emails', { key: admin.key, body: { from: 'news@example.com', subject: 'Hello', ...body } })
    return r
  }
  const eventsOf = (id: string, kind: string) =>
    t.deps.db.$client
      .query<{ recipient: string | null; data: string }, [string, string]>('SELECT recipient, data FROM events WHERE message_id = ? AND kind = ? ORDER BY id')
      .all(id, kind)
      .map((e) => ({ recipient: e.recipient, data: JSON.parse(e.data) as Record<string, unknown> }))
  return { ...t, admin, follow, rawOf, send, eventsOf }
}
const servers: Array<{ stop(): unknown }> = []
afterAll(() => servers.forEach((s) => s.stop()))

const hrefs = (html: string) => [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replaceAll('&amp;', '&'))
const pixelOf = (html: string) => /<img src="([^"]+)" width="1"/.exec(html)?.[1]

describe('open and click tracking through the API', () => {
  test('opens and clicks of a one-recipient message become events; the first of each counts as unique', async () => {
    const s = served()
    const r = await s.send({
      to: ['Ada <ada@example.net>'],
      html: '<p>Read <a href="https://example.com/post?id=7&amp;ref=mail">the post</a> or <a href="mailto:help@example.com">write</a>.</p>',
      text: 'Read https://example.com/post?id=7',
      track_opens: true,
      track_clicks: true,
    })
    expect(r.status).toBe(202)
    const id = r.body.data.id as string
    const mail = await simpleParser(s.rawOf(id))
    const html = mail.html as string
    const [link, mailto] = hrefs(html)
    expect(mailto).toBe('mailto:help@example.com')
    expect(mail.text).toContain('Read https://example.com/post?id=7')

    const image = await s.follow(pixelOf(html)!, { headers: { 'user-agent': 'TestMail/1.0' } })
    expect(image.status).toBe(200)
    expect(image.headers.get('content-type')).toBe('image/gif')
    expect(image.headers.get('cache-control')).toContain('no-store')
    expect(
      Buffer.from(await image.arrayBuffer())
        .subarray(0, 6)
        .toString(),
    ).toBe('GIF89a')
    await s.follow(pixelOf(html)!)

    const click = await s.follow(link!)
    expect(click.status).toBe(302)
    expect(click.headers.get('location')).toBe('https://example.com/post?id=7&ref=mail')

    const opens = s.eventsOf(id, 'message.opened')
    expect(opens).toHaveLength(2)
    expect(opens[0]).toEqual({ recipient: 'ada@example.net', data: { first: true, ip: '127.0.0.1', user_agent: 'TestMail/1.0' } })
    expect(opens[1]!.data.first).toBe(false)
    expect(s.eventsOf(id, 'message.clicked')).toEqual([
      { recipient: 'ada@example.net', data: { url: 'https://example.com/post?id=7&ref=mail', first: true, ip: '127.0.0.1', user_agent: expect.any(String) } },
    ])

    // The message's timeline shows them, and the statistics count every open and the unique ones.
    const timeline = await s.call('GET', `/api/v2/messages/${id}`, { key: s.admin.key })
    expect(timeline.body.data.events.map((e: { kind: string }) => e.kind)).toEqual(['message.queued', 'message.opened', 'message.opened', 'message.clicked'])
    drainStats(s.deps)
    const stats = queryStats(s.deps, { kinds: 'message.opened,message.opened.unique,message.clicked,message.clicked.unique' })
    expect(stats.totals[0]!.counts).toEqual({ 'message.opened': 2, 'message.opened.unique': 1, 'message.clicked': 1, 'message.clicked.unique': 1 })
  })

  test('the rates use the unique opens and clicks', () => {
    expect(ratesOf({ 'message.sent': 4, 'message.opened': 10, 'message.opened.unique': 2, 'message.clicked': 3, 'message.clicked.unique': 1 })).toMatchObject({
      open_rate: 0.5,
      click_rate: 0.25,
    })
  })

  test('a message with several recipients is tracked per message (no recipient named)', async () => {
    const s = served()
    const r = await s.send({ to: ['a@example.net', 'b@example.net'], html: '<p>Hi</p>', track_opens: true })
    const html = (await simpleParser(s.rawOf(r.body.data.id))).html as string
    await s.follow(pixelOf(html)!)
    expect(s.eventsOf(r.body.data.id, 'message.opened')).toEqual([{ recipient: null, data: expect.objectContaining({ first: true }) }])
  })

  test('without tracking the HTML is sent as written', async () => {
    const s = served()
    const r = await s.send({ to: ['a@example.net'], html: '<p><a href="https://example.com/">x</a></p>' })
    const html = (await simpleParser(s.rawOf(r.body.data.id))).html as string
    expect(html.trimEnd()).toBe('<p><a href="https://example.com/">x</a></p>')
  })

  test('a forged or mangled link records nothing', async () => {
    const s = served()
    const r = await s.send({ to: ['a@example.net'], html: '<p><a href="https://example.com/">x</a></p>', track_clicks: true })
    const [link] = hrefs((await simpleParser(s.rawOf(r.body.data.id))).html as string)
    const forged = link!.replace(/\.([\w-]+)$/, (_, mac: string) => `.${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}`)
    const answer = await s.follow(forged)
    expect(answer.status).toBe(404)
    expect(answer.headers.get('content-type')).toStartWith('text/html')
    expect(await answer.text()).toContain('not valid')
    expect(s.eventsOf(r.body.data.id, 'message.clicked')).toEqual([])
    // A click token is not an open token.
    const asOpen = await s.follow(link!.replace('/t/c/', '/t/o/'))
    expect(asOpen.status).toBe(200)
    expect(s.eventsOf(r.body.data.id, 'message.opened')).toEqual([])
  })

  test("a verified sending domain's defaults apply unless the request says otherwise", async () => {
    const s = served({ allow_unverified_domains: false })
    const created = await s.call('POST', '/api/v2/sending-domains', { key: s.admin.key, body: { name: 'example.com', track_opens: true } })
    expect(created.status).toBe(201)
    expect(created.body.data).toMatchObject({ track_opens: true, track_clicks: false })
    const patched = await s.call('PATCH', `/api/v2/sending-domains/${created.body.data.id}`, { key: s.admin.key, body: { track_clicks: true } })
    expect(patched.body.data).toMatchObject({ track_opens: true, track_clicks: true })
    // Verification itself is tested with a DNS server in sending-domains.test.ts.
    s.deps.db.$client.run("UPDATE sending_domains SET status = 'verified'")

    const html = '<p><a href="https://example.com/">x</a></p>'
    const tracked = (await simpleParser(s.rawOf((await s.send({ to: ['a@example.net'], html })).body.data.id))).html as string
    expect(pixelOf(tracked)).toBeDefined()
    expect(hrefs(tracked)[0]).toContain('/t/c/')
    const untracked = (await simpleParser(s.rawOf((await s.send({ to: ['a@example.net'], html, track_opens: false, track_clicks: false })).body.data.id)))
      .html as string
    expect(untracked.trimEnd()).toBe(html)
  })
})

describe('bridge tracking defaults', () => {
  test("a bridge's track_clicks applies to its sends; its events carry the bridge", async () => {
    const s = served()
    expect((await s.call('POST', '/api/v2/sending-domains', { key: s.admin.key, body: { name: 'example.com' } })).status).toBe(201)
    const created = await s.call('POST', '/api/v2/bridges', { key: s.admin.key, body: { name: 'shop', domains: ['example.com'], track_clicks: true } })
    expect(created.status).toBe(201)
    const bridge = created.body.data as { id: number; api_key: string }
    const body = { from: 'orders@example.com', to: ['ada@example.net'], subject: 'Receipt', html: '<p><a href="https://example.com/order/1">Order</a></p>' }
    const r = await s.call('POST', '/v1/bridge/emails', { key: bridge.api_key, body })
    expect(r.status).toBe(202)
    const html = (await simpleParser(s.rawOf(r.body.data.id))).html as string
    expect(pixelOf(html)).toBeUndefined()
    const [link] = hrefs(html)
    expect((await s.follow(link!)).headers.get('location')).toBe('https://example.com/order/1')
    const events = await s.call('GET', `/api/v2/events?kind=message.clicked&bridge_id=${bridge.id}`, { key: s.admin.key })
    expect(events.body.data).toHaveLength(1)
    expect(events.body.data[0]).toMatchObject({ message_id: r.body.data.id, bridge_id: bridge.id, data: { url: 'https://example.com/order/1' } })

    // The request can still opt out.
    const untracked = await s.call('POST', '/v1/bridge/emails', { key: bridge.api_key, body: { ...body, track_clicks: false } })
    expect(hrefs((await simpleParser(s.rawOf(untracked.body.data.id))).html as string)).toEqual(['https://example.com/order/1'])
  })
})

describe('one-click unsubscribe (RFC 8058)', () => {
  async function setup() {
    const s = served()
    const list = async (name: string) => (await s.call('POST', '/api/v2/lists', { key: s.admin.key, body: { name } })).body.data.id as number
    const [news, offers, other] = [await list('news'), await list('offers'), await list('other')]
    const contact = async (list_id: number, email: string, status = 'subscribed') =>
      (await s.call('POST', '/api/v2/contacts', { key: s.admin.key, body: { list_id, email, status } })).body.data.id as number
    const ids = {
      news: await contact(news, 'ada@example.net'),
      offers: await contact(offers, 'ada@example.net'),
      other: await contact(other, 'ada@example.net', 'bounced'),
    }
    const r = await s.send({ to: ['ada@example.net'], html: '<p>News</p>', list_unsubscribe: true })
    expect(r.status).toBe(202)
    const url = /^List-Unsubscribe:\s*<([^>]+)>\r\n/m.exec(
      s
        .rawOf(r.body.data.id)
        .toString()
        .replace(/\r\n[ \t]+/g, ' '),
    )?.[1]
    return { s, ids, id: r.body.data.id as string, url: url! }
  }
  const statusOf = (s: ReturnType<typeof served>, id: number) =>
    (s.deps.db.$client.query('SELECT status FROM contacts WHERE id = ?').get(id) as { status: string }).status

  test('the headers name an unsubscribe link and are covered by the DKIM signature', async () => {
    const { s, id, url } = await setup()
    expect(url).toStartWith(`${s.deps.config.public_url}/t/u/`)
    expect(s.rawOf(id).toString()).toContain('\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n')
    const signed = await signMessage(s.rawOf(id), { domain: 'example.com', selector: 's1', privateKey: testKey })
    expect(signed.toString().split('\r\n\r\n')[0]).toMatch(/h=[^;]*list-unsubscribe:list-unsubscribe-post/)
  })

  test('GET shows a form and changes nothing; the one-click POST unsubscribes every subscribed contact with the address, once', async () => {
    const { s, ids, id, url } = await setup()
    const pageAnswer = await s.follow(url)
    expect(pageAnswer.status).toBe(200)
    const page = await pageAnswer.text()
    expect(page).toContain('<form method="post">')
    expect(page).toContain('ada@example.net')
    expect(page).toContain('from example.com')
    expect(statusOf(s, ids.news)).toBe('subscribed')
    expect(s.eventsOf(id, 'message.unsubscribed')).toEqual([])

    // What a mail client sends (RFC 8058 section 3.2).
    const init = { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' }
    const posted = await s.follow(url, init)
    expect(posted.status).toBe(200)
    expect(await posted.text()).toContain('is unsubscribed')
    expect(s.eventsOf(id, 'message.unsubscribed')).toEqual([
      { recipient: 'ada@example.net', data: { method: 'one_click', ip: '127.0.0.1', user_agent: expect.any(String) } },
    ])
    expect([statusOf(s, ids.news), statusOf(s, ids.offers), statusOf(s, ids.other)]).toEqual(['unsubscribed', 'unsubscribed', 'bounced'])
    const contactEvents = s.deps.db.$client.query("SELECT contact_id FROM events WHERE kind = 'contact.unsubscribed' ORDER BY contact_id").all()
    expect(contactEvents).toEqual([{ contact_id: ids.news }, { contact_id: ids.offers }])

    // Again, and through the page's form: nothing new.
    expect((await s.follow(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'source=page' })).status).toBe(200)
    expect(s.eventsOf(id, 'message.unsubscribed')).toHaveLength(1)
  })

  test('the page form is recorded as such', async () => {
    const { s, id, url } = await setup()
    await s.follow(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'source=page' })
    expect(s.eventsOf(id, 'message.unsubscribed')[0]!.data.method).toBe('page')
  })

  test('is refused for several recipients or next to a List-Unsubscribe header of the caller', async () => {
    const s = served()
    const several = await s.send({ to: ['a@example.net'], cc: ['b@example.net'], html: '<p>x</p>', list_unsubscribe: true })
    expect(several.status).toBe(422)
    expect(several.body.error.details.list_unsubscribe[0]).toContain('exactly one recipient')
    const own = await s.send({ to: ['a@example.net'], html: '<p>x</p>', list_unsubscribe: true, headers: { 'List-Unsubscribe': '<mailto:u@example.com>' } })
    expect(own.status).toBe(422)
    expect(own.body.error.details.list_unsubscribe[0]).toContain('List-Unsubscribe')
  })
})

const { privateKey: testKey } = await (async () => {
  const { generateKeyPairSync } = await import('node:crypto')
  return generateKeyPairSync('rsa', {
    modulusLength: 1024,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  })
})()
