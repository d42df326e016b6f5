/**
 * What an SMTP reply means: one rules table from reply code, enhanced status code and text
 * to sent, deferred or bounced, with whether the address should be suppressed (a hard bounce)
 * and the name of the rule that decided.
 *
 * It lives in lib/ because two engines that must not import each other read it: the outbound
 * engine (src/delivery/classify.ts, for the replies of its own SMTP sessions) and the inbound
 * report readers (src/smtp/reports/dsn.ts, for the same replies quoted in a bounce that comes
 * back later). One table means a late bounce is judged exactly as the same reply during the
 * session would be: only a bad address suppresses, a policy block (5.7.x) never does.
 *
 * Basis: RFC 5321 section 4.2.1 (2yz done, 4yz transient, 5yz permanent) and the enhanced
 * status codes of RFC 3463 (class.subject.detail), which say *why*: X.1.1 bad mailbox,
 * X.2.2 mailbox full, X.7.x security or policy. The first matching rule wins, so the table
 * is read top to bottom. Failures below the reply level (no reply at all) are the outbound
 * engine's own rules, in front of these.
 */

export type Outcome = 'sent' | 'deferred' | 'bounced'

/** An SMTP reply split into its parts (parseReply), or built from a DSN's status fields. */
export interface SmtpReply {
  /** The basic reply code (RFC 5321 4.2), or null when no reply was received. */
  code: number | null
  /** The enhanced status code (RFC 3463), e.g. '5.1.1', or null. */
  enhanced: string | null
  /** The reply text (without the codes) or the error description. */
  text: string
}

export interface Classification {
  outcome: Outcome
  suppress: boolean
  rule: string
}

export interface ReplyRule {
  name: string
  /** Matches the reply class: the first digit of the basic code, or of the enhanced code when there is no basic code. */
  replyClass?: 2 | 3 | 4 | 5
  /** Matches one exact basic code. */
  code?: number
  /** Matches when the enhanced code starts with one of these prefixes (whole components). */
  enhanced?: string[]
  /** Matches when there is no enhanced code, or only the undefined X.0.0. */
  noEnhanced?: boolean
  /** Matches the reply text. */
  text?: RegExp
  outcome: Outcome
  suppress: boolean
  note: string
}

/** Text of reputation, blocklist and policy rejections: the sender is refused, not the address. */
const POLICY_TEXT =
  /\b(spamhaus|spamcop|barracuda|sorbs|black ?list(ed)?|block ?list(ed)?|deny ?list(ed)?|blocked|reputation|rbl|dnsbl|policy|spam|dmarc|spf|dkim|rate ?limit(ed)?|too many)\b/i

/** Text of "no such mailbox" replies from servers that send no enhanced code. */
const UNKNOWN_USER_TEXT =
  /\b(user|mailbox|recipient|address|account)\b[^.;]{0,40}\b(unknown|not found|does ?n[o']t exist|not exist|no longer exists?|invalid|not valid)\b|\bno such (user|mailbox|recipient|address|account|person)\b|\bunknown (user|recipient|mailbox|address|local[- ]part)\b|\binvalid (recipient|mailbox|address)\b|\bdo(?:es)?(?: ?n[o']t| not) have an? [\w.-]+ account\b/i

