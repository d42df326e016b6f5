import { describe, expect, test } from 'bun:test'
import { classifyInbound, type DsnReport } from '../../../src/smtp/reports'
import { bounceClass, parseDsn } from '../../../src/smtp/reports/dsn'
import { bounceEnvelope, fixture, SECRET, TOKENS } from './support'

interface Expected {
  file: string
  key: keyof typeof TOKENS
  heuristic: boolean
  recipient: string
  action: string
  status: string
  class: 'hard' | 'soft'
  suppress: boolean
  smtpCode: number | null
  reportingMta: string | null
  diagnostic: RegExp
}

const CASES: Expected[] = [
  {
    file: 'postfix-hard.eml',
    key: 'postfixHard',
    heuristic: false,
    recipient: 'bob@example.org',
    action: 'failed',
    status: '5.1.1',
    class: 'hard',
    suppress: true,
    smtpCode: 550,
    reportingMta: 'mx1.example.org',
    diagnostic: /User unknown in virtual mailbox table/,
  },
  {
    file: 'postfix-delayed.eml',
    key: 'postfixDelayed',
    heuristic: false,
    recipient: 'carol@example.net',
    action: 'delayed',
    status: '4.4.1',
    class: 'soft',
    suppress: false,
    smtpCode: null,
    reportingMta: 'relay.example.net',
    diagnostic: /Connection timed out/,
  },
  {
    file: 'office365-ndr.eml',
    key: 'office365',
    heuristic: false,
    recipient: 'dave@contoso.com',
    action: 'failed',
    status: '5.1.10',
    class: 'hard',
    suppress: true,
    smtpCode: 550,
    reportingMta: 'AM9PR01MB7362.eurprd01.prod.exchangelabs.com',
    diagnostic: /RESOLVER\.ADR\.RecipientNotFound/,
  },
  {
    file: 'gmail.eml',
    key: 'gmail',
    heuristic: false,
    recipient: 'erin.doesnotexist@gmail.com',
    action: 'failed',
    status: '5.1.1',
    class: 'hard',
    suppress: true,
    smtpCode: 550,
    reportingMta: 'googlemail.com',
    diagnostic: /The email account that you tried to reach does not exist/,
  },
  {
    file: 'sendmail.eml',
    key: 'sendmail',
    heuristic: false,
    recipient: 'henry@example.edu',
    action: 'failed',
    status: '5.1.1',
    class: 'hard',
    suppress: true,
    smtpCode: 550,
    reportingMta: 'mail.example.edu',
    diagnostic: /User unknown/,
  },
  {
    file: 'qmail.eml',
    key: 'qmail',
    heuristic: true,
    recipient: 'grace@example.jp',
    action: 'failed',
    status: '5.1.1',
    class: 'hard',
    suppress: true,
    smtpCode: 550,
    reportingMta: null,
    diagnostic: /User unknown/,
  },
  {
    // Yahoo's plain-text bounce has no enhanced code: the 554 makes it permanent, and its
    // "doesn't have a yahoo.com account" is read as "no such user", so the address is suppressed.
    file: 'yahoo-plain.eml',
    key: 'yahoo',
    heuristic: true,
    recipient: 'frank.gone@yahoo.com',
    action: 'failed',
    status: '5.0.0',
    class: 'hard',
    suppress: true,
    smtpCode: 554,
    reportingMta: null,
    diagnostic: /doesn't have a yahoo\.com account/,
  },
  {
    file: 'exchange-legacy.eml',
    key: 'exchangeLegacy',
    heuristic: true,
    recipient: 'ivan@corp.example.org',
    action: 'failed',
    status: '5.1.1',
    class: 'hard',
    suppress: true,
    smtpCode: 550,
    reportingMta: null,
    diagnostic: /RecipNotFound/,
  },
]

