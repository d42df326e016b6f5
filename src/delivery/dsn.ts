/**
 * Delivery status notifications (RFC 3464) for mail accepted over SMTP submission that later
 * bounces or expires. Having answered 250 to the final dot, we took responsibility for the
 * message, and RFC 5321 section 6.1 requires a notification to the reverse-path when it
 * cannot be delivered. API mail is left out: its caller has the events and webhooks.
 *
 * Loop protection: a DSN goes out with the null reverse-path (RFC 5321 4.5.5), so a DSN that
 * fails never produces another; none is written for a null sender, nor for a message that is
 * itself a delivery report; and every DSN says `Auto-Submitted: auto-replied` (RFC 3834
 * section 5) so responders stay quiet.
 */
import { newMessageId, type PreparedMessage } from '../modules/messages/service'

/** One recipient the DSN reports as failed. */
export interface DsnRecipient {
  address: string
  /** RFC 3463 status, e.g. 5.1.1; 4.4.7 for a message that expired while deferred. */
  status: string
  /** The remote server's reply (or our own description) for Diagnostic-Code. */
  diagnostic: string
  /** The reply came from a server (smtp diagnostic type) rather than from us. */
  remote: boolean
  mx: string | null
}

/** What the DSN needs of the original message. */
export interface DsnOriginal {
  id: string
  raw: Uint8Array
  /** The submitting client's MAIL FROM. */
  envelopeFrom: string | null
  createdAt: number
}

const REPORT = /^content-type:[ \t]*multipart\/report\b[^\r\n]*(?:\r\n[ \t][^\r\n]*)*report-type[ \t]*=[ \t]*"?delivery-status/im

/** The RFC 3463 status for a recipient's last reply: its enhanced code when it has the right class, else the class's generic one (expired: 4.4.7). */
export function dsnStatus(enhanced: string | null, expired: boolean): string {
  if (expired) return enhanced?.startsWith('4.') ? enhanced : '4.4.7'
  if (enhanced?.startsWith('5.')) return enhanced
  return '5.0.0'
}

/** RFC 5322 date-time. */
function rfc5322Date(ms: number): string {
  return new Date(ms).toUTCString().replace(/GMT$/, '+0000')
}

/** Keeps a field value on one line and within reason (RFC 5322 2.1.1 line limits). */
function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').slice(0, 900)
}

/** The DSN message for an original and its failed recipients, or null when none may be sent (see the module comment). */
export function buildDsn(hostname: string, now: number, original: DsnOriginal, failed: DsnRecipient[]): PreparedMessage | null {
  const to = original.envelopeFrom?.trim()
  if (!to || failed.length === 0) return null
  const raw = Buffer.from(original.raw.buffer, original.raw.byteOffset, original.raw.byteLength).toString('latin1')
  const headEnd = raw.indexOf('\r\n\r\n')
  const headers = headEnd < 0 ? raw : raw.slice(0, headEnd)
  if (REPORT.test(headers)) return null // never a DSN about a DSN

  const id = newMessageId()
  const host = hostname.toLowerCase()
  const messageIdHeader = `${id}@${host}`
  const boundary = `dsn-${id}`
  const human = [
    `This is the mail system at host ${host}.`,
    '',
    "I'm sorry to have to inform you that your message could not",
    'be delivered to one or more recipients.',
    '',
    ...failed.map((f) => `<${f.address}>: ${oneLine(f.diagnostic)}`),
    '',
  ]
  const perMessage = [`Reporting-MTA: dns; ${host}`, `X-Mailroom-Message-ID: ${original.id}`, `Arrival-Date: ${rfc5322Date(original.createdAt)}`]
  const perRecipient = failed.map((f) =>
    [
      `Final-Recipient: rfc822; ${f.address}`,
      'Action: failed',
      `Status: ${f.status}`,
      ...(f.mx ? [`Remote-MTA: dns; ${f.mx}`] : []),
      `Diagnostic-Code: ${f.remote ? 'smtp' : 'x-mailroom'}; ${oneLine(f.diagnostic)}`,
      `Last-Attempt-Date: ${rfc5322Date(now)}`,
    ].join('\r\n'),
  )
  const subject = 'Undelivered Mail Returned to Sender'
  const text = [
    `From: Mail Delivery System <MAILER-DAEMON@${host}>`,
    `To: <${to}>`,
    `Subject: ${subject}`,
    `Date: ${rfc5322Date(now)}`,
    `Message-ID: <${messageIdHeader}>`,
    'Auto-Submitted: auto-replied',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
    '',
    'This is a MIME-encapsulated message.',
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=us-ascii',
    'Content-Description: Notification',
    '',
    ...human,
    `--${boundary}`,
    'Content-Type: message/delivery-status',
    'Content-Description: Delivery report',
    '',
    [perMessage.join('\r\n'), ...perRecipient].join('\r\n\r\n'),
    '',
    `--${boundary}`,
    'Content-Type: text/rfc822-headers',
    'Content-Description: Undelivered Message Headers',
    '',
    headers,
    '',
    `--${boundary}--`,
    '',
  ].join('\r\n')
  return {
    id,
    raw: Buffer.from(text, 'latin1'),
    // RFC 5321 4.5.5: notifications are sent with the null reverse-path.
    mailFrom: '',
    messageIdHeader,
    fromAddress: `mailer-daemon@${host}`,
    subject,
    tags: [],
    recipients: [{ address: to, kind: 'to' }],
    domainId: null,
    poolId: null,
    template: null,
    envelopeFrom: null,
  }
}