/** The rules for replies, in order; the last one ('unknown') matches anything. */
export const REPLY_RULES: readonly ReplyRule[] = [
  // 2yz: the server took responsibility for the message (RFC 5321 6.1).
  { name: 'accepted', replyClass: 2, outcome: 'sent', suppress: false, note: '2yz completion.' },

  // 4yz: transient, retried with backoff until the maximum message age.
  { name: 'service-unavailable', code: 421, outcome: 'deferred', suppress: false, note: '421: the server is closing the channel (RFC 5321 3.8).' },
  { name: 'greylisted', replyClass: 4, text: /grey ?list|gray ?list/i, outcome: 'deferred', suppress: false, note: 'Greylisting: the retry will be accepted.' },
  { name: 'mailbox-full-temporary', replyClass: 4, enhanced: ['4.2.2'], outcome: 'deferred', suppress: false, note: 'Over quota, transient.' },
  { name: 'temporary', replyClass: 4, outcome: 'deferred', suppress: false, note: '4yz transient negative completion.' },

  // 5yz: permanent. Only a bad address suppresses; a refusal of the sender never does.
  {
    name: 'null-mx',
    replyClass: 5,
    enhanced: ['5.1.10'],
    outcome: 'bounced',
    suppress: true,
    note: 'RFC 7505 3.2 / RFC 7504: the domain declares that it accepts no mail.',
  },
  {
    name: 'policy',
    replyClass: 5,
    enhanced: ['5.7'],
    outcome: 'bounced',
    suppress: false,
    note: 'X.7.x security or policy (RFC 3463 3.8): blocklists, reputation, authentication; the address may be fine.',
  },
  {
    name: 'policy',
    replyClass: 5,
    text: POLICY_TEXT,
    outcome: 'bounced',
    suppress: false,
    note: 'Reputation/blocklist/spam wording: checked before the mailbox codes because some servers send 5.1.1 for blocks, and suppressing a good address loses mail.',
  },
  { name: 'bad-mailbox', replyClass: 5, enhanced: ['5.1.1'], outcome: 'bounced', suppress: true, note: 'X.1.1 bad destination mailbox address.' },
  {
    name: 'bad-domain',
    replyClass: 5,
    enhanced: ['5.1.2'],
    outcome: 'bounced',
    suppress: true,
    note: 'X.1.2 bad destination system (no such domain, no mail records).',
  },
  { name: 'bad-syntax', replyClass: 5, enhanced: ['5.1.3'], outcome: 'bounced', suppress: true, note: 'X.1.3 bad destination mailbox address syntax.' },
  { name: 'mailbox-moved', replyClass: 5, enhanced: ['5.1.6'], outcome: 'bounced', suppress: true, note: 'X.1.6 mailbox has moved, no forwarding address.' },
  {
    name: 'mailbox-full',
    replyClass: 5,
    enhanced: ['5.2.2'],
    outcome: 'bounced',
    suppress: false,
    note: 'X.2.2 with a 5yz: the server says permanent (RFC 5321 4.2.1), so no retry; but the mailbox exists and quotas clear, so no suppression.',
  },
  {
    name: 'mailbox-disabled',
    replyClass: 5,
    enhanced: ['5.2.1'],
    outcome: 'bounced',
    suppress: false,
    note: 'X.2.1 mailbox disabled: RFC 3463 allows it to be temporary, so not treated as a bad address.',
  },
  { name: 'message-too-large', replyClass: 5, enhanced: ['5.2.3', '5.3.4'], outcome: 'bounced', suppress: false, note: 'The message, not the address.' },
  { name: 'content', replyClass: 5, enhanced: ['5.6'], outcome: 'bounced', suppress: false, note: 'X.6.x media/content refused.' },
  {
    name: 'unknown-user',
    replyClass: 5,
    noEnhanced: true,
    text: UNKNOWN_USER_TEXT,
    outcome: 'bounced',
    suppress: true,
    note: 'No enhanced code but the text says the mailbox does not exist.',
  },
  { name: 'permanent', replyClass: 5, outcome: 'bounced', suppress: false, note: 'Other 5yz: permanent for this message, the address is not known to be bad.' },

  // Anything else (a 3yz where a completion was due, no code at all) is not a decision.
  { name: 'unknown', outcome: 'deferred', suppress: false, note: 'Unrecognised; retried rather than lost.' },
]

function classOf(input: SmtpReply): number | null {
  if (input.code !== null) return Math.floor(input.code / 100)
  if (input.enhanced) return Number(input.enhanced[0])
  return null
}

function enhancedMatches(enhanced: string | null, prefixes: string[]): boolean {
  if (!enhanced) return false
  return prefixes.some((p) => enhanced === p || enhanced.startsWith(p + '.'))
}

/** Whether a reply rule matches a reply. */
export function replyMatches(rule: ReplyRule, input: SmtpReply): boolean {
  if (rule.replyClass !== undefined && classOf(input) !== rule.replyClass) return false
  if (rule.code !== undefined && input.code !== rule.code) return false
  if (rule.enhanced && !enhancedMatches(input.enhanced, rule.enhanced)) return false
  if (rule.noEnhanced && input.enhanced && !/^\d\.0\.0$/.test(input.enhanced)) return false
  if (rule.text && !rule.text.test(input.text)) return false
  return true
}

/** Classifies one reply with the first matching rule of REPLY_RULES. */
export function classifyReply(input: SmtpReply): Classification {
  const rule = REPLY_RULES.find((r) => replyMatches(r, input)) ?? REPLY_RULES[REPLY_RULES.length - 1]!
  return { outcome: rule.outcome, suppress: rule.suppress, rule: rule.name }
}

/**
 * Splits an SMTP reply ("550-5.1.1 first\r\n550 5.1.1 second" or "250 OK") into the basic
 * code, the enhanced code (RFC 3463 section 2, repeated on each line per RFC 2034) and the
 * text of all lines.
 */
export function parseReply(response: string): SmtpReply {
  const lines = response.split(/\r?\n/).filter((l) => l.trim() !== '')
  const first = /^([2-5]\d\d)[ -]?(?:([245])\.(\d{1,3})\.(\d{1,3})\b)?/.exec(lines[0] ?? '')
  if (!first) return { code: null, enhanced: null, text: response.trim() }
  const code = Number(first[1])
  // An enhanced code must have the same class as the basic code (RFC 3463 section 3.1 / RFC 2034).
  const enhanced = first[2] && first[2] === first[1]![0] ? `${first[2]}.${Number(first[3])}.${Number(first[4])}` : null
  const text = lines.map((l) => l.replace(/^\d{3}[ -]?(?:\d\.\d{1,3}\.\d{1,3}\s*)?/, '').trim()).join(' ')
  return { code, enhanced, text }
}
