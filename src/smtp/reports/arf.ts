/**
 * Complaint reports: ARF (RFC 5965, multipart/report; report-type=feedback-report, as sent
 * by Yahoo, AOL, Comcast, Fastmail ... feedback loops) and Microsoft's JMRP, which is not
 * strict ARF: a multipart/mixed with only the complained-of message attached, the subject
 * "complaint about message from <ip>" and the complainant in X-HmXmrOriginalRecipient.
 *
 * The complained-of message is identified by the return-path token (Original-Mail-From, or
 * the Return-Path the mailbox provider added at delivery) or by its Message-ID.
 */
import {
  type ParsedMail,
  type ReturnPath,
  contentType,
  extractAddress,
  extractAddresses,
  field,
  fieldAll,
  findPart,
  headerText,
  ORIGINAL_TYPES,
  type OriginalMessage,
  parseFields,
  parseMail,
  pickToken,
  readOriginal,
  tokensInFields,
} from './mime'
import { tokenFromAddress } from '../../lib/return-path-token'

/** RFC 5965 section 7.3 registry, with not-spam (RFC 6430) and auth-failure (RFC 6591). */
export type FeedbackType = 'abuse' | 'fraud' | 'virus' | 'other' | 'not-spam' | 'auth-failure'

export interface ArfReport {
  kind: 'arf'
  /** 'arf' when a message/feedback-report part was read, 'jmrp' for Microsoft's format. */
  format: 'arf' | 'jmrp'
  feedbackType: FeedbackType
  /** True for abuse, fraud and virus: a recipient said the mail was unwanted. auth-failure and not-spam are not complaints. */
  complaint: boolean
  userAgent: string | null
  version: string | null
  /** Original-Mail-From (the original envelope sender), lower-cased. */
  originalMailFrom: string | null
  /** Original-Rcpt-To values (often redacted by the provider), lower-cased. */
  originalRcptTo: string[]
  /** Arrival-Date (or the older Received-Date), as written. */
  arrivalDate: string | null
  sourceIp: string | null
  reportedDomain: string | null
  reportedDomains: string[]
  reportingMta: string | null
  /** The best guess at the complainant: Original-Rcpt-To, X-HmXmrOriginalRecipient, or the original's To (redacted ones skipped). */
  recipient: string | null
  /** The included original message (its header section), or null when the report had none. */
  original: Omit<OriginalMessage, 'fields'> | null
  originalMessageId: string | null
  returnPathToken: string | null
  returnPath: ReturnPath | null
}

export interface ArfOptions {
  secret?: Buffer
}

const TYPES: readonly FeedbackType[] = ['abuse', 'fraud', 'virus', 'other', 'not-spam', 'auth-failure']
const JMRP_SUBJECT = /complaint about message from\s+\[?([0-9a-f.:]+)\]?/i
const JMRP_FROM = /^staff@hotmail\.com$/i

function isRedacted(address: string): boolean {
  return /redacted|^x+@|\*{2,}/i.test(address)
}

/** What the report itself states; buildReport derives the rest. */
type ReportFields = Pick<
  ArfReport,
  'feedbackType' | 'userAgent' | 'version' | 'originalMailFrom' | 'originalRcptTo' | 'arrivalDate' | 'sourceIp' | 'reportedDomains' | 'reportingMta'
>

function buildReport(format: 'arf' | 'jmrp', fields: ReportFields, original: OriginalMessage | null, options: ArfOptions): ArfReport {
  const jmrpRecipient = original ? extractAddress(original.fields.find((f) => f.name === 'x-hmxmroriginalrecipient')?.value) : null
  const recipient = [...fields.originalRcptTo, jmrpRecipient, ...(original?.to ?? [])].find((a): a is string => !!a && !isRedacted(a)) ?? null
  const picked = pickToken(
    [fields.originalMailFrom ? tokenFromAddress(fields.originalMailFrom) : null, ...(original ? tokensInFields(original.fields) : [])],
    options.secret,
  )
  let kept: Omit<OriginalMessage, 'fields'> | null = null
  if (original) {
    const { fields: _omit, ...rest } = original
    kept = rest
  }
  return {
    kind: 'arf',
    format,
    ...fields,
    complaint: fields.feedbackType === 'abuse' || fields.feedbackType === 'fraud' || fields.feedbackType === 'virus',
    reportedDomain: fields.reportedDomains[0] ?? null,
    recipient,
    original: kept,
    originalMessageId: original?.messageId ?? null,
    returnPathToken: picked.token,
    returnPath: picked.returnPath,
  }
}

