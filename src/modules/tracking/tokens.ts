import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { serverSecret } from '../system/secrets'

/**
 * The tokens in tracking and unsubscribe links: `<payload>.<mac>`, both base64url. The payload
 * carries what the link is about (the message, and the target URL of a click or the address
 * of an unsubscribe), so following a link needs no stored link table, and the MAC
 * (HMAC-SHA256 under a server secret, truncated to 128 bits) makes it unforgeable: nobody can
 * mint a click token that redirects to a URL of their choosing (no open redirect) or
 * unsubscribe an address from a message it was not sent to.
 */

export type TokenKind = 'open' | 'click' | 'unsubscribe'

export interface TrackingToken {
  kind: TokenKind
  /** The message id (a UUID). */
  messageId: string
  /** click: the link's target; unsubscribe: the recipient's address; open: empty. */
  value: string
}

const KIND_BYTE: Record<TokenKind, number> = { open: 0x6f, click: 0x63, unsubscribe: 0x75 }
const BYTE_KIND = new Map(Object.entries(KIND_BYTE).map(([k, b]) => [b, k as TokenKind]))
const MAC_BYTES = 16
const UUID_BYTES = 16

const secrets = new WeakMap<Db, Buffer>()

function secretOf(deps: Pick<Deps, 'db' | 'clock' | 'secrets'>): Buffer {
  let secret = secrets.get(deps.db)
  if (!secret) {
    secret = serverSecret(deps, 'tracking')
    secrets.set(deps.db, secret)
  }
  return secret
}

const mac = (secret: Buffer, payload: Buffer) => createHmac('sha256', secret).update(payload).digest().subarray(0, MAC_BYTES)

export function signToken(deps: Pick<Deps, 'db' | 'clock' | 'secrets'>, token: TrackingToken): string {
  const payload = Buffer.concat([Buffer.of(KIND_BYTE[token.kind]), Buffer.from(token.messageId.replaceAll('-', ''), 'hex'), Buffer.from(token.value, 'utf8')])
  return `${payload.toString('base64url')}.${mac(secretOf(deps), payload).toString('base64url')}`
}

/** The token's content when its MAC is right (compared in constant time) and it is of `kind`; else null. */
export function verifyToken(deps: Pick<Deps, 'db' | 'clock' | 'secrets'>, text: string, kind: TokenKind): TrackingToken | null {
  const dot = text.indexOf('.')
  if (dot < 0) return null
  const payload = Buffer.from(text.slice(0, dot), 'base64url')
  if (payload.length < 1 + UUID_BYTES) return null
  // Compared as text: base64 decoding ignores the spare low bits of the last character, so
  // comparing decoded bytes would accept several spellings of one MAC.
  const given = Buffer.from(text.slice(dot + 1), 'latin1')
  const expected = Buffer.from(mac(secretOf(deps), payload).toString('base64url'), 'latin1')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
  // Likewise the payload: only its canonical spelling is the signed one.
  if (payload.toString('base64url') !== text.slice(0, dot)) return null
  if (BYTE_KIND.get(payload[0]!) !== kind) return null
  const hex = payload.subarray(1, 1 + UUID_BYTES).toString('hex')
  const messageId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
  return { kind, messageId, value: payload.subarray(1 + UUID_BYTES).toString('utf8') }
}
