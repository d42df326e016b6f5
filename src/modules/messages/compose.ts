import { htmlToText } from '../../lib/html-text'
import libmime from 'libmime'
import addressparser from 'nodemailer/lib/addressparser'
import { checkEmail, domainOf } from '../../lib/email'
import { AppError, type ErrorDetails } from '../../lib/errors'
import { headerFields } from '../../lib/header-fields'

/** What every send endpoint boils down to, before validation. */
export interface SendInput {
  from: string
  to: string[]
  cc?: string[]
  bcc?: string[]
  reply_to?: string[]
  subject: string
  html?: string | null
  text?: string | null
  headers?: Record<string, string>
  attachments?: AttachmentInput[]
  tags?: string[]
  /** Open and click tracking (HTML only) and one-click unsubscribe; absent: the sending domain's defaults, no unsubscribe header. */
  track_opens?: boolean
  track_clicks?: boolean
  list_unsubscribe?: boolean
  /** The template version the content was rendered from, for the record. */
  template?: { id: number; version_id: number }
  /** When to send (ms, parsed by schedule.ts parseScheduledAt); absent or not in the future: at once. */
  scheduled_at?: number | null
}

export interface AttachmentInput {
  filename: string
  /** Base64. */
  content: string
  content_type?: string
}

export interface Mailbox {
  name: string
  /** Normalised (lower case, ASCII domain). */
  address: string
}

/** A send request after validation: every address checked, headers safe to write. */
export interface CheckedMessage {
  from: Mailbox
  to: Mailbox[]
  cc: Mailbox[]
  bcc: Mailbox[]
  replyTo: Mailbox[]
  subject: string
  html: string | null
  text: string | null
  headers: Array<[string, string]>
  attachments: Array<{ filename: string; content: Buffer; contentType?: string }>
  tags: string[]
  /** The envelope: every distinct recipient address once, in to, cc, bcc order. */
  recipients: Array<{ address: string; kind: 'to' | 'cc' | 'bcc' }>
}

export const LIMITS = {
  /** to + cc + bcc, as Resend allows. */
  recipients: 50,
  subject: 998,
  /** Each body part; the request body limit (max_body_bytes) applies on top. */
  body_chars: 5 * 1024 * 1024,
  headers: 50,
  attachments: 20,
  tags: 20,
  tag_chars: 256,
} as const

/**
 * Headers an API caller may not set (besides CALLER_FORBIDDEN_HEADERS, below): the ones Mailroom writes itself from validated fields, and
 * the trace and authentication headers only servers add (RFC 5321 section 4.4, RFC 6376).
 */
const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'reply-to',
  'subject',
  'date',
  'message-id',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
  'return-path',
  'received',
  'dkim-signature',
  'arc-seal',
  'arc-message-signature',
  'arc-authentication-results',
  'authentication-results',
])

/**
 * Headers no caller may write, whichever way the message comes (the API's `headers`, SMTP
 * submission): one rule for both paths. Sender names the mailbox responsible for sending
 * (RFC 5322 section 3.6.2); Mailroom checks only From against the caller's domains, and mail
 * clients show a Sender ("on behalf of") that DMARC never checks, so a caller's Sender could
 * name anyone.
 */
const CALLER_FORBIDDEN_HEADERS: ReadonlyMap<string, string> = new Map([
  ['sender', 'is not accepted: Sender would name a mailbox other than the checked From (RFC 5322 section 3.6.2)'],
])

/** Why no caller may write header `name` (any case), on any path; null when the rule allows it. */
export function forbiddenHeader(name: string): string | null {
  return CALLER_FORBIDDEN_HEADERS.get(name.toLowerCase()) ?? null
}

/** RFC 5322 section 2.2: a field name is printable US-ASCII except the colon. */
const FIELD_NAME = /^[!-9;-~]{1,76}$/
// eslint-disable-next-line no-control-regex
const LINE_BREAK_OR_NUL = /[\r\n\u0000]/

class Problems {
  readonly details: ErrorDetails = {}
  add(field: string, message: string): void {
    ;(this.details[field] ??= []).push(message)
  }
  get any(): boolean {
    return Object.keys(this.details).length > 0
  }
}