function originalPart(mail: ParsedMail): OriginalMessage | null {
  const part = findPart(mail, ORIGINAL_TYPES)
  return part ? readOriginal(part.content) : null
}

/** Reads the message/feedback-report part of a parsed message (RFC 5965 section 3.1); null when there is none. */
export function standardArf(mail: ParsedMail, options: ArfOptions = {}): ArfReport | null {
  const part = findPart(mail, ['message/feedback-report'])
  if (!part) return null
  const f = parseFields(part.content.toString('utf8'))
  const type = (field(f, 'feedback-type') ?? '').toLowerCase() as FeedbackType
  return buildReport(
    'arf',
    {
      // A missing or unregistered type is "other" (RFC 5965 section 3.1 requires one).
      feedbackType: TYPES.includes(type) ? type : 'other',
      userAgent: field(f, 'user-agent'),
      version: field(f, 'version'),
      originalMailFrom: extractAddress(field(f, 'original-mail-from')),
      originalRcptTo: extractAddresses(fieldAll(f, 'original-rcpt-to').join(', ')),
      arrivalDate: field(f, 'arrival-date') ?? field(f, 'received-date'),
      sourceIp: field(f, 'source-ip')?.replace(/^\[|\]$/g, '') ?? null,
      reportedDomains: fieldAll(f, 'reported-domain').map((d) => d.toLowerCase()),
      reportingMta: field(f, 'reporting-mta')?.replace(/^[^;]*;\s*/, '') ?? null,
    },
    originalPart(mail),
    options,
  )
}

/**
 * Reads a Microsoft JMRP report: no feedback-report part, a message/rfc822 attachment, and
 * the JMRP marks (sender staff@hotmail.com, the "complaint about message from" subject, or
 * X-HmXmrOriginalRecipient in the attached message). Null when it is not one.
 */
export function jmrpArf(mail: ParsedMail, options: ArfOptions = {}): ArfReport | null {
  if (findPart(mail, ['message/feedback-report'])) return null
  const original = originalPart(mail)
  if (!original) return null
  const subject = headerText(mail, 'subject')
  const from = extractAddress(headerText(mail, 'from'))
  const marked = original.fields.some((f) => f.name === 'x-hmxmroriginalrecipient')
  const subjectMatch = JMRP_SUBJECT.exec(subject)
  if (!marked && !(subjectMatch && ((from && JMRP_FROM.test(from)) || contentType(mail).value === 'multipart/mixed'))) return null
  const reporter = original.fields.find((f) => f.name === 'x-hmxmroriginalrecipient')?.value
  return buildReport(
    'jmrp',
    {
      feedbackType: 'abuse',
      userAgent: null,
      version: null,
      originalMailFrom: null,
      originalRcptTo: reporter ? extractAddresses(reporter) : [],
      arrivalDate: null,
      sourceIp: subjectMatch?.[1] ?? null,
      reportedDomains: [],
      reportingMta: null,
    },
    original,
    options,
  )
}

/** Reads a parsed message as a complaint report (ARF, then JMRP); null when it is neither. */
export function arfFromMail(mail: ParsedMail, options: ArfOptions = {}): ArfReport | null {
  return standardArf(mail, options) ?? jmrpArf(mail, options)
}

/** Parses raw bytes as a complaint report; null when it is not one. */
export async function parseArf(raw: Buffer, options: ArfOptions = {}): Promise<ArfReport | null> {
  return arfFromMail(await parseMail(raw), options)
}
