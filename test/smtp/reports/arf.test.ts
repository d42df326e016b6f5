import { describe, expect, test } from 'bun:test'
import { type ArfReport, classifyInbound } from '../../../src/smtp/reports'
import { parseArf } from '../../../src/smtp/reports/arf'
import { fixture, SECRET, TOKENS } from './support'

const FBL = { mailFrom: 'feedback@arf.mail.yahoo.com', rcptTo: ['fbl@fbl.example.com'] }

async function arf(name: string, crlf = false): Promise<ArfReport> {
  const report = await classifyInbound(fixture(name, crlf), FBL, { secret: SECRET })
  expect(report.kind).toBe('arf')
  return report as ArfReport
}

describe('ARF and JMRP fixtures', () => {
  for (const crlf of [false, true]) {
    test(`Yahoo feedback loop (ARF)${crlf ? ' (CRLF)' : ''}`, async () => {
      const r = await arf('yahoo-arf.eml', crlf)
      const t = TOKENS.yahooArf!
      expect(r).toMatchObject({
        format: 'arf',
        feedbackType: 'abuse',
        complaint: true,
        userAgent: 'Yahoo!-Mail-Feedback/2.0',
        version: '0.1',
        originalMailFrom: `bounces+${t.token}@bounces.example.com`,
        originalRcptTo: ['kate.reader@yahoo.com'],
        arrivalDate: 'Tue, 10 Mar 2026 16:30:02 +0000',
        sourceIp: '198.51.100.7',
        reportedDomain: 'example.com',
        recipient: 'kate.reader@yahoo.com',
        originalMessageId: `${t.messageId}@example.com`,
        returnPathToken: t.token,
        returnPath: { messageId: t.messageId, recipientId: t.recipientId },
      })
      expect(r.original).toMatchObject({ from: 'news@example.com', to: ['kate.reader@yahoo.com'], subject: 'Spring sale' })
    })

    test(`AOL feedback loop (redacted recipient)${crlf ? ' (CRLF)' : ''}`, async () => {
      const r = await arf('aol-arf.eml', crlf)
      const t = TOKENS.aolArf!
      expect(r).toMatchObject({
        format: 'arf',
        feedbackType: 'abuse',
        userAgent: 'AOL SComp',
        originalMailFrom: null,
        sourceIp: '198.51.100.7',
        reportedDomains: ['example.com'],
        // AOL redacts the complainant; the token still names the recipient row.
        recipient: null,
        originalMessageId: `${t.messageId}@example.com`,
        returnPath: { messageId: t.messageId, recipientId: t.recipientId },
      })
      expect(r.original?.to).toEqual(['redacted@aol.com'])
    })

    test(`Microsoft JMRP (not strict ARF)${crlf ? ' (CRLF)' : ''}`, async () => {
      const r = await arf('microsoft-jmrp.eml', crlf)
      const t = TOKENS.postfixDelayed!
      expect(r).toMatchObject({
        format: 'jmrp',
        feedbackType: 'abuse',
        complaint: true,
        sourceIp: '198.51.100.7',
        originalRcptTo: ['liam.reader@outlook.com'],
        recipient: 'liam.reader@outlook.com',
        originalMessageId: `${t.messageId}@example.com`,
        returnPathToken: t.token,
        returnPath: { messageId: t.messageId, recipientId: t.recipientId },
      })
    })
  }

  test('feedback types: not-spam and auth-failure are not complaints; an unknown type is "other"', async () => {
    const base = fixture('yahoo-arf.eml').toString()
    const of = async (type: string) => (await parseArf(Buffer.from(base.replace('Feedback-Type: abuse', `Feedback-Type: ${type}`))))!
    expect(await of('not-spam')).toMatchObject({ feedbackType: 'not-spam', complaint: false })
    expect(await of('auth-failure')).toMatchObject({ feedbackType: 'auth-failure', complaint: false })
    expect(await of('Fraud')).toMatchObject({ feedbackType: 'fraud', complaint: true })
    expect(await of('virus')).toMatchObject({ feedbackType: 'virus', complaint: true })
    expect(await of('something-new')).toMatchObject({ feedbackType: 'other', complaint: false })
  })

  test('a report with only text/rfc822-headers still names the original', async () => {
    const raw = fixture('yahoo-arf.eml').toString().replace('Content-Type: message/rfc822', 'Content-Type: text/rfc822-headers')
    const r = (await parseArf(Buffer.from(raw), { secret: SECRET }))!
    expect(r.originalMessageId).toBe(`${TOKENS.yahooArf!.messageId}@example.com`)
    expect(r.returnPath?.recipientId).toBe(TOKENS.yahooArf!.recipientId)
  })

  test('a plain message with an attachment is not taken for JMRP', async () => {
    const raw = fixture('microsoft-jmrp.eml')
      .toString()
      .replace('Subject: complaint about message from 198.51.100.7', 'Subject: fwd: look at this')
      .replace('From: staff@hotmail.com', 'From: friend@example.net')
      .replace(/^X-HmXmrOriginalRecipient:.*\n/m, '')
    expect(await parseArf(Buffer.from(raw))).toBeNull()
  })
})
