import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Db } from '../../db/client'
import type { Deps } from '../../deps'
import { serverSecret } from '../system/secrets'

/**
 * The token of a double opt-in link: `<payload>.<mac>`, base64url. The payload is the pending
 * submission's id and its expiry (two big-endian 64-bit integers); the MAC is HMAC-SHA256
 * under a server secret, truncated to 128 bits. So a link names one submission and cannot be
 * stretched past its expiry or pointed at another submission, and no token is stored.
 */

const MAC_BYTES = 16
const PAYLOAD_BYTES = 16

const secrets = new WeakMap<Db, Buffer>()

/** The web forms' server secret (one per database, made on first use). */
export function formSecret(deps: Pick<Deps, 'db' | 'clock' | 'secrets'>): Buffer {
  let secret = secrets.get(deps.db)
  if (!secret) {
    secret = serverSecret(deps, 'web_forms')
    secrets.set(deps.db, secret)
  }
  return secret
}

const mac = (secret: Buffer, payload: Buffer) => createHmac('sha256', secret).update('confirm:').update(payload).digest().subarray(0, MAC_BYTES)

/** The link token of a pending submission. */
export function signConfirmToken(deps: Pick<Deps, 'db' | 'clock' | 'secrets'>, submissionId: number, expiresAt: number): string {
  const payload = Buffer.alloc(PAYLOAD_BYTES)
  payload.writeBigUInt64BE(BigInt(submissionId), 0)
  payload.writeBigUInt64BE(BigInt(expiresAt), 8)
  return `${payload.toString('base64url')}.${mac(formSecret(deps), payload).toString('base64url')}`
}

export type ConfirmToken = { ok: true; submissionId: number; expiresAt: number } | { ok: false }

/** The submission and expiry a token names when its MAC is right (constant-time compare); expiry is the caller's check. */
export function verifyConfirmToken(deps: Pick<Deps, 'db' | 'clock' | 'secrets'>, text: string): ConfirmToken {
  const dot = text.indexOf('.')
  if (dot < 0) return { ok: false }
  const payload = Buffer.from(text.slice(0, dot), 'base64url')
  if (payload.length !== PAYLOAD_BYTES || payload.toString('base64url') !== text.slice(0, dot)) return { ok: false }
  // Compared as text: base64 decoding ignores the spare low bits of the last character.
  const given = Buffer.from(text.slice(dot + 1), 'latin1')
  const expected = Buffer.from(mac(formSecret(deps), payload).toString('base64url'), 'latin1')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false }
  return { ok: true, submissionId: Number(payload.readBigUInt64BE(0)), expiresAt: Number(payload.readBigUInt64BE(8)) }
}
