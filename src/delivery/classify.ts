/**
 * Delivery outcomes as values: every SMTP reply, connection failure and DNS failure of an
 * outbound session goes through one rules table and comes out as sent, deferred or bounced,
 * with whether the address should be suppressed (a hard bounce) and the name of the rule
 * that decided.
 *
 * The table is the failures below the reply level (no usable reply: nothing was decided by
 * the recipient's server) followed by the reply rules of src/lib/smtp-replies.ts, which the
 * inbound DSN reader shares. The first matching rule wins, so it is read top to bottom.
 */
import { decided, REPLY_RULES, replyMatches, type Classification, type ReplyRule, type SmtpReply } from '../lib/smtp-replies'

/** What went wrong below the SMTP reply level, when no usable reply was received. */
export type FailureKind =
  | 'connect' // refused, unreachable, reset before the greeting
  | 'timeout' // connection, greeting or command timed out
  | 'tls' // TLS handshake or required STARTTLS failed
  | 'disconnect' // the connection dropped in the middle of a session
  | 'dns' // a temporary DNS failure (SERVFAIL, timeout)
  | 'protocol' // a reply that does not parse or does not belong
  | 'session' // the server refused the session (greeting, EHLO, AUTH): another host or later may work
  | 'local' // we refused to send (invalid envelope); not the recipient's fault

export interface ReplyInput extends SmtpReply {
  failure?: FailureKind
}

export interface Rule extends ReplyRule {
  /** Matches when the failure kind is one of these. */
  failure?: FailureKind[]
}

/** A failure below the reply level never suppresses the address: the recipient's server decided nothing about it. */
function onFailure(name: string, failure: FailureKind, outcome: Rule['outcome'], note: string): Rule {
  return { name, failure: [failure], outcome, suppress: false, note }
}

const FAILURE_RULES: readonly Rule[] = [
  // Below the reply level: nothing was decided by the recipient's server, so try again later.
  onFailure('connection', 'connect', 'deferred', 'Could not connect (refused, unreachable, reset).'),
  onFailure('timeout', 'timeout', 'deferred', 'No answer in time (RFC 5321 4.5.3.2 timeouts).'),
  onFailure('tls', 'tls', 'deferred', 'TLS failed where it was required (relay), or after the plaintext retry.'),
  onFailure('disconnect', 'disconnect', 'deferred', 'Connection lost during the transaction; RFC 5321 6.1: no reply to the final dot is not a delivery.'),
  onFailure('dns-temporary', 'dns', 'deferred', 'SERVFAIL or timeout looking up MX/A records.'),
  onFailure('protocol', 'protocol', 'deferred', 'Unexpected or malformed reply.'),
  onFailure(
    'session-refused',
    'session',
    'deferred',
    'Greeting, EHLO or relay AUTH refused: a property of the session, not of the recipient (as Postfix smtp_skip_5xx_greeting).',
  ),
  onFailure('local', 'local', 'bounced', 'Refused before sending (invalid envelope or message too large for the server).'),
]

export const RULES: readonly Rule[] = [...FAILURE_RULES, ...REPLY_RULES]

function matches(rule: Rule, input: ReplyInput): boolean {
  if (rule.failure) return input.failure !== undefined && rule.failure.includes(input.failure)
  return replyMatches(rule, input)
}

/** Classifies one reply or failure with the first matching rule of RULES. */
export function classify(input: ReplyInput): Classification {
  const rule = RULES.find((r) => matches(r, input)) ?? RULES[RULES.length - 1]!
  // Below the reply level the remote server said nothing about the address or the message.
  if (rule.failure) return { outcome: rule.outcome, suppress: false, rule: rule.name, reason: rule.outcome === 'bounced' ? 'other' : null }
  return decided(rule, input)
}
