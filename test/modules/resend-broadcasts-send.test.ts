import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Resend } from 'resend'
import { rcptOf, startBroadcastWorld, startServerWithDb } from '../support/broadcasts'
import { createAdminKey, until } from '../support/server-process'

/**
 * resend.broadcasts end to end (issue 19): the official SDK against the real server process,
 * the broadcast engine sending to the loopback sink; segment and contacts made through the
 * SDK as well, so nothing is seeded behind the surface's back.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-resend-broadcasts-'))
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