/** The text alternative of an HTML body (lib/html-text.ts: links kept as "text [url]", images dropped). */
export function generatedText(html: string): string {
  return htmlToText(html)
}

/** The HTML a message's text part is generated from: an HTML body sent without a text one (null otherwise). */
export function htmlNeedingText(input: Pick<SendInput, 'html' | 'text'>): string | null {
  return input.text == null && input.html ? input.html : null
}

/** An attachment's type from its file name's extension (libmime's table): report.pdf -> application/pdf; unknown: application/octet-stream. */
export function contentTypeOf(filename: string): string {
  return libmime.detectMimeType(filename)
}

/** The same rule for a message that arrives whole (SMTP submission): every field of its header block; throws validation_failed. */
export function checkSubmittedHeaders(raw: Buffer): void {
  const end = raw.indexOf('\r\n\r\n')
  const problems = new Problems()
  for (const field of headerFields(raw.subarray(0, Math.max(end, 0)).toString('latin1'))) {
    const why = field.name ? forbiddenHeader(field.name) : null
    if (why) problems.add(`headers.${field.raw.slice(0, field.raw.indexOf(':')).trim()}`, why)
  }
  if (problems.any) throw new AppError('validation_failed', 'The message has a header that is not accepted.', problems.details)
}

/** One mailbox from "Name <a@b>" or "a@b"; groups and lists are refused where one is expected. */
function parseMailbox(value: unknown, field: string, problems: Problems): Mailbox | null {
  if (typeof value !== 'string' || value.trim() === '') {
    problems.add(field, 'must be an email address such as "Ada <ada@example.com>"')
    return null
  }
  if (LINE_BREAK_OR_NUL.test(value)) {
    problems.add(field, 'must not contain line breaks')
    return null
  }
  const parsed = addressparser(value, { flatten: true })
  if (parsed.length !== 1 || !parsed[0]!.address) {
    problems.add(field, 'must hold exactly one email address')
    return null
  }
  const check = checkEmail(parsed[0]!.address)
  if (!check.ok) {
    problems.add(field, `the address ${check.error}`)
    return null
  }
  return { name: parsed[0]!.name ?? '', address: check.email }
}

/** Why `value` is not one mailbox ("Name <a@b>" or "a@b"), or null: the rule of a send's from, for values stored ahead of a send (templates). */
export function mailboxProblem(value: string): string | null {
  const problems = new Problems()
  parseMailbox(value, 'value', problems)
  return problems.details.value?.[0] ?? null
}

function parseMailboxes(values: unknown, field: string, problems: Problems): Mailbox[] {
  if (values === undefined || values === null) return []
  const list = Array.isArray(values) ? values : [values]
  return list.map((v, i) => parseMailbox(v, `${field}.${i}`, problems)).filter((m): m is Mailbox => m !== null)
}

/**
 * Validates a send request. Every address is parsed and checked, header names and values are
 * checked for line breaks (no header injection: nothing a caller sends can start a new header
 * line), reserved headers are refused, and the envelope is built only from the checked list.
 * Throws validation_failed with every problem at once.
 */
