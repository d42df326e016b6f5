/**
 * Delivery status notifications: RFC 3464 (multipart/report; report-type=delivery-status,
 * RFC 6522) and RFC 6533 (message/global-delivery-status), plus a heuristic reader for the
 * plain-text bounces some MTAs still send (qmail, old Yahoo, old Exchange), which have no
 * machine-readable part.
 *
 * Each recipient is classified twice:
 * - `class`: 'hard' (permanent: action failed with a 5.x.x status, RFC 3463 section 3.1) or
 *   'soft' (4.x.x: delayed, or failed after giving up on a transient error); null for
 *   delivered/relayed/expanded, which are not failures.
 * - `suppress`/`rule`: the decision of the reply rules table the delivery engine uses too
 *   (src/lib/smtp-replies.ts), so a bounce that arrives later is judged exactly as the same
 *   reply during the SMTP session would be: only a bad address suppresses, a policy block
 *   (5.7.x) does not.
 */
import { type BounceReason, classifyReply, parseReply, replyReason } from '../../lib/smtp-replies'
import {
  type Field,
  type ParsedMail,
  type ReturnPath,
  cleanMessageId,
  contentType,
  extractAddress,
  extractAddresses,
  field,
  findPart,
  headerText,
  ORIGINAL_TYPES,
  parseFieldGroups,
  parseMail,
  pickToken,
  readOriginal,
  tokensInFields,
  typedValue,
} from './mime'
import { htmlToText } from '../../lib/html-text'
import { tokenFromAddress } from '../../lib/return-path-token'

export type DsnAction = 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded'
export type BounceClass = 'hard' | 'soft'

export interface DsnRecipient {
  /** The address the report is about, lower-cased: Original-Recipient when given (the address we sent to), else Final-Recipient. */
  recipient: string
  originalRecipient: string | null
  finalRecipient: string | null
  action: DsnAction
  /** Enhanced status code x.y.z (RFC 3463). */
  status: string
  /** 'hard' or 'soft' for failed/delayed; null for delivered, relayed, expanded. */
  class: BounceClass | null
  /** Whether the address should be suppressed, by the reply rules table. */
  suppress: boolean
  /** The rule of src/lib/smtp-replies.ts that decided (or 'delivered'). */
  rule: string
  /** Why it failed or is delayed (BOUNCE_REASONS); null for delivered, relayed, expanded. */
  reason: BounceReason | null
  /** The diagnostic text (Diagnostic-Code without its type, or the heuristic's line). */
  diagnostic: string | null
  /** The SMTP reply code in the diagnostic, if any. */
  smtpCode: number | null
  remoteMta: string | null
}

export interface DsnReport {
  kind: 'dsn'
  /** True when no message/delivery-status part was read and the text was guessed from. */
  heuristic: boolean
  recipients: DsnRecipient[]
  originalEnvelopeId: string | null
  reportingMta: string | null
  /** The return-path token that ties the report to a message (unverified unless `returnPath` is set). */
  returnPathToken: string | null
  /** The verified decoding of the token; only with a secret, null when nothing verifies. */
  returnPath: ReturnPath | null
  /** Message-ID of the original message, without angle brackets. */
  originalMessageId: string | null
}

export interface DsnOptions {
  /** The envelope RCPT TO the report was received for (normally our bounces+ address). */
  envelopeTo?: string
  /** The envelope MAIL FROM; DSNs use the null reverse-path (RFC 3464 section 2, RFC 5321 4.5.5). */
  envelopeFrom?: string
  /** With the return-path secret, the token is verified and decoded into `returnPath`. */
  secret?: Buffer
}

const ACTIONS: readonly DsnAction[] = ['failed', 'delayed', 'delivered', 'relayed', 'expanded']
const STATUS_RE = /(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d]|\.\d)/
const BASIC_RE = /(?<![\d.])([45]\d\d)(?=[ :\]-]|$)(?!\.\d)/m
const DSN_TYPES = ['message/delivery-status', 'message/global-delivery-status']
const MAX_RECIPIENTS = 1000
const MAX_DIAGNOSTIC = 1000

function normaliseStatus(text: string | null): string | null {
  const m = text ? STATUS_RE.exec(text) : null
  return m ? `${m[1]}.${Number(m[2])}.${Number(m[3])}` : null
}

