/**
 * The envelope sender (RFC 5321 MAIL FROM, the reverse-path) of the engine's transactions.
 *
 * Mail of a verified sending domain leaves with a signed return path
 * `bounces+<token>@<return path host>`: DSNs go to the reverse-path (RFC 3464, RFC 5321
 * section 4.5.5), so a bounce proves which message, and for a one-recipient transaction which
 * recipient, it is about. The token codec is src/lib/return-path-token.ts, which the inbound
 * side verifies with. Other mail keeps the sender's own address.
 */
import { makeReturnPathToken, RETURN_PATH_PREFIX } from '../lib/return-path-token'

/** The MAIL FROM address for one recipient of one message: `bounces+<token>@<host>`. */
export function returnPathAddress(secret: Buffer, messageId: string, recipientId: number, host: string): string {
  return `${RETURN_PATH_PREFIX}${makeReturnPathToken(secret, messageId, recipientId)}@${host.toLowerCase()}`
}

/**
 * MAIL FROM for one transaction of a message: the signed return path when the message's
 * domain is verified (naming the recipient row when the transaction has one recipient, else
 * row 0: the message only), else the message's own sender.
 */
export function envelopeSender(
  secret: Buffer,
  messageId: string,
  recipientIds: number[],
  domain: { return_path_host: string } | null,
  mailFrom: string,
): string {
  if (!domain) return mailFrom
  return returnPathAddress(secret, messageId, recipientIds.length === 1 ? recipientIds[0]! : 0, domain.return_path_host)
}
