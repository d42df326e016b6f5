import { afterAll, beforeAll, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { Resend } from 'resend'
import { rcptOf, startBroadcastWorld, startServerWithDb } from '../support/broadcasts'
import { createAdminKey, until } from '../support/server-process'
import { tempDir } from '../support/temp-dirs'

/**
 * resend.broadcasts end to end (issue 19): the official SDK against the real server process,
 * the broadcast engine sending to the loopback sink; segment and contacts made through the
 * SDK as well, so nothing is seeded behind the surface's back.
 */
const dataDir = tempDir('mailroom-resend-broadcasts-')
let world: Awaited<ReturnType<typeof startBroadcastWorld>>
let server: Awaited<ReturnType<typeof startServerWithDb>>
let resend: Resend

beforeAll(async () => {
  world = await startBroadcastWorld()
  const key = await createAdminKey(world.flags(dataDir), 'resend broadcasts')
  server = await startServerWithDb(world.flags(dataDir), dataDir)
  resend = new Resend(key, { baseUrl: `${server.base}/compat/resend` })
  // Two command-line runs (migrate, keys create) and a server start: more than the default hook time on a busy machine.
}, 60_000)
afterAll(async () => {
  if (!server) return await world.close()
  server.proc.kill('SIGTERM')
  await server.proc.exited
  server.db.close()
  await world.close()
})

test('created and sent through the SDK: every contact of the segment gets it, and get reports it sent', async () => {
  const seg = (await resend.segments.create({ name: 'Subscribers' })).data!
  const people = ['ann', 'bob', 'cid'].map((n) => `${n}@example.net`)
  for (const email of people) expect((await resend.contacts.create({ email, firstName: email.split('@')[0], segments: [{ id: seg.id }] })).error).toBeNull()
  // Unsubscribed through the SDK: left out by the engine.
  await resend.contacts.create({ email: 'dan@example.net', unsubscribed: true, segments: [{ id: seg.id }] })

  const made = await resend.broadcasts.create({
    name: 'Launch',
    segmentId: seg.id,
    from: 'News <news@example.com>',
    subject: 'Launch day, {{first_name}}',
    html: '<p>Hello {{first_name}}</p>',
    text: 'Hello {{first_name}}',
  })
  expect(made.error).toBeNull()
  const id = made.data!.id
  expect((await resend.broadcasts.get(id)).data!.status).toBe('draft')

  expect((await resend.broadcasts.send(id)).data).toEqual({ id })
  await until('the broadcast to be sent', () => {
    const row = server.db.query('SELECT status FROM broadcasts ORDER BY id DESC LIMIT 1').get() as { status: string }
    return row.status === 'sent'
  })
  const got = world.sink.messages.filter((m) => m.raw.toString().includes('Launch day'))
  expect(got.map(rcptOf).sort()).toEqual(people)
  for (const m of got) expect(m.raw.toString()).toContain(`Launch day, ${rcptOf(m).split('@')[0]}`)

  const after = await resend.broadcasts.get(id)
  expect(after.data).toMatchObject({ id, status: 'sent', segment_id: seg.id, sent_at: expect.any(String) })
  expect((await resend.broadcasts.list()).data!.data.find((b) => b.id === id)).toMatchObject({ status: 'sent' })
  // A sent broadcast is not sent twice, nor edited.
  expect((await resend.broadcasts.send(id)).error).toMatchObject({ statusCode: 409 })
  expect((await resend.broadcasts.update(id, { subject: 'Again' })).error).toMatchObject({ statusCode: 409 })
  expect((await resend.broadcasts.remove(id)).data).toEqual({ object: 'broadcast', id, deleted: true })
}, 60_000)

/** The decoded text and html parts of a delivered message. */
async function partsOf(m: { raw: Buffer }) {
  const parsed = await simpleParser(m.raw)
  return { text: parsed.text ?? '', html: typeof parsed.html === 'string' ? parsed.html : '' }
}

test("Resend's content variables render per contact; recipients by type and clickedLinks report opens, clicks and bounces", async () => {
  const seg = (await resend.segments.create({ name: 'Readers' })).data!
  await resend.contacts.create({ email: 'eve@example.net', firstName: 'Eve', segments: [{ id: seg.id }] })
  await resend.contacts.create({ email: 'fay@example.net', segments: [{ id: seg.id }] })
  // The sink refuses this mailbox for good (550 5.1.1): a permanent bounce.
  await resend.contacts.create({ email: 'permfail@example.net', firstName: 'Pat', segments: [{ id: seg.id }] })
  // On the suppression list: the engine skips it.
  await resend.contacts.create({ email: 'gus@example.net', segments: [{ id: seg.id }] })
  expect((await resend.suppressions.add({ email: 'gus@example.net' })).error).toBeNull()

  const made = await resend.broadcasts.create({
    name: 'Variables',
    segmentId: seg.id,
    from: 'News <news@example.com>',
    subject: 'Hello {{{FIRST_NAME|reader}}}',
    html: '<p>Hi {{{FIRST_NAME|friend}}} ({{{EMAIL}}})</p><p><a href="https://shop.example/a">A</a> <a href="https://shop.example/b">B</a></p>',
    text: 'Hi {{{FIRST_NAME|friend}}} {{{LAST_NAME}}}\nLeave: {{{RESEND_UNSUBSCRIBE_URL}}}',
    send: true,
  })
  expect(made.error).toBeNull()
  const id = made.data!.id
  const row = () => server.db.query('SELECT id, status FROM broadcasts ORDER BY id DESC LIMIT 1').get() as { id: number; status: string }
  await until('the broadcast to be sent', () => row().status === 'sent')
  const bid = row().id
  const done = (sql: string, n: number) => () => (server.db.query(sql).get(bid) as { n: number }).n === n
  await until('the bounce applied', done("SELECT count(*) AS n FROM broadcast_recipients WHERE broadcast_id = ? AND state = 'bounced'", 1))

  const mail = (to: string) => world.sink.messages.find((m) => rcptOf(m) === to && m.raw.toString().includes('Leave:'))!
  const eve = await partsOf(mail('eve@example.net'))
  const fay = await partsOf(mail('fay@example.net'))
  expect(mail('eve@example.net').raw.toString()).toContain('Subject: Hello Eve')
  expect(mail('fay@example.net').raw.toString()).toContain('Subject: Hello reader')
  expect(eve.text).toStartWith('Hi Eve \nLeave: ')
  expect(fay.text).toStartWith('Hi friend \nLeave: ')
  expect(eve.html).toContain('Hi Eve (eve@example.net)')
  expect(fay.html).toContain('Hi friend (fay@example.net)')

  // Eve opens once, clicks A twice and B once; Fay unsubscribes through the link in her copy.
  const token = (html: string, kind: 'o' | 'c') => [...html.matchAll(new RegExp(`/t/${kind}/([A-Za-z0-9_=.-]+)`, 'g'))].map((x) => x[1]!)
  expect((await fetch(`${server.base}/t/o/${token(eve.html, 'o')[0]}`)).status).toBe(200)
  const [a, b] = token(eve.html, 'c')
  for (const link of [a, a, b]) expect((await fetch(`${server.base}/t/c/${link}`, { redirect: 'manual' })).status).toBe(302)
  const unsubscribe = /Leave: (\S+)/.exec(fay.text)![1]!
  const path = new URL(unsubscribe).pathname
  expect(path).toStartWith('/t/u/')
  expect((await fetch(`${server.base}${path}`, { method: 'POST', body: new URLSearchParams({ 'List-Unsubscribe': 'One-Click' }) })).status).toBe(200)
  await until('the clicks applied', done("SELECT count(*) AS n FROM events WHERE broadcast_id = ? AND kind = 'broadcast.clicked'", 3))
  await until(
    'the unsubscribe recorded',
    () => (server.db.query("SELECT status FROM contacts WHERE email = 'fay@example.net'").get() as { status: string }).status === 'unsubscribed',
  )

  const list = async (type: Parameters<typeof resend.broadcasts.recipients>[1]['type'], extra: Record<string, unknown> = {}) => {
    const r = await resend.broadcasts.recipients(id, { type, ...extra } as never)
    expect(r.error).toBeNull()
    return r.data!
  }
  const emails = (page: { data: Array<{ email: string }> }) => page.data.map((x) => x.email).sort()
  expect(emails(await list('sent'))).toEqual(['eve@example.net', 'fay@example.net', 'permfail@example.net'])
  expect(emails(await list('delivered'))).toEqual(['eve@example.net', 'fay@example.net'])

  const opened = await list('opened')
  expect(opened).toMatchObject({ object: 'list', has_more: false })
  expect(opened.data).toEqual([{ id: expect.any(String), contact_id: expect.any(String), email: 'eve@example.net', count: 1 }])
  // The contact id is the Resend contact's: get answers it.
  expect((await resend.contacts.get({ id: opened.data[0]!.contact_id! })).data!.email).toBe('eve@example.net')

  const clicked = (await list('clicked')).data
  expect(clicked).toEqual([
    {
      id: opened.data[0]!.id,
      contact_id: opened.data[0]!.contact_id,
      email: 'eve@example.net',
      count: 3,
      clicked_links: [
        { url: 'https://shop.example/a', clicks: 2 },
        { url: 'https://shop.example/b', clicks: 1 },
      ],
    },
  ])

  const bounced = (await list('bounced')).data
  expect(bounced).toEqual([{ id: expect.any(String), contact_id: expect.any(String), email: 'permfail@example.net', bounce_type: 'permanent' }])
  expect((await list('bounced', { bounceType: 'transient' })).data).toEqual([])
  expect(emails(await list('unsubscribed'))).toEqual(['fay@example.net'])
  expect((await list('complained')).data).toEqual([])
  expect((await list('suppressed')).data).toEqual([{ id: expect.any(String), contact_id: expect.any(String), email: 'gus@example.net' }])
  expect(emails(await list('sent', { email: 'fay@example.net' }))).toEqual(['fay@example.net'])
  // Cursor pages: one at a time, newest first, and back.
  const first = await list('sent', { limit: 1 })
  expect(first.has_more).toBe(true)
  const second = await list('sent', { limit: 1, after: first.data[0]!.id })
  expect(second.data[0]!.email).not.toBe(first.data[0]!.email)
  expect((await list('sent', { limit: 1, before: second.data[0]!.id })).data).toEqual(first.data)
  // A filter Resend ties to bounces is refused elsewhere, by name.
  expect((await resend.broadcasts.recipients(id, { type: 'sent', bounceType: 'permanent' } as never)).error).toMatchObject({ statusCode: 422 })

  const links = await resend.broadcasts.clickedLinks(id)
  expect(links.error).toBeNull()
  expect(links.data).toEqual({
    object: 'list',
    has_more: false,
    data: [
      { id: expect.any(String), url: 'https://shop.example/a', clicks: 2, unique_clicks: 1 },
      { id: expect.any(String), url: 'https://shop.example/b', clicks: 1, unique_clicks: 1 },
    ],
  })
  const top = (await resend.broadcasts.clickedLinks(id, { limit: 1 })).data!
  expect(top).toMatchObject({ has_more: true, data: [{ url: 'https://shop.example/a' }] })
  const next = (await resend.broadcasts.clickedLinks(id, { limit: 1, after: top.data[0]!.id })).data!
  expect(next).toMatchObject({ has_more: false, data: [{ url: 'https://shop.example/b' }] })
  // Back from the second page: the first, with nothing further back (has_more looks in the direction walked).
  expect((await resend.broadcasts.clickedLinks(id, { limit: 1, before: next.data[0]!.id })).data).toEqual({ ...top, has_more: false })
  // The stored content is Mailroom's: get shows the translated variables.
  expect((await resend.broadcasts.get(id)).data!.subject).toBe('Hello {{#if first_name}}{{first_name}}{{else}}reader{{/if}}')
}, 60_000)