/** 'hard' for a permanent failure, 'soft' for a transient one; RFC 3464 section 2.3.3 actions. */
export function bounceClass(action: DsnAction, status: string): BounceClass | null {
  if (action !== 'failed' && action !== 'delayed') return null
  return action === 'failed' && status.startsWith('5.') ? 'hard' : 'soft'
}

function buildRecipient(input: {
  originalRecipient: string | null
  finalRecipient: string | null
  action: string | null
  status: string | null
  diagnostic: string | null
  remoteMta: string | null
  /** The SMTP code when the diagnostic does not start with it (heuristic text). */
  smtpCode?: number | null
}): DsnRecipient | null {
  const recipient = input.originalRecipient ?? input.finalRecipient
  if (!recipient) return null
  const diagnostic = input.diagnostic ? input.diagnostic.slice(0, MAX_DIAGNOSTIC) : null
  const parsed = diagnostic ? parseReply(diagnostic) : { code: null, enhanced: null, text: '' }
  const reply = parsed.code === null && input.smtpCode ? { ...parsed, code: input.smtpCode } : parsed
  let action = (input.action ?? '').toLowerCase().trim() as DsnAction
  let status = normaliseStatus(input.status) ?? reply.enhanced ?? (reply.code ? `${String(reply.code)[0]}.0.0` : null)
  if (!ACTIONS.includes(action)) {
    // An unknown or missing action (RFC 3464 requires one): infer it from the status class.
    if (!status) return null
    action = status.startsWith('5.') ? 'failed' : status.startsWith('4.') ? 'delayed' : 'delivered'
  }
  status ??= action === 'failed' ? '5.0.0' : action === 'delayed' ? '4.0.0' : '2.0.0'
  const cls = bounceClass(action, status)
  let suppress = false
  let rule = 'delivered'
  let reason: BounceReason | null = null
  if (cls) {
    // The status field is authoritative for the class; the diagnostic's text refines the rule.
    const input = { code: reply.code, enhanced: status, text: reply.text || diagnostic || '' }
    const decided = classifyReply(input)
    // A transient status never suppresses, even when the reply code disagrees.
    suppress = cls === 'hard' && decided.suppress
    rule = decided.rule
    reason = decided.reason ?? replyReason(input)
    // Failed with a transient status: the reporting MTA gave up retrying (Postfix's
    // maximal_queue_lifetime, RFC 3464 2.3.3 with a 4.x.x status). Unless the reply says
    // more (a full mailbox, a rate), that is the message expiring.
    if (action === 'failed' && cls === 'soft' && reason === 'other') reason = 'expired'
  }
  return {
    recipient,
    originalRecipient: input.originalRecipient,
    finalRecipient: input.finalRecipient,
    action,
    status,
    class: cls,
    suppress,
    rule,
    reason,
    diagnostic,
    smtpCode: reply.code,
    remoteMta: input.remoteMta,
  }
}

function originalOf(mail: ParsedMail): { messageId: string | null; tokens: string[] } {
  const part = findPart(mail, ORIGINAL_TYPES)
  if (!part) return { messageId: null, tokens: [] }
  const o = readOriginal(part.content)
  return { messageId: o.messageId, tokens: tokensInFields(o.fields) }
}

/** Tokens in order of trust: the envelope (what the reporting MTA actually used), the report's To, then the original's headers. */
function tokenCandidates(mail: ParsedMail, options: DsnOptions, originalTokens: string[]): (string | null)[] {
  return [
    options.envelopeTo ? tokenFromAddress(options.envelopeTo) : null,
    ...extractAddresses(headerText(mail, 'to')).map(tokenFromAddress),
    ...originalTokens,
  ]
}

