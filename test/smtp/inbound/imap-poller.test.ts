import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeReturnPathToken } from '../../../src/lib/return-path-token'
import { pollDueAccounts } from '../../../src/smtp/inbound/imap-poller'
import { serverSecret } from '../../../src/modules/system/secrets'
import { testApp } from '../../support/app'
import { startImapServer, type ImapServer } from '../../support/imap-server'
import { fixture, TOKENS } from '../reports/support'

/**
 * Feedback-loop accounts of kind imap: the poller logs in with imapflow to a real IMAP server
 * on loopback (test/support/imap-server.ts), reads the unseen messages, applies them exactly
 * as the inbound listener does, and flags them \Seen.
 */
let imap: ImapServer

beforeAll(async () => {
  imap = await startImapServer({ user: 'fbl@example.com', pass: 'right password' })
})
afterAll(async () => {
  await imap.close()
})

async function setup() {
  imap.messages.length = 0
  imap.commands.length = 0
  const t = testApp({ allow_unverified_domains: true })
  const admin = t.makeKey()
  const db = t.deps.db.$client
  return {
    ...t,
    admin,
    async account(body: Record<string, unknown> = {}) {
      const r = await t.call('POST', '/api/v2/feedback-loops', {
        key: admin.key,
        body: {
          name: 'Yahoo FBL',
          kind: 'imap',
          host: '127.0.0.1',
          port: imap.port,
          tls: false,
          username: 'fbl@example.com',
          password: 'right password',
          ...body,
        },
      })
      expect(r.status, JSON.stringify(r.body)).toBe(201)
      return r.body.data as { id: number }
    },
    /** A queued message to kate@example.net and the signed token of its recipient row, as the engine would make it. */
    async message() {
      const r = await t.call('POST', '/v1/emails', {
        key: admin.key,
        body: { from: 'news@example.com', to: ['kate@example.net'], subject: 'Sale', text: 'Hi' },
      })
      expect(r.status).toBe(202)
      const id = r.body.data.id as string
      const row = db.query('SELECT id FROM message_recipients WHERE message_id = ?').get(id) as { id: number }
      return { id, token: makeReturnPathToken(serverSecret(t.deps, 'return-path'), id, row.id) }
    },
    inbound: () => db.query('SELECT kind, outcome, message_id, remote_ip, detail FROM inbound_messages ORDER BY id').all() as any[],
    get: async (id: number) => (await t.call('GET', `/api/v2/feedback-loops/${id}`, { key: admin.key })).body.data,
  }
}

describe('feedback-loop mailboxes over IMAP', () => {
  test('unseen reports are applied like the listener does, flagged \\Seen, and the poll is recorded', async () => {
    const t = await setup()
    const account = await t.account()
    const { id, token } = await t.message()
    const arf = fixture('yahoo-arf.eml', true)
      .toString()
      .replaceAll(TOKENS.yahooArf!.token, token)
      .replace(/kate\.reader@yahoo\.com/gi, 'kate@example.net')
    const already = imap.add('Subject: read before\r\n\r\nold\r\n', ['\\Seen'])
    const arfUid = imap.add(arf)
    const dmarcUid = imap.add(fixture('dmarc-google.eml', true))
    const junkUid = imap.add('Subject: hello\r\n\r\nnot a report\r\n')

    const [result] = await pollDueAccounts(t.deps)
    expect(result).toEqual({ account_id: account.id, processed: 3, error: null })
    expect(t.inbound().map((m) => [m.kind, m.outcome])).toEqual([
      ['arf', 'applied'],
      ['dmarc', 'applied'],
      ['unknown', 'unparsed'],
    ])
    expect(t.inbound()[0]).toMatchObject({ message_id: id, remote_ip: null })
    expect(JSON.parse(t.inbound()[0].detail).via).toEqual({ kind: 'imap', account_id: account.id })
    const suppressed = t.deps.db.$client.query('SELECT value, reason FROM suppressions').all()
    expect(suppressed).toEqual([{ value: 'kate@example.net', reason: 'complaint' }])
    for (const uid of [arfUid, dmarcUid, junkUid, already]) expect(imap.messages.find((m) => m.uid === uid)!.flags.has('\\Seen')).toBe(true)
    // The poller never marks a message seen by reading it: it flags it after the commit.
    expect(imap.commands.some((c) => /^UID FETCH \d+ .*BODY\.PEEK\[\]/i.test(c))).toBe(true)
    expect(imap.commands.filter((c) => /^UID STORE/i.test(c)).length).toBe(3)

    const view = await t.get(account.id)
    expect(view).toMatchObject({ last_polled_at: '2026-03-01T12:00:30.000Z', last_error: null, password_set: true })
    expect(view.password).toBeUndefined()

    // Not due again until the interval has passed; then nothing is unseen.
    expect(await pollDueAccounts(t.deps)).toEqual([])
    t.deps.clock.advance(300_000)
    expect(await pollDueAccounts(t.deps)).toEqual([{ account_id: account.id, processed: 0, error: null }])
    expect(t.inbound().length).toBe(3)
  })

  test('a wrong password is recorded as the last error, and fixing it clears the error and polls again', async () => {
    const t = await setup()
    const account = await t.account({ password: 'wrong' })
    imap.add(fixture('dmarc-google.eml', true))
    const [failed] = await pollDueAccounts(t.deps)
    expect(failed!.error).toBeTruthy()
    expect(failed!.processed).toBe(0)
    const view = await t.get(account.id)
    expect(view.last_error).toBeTruthy()
    expect(view.last_polled_at).toBe('2026-03-01T12:00:30.000Z')
    expect(t.inbound()).toEqual([])

    const fixed = await t.call('PATCH', `/api/v2/feedback-loops/${account.id}`, { key: t.admin.key, body: { password: 'right password' } })
    expect(fixed.body.data).toMatchObject({ last_error: null, last_polled_at: null })
    expect(await pollDueAccounts(t.deps)).toEqual([{ account_id: account.id, processed: 1, error: null }])
    expect(t.inbound().map((m) => m.outcome)).toEqual(['applied'])
  })

  test('inactive accounts and accounts of kind address are not polled', async () => {
    const t = await setup()
    await t.account({ active: false })
    const address = await t.call('POST', '/api/v2/feedback-loops', {
      key: t.admin.key,
      body: { name: 'listener', kind: 'address', address: 'fbl@mailroom.test' },
    })
    expect(address.status).toBe(201)
    imap.add(fixture('dmarc-google.eml', true))
    expect(await pollDueAccounts(t.deps)).toEqual([])
    expect(imap.commands).toEqual([])
  })
})