describe('DSN fixtures', () => {
  for (const c of CASES) {
    for (const crlf of [false, true]) {
      test(`${c.file}${crlf ? ' (CRLF)' : ''}`, async () => {
        const t = TOKENS[c.key]!
        const report = await classifyInbound(fixture(c.file, crlf), bounceEnvelope(t.token), { secret: SECRET })
        expect(report.kind).toBe('dsn')
        const dsn = report as DsnReport
        expect(dsn.heuristic).toBe(c.heuristic)
        expect(dsn.recipients).toHaveLength(1)
        const r = dsn.recipients[0]!
        expect(r.recipient).toBe(c.recipient)
        expect(r.action).toBe(c.action as never)
        expect(r.status).toBe(c.status)
        expect(r.class).toBe(c.class)
        expect(r.suppress).toBe(c.suppress)
        expect(r.smtpCode).toBe(c.smtpCode)
        expect(r.diagnostic).toMatch(c.diagnostic)
        expect(dsn.reportingMta).toBe(c.reportingMta)
        expect(dsn.returnPathToken).toBe(t.token)
        expect(dsn.returnPath).toEqual({ messageId: t.messageId, recipientId: t.recipientId })
        expect(dsn.originalMessageId).toBe(`${t.messageId}@example.com`)
      })
    }
  }

  test('Original-Recipient (the address we sent to) wins over Final-Recipient, lower-cased', async () => {
    const dsn = (await parseDsn(fixture('postfix-hard.eml')))!
    expect(dsn.recipients[0]).toMatchObject({ originalRecipient: 'bob@example.org', finalRecipient: 'bob@example.org', remoteMta: 'mail.example.org' })
  })

  test('without the envelope, the token comes from the To header or the returned headers', async () => {
    const fromTo = await classifyInbound(fixture('gmail.eml'), { mailFrom: '', rcptTo: [] }, { secret: SECRET })
    expect((fromTo as DsnReport).returnPath).toEqual({ messageId: TOKENS.gmail!.messageId, recipientId: TOKENS.gmail!.recipientId })
    // The qmail notice's To is rewritten here, so only the pasted copy of the original names the token.
    const raw = fixture('qmail.eml')
      .toString()
      .replace(/^To: bounces\+\S+$/m, 'To: someone@example.com')
    const copy = await classifyInbound(Buffer.from(raw), { mailFrom: '', rcptTo: ['fbl@bounces.example.com'] }, { secret: SECRET })
    expect((copy as DsnReport).returnPath).toEqual({ messageId: TOKENS.qmail!.messageId, recipientId: TOKENS.qmail!.recipientId })
  })

  test('a forged token verifies to nothing, and a valid token elsewhere is not borrowed for it', async () => {
    const t = TOKENS.postfixHard!
    const forged = t.token.slice(0, -1) + (t.token.endsWith('a') ? 'b' : 'a')
    const raw = fixture('postfix-hard.eml').toString().replaceAll(t.token, forged)
    const report = (await classifyInbound(Buffer.from(raw), bounceEnvelope(forged), { secret: SECRET })) as DsnReport
    expect(report.kind).toBe('dsn')
    expect(report.returnPathToken).toBe(forged)
    expect(report.returnPath).toBeNull()
  })

  test('with another server secret nothing verifies', async () => {
    const report = (await classifyInbound(fixture('postfix-hard.eml'), bounceEnvelope(TOKENS.postfixHard!.token), {
      secret: Buffer.from('not the secret'),
    })) as DsnReport
    expect(report.returnPath).toBeNull()
    expect(report.returnPathToken).toBe(TOKENS.postfixHard!.token)
  })

  test('without a secret the token is reported unverified', async () => {
    const report = (await classifyInbound(fixture('sendmail.eml'), bounceEnvelope(TOKENS.sendmail!.token))) as DsnReport
    expect(report.returnPathToken).toBe(TOKENS.sendmail!.token)
    expect(report.returnPath).toBeNull()
  })

  test('a policy block bounces hard but suppresses no one (same rules as a live SMTP reply)', async () => {
    const raw = fixture('postfix-hard.eml')
      .toString()
      .replace('Status: 5.1.1', 'Status: 5.7.1')
      .replace(
        /Diagnostic-Code: smtp; 550 5\.1\.1[^\n]*\n[^\n]*/,
        'Diagnostic-Code: smtp; 554 5.7.1 Service unavailable; client [198.51.100.7] blocked using zen.spamhaus.org',
      )
    const r = ((await classifyInbound(Buffer.from(raw), bounceEnvelope('x'))) as DsnReport).recipients[0]!
    expect(r).toMatchObject({ class: 'hard', status: '5.7.1', suppress: false, rule: 'policy', smtpCode: 554 })
  })

  test('a failure after retrying a transient error is soft', async () => {
    const raw = fixture('postfix-delayed.eml').toString().replace('Action: delayed', 'Action: failed')
    const r = ((await classifyInbound(Buffer.from(raw), bounceEnvelope('x'))) as DsnReport).recipients[0]!
    expect(r).toMatchObject({ action: 'failed', status: '4.4.1', class: 'soft', suppress: false })
  })

  test('several recipients in one report, and a delivered one that is no failure', async () => {
    const raw = fixture('postfix-hard.eml')
      .toString()
      .replace(
        'Final-Recipient: rfc822; bob@example.org',
        'Final-Recipient: rfc822; ok@example.org\nAction: delivered\nStatus: 2.0.0\n\nFinal-Recipient: rfc822; full@example.org\nAction: failed\nStatus: 5.2.2\nDiagnostic-Code: smtp; 552 5.2.2 Mailbox full\n\nFinal-Recipient: rfc822; bob@example.org',
      )
    const dsn = (await classifyInbound(Buffer.from(raw), bounceEnvelope('x'))) as DsnReport
    expect(dsn.recipients.map((r) => [r.recipient, r.action, r.status, r.class, r.suppress])).toEqual([
      ['ok@example.org', 'delivered', '2.0.0', null, false],
      ['full@example.org', 'failed', '5.2.2', 'hard', false],
      ['bob@example.org', 'failed', '5.1.1', 'hard', true],
    ])
  })

  test('an out-of-office reply to the bounce address is not a bounce', async () => {
    const raw = [
      'From: Bob <bob@example.org>',
      `To: bounces+${TOKENS.postfixHard!.token}@bounces.example.com`,
      'Subject: Automatic reply: Your March newsletter',
      'Auto-Submitted: auto-replied',
      '',
      'I am out of the office until Monday. For urgent matters write to alice@example.org (550 5.1.1 is not my problem).',
      '',
    ].join('\r\n')
    const report = await classifyInbound(Buffer.from(raw), { mailFrom: '', rcptTo: [`bounces+${TOKENS.postfixHard!.token}@bounces.example.com`] })
    expect(report.kind).toBe('unknown')
  })

  test('bounceClass', () => {
    expect(bounceClass('failed', '5.1.1')).toBe('hard')
    expect(bounceClass('failed', '4.4.7')).toBe('soft')
    expect(bounceClass('delayed', '4.2.2')).toBe('soft')
    expect(bounceClass('delivered', '2.0.0')).toBeNull()
    expect(bounceClass('relayed', '2.0.0')).toBeNull()
    expect(bounceClass('expanded', '2.0.0')).toBeNull()
  })
})
