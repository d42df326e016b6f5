import { afterEach, describe, expect, test } from 'bun:test'
import SMTPConnection from 'nodemailer/lib/smtp-connection'
import nodemailer from 'nodemailer'
import { createTransport } from '../../src/delivery/transport'
import { createDeliveryEngine } from '../../src/delivery/scheduler'
import { createResolver } from '../../src/lib/dns'
import { createIpRotation } from '../../src/delivery/ip-rotation'
import { startInboundListener, type InboundListener } from '../../src/smtp/inbound/listener'
import { listEvents } from '../../src/modules/events/service'
import { startSubmissionListener } from '../../src/smtp/submission/server'
import { tokenFromAddress } from '../../src/lib/return-path-token'
import { fixture, TOKENS } from '../smtp/reports/support'
import { testApp } from '../support/app'
import { useMailWorld } from '../support/mail-world'

/**
 * Every message event of a message that came through a bridge carries the bridge's id, so
 * GET /api/v2/events?bridge_id= finds the whole story: queued / suppressed (the send path),
 * sent / deferred / bounced (the delivery engine, against a recording sink) and bounced /
 * delayed / complained (reports handed to the inbound listener). Messages go in through both
 * bridge entries (POST /v1/bridge/emails and SMTP submission) and come back out through real
 * sockets; a message sent with an ordinary key has bridge_id null.
 */
const world = useMailWorld({ certificate: true })
const { signer } = world
const open: Array<{ close(): unknown }> = []

afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close()
})

/** example.com verified (so mail is signed and its return path carries a token), a bridge for it, the engine, and both SMTP listeners. */
async function setup() {
  world.sink.reset()
  const t = testApp({ mx_port: world.sink.port, dns_servers: [world.zone.server], smtp_listen: { host: '127.0.0.1', port: 0 } })
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown, key = admin.key) => t.call(method, path, { key, body })
  const created = await call('POST', '/api/v2/sending-domains', { name: 'example.com' })
  world.zone.publishRecords(created.body.data.dns_records as Array<{ type: string; name: string; value: string }>)
  expect((await call('POST', `/api/v2/sending-domains/${created.body.data.id}/verify`)).body.data.status).toBe('verified')
  const b = await call('POST', '/api/v2/bridges', { name: 'shop', domains: ['example.com'] })
  expect(b.status, JSON.stringify(b.body)).toBe(201)
  const bridge = b.body.data as { id: number; api_key: string; smtp: { username: string; password: string } }

  const transport = createTransport({
    resolver: createResolver(t.deps.config.dns_servers),
    mxPort: world.sink.port,
    totalConcurrency: 4,
    destinationConcurrency: 4,
    log: t.deps.log,
    ehlo: t.deps.config.hostname,
  })
  const engine = createDeliveryEngine(t.deps, { transport, signer, rotation: createIpRotation(t.deps), commits: t.deps.commits, random: () => 0.5 })
  const inbound = await startInboundListener(t.deps, { host: '127.0.0.1', port: 0 })
  const submission = await startSubmissionListener(t.deps, { certificate: world.certificate })
  open.push(transport, { close: () => engine.stop() }, inbound, submission)

  /** Drains the engine and returns the return path of the one transaction it made. */
  const deliver = async () => {
    const before = world.sink.messages.length
    await engine.drain()
    const got = world.sink.messages.slice(before)
    expect(got.length).toBe(1)
    return got[0]!.mailFrom
  }
  const events = async (query: string) => {
    const r = await call('GET', `/api/v2/events?per_page=100&${query}`)
    expect(r.status).toBe(200)
    return r.body.data as Array<{ id: number; kind: string; message_id: string; recipient: string; bridge_id: number | null; data: Record<string, unknown> }>
  }
  const smtpClient = nodemailer.createTransport({
    host: '127.0.0.1',
    port: submission.port!,
    secure: false,
    requireTLS: true,
    tls: { rejectUnauthorized: false },
    auth: { user: bridge.smtp.username, pass: bridge.smtp.password },
  })
  open.push(smtpClient)
  /** The kind and outcome of the last inbound message (the SMTP reply no longer names them). */
  const lastInbound = () => t.deps.db.$client.query('SELECT kind, outcome FROM inbound_messages ORDER BY id DESC LIMIT 1').get()
  return { ...t, admin, call, bridge, inbound, deliver, events, smtpClient, lastInbound }
}

/** One SMTP transaction to the inbound listener, with the null reverse path DSNs and reports use (RFC 5321 section 4.5.5). */
async function report(listener: InboundListener, to: string, raw: string): Promise<string> {
  const connection = new SMTPConnection({ host: '127.0.0.1', port: listener.port, ignoreTLS: true, name: 'mx.reporter.test' })
  await new Promise<void>((resolve, reject) => {
    connection.once('error', reject)
    connection.connect(() => resolve())
  })
  try {
    return await new Promise<string>((resolve, reject) =>
      connection.send({ from: '', to: [to] }, raw, (err, info) => (err ? reject(err) : resolve(info.response))),
    )
  } finally {
    connection.close()
  }
}

