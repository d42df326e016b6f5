/**
 * Signed return-path tokens (VERP with an HMAC): the codec, both directions.
 *
 * Shared by two engines that do not import each other: the outbound engine signs with it
 * (src/delivery/return-path.ts builds the MAIL FROM), the inbound listener and the report
 * readers (src/smtp/) verify with it. Encoding and decoding are one format, so they stay in
 * one file; lib/ because it is pure (a secret in, a token out).
 *
 * Every outgoing message's MAIL FROM is `bounces+<token>@<return path host>`, so a bounce
 * (RFC 3464 DSNs go to the reverse-path, RFC 5321 section 4.5.5) names the message and the
 * recipient row it is about. The token is signed so that a forged bounce cannot mark
 * someone else's recipient bounced or suppress an address.
 *
 * Layout, before encoding (28 to 34 bytes):
 *   version (1 byte, 1) | message UUID (16 bytes) | recipient row id (1 to 7 bytes, big-endian, minimal)
 *   | HMAC-SHA256(secret, DOMAIN || the bytes before it), truncated to 10 bytes (80 bits)
 *
 * Encoding: RFC 4648 base32, lower case, no padding. Receiving MTAs may change the case of a
 * local part (RFC 5321 section 2.4 only asks them not to), so the alphabet has one case only,
 * and parsing lower-cases first. The longest token is 55 characters, so the local part
 * `bounces+<token>` is at most 63 octets, under the 64 of RFC 5321 section 4.5.3.1.1.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

/** The local-part prefix of return-path addresses; what follows the `+` is the token. */
export const RETURN_PATH_PREFIX = 'bounces+'

const VERSION = 1
const MAC_BYTES = 10
const UUID_BYTES = 16
const MAX_ID_BYTES = 7 // 2^53 - 1 (Number.MAX_SAFE_INTEGER) fits in 7 bytes
const FIXED_BYTES = 1 + UUID_BYTES + MAC_BYTES
// Domain separation: the same secret may sign other things later (unsubscribe links, ...).
const DOMAIN = Buffer.from('mailroom-return-path\0')
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
// The longest encoding: ceil((FIXED_BYTES + MAX_ID_BYTES) * 8 / 5) = 55 characters.
const MAX_TOKEN_CHARS = Math.ceil(((FIXED_BYTES + MAX_ID_BYTES) * 8) / 5)

function base32Encode(bytes: Uint8Array): string {
  let out = ''
  let bits = 0
  let value = 0
  for (const byte of bytes) {
    value = (value << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += ALPHABET.charAt((value >>> (bits - 5)) & 31)
      bits -= 5
    }
    value &= (1 << bits) - 1
  }
  if (bits > 0) out += ALPHABET.charAt((value << (5 - bits)) & 31)
  return out
}

/** Decodes unpadded lower-case base32; null on a foreign character or a non-canonical tail (non-zero padding bits). */
function base32Decode(text: string): Buffer | null {
  const out: number[] = []
  let bits = 0
  let value = 0
  for (const ch of text) {
    const v = ALPHABET.indexOf(ch)
    if (v < 0) return null
    value = (value << 5) | v
    bits += 5
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255)
      bits -= 8
    }
    value &= (1 << bits) - 1
  }
  // A valid encoding leaves fewer than 5 bits, all zero; anything else is not one we produced.
  if (bits >= 5 || value !== 0) return null
  return Buffer.from(out)
}

function mac(secret: Buffer, body: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(DOMAIN).update(body).digest().subarray(0, MAC_BYTES)
}

function idBytes(id: number): number[] {
  const bytes: number[] = []
  let n = id
  do {
    bytes.unshift(n % 256)
    n = Math.floor(n / 256)
  } while (n > 0)
  return bytes
}

/** Builds the signed token for one recipient row of one message. Throws on an invalid id (a programming error). */
export function makeReturnPathToken(secret: Buffer, messageId: string, recipientId: number): string {
  if (!UUID_RE.test(messageId)) throw new TypeError(`message id is not a UUID: ${messageId}`)
  if (!Number.isSafeInteger(recipientId) || recipientId < 0) throw new TypeError(`recipient id is not a non-negative safe integer: ${recipientId}`)
  if (secret.length === 0) throw new TypeError('empty return-path secret')
  const body = Buffer.from([VERSION, ...Buffer.from(messageId.replace(/-/g, ''), 'hex'), ...idBytes(recipientId)])
  return base32Encode(Buffer.concat([body, mac(secret, body)]))
}

/**
 * Verifies and decodes a token. Null on any change: another secret, a truncated or extended
 * token, a flipped character, a non-canonical encoding, an unknown version. Case is ignored.
 */
export function parseReturnPathToken(secret: Buffer, token: string): { messageId: string; recipientId: number } | null {
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_CHARS || secret.length === 0) return null
  const bytes = base32Decode(token.toLowerCase())
  if (!bytes) return null
  const idLength = bytes.length - FIXED_BYTES
  if (idLength < 1 || idLength > MAX_ID_BYTES || bytes[0] !== VERSION) return null
  const body = bytes.subarray(0, bytes.length - MAC_BYTES)
  // Constant-time comparison: the MAC must not be guessable byte by byte from timings.
  if (!timingSafeEqual(mac(secret, body), bytes.subarray(bytes.length - MAC_BYTES))) return null
  const id = body.subarray(1 + UUID_BYTES)
  // One encoding per id: a leading zero byte would be a second spelling of the same token.
  if (id.length > 1 && id[0] === 0) return null
  let recipientId = 0
  for (const b of id) recipientId = recipientId * 256 + b
  if (!Number.isSafeInteger(recipientId)) return null
  const hex = body.subarray(1, 1 + UUID_BYTES).toString('hex')
  const messageId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
  return { messageId, recipientId }
}

/**
 * The token of a return-path address (what follows `bounces+` in the local part, any case),
 * lower-cased; null when the address is not one of ours. Accepts `<...>` and a quoted local
 * part. The result is not verified: pass it to parseReturnPathToken.
 */
export function tokenFromAddress(address: string): string | null {
  if (typeof address !== 'string') return null
  let a = address.trim()
  if (a.startsWith('<') && a.endsWith('>')) a = a.slice(1, -1).trim()
  const at = a.lastIndexOf('@')
  if (at <= 0) return null
  let local = a.slice(0, at)
  if (local.length > 2 && local.startsWith('"') && local.endsWith('"')) local = local.slice(1, -1)
  if (local.length > 64 || local.slice(0, RETURN_PATH_PREFIX.length).toLowerCase() !== RETURN_PATH_PREFIX) return null
  const token = local.slice(RETURN_PATH_PREFIX.length).toLowerCase()
  // base32 tokens, and the unsigned message-UUID form of issue 4 (hex and dashes).
  return /^[a-z0-9-]{1,64}$/.test(token) ? token : null
}
