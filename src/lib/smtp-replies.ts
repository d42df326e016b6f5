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
  /** Why, in one word of BOUNCE_REASONS (null for a reply that is not a failure). */
  reason: BounceReason | null
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
  /** Matches when the enhanced code says nothing specific about the address (see vague()). */
  vagueEnhanced?: boolean
  /** Matches the reply text. */
  text?: RegExp
  outcome: Outcome
  suppress: boolean
  note: string
}

/** Text of reputation, blocklist, filter and policy rejections: the sender or the content is refused, not the address. */
const POLICY_TEXT =
  /\b(spamhaus|spamcop|barracuda|sorbs|black ?list(ed)?|block ?list(ed)?|deny ?list(ed)?|blocked|reputation|rbl|dnsbl|policy|spam|unsolicited|dmarc|spf|dkim|rate ?limit(ed)?|too many|access denied|filter(ed|ing)?|virus|malware|not authori[sz]ed)\b/i

/** Text of "no such mailbox" replies from servers that send no enhanced code. */
const UNKNOWN_USER_TEXT =
  /\b(user|mailbox|recipient|address|account)\b[^.;]{0,40}\b(unknown|not found|does ?n[o']t exist|not exist|no longer exists?|invalid|not valid|no longer valid|not recogni[sz]ed|not known)\b|\bno such (user|mailbox|recipient|address|account|person)\b|\bunknown (user|recipient|mailbox|address|local[- ]part)\b|\binvalid (recipient|mailbox|address)\b|\bdo(?:es)?(?: ?n[o']t| not) have an? [\w.-]+ account\b|recip(ient)?notfound|no mailbox here by that name|not listed in (the )?(domino |public )?(directory|name and address book)|addressee unknown|user doesn'?t exist|does not exist here|invalid (final delivery )?userid/i

/**
 * Provider wordings of "no such user" that also contain policy words, so they must be
 * matched before the policy text: QQ Mail answers a missing mailbox with
 * "550 Mailbox not found or access denied".
 */
const UNKNOWN_USER_FIXED = /mailbox not found or access denied/i

/**
 * "The domain does not exist" wordings that travel under codes other than X.1.2: Exchange
 * Online sends `550 5.4.4 SMTPSEND.DNS.NonExistentDomain; nonexistent domain` and
 * `550 5.4.310 DNS domain ... does not exist [Message=InfoDomainNonexistent]` (Microsoft,
 * "Email non-delivery reports and SMTP errors in Exchange Online"). RFC 3463 X.4.4 itself is
 * only "unable to route" (also used for transient directory trouble), so the code alone
 * never suppresses: the text must say the domain does not exist.
 */
const NONEXISTENT_DOMAIN_TEXT =
  /nonexistentdomain|non-?existent domain|domain (\S+ )?(does ?n[o']t exist|not exist|not found)|host (or domain name |\S+ )?(not found|unknown)|unrouteable (mail )?(domain|address)|no such domain|unknown host\b|name service error|nxdomain|domain (name )?not found/i

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
    name: 'unknown-user',
    replyClass: 5,
    vagueEnhanced: true,
    text: UNKNOWN_USER_FIXED,
    outcome: 'bounced',
    suppress: true,
    note: 'A provider\'s fixed "no such user" reply that also names a policy word (QQ Mail).',
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
    enhanced: ['5.4.4', '5.4.310'],
    text: NONEXISTENT_DOMAIN_TEXT,
    outcome: 'bounced',
    suppress: true,
    note: 'Exchange Online: 5.4.4 SMTPSEND.DNS.NonExistentDomain and 5.4.310 "DNS domain does not exist"; only with that wording (X.4.4 alone is "unable to route").',
  },
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
    vagueEnhanced: true,
    text: UNKNOWN_USER_TEXT,
    outcome: 'bounced',
    suppress: true,
    note: 'No enhanced code, or one that says nothing specific (X.0.x, X.1.0, Exchange 5.1.351), but the text says the mailbox does not exist.',
  },
  {
    name: 'bad-domain',
    replyClass: 5,
    vagueEnhanced: true,
    text: NONEXISTENT_DOMAIN_TEXT,
    outcome: 'bounced',
    suppress: true,
    note: 'No specific enhanced code but the text says the domain does not exist (old Sendmail "Host unknown", Exim "Unrouteable address").',
  },
  { name: 'permanent', replyClass: 5, outcome: 'bounced', suppress: false, note: 'Other 5yz: permanent for this message, the address is not known to be bad.' },

  // Anything else (a 3yz where a completion was due, no code at all) is not a decision.
  { name: 'unknown', outcome: 'deferred', suppress: false, note: 'Unrecognised; retried rather than lost.' },
]