/** Reads the message/delivery-status part of a parsed message; null when there is none or it names no recipient. */
export function standardDsn(mail: ParsedMail, options: DsnOptions = {}): DsnReport | null {
  const part = findPart(mail, DSN_TYPES)
  if (!part) return null
  const groups = parseFieldGroups(part.content.toString('utf8'))
  if (groups.length === 0) return null
  // The first group holds the per-message fields, unless the sender left them out (then it names a recipient).
  const isRecipientGroup = (g: Field[]) => g.some((f) => f.name === 'final-recipient' || f.name === 'original-recipient')
  const perMessage = isRecipientGroup(groups[0]!) ? [] : groups[0]!
  const recipients: DsnRecipient[] = []
  for (const g of groups.filter(isRecipientGroup).slice(0, MAX_RECIPIENTS)) {
    const r = buildRecipient({
      originalRecipient: extractAddress(field(g, 'original-recipient')),
      finalRecipient: extractAddress(field(g, 'final-recipient')),
      action: field(g, 'action'),
      status: field(g, 'status'),
      diagnostic: typedValue(field(g, 'diagnostic-code')),
      remoteMta: typedValue(field(g, 'remote-mta')),
    })
    if (r) recipients.push(r)
  }
  if (recipients.length === 0) return null
  const original = originalOf(mail)
  const picked = pickToken(tokenCandidates(mail, options, original.tokens), options.secret)
  return {
    kind: 'dsn',
    heuristic: false,
    recipients,
    originalEnvelopeId: field(perMessage, 'original-envelope-id'),
    reportingMta: typedValue(field(perMessage, 'reporting-mta')),
    returnPathToken: picked.token,
    returnPath: picked.returnPath,
    // Gmail adds X-Original-Message-ID to the per-message fields; In-Reply-To is the last resort.
    originalMessageId: original.messageId ?? cleanMessageId(field(perMessage, 'x-original-message-id')) ?? cleanMessageId(headerText(mail, 'in-reply-to')),
  }
}

const BOUNCE_SUBJECT =
  /undeliver|delivery (status )?notification|returned mail|failure notice|delivery fail|mail delivery (failed|subsystem)|non[- ]?delivery|could not be delivered|delivery has failed|mail system error|unable to deliver|delivery (warning|problem|failure)|user unknown|(mail|message) (was )?rejected|rejected (mail|message)|processing error/i
const AUTO_REPLY_SUBJECT = /^\s*(auto(matic)?[ -]?(reply|response|antwort)|out of (the )?office|abwesen|absence|vacation|r[ée]ponse automatique)/i
const DAEMON_LOCAL = /^(mailer-daemon|mailer_daemon|mail-daemon|mailerdaemon|postmaster|mail\.delivery\.system)$/i
const COPY_MARKER =
  /^[ \t]*-{2,}[ \t-]*(?:below this line is a copy of the message|(?:this is a )?copy of the (?:original )?message|(?:the )?original message|returned message|message headers? follows?|headers of the original message|start of returned message|unsent message|attachment is a copy)|^[ \t]*original message headers:|^[ \t]*(?:-{2,}[ \t]*)?(?:the )?original message (?:as received )?(?:is as )?follows|^[ \t]*your message reads \(in part\)|^[ \t]*(?:a copy of the original message below this line|the first \d+ lines of your original message follow)/im
