/**
 * Which SMTP replies ask the sender to slow down, and which say its IP is blocked: the
 * traffic shaper's rules table (src/delivery/shaping.ts), kept beside the outcome rules of
 * smtp-replies.ts and read the same way (first match wins). These decide only the pace of the
 * (provider group, source IP) pair; whether the recipient is deferred or bounced stays the
 * outcome table's decision.
 *
 * Basis: RFC 3463 X.7.x (security or policy status), the rate-limit texts the big providers
 * document (Gmail 4.7.28 / 4.7.0 "unusual rate", Microsoft S3150 / S775 and 4.7.500-699,
 * Yahoo TSS04 / TS01-03, "too many connections"), and blocklist rejections (Spamhaus, Spamcop,
 * Barracuda, "listed", Microsoft S3140 / 5.7.606-649). Fixtures: test/fixtures/slowdown-replies.json.
 */
import type { SmtpReply } from './smtp-replies'

export type SlowdownAction = 'throttle' | 'block' | 'none'

export interface SlowdownRule {
  name: string
  action: SlowdownAction
  /** Matches one exact basic code. */
  code?: number
  /** Matches the reply class (first digit of the code, or of the enhanced code without a code). */
  replyClass?: 4 | 5
  /** Matches when the enhanced code starts with one of these prefixes. */
  enhanced?: string[]
  text?: RegExp
  note: string
}

const BLOCKLIST_TEXT =
  /\b(spamhaus|spamcop|barracuda|sorbs|uceprotect|invaluement|s3140|(black|block|deny)[ -]?list(ed)?|listed (on|in|at|by)|rbl|dnsbl|blocked using|banned sending ip|on our block list)\b|5\.7\.(6[0-4]\d)/i

const RATE_TEXT =
  /\b(rate[ -]?limit(ed|ing)?|too many (messages|connections|recipients|concurrent)|unusual rate|temporarily (deferred|rate limited)|try (again )?later.*(rate|volume)|exceeded .*(rate|limit)|over (the )?(rate|limit)|throttl(ed|ing)|tss0[0-9]|ts0[1-3]|s3150|s775|4\.7\.28|4\.7\.5\d\d|4\.7\.6\d\d|connection limit|slow down)\b/i

/** The rules, in order. A block needs a permanent reply or blocklist wording; a throttle a transient one. */
export const SLOWDOWN_RULES: readonly SlowdownRule[] = [
  { name: 'greylisted', action: 'none', replyClass: 4, text: /grey ?list|gray ?list/i, note: 'Greylisting asks for a retry, not a slower pace.' },
  { name: 'listed-block', action: 'block', text: BLOCKLIST_TEXT, note: 'The source IP is on a blocklist the receiver uses.' },
  { name: 'rate-text', action: 'throttle', replyClass: 4, text: RATE_TEXT, note: 'A transient reply naming a rate or volume limit.' },
  {
    name: 'rate-text-permanent',
    action: 'throttle',
    replyClass: 5,
    text: RATE_TEXT,
    note: 'Some providers answer rate limits with 5yz (Yahoo TSS04 variants); pace down without suspending.',
  },
  { name: 'policy-4.7', action: 'throttle', replyClass: 4, enhanced: ['4.7'], note: 'A transient policy refusal (4.7.x): reputation-based deferral.' },
  {
    name: '421-unavailable',
    action: 'throttle',
    code: 421,
    text: /\b(too many|temporarily|deferred|busy|try again later)\b/i,
    note: '421/451 "try later" texts: the receiver sheds load.',
  },
]

function replyClassOf(r: SmtpReply): number | null {
  if (r.code !== null) return Math.floor(r.code / 100)
  if (r.enhanced) return Number(r.enhanced[0])
  return null
}

/** The rule matching a reply (the enhanced code and the whole text are searched), or null for an ordinary reply; a rule with action 'none' means "leave the pace alone". */
export function matchSlowdown(reply: SmtpReply): SlowdownRule | null {
  const cls = replyClassOf(reply)
  if (cls !== 4 && cls !== 5) return null
  const haystack = `${reply.enhanced ?? ''} ${reply.text}`
  for (const rule of SLOWDOWN_RULES) {
    if (rule.replyClass !== undefined && rule.replyClass !== cls) continue
    if (rule.code !== undefined && rule.code !== reply.code) continue
    if (rule.enhanced && !(reply.enhanced && rule.enhanced.some((p) => reply.enhanced === p || reply.enhanced!.startsWith(p + '.')))) continue
    if (rule.text && !rule.text.test(haystack)) continue
    return rule
  }
  return null
}