/**
 * Enhanced codes that do not say what is wrong with the address, so the text decides:
 * X.0.x (other/undefined, RFC 3463 3.2; includes vendor details such as 5.0.910), the
 * "other or undefined" detail of the address, mailbox, mail system and routing subjects
 * (X.1.0, X.2.0, X.3.0, X.4.0: RFC 3463 3.2-3.5; Sendmail answers an unknown virtual user
 * with "553 5.3.0 ... Addressee unknown"), X.5.x (protocol) and Exchange's 5.1.351, which wraps whatever the
 * remote server said ("Remote server returned ...": an unknown user as often as a filter).
 */
function vague(enhanced: string | null): boolean {
  return enhanced === null || /^\d\.(0\.\d+|[1-4]\.0|1\.351|5\.\d+)$/.test(enhanced)
}

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
  if (rule.vagueEnhanced && !vague(input.enhanced)) return false
  if (rule.text && !rule.text.test(input.text)) return false
  return true
}

/** Classifies one reply with the first matching rule of REPLY_RULES, and names its reason. */
export function classifyReply(input: SmtpReply): Classification {
  const rule = REPLY_RULES.find((r) => replyMatches(r, input)) ?? REPLY_RULES[REPLY_RULES.length - 1]!
  return decided(rule, input)
}

/**
 * The classification of a reply once its rule is chosen. Suppression needs both the rule
 * and the reason to say "dead address": two readings must agree before an address is lost.
 */
