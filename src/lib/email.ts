import { domainToASCII } from 'node:url'

/**
 * Email addresses as Mailroom stores and compares them: trimmed, lower case, the domain in
 * its ASCII (punycode) form. Lower-casing the local part is what every mailbox provider
 * does in practice, although RFC 5321 section 2.4 lets a server treat it case-sensitively.
 *
 * Accepted: the dot-atom form of RFC 5322 section 3.4.1 with length limits of RFC 5321
 * section 4.5.3.1 (local part 64 octets, domain 255, labels 63, and the whole address 254:
 * a path is at most 256 octets with its angle brackets, section 4.5.3.1.3). Refused: quoted local
 * parts, IP-literal domains, a domain without a dot, and any control character (so an
 * address can never carry a CR or LF into a header).
 */
const LOCAL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/
/** The longest address that fits in a reverse- or forward-path (RFC 5321 section 4.5.3.1.3). */
export const MAX_EMAIL_LENGTH = 254

export type EmailCheck = { ok: true; email: string } | { ok: false; error: string }

/** Validates and normalises an address; the error says what is wrong. */
export function checkEmail(input: unknown): EmailCheck {
  if (typeof input !== 'string') return { ok: false, error: 'must be a string' }
  const text = input.trim()
  if (text === '') return { ok: false, error: 'is empty' }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\s]/.test(text)) return { ok: false, error: 'must not contain spaces or control characters' }
  const at = text.lastIndexOf('@')
  if (at <= 0 || at === text.length - 1) return { ok: false, error: 'must look like name@example.com' }
  const local = text.slice(0, at).toLowerCase()
  const domain = normaliseDomain(text.slice(at + 1))
  if (local.length > 64) return { ok: false, error: 'has a local part longer than 64 characters' }
  if (!LOCAL.test(local)) return { ok: false, error: 'has characters that are not allowed before the @' }
  if (!domain) return { ok: false, error: 'has an invalid domain' }
  const email = `${local}@${domain}`
  // Measured in its ASCII form (the domain as punycode), which is what goes on the wire.
  if (email.length > MAX_EMAIL_LENGTH) return { ok: false, error: `is longer than ${MAX_EMAIL_LENGTH} characters` }
  return { ok: true, email }
}

/** A domain in lower-case ASCII form, or null when it is not a valid public host name. */
export function normaliseDomain(input: string): string | null {
  const lower = input.trim().replace(/\.$/, '').toLowerCase()
  // Plain ASCII names (nearly all) are already in their ASCII form; only IDNs need UTS #46 processing.
  const ascii = /^[a-z0-9.-]+$/.test(lower) ? lower : domainToASCII(lower)
  if (!ascii || ascii.length > 253 || !ascii.includes('.')) return null
  const labels = ascii.split('.')
  if (!labels.every((l) => LABEL.test(l))) return null
  if (/^\d+$/.test(labels.at(-1)!)) return null // an IP address, not a domain
  return ascii
}

/** The normalised address or null; for callers that only need yes or no. */
export function normaliseEmail(input: unknown): string | null {
  const r = checkEmail(input)
  return r.ok ? r.email : null
}

/** The domain part of a normalised address. */
export function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1)
}