const PERMANENT_TEXT =
  /permanent(ly)? (error|failure|fatal)|failed permanently|given up|was not delivered|has not been delivered|undeliverable|could not be delivered to the following|user unknown|unknown user|no such (user|mailbox|recipient)|does ?n[o']t (exist|have)|not found|could ?n[o']t be delivered|can ?n[o']t be delivered|cannot be delivered|delivery has failed|(unable|not able|were unable|was unable) to deliver|delivery (to the following recipients )?failed|failed addresses|did not reach the following|message not delivered|not known|no longer valid|invalid final delivery|mailbox (is )?(full|unavailable)|over quota|exceeding (their|its|the) quota|could not find a gateway|was aborted|been returned (to you )?because|was (automatically )?rejected|无法(发送|送达|投递)|(投递|发送)失败/i
const TEMPORARY_TEXT = /temporar(y|ily)|will (retry|continue|keep trying|try again)|still trying|delayed|not (yet )?been delivered yet|deferred/i
/**
 * "We will keep trying" wording: a delay warning even when it also says "could not be
 * delivered" (Symantec's gateway: "could not be delivered ... Delivery attempts will continue
 * to be made for 5 day(s)"), unless it also says the MTA gave up.
 */
const RETRYING_TEXT =
  /will (continue|keep) (to )?(try|trying|attempt)|will (retry|try again)|attempts will continue|still (trying|being retried)|has been (postponed|delayed)|will be retried|warning message only|advisory[- ]only|delivery (has been |is )?delayed|not (yet )?been delivered yet|warning: (message|delivery)/i
const GAVE_UP_TEXT =
  /given up|giving up|gave up|not going to try again|will not (be )?(retried|re-?tried|delivered)|permanent(ly)? (error|failure|fatal)|failed permanently/i
/**
 * A line that introduces the list of addresses that failed: "did not reach the following
 * recipient(s):" (Exchange 5.5/2000), "Unable to deliver message to the following
 * address(es)." (Yahoo, qmail-like), "The following addresses had permanent fatal errors"
 * (Sendmail), "Delivery to the following recipients failed." (Exchange 2003), "Failed
 * addresses follow:" ... Addresses after it are the failures; addresses elsewhere in the
 * notice (the original's To, a helpdesk, the sender) are not.
 */
const LIST_INTRO =
  /\b(following|these) (\w+ )?(recipients?|addresses|address(\(es\))?|users?|destinations?)\b|\bfailed (recipients?|addresses)\b|\bnot delivered to the following\b|\bto the following:|\bfollowing (had|have) (permanent|fatal)|unable to deliver your message to\b/i
/** Where a listed section ends: the transcript, the error detail, the copy of the message. */
const SECTION_END =
  /^[ \t]*[-=|]{3,}.*\b(transcript|error detail|message (text|log|header|body)|technical details|returned mail|original message)\b|^[ \t]*-{3,}[ \t]*$/i
const MAX_SECTION_LINES = 30
/** An address the notice says the message came from ("not accepting mail from x@y"): the sender, not a recipient. */
const SENDER_BEFORE = /\b(e-?mail|mail|messages?) from:?\s*<?$/i
const ADDRESS_RE = /[a-z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+/gi
const HEADER_LINE = /^(return-path|from|sender|reply-to|message-id|received|dkim-signature|list-[a-z-]+|references|in-reply-to|x-[a-z-]+)\s*:/i
const MAX_TEXT = 64 * 1024
const MAX_LINES = 2000
// Longer lines are not scanned for addresses: real notices have short lines, and a regex over a
// hostile megabyte line is where time would go.
const MAX_LINE = 1000
const WINDOW_LINES = 40

/** True when the message presents itself as a non-delivery notice (and is not an auto-reply). */
function looksLikeBounce(mail: ParsedMail, options: DsnOptions): boolean {
  const subject = headerText(mail, 'subject')
  if (AUTO_REPLY_SUBJECT.test(subject)) return false
  const from = extractAddress(headerText(mail, 'from'))
  const envelopeFrom = (options.envelopeFrom ?? '').replace(/[<>\s]/g, '')
  return (
    contentType(mail).params['report-type']?.toLowerCase() === 'delivery-status' ||
    mail.headers.has('x-failed-recipients') ||
    (from !== null && DAEMON_LOCAL.test(from.split('@')[0]!)) ||
    BOUNCE_SUBJECT.test(subject) ||
    (options.envelopeFrom !== undefined && envelopeFrom === '' && BOUNCE_SUBJECT.test(mail.text ?? ''))
  )
}

function findCode(lines: string[]): { status: string | null; code: number | null; line: string | null } {
  for (const l of lines) {
    const s = normaliseStatus(l)
    if (s && !s.startsWith('2.')) {
      const b = BASIC_RE.exec(l)
      return { status: s, code: b ? Number(b[1]) : null, line: l.trim() }
    }
  }
  for (const l of lines) {
    const b = BASIC_RE.exec(l)
    if (b) return { status: null, code: Number(b[1]), line: l.trim() }
  }
  return { status: null, code: null, line: null }
}

/** The first few non-empty lines from an address on (before `end`), joined: the prose diagnostic of a notice without codes. */
function contextOf(lines: string[], start: number, end = start + 10): string | null {
  const text = lines
    .slice(start, Math.min(end, start + 10))
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^because:?$/i.test(l))
    .slice(0, 4)
    .join(' ')
  return text === '' ? null : text.slice(0, MAX_DIAGNOSTIC)
}

/** The text of the notice: the plain-text body, else the HTML one as text (some MTAs send only HTML). */
function noticeText(mail: ParsedMail): string {
  if (mail.text && mail.text.trim() !== '') return mail.text
  return typeof mail.html === 'string' ? htmlToText(mail.html.slice(0, MAX_TEXT)) : ''
}

/**
 * The addresses of one line that may be recipients: lower-cased, without a trailing dot or
 * the quotes around them ('user@example.com'), and not the sender the notice names
 * ("not accepting mail from list@example.org").
 */
function addressesIn(line: string): string[] {
  const out: string[] = []
  for (const m of line.matchAll(ADDRESS_RE)) {
    if (SENDER_BEFORE.test(line.slice(0, m.index))) continue
    // X.400 addresses of old Exchange carry the SMTP address as a domain-defined attribute: "dda:SMTP=user@example.com".
    out.push(
      m[0]
        .toLowerCase()
        .replace(/\.$/, '')
        .replace(/^'+/, '')
        .replace(/^smtp=/, ''),
    )
  }
  return out
}

/**
 * The lines listing failed recipients: from each LIST_INTRO line to the end of its section (a
 * blank line after an address was seen followed by prose, a separator, the copy of the
 * message), at most MAX_SECTION_LINES. Returns the line numbers that belong to a list.
 */
function listedLines(lines: string[]): Set<number> {
  const listed = new Set<number>()
  for (let i = 0; i < lines.length; i++) {
    if (!LIST_INTRO.test(lines[i]!)) continue
    // The intro line itself may name the address ("unable to deliver your message to x@y for the following reason").
    listed.add(i)
    for (let j = i + 1; j < Math.min(lines.length, i + 1 + MAX_SECTION_LINES); j++) {
      if (SECTION_END.test(lines[j]!) || LIST_INTRO.test(lines[j]!)) break
      listed.add(j)
    }
  }
  return listed
}

/**
 * Guesses recipients and codes from the text of a bounce without a delivery-status part:
 * the failed addresses (X-Failed-Recipients when present, else the addresses listed after a
 * "following recipients" line, else addresses in the text that are not ours or the
 * reporter's), and for each the first enhanced status code (or SMTP code) in the lines after
 * it, else the wording (permanent, or "we will keep trying").
 */
export function heuristicDsn(mail: ParsedMail, options: DsnOptions = {}): DsnReport | null {
  if (!looksLikeBounce(mail, options)) return null
  const full = noticeText(mail).slice(0, MAX_TEXT)
  const marker = COPY_MARKER.exec(full)
  const text = marker ? full.slice(0, marker.index) : full
  const lines = text.split(/\r?\n/).slice(0, MAX_LINES)

  const ours = new Set<string>([
    ...extractAddresses(headerText(mail, 'to')),
    ...extractAddresses(headerText(mail, 'from')),
    ...(options.envelopeTo ? extractAddresses(options.envelopeTo) : []),
  ])
  const notOurs = (a: string) => !ours.has(a) && !DAEMON_LOCAL.test(a.split('@')[0]!) && !tokenFromAddress(a)
  const failedHeader = extractAddresses(headerText(mail, 'x-failed-recipients')).filter(notOurs)
  const listed = listedLines(lines)

  // First line on which each candidate address appears, and which of them are in a failed list.
  const firstLine = new Map<string, number>()
  const inList = new Set<string>()
  lines.forEach((l, i) => {
    // Header lines pasted from the original (its From, Return-Path, Received ...) name the sender, not a recipient.
    if (HEADER_LINE.test(l) || !l.includes('@') || l.length > MAX_LINE) return
    for (const a of addressesIn(l)) {
      if (!notOurs(a)) continue
      if (!firstLine.has(a) || (listed.has(i) && !inList.has(a))) firstLine.set(a, i)
      if (listed.has(i)) inList.add(a)
    }
  })
  // AOL lists bare screen names under its intro ("could not be delivered because ...:\n\tscreenname"): the reporter's domain completes them.
  if (inList.size === 0) {
    const domain = extractAddress(headerText(mail, 'from'))?.split('@')[1]
    for (const i of [...listed].sort((x, y) => x - y)) {
      const bare = /^[ \t]+([a-z0-9][a-z0-9._+-]{0,63})[ \t]*$/i.exec(lines[i]!)?.[1]
      if (!bare || !domain || LIST_INTRO.test(lines[i]!)) continue
      const a = `${bare}@${domain}`.toLowerCase()
      if (!notOurs(a) || firstLine.has(a)) continue
      firstLine.set(a, i)
      inList.add(a)
    }
  }
  // A notice with a list intro whose list names no address (Yale's directory: "userx  No matches") is not guessed from the addresses in its prose.
  const candidates = failedHeader.length > 0 ? failedHeader : inList.size > 0 || listed.size > 0 ? [...inList] : [...firstLine.keys()]
  const starts = candidates.map((a) => firstLine.get(a) ?? -1).filter((i) => i >= 0)
  const permanent = PERMANENT_TEXT.test(text) || inList.size > 0
  const temporary = TEMPORARY_TEXT.test(text)
  const retrying = RETRYING_TEXT.test(text) && !GAVE_UP_TEXT.test(text)

  const found: Array<{ address: string; status: string | null; code: number | null; line: string | null; listed: boolean }> = []
  for (const address of candidates.slice(0, MAX_RECIPIENTS)) {
    const start = firstLine.get(address)
    const isListed = inList.has(address) || failedHeader.length > 0
    let code = { status: null as string | null, code: null as number | null, line: null as string | null }
    let next = lines.length
    if (start !== undefined) {
      next = starts.filter((i) => i > start).sort((a, b) => a - b)[0] ?? lines.length
      code = findCode(lines.slice(start, Math.min(next, start + WINDOW_LINES)))
      // A listed address whose reason follows the whole list (Sendmail's transcript, a shared "for the following reason").
      if (!code.status && !code.code && isListed) {
        const after = Math.max(next, ...[...listed].filter((i) => i >= start && i < start + MAX_SECTION_LINES))
        code = findCode(lines.slice(after, after + WINDOW_LINES).filter((l) => addressesIn(l).every((a) => a === address || !inList.has(a))))
      }
    }
    // One recipient: the code may sit anywhere in the notice (Exchange puts it in a later section).
    if (!code.status && !code.code && candidates.length === 1) code = findCode(lines)
    // No code at all (Domino, GroupWise, KDDI, Exim's "Unrouteable address"): the words next to
    // the address are the diagnostic, so the reply rules can still read "user unknown" from them.
    if (!code.line && start !== undefined) code.line = contextOf(lines, start, next)
    found.push({ address, ...code, listed: isListed })
  }
  // When some address has a code, the others are mentions (a helpdesk, a forward target), not failures.
  const anyCode = found.some((f) => f.status || f.code)
  const recipients: DsnRecipient[] = []
  for (const f of found) {
    let status = f.status ?? (f.code ? `${String(f.code)[0]}.0.0` : null)
    if (!status) {
      if (anyCode && !f.listed) continue
      // Wording only: "we will keep trying" is a delay warning, whatever else the notice says.
      if (retrying) status = '4.0.0'
      else if (permanent) status = '5.0.0'
      else if (temporary) status = '4.0.0'
      else continue
    }
    // A 4.x.x with "I've given up" wording is a failure after retries (soft); a 4.x.x alone is a delay.
    const action: DsnAction = status.startsWith('5.') || (permanent && !temporary && !retrying) ? 'failed' : 'delayed'
    const r = buildRecipient({ originalRecipient: null, finalRecipient: f.address, action, status, diagnostic: f.line, remoteMta: null, smtpCode: f.code })
    if (r) recipients.push(r)
  }
  if (recipients.length === 0) return null

  // The original message: a message/rfc822 part, or the headers pasted after the copy marker.
  let original = originalOf(mail)
  if (!original.messageId && original.tokens.length === 0 && marker) {
    const after = full.slice(marker.index).replace(/^[^\n]*\n\s*/, '')
    const o = readOriginal(after)
    original = { messageId: o.messageId, tokens: tokensInFields(o.fields) }
  }
  const picked = pickToken(tokenCandidates(mail, options, original.tokens), options.secret)
  return {
    kind: 'dsn',
    heuristic: true,
    recipients,
    originalEnvelopeId: null,
    reportingMta: null,
    returnPathToken: picked.token,
    returnPath: picked.returnPath,
    originalMessageId: original.messageId ?? cleanMessageId(headerText(mail, 'in-reply-to')),
  }
}

/** Reads a parsed message as a DSN: the delivery-status part when there is one, else the heuristics. */
export function dsnFromMail(mail: ParsedMail, options: DsnOptions = {}): DsnReport | null {
  return standardDsn(mail, options) ?? heuristicDsn(mail, options)
}

/** Parses raw bytes as a DSN; null when the message is not one. Throws only on I/O-level parser errors (classifyInbound never throws). */
export async function parseDsn(raw: Buffer, options: DsnOptions = {}): Promise<DsnReport | null> {
  return dsnFromMail(await parseMail(raw), options)
}