export function checkMessage(input: SendInput): CheckedMessage {
  const problems = new Problems()
  const from = parseMailbox(input.from, 'from', problems)
  const to = parseMailboxes(input.to, 'to', problems)
  const cc = parseMailboxes(input.cc, 'cc', problems)
  const bcc = parseMailboxes(input.bcc, 'bcc', problems)
  const replyTo = parseMailboxes(input.reply_to, 'reply_to', problems)
  if (to.length === 0 && !problems.details['to.0']) problems.add('to', 'needs at least one recipient')
  const seen = new Set<string>()
  const recipients: CheckedMessage['recipients'] = []
  for (const [kind, list] of [
    ['to', to],
    ['cc', cc],
    ['bcc', bcc],
  ] as const) {
    for (const m of list) {
      if (seen.has(m.address)) continue
      seen.add(m.address)
      recipients.push({ address: m.address, kind })
    }
  }
  if (recipients.length > LIMITS.recipients) problems.add('to', `to, cc and bcc together may hold at most ${LIMITS.recipients} addresses`)

  const subject = typeof input.subject === 'string' ? input.subject : ''
  if (subject.trim() === '') problems.add('subject', 'is required')
  else if (LINE_BREAK_OR_NUL.test(subject)) problems.add('subject', 'must not contain line breaks')
  else if (subject.length > LIMITS.subject) problems.add('subject', `must be at most ${LIMITS.subject} characters`)

  const html = input.html ?? null
  // An HTML-only message gets a text part generated from its HTML: mail with a text
  // alternative places better, and text-only readers see the content (RFC 2046 section 5.1.4).
  const fromHtml = htmlNeedingText(input)
  const text = fromHtml === null ? (input.text ?? null) : generatedText(fromHtml)
  // An empty string is a body (empty); only a request with neither field has none.
  if (html === null && text === null) problems.add('html', 'html or text is required')
  for (const [field, body] of [
    ['html', html],
    ['text', text],
  ] as const) {
    if (body && body.length > LIMITS.body_chars) problems.add(field, `must be at most ${LIMITS.body_chars} characters`)
  }

  const headers: Array<[string, string]> = []
  const entries = Object.entries(input.headers ?? {})
  if (entries.length > LIMITS.headers) problems.add('headers', `may hold at most ${LIMITS.headers} headers`)
  for (const [name, value] of entries) {
    const field = `headers.${name}`
    if (!FIELD_NAME.test(name)) problems.add(field, 'is not a valid header name (printable ASCII without ":" or spaces, at most 76 characters)')
    else if (forbiddenHeader(name)) problems.add(field, forbiddenHeader(name)!)
    else if (RESERVED_HEADERS.has(name.toLowerCase())) problems.add(field, 'is set by Mailroom from the request fields and cannot be given as a header')
    else if (typeof value !== 'string' || LINE_BREAK_OR_NUL.test(value)) problems.add(field, 'must be a string without line breaks')
    else if (value.length > 998) problems.add(field, 'must be at most 998 characters (RFC 5322 section 2.1.1)')
    else headers.push([name, value])
  }

  const attachments: CheckedMessage['attachments'] = []
  const files = input.attachments ?? []
  if (files.length > LIMITS.attachments) problems.add('attachments', `may hold at most ${LIMITS.attachments} files`)
  files.forEach((a, i) => {
    const field = `attachments.${i}`
    if (typeof a.filename !== 'string' || a.filename.trim() === '' || LINE_BREAK_OR_NUL.test(a.filename) || a.filename.length > 255) {
      problems.add(`${field}.filename`, 'must be a file name of 1-255 characters without line breaks')
      return
    }
    if (typeof a.content !== 'string' || !/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(a.content)) {
      problems.add(`${field}.content`, 'must be base64')
      return
    }
    if (a.content_type !== undefined && !/^[\w.+-]+\/[\w.+-]+$/.test(a.content_type)) {
      problems.add(`${field}.content_type`, 'must be a MIME type such as application/pdf')
      return
    }
    attachments.push({ filename: a.filename, content: Buffer.from(a.content, 'base64'), contentType: a.content_type ?? contentTypeOf(a.filename) })
  })

  const tags = input.tags ?? []
  if (tags.length > LIMITS.tags) problems.add('tags', `may hold at most ${LIMITS.tags} tags`)
  tags.forEach((tag, i) => {
    if (typeof tag !== 'string' || tag.length === 0 || tag.length > LIMITS.tag_chars || LINE_BREAK_OR_NUL.test(tag)) {
      problems.add(`tags.${i}`, `must be 1-${LIMITS.tag_chars} characters without line breaks`)
    }
  })

  if (problems.any || !from) throw new AppError('validation_failed', 'The request data is invalid.', problems.details)
  return { from, to, cc, bcc, replyTo, subject, html, text, headers, attachments, tags, recipients }
}

/**
 * The body of the spec's simple send (POST /v1/send), whose request is from, to and subject:
 * without html or text the message has an empty text body, where other endpoints ask for one.
 */
export function simpleSendBody(b: { html?: string; text?: string }): { html?: string; text?: string } {
  return b.html === undefined && b.text === undefined ? { text: '' } : { html: b.html, text: b.text }
}

/** The domain whose sending-domain record decides signing and the return path. */
export function senderDomain(m: CheckedMessage): string {
  return domainOf(m.from.address)
}