export function decided(rule: Pick<ReplyRule, 'outcome' | 'suppress' | 'name'>, input: SmtpReply): Classification {
  const reason = rule.outcome === 'sent' || rule.name === 'unknown' ? null : replyReason(input)
  return { outcome: rule.outcome, suppress: rule.suppress && reason !== null && DEAD_REASONS.has(reason), rule: rule.name, reason }
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

/**
 * Why a message was not delivered, as a closed list (docs/api.md "Bounce reasons"). The
 * reason is about the reply, the suppression decision about the address: only
 * user_unknown and host_unknown mean the address is dead (DEAD_REASONS).
 */
export const BOUNCE_REASONS = [
  'user_unknown',
  'host_unknown',
  'mailbox_full',
  'policy',
  'spam_block',
  'rate_limit',
  'expired',
  'auth_failure',
  'message_too_large',
  'relay_denied',
  'mailbox_disabled',
  'other',
] as const
export type BounceReason = (typeof BOUNCE_REASONS)[number]

/** The reasons that say the address itself is dead (the only ones that may suppress). */
export const DEAD_REASONS: ReadonlySet<BounceReason> = new Set<BounceReason>(['user_unknown', 'host_unknown'])

interface ReasonRule {
  reason: BounceReason
  /** Enhanced-code prefixes (whole components), any class. */
  enhanced?: string[]
  text?: RegExp
}

/**
 * Reasons, first match wins. Wording that names a blocklist, authentication or a rate wins
 * over the code, because servers send X.1.1 or X.0.0 for blocks too (a block read as an
 * unknown user loses a living address); then the specific codes of RFC 3463, RFC 7372 and
 * the big providers; then the wording for replies without a useful code.
 */
const REASON_RULES: readonly ReasonRule[] = [
  { reason: 'user_unknown', text: UNKNOWN_USER_FIXED },
  // Greylisting (a deliberate first 4yz) says nothing about the address or the sender's standing.
  { reason: 'other', text: /gr[ae]y ?list/i },
  // Gmail's 4.7.28 names spam too, but it is a rate decision: retried, and it clears.
  { reason: 'rate_limit', enhanced: ['4.7.28', '5.7.28'] },
  // Authentication (RFC 7372: X.7.20-X.7.26 DKIM/SPF/reverse DNS/multiple; Gmail sends 5.7.26 for DMARC).
  {
    reason: 'auth_failure',
    enhanced: ['5.7.20', '5.7.21', '5.7.22', '5.7.23', '5.7.24', '5.7.25', '5.7.26', '4.7.20', '4.7.23', '4.7.24', '4.7.25', '4.7.26'],
  },
  {
    reason: 'auth_failure',
    text: /\b(dmarc|spf|dkim)\b|unauthenticated (e-?mail|sender)|sender authentication|authentication (failed|failure)|reverse dns|ptr record|\bptr\b/i,
  },
  // Blocklists and reputation.
  {
    reason: 'spam_block',
    text: /spamhaus|spamcop|barracuda|sorbs|\b(rbl|dnsbl)\b|black ?list|block ?list|deny ?list|blocked using|(?<!not )listed (at|on|in|by)|\bbanned\b|reputation|unsolicited|\b(ip|ip address)\b[^.;]{0,40}\bnot authori[sz]ed|\(bl\)|\bspam\b|junk mail|bulk mail|client host \[[^\]]*\] blocked|ip (address )?(is )?blocked|\bblocked\b.{0,40}\b(ip|host|sender|address)/i,
  },
  // Too much, too fast (Gmail 4.2.1 "receiving mail at a rate", Yahoo's TSS04 deferrals).
  {
    reason: 'rate_limit',
    text: /rate ?limit|too many (messages|connections|recipients|concurrent)|receiving mail (at a rate|too quickly)|unusual rate|try again later.{0,40}\b(rate|volume)|unexpected volume|\bTSS?0\d\b|throttl/i,
  },
  // The message gave up waiting (X.4.7 delivery time expired, RFC 3463 3.5; qmail and Exim wording).
  { reason: 'expired', enhanced: ['4.4.7', '5.4.7'] },
  {
    reason: 'expired',
    text: /retry time(out)? (not reached|exceeded)|message expired|expired in queue|delivery time expired|too long in (the )?queue|been in the queue too long|could not be delivered within|message timeout|retry limit|not going to try again/i,
  },
  // Size (X.2.3 message length exceeds administrative limit, X.3.4 message too big for system).
  { reason: 'message_too_large', enhanced: ['5.2.3', '5.3.4', '4.3.4'] },
  {
    reason: 'message_too_large',
    text: /message (size )?(is )?too (big|large)|exceeds? (the )?(maximum )?(message )?size|size (limit|exceeds)|message length exceeds/i,
  },
  // Over quota (X.2.2).
  { reason: 'mailbox_full', enhanced: ['4.2.2', '5.2.2'] },
  {
    reason: 'mailbox_full',
    text: /over ?quota|quota (exceeded|full)|mailbox (is )?full|mailbox (has )?exceeded|full mailbox|(mail ?file|inbox|mailbox) is full|over (its |the )?(size |storage |disk )?quota|insufficient (disk )?(space|storage)|storage (space )?(is )?full|out of storage|mailfolder is full/i,
  },
  // Relay refused: the server is not (or no longer) the destination's MX; the address may be fine.
  {
    reason: 'relay_denied',
    text: /relay(ing)? (access )?(denied|not permitted|prohibited|not allowed)|not permitted to relay|unable to relay|not in my list of allowed rcpthosts|isn't in my list of allowed rcpthosts|we do not relay|relay not permitted/i,
  },
  // Disabled, suspended or inactive accounts (X.2.1: RFC 3463 allows it to be temporary).
  { reason: 'mailbox_disabled', enhanced: ['5.2.1', '4.2.1'] },
  {
    reason: 'mailbox_disabled',
    text: /\b(account|mailbox|user)\b[^.;]{0,40}\b(disabled|suspended|inactive|deactivated|locked|frozen|expired)\b|\binactive (e-?mail )?(address|account|mailbox)|is disabled|not active/i,
  },
  // Security or policy (X.7.x, RFC 3463 3.8) and media/content (X.6.x) other than the above:
  // the reply rules never suppress under these codes, so neither does the reason.
  { reason: 'policy', enhanced: ['5.7', '4.7', '5.6', '4.6'] },
  // Filters and access rules name the sender or the content even under an X.1.1 code.
  { reason: 'policy', text: /access denied|\bfilter(ed|ing)?\b|content rejected|\bvirus\b|malware|not authori[sz]ed/i },
  // The address does not exist.
  { reason: 'host_unknown', enhanced: ['5.1.2', '5.1.10', '4.1.2'], text: /^(?![\s\S]*(recip(ient)?notfound|recipient not found))/i },
  { reason: 'user_unknown', enhanced: ['5.1.1', '5.1.3', '5.1.6', '5.1.10', '4.1.1'] },
  { reason: 'host_unknown', enhanced: ['5.4.4', '5.4.310'], text: NONEXISTENT_DOMAIN_TEXT },
  { reason: 'user_unknown', text: UNKNOWN_USER_TEXT },
  { reason: 'host_unknown', text: NONEXISTENT_DOMAIN_TEXT },
  // Policy, filters and content (vendor filter codes such as 5.0.910 are read by their words).
  { reason: 'policy', text: /policy|filter|access denied|content|virus|malware|not authori[sz]ed|prohibited|refused|not accepted|rejected/i },
]

function reasonMatches(rule: ReasonRule, input: SmtpReply): boolean {
  if (rule.enhanced && !enhancedMatches(input.enhanced, rule.enhanced)) return false
  if (rule.text && !rule.text.test(input.text)) return false
  return true
}

/** The reason for a failed or deferred reply, from its enhanced code and text ('other' when nothing says why). */
export function replyReason(input: SmtpReply): BounceReason {
  return REASON_RULES.find((r) => reasonMatches(r, input))?.reason ?? 'other'
}