/** A real MTA's report fixture rewritten to be about `recipient` of the message behind `returnPath`. */
function fromFixture(name: 'postfix-hard.eml' | 'postfix-delayed.eml' | 'yahoo-arf.eml', returnPath: string, recipient: string): string {
  const [token, original] = {
    'postfix-hard.eml': [TOKENS.postfixHard!.token, /bob@example\.org/gi],
    'postfix-delayed.eml': [TOKENS.postfixDelayed!.token, /carol@example\.net/gi],
    'yahoo-arf.eml': [TOKENS.yahooArf!.token, /kate\.reader@yahoo\.com/gi],
  }[name] as [string, RegExp]
  return fixture(name, true).toString().replaceAll(token, tokenFromAddress(returnPath)!).replace(original, recipient)
}

const story = (events: Array<{ kind: string; recipient: string; message_id: string }>, id: string) =>
  events
    .filter((e) => e.message_id === id)
    .map((e) => `${e.kind} ${e.recipient}`)
    .reverse()

describe('message events carry the bridge they came through', () => {
  test('POST /v1/bridge/emails: queued, suppressed, sent, bounced (live reply and DSN), complained; all found by bridge_id', async () => {
    const t = await setup()
    expect((await t.call('POST', '/api/v2/suppressions/batch', { type: 'email', entries: ['gone@example.net'], reason: 'manual' })).status).toBe(200)
    const sent = await t.call(
      'POST',
      '/v1/bridge/emails',
      { from: 'Shop <orders@example.com>', to: ['bob@example.net', 'permfail@example.net', 'gone@example.net'], subject: 'Receipt', text: 'Thanks' },
      t.bridge.api_key,
    )
    expect(sent.status).toBe(202)
    const id = sent.body.data.id as string
    const returnPath = await t.deliver()
    // bob was accepted by the MX, then its DSN says the mailbox is gone (RFC 3464 action failed).
    expect(await report(t.inbound, returnPath, fromFixture('postfix-hard.eml', returnPath, 'bob@example.net'))).toBe('250 2.0.0 Received')
    expect(t.lastInbound()).toEqual({ kind: 'dsn', outcome: 'applied' })

    const byBridge = await t.events(`bridge_id=${t.bridge.id}`)
    expect(story(byBridge, id)).toEqual([
      'message.queued bob@example.net',
      'message.queued permfail@example.net',
      'message.suppressed gone@example.net',
      'message.sent bob@example.net',
      'message.bounced permfail@example.net',
      'message.bounced bob@example.net',
    ])
    expect(byBridge.every((e) => e.bridge_id === t.bridge.id)).toBe(true)
    // The live 550 and the DSN are told apart by their payload, not by the bridge.
    const bounces = byBridge.filter((e) => e.kind === 'message.bounced')
    expect(bounces.map((e) => e.data.source ?? 'smtp')).toEqual(['dsn', 'smtp'])

    // Every event of the message is in the bridge's log (contact events aside: there are no contacts here).
    const all = await t.events(`message_id=${id}`)
    expect(all.map((e) => e.id)).toEqual(byBridge.filter((e) => e.message_id === id).map((e) => e.id))

    // A complaint about a bridged message (ARF, emitted with bridge_id before this change too) joins them.
    const single = await t.call(
      'POST',
      '/v1/bridge/emails',
      { from: 'orders@example.com', to: ['kate@example.net'], subject: 'Hi', text: 'x' },
      t.bridge.api_key,
    )
    const rp = await t.deliver()
    expect(await report(t.inbound, rp, fromFixture('yahoo-arf.eml', rp, 'kate@example.net'))).toBe('250 2.0.0 Received')
    expect(t.lastInbound()).toEqual({ kind: 'arf', outcome: 'applied' })
    expect(story(await t.events(`bridge_id=${t.bridge.id}&kind=message.complained`), single.body.data.id)).toEqual(['message.complained kate@example.net'])
  })

  test('SMTP submission: queued, deferred, sent and a delayed DSN carry the bridge id; a message sent with an ordinary key has none', async () => {
    const t = await setup()
    await t.smtpClient.sendMail({ from: 'orders@example.com', to: ['carol@example.net', 'tempfail@example.net'], subject: 'Receipt', text: 'Thanks' })
    const id = listEvents(t.deps, { bridge_id: t.bridge.id, kind: 'message.queued' }).items[0]!.message_id!
    const returnPath = await t.deliver()
    expect(await report(t.inbound, returnPath, fromFixture('postfix-delayed.eml', returnPath, 'carol@example.net'))).toBe('250 2.0.0 Received')
    expect(t.lastInbound()).toEqual({ kind: 'dsn', outcome: 'applied' })
    expect(story(await t.events(`bridge_id=${t.bridge.id}`), id)).toEqual([
      'message.queued carol@example.net',
      'message.queued tempfail@example.net',
      'message.sent carol@example.net',
      'message.deferred tempfail@example.net',
      'message.delayed carol@example.net',
    ])

    const plain = await t.call('POST', '/v1/emails', { from: 'news@example.com', to: ['dave@example.net', 'permfail@example.net'], subject: 'News', text: 'x' })
    expect(plain.status).toBe(202)
    await t.deliver()
    const own = await t.events(`message_id=${plain.body.data.id}`)
    expect(own.map((e) => e.kind).sort()).toEqual(['message.bounced', 'message.queued', 'message.queued', 'message.sent'])
    expect(own.every((e) => e.bridge_id === null)).toBe(true)
    expect((await t.events(`bridge_id=${t.bridge.id}`)).some((e) => e.message_id === plain.body.data.id)).toBe(false)
  })
})
