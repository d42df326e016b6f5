/**
 * Shared MIME helpers for the report parsers: one mailparser pass with bounded options, a
 * parser for the header-like field blocks of RFC 3464 and RFC 5965 report parts, and
 * address/Message-ID extraction. Pure: no I/O besides parsing the buffer given.
 */
import type { Attachment, ParsedMail } from 'mailparser'
import { parseReturnPathToken, tokenFromAddress } from '../../lib/return-path-token'

export type { Attachment, ParsedMail }

/** One `Name: value` field, name lower-cased, folded lines joined (RFC 5322 section 2.2.3). */
export interface Field {
  name: string
  value: string
}

/** Most text we look at in a part; report parts are a few KB, the rest is a returned original. */
export const MAX_FIELD_TEXT = 256 * 1024
/** Most fields read from one block, so a hostile part cannot make us build huge arrays. */
const MAX_FIELDS = 2000

/**
 * Parses a whole message once. Attachments (report parts, returned messages, DMARC files)
 * come back as buffers; message/rfc822 parts are not descended into, so a message nested in
 * a message nested in ... is one opaque attachment (no recursion to exhaust).
 */
export async function parseMail(raw: Buffer): Promise<ParsedMail> {
  // Loaded with the first report, not with the server: mailparser is about 12 MiB (issue 18).
  const { simpleParser } = await import('mailparser')
  return simpleParser(raw, {
    // Keep message/delivery-status as an attachment instead of folding it into the text.
    keepDeliveryStatus: true,
    // Passed through to mailsplit: a message/rfc822 part stays one opaque part even when
    // marked inline (ARF and JMRP mark it so), instead of being merged into our text.
    ignoreEmbedded: true,
    skipImageLinks: true,
    skipTextLinks: true,
    skipTextToHtml: true,
    checksumAlgo: false,
    maxHtmlLengthToParse: 2 * 1024 * 1024,
  } as Parameters<typeof simpleParser>[1])
}

/** A header value of the parsed top-level message as a plain string ('' when absent). */
export function headerText(mail: ParsedMail, name: string): string {
  const v = mail.headers.get(name)
  if (v === undefined || v === null) return ''
  if (typeof v === 'string') return v
  if (v instanceof Date) return v.toUTCString()
  if (Array.isArray(v)) return v.map((x) => (typeof x === 'string' ? x : x.value)).join(', ')
  if ('text' in v && typeof v.text === 'string') return v.text
  if ('value' in v && typeof v.value === 'string') return v.value
  return ''
}

/** The parameters of the top-level Content-Type (e.g. report-type of multipart/report, RFC 6522). */
export function contentType(mail: ParsedMail): { value: string; params: Record<string, string> } {
  const v = mail.headers.get('content-type')
  if (v && typeof v === 'object' && !Array.isArray(v) && 'params' in v) {
    return { value: String(v.value).toLowerCase(), params: Object.fromEntries(Object.entries(v.params).map(([k, p]) => [k.toLowerCase(), String(p)])) }
  }
  return { value: 'text/plain', params: {} }
}

/** The header section of a message (up to the first empty line), bounded. */
export function headerSection(content: Buffer | string): string {
  const text = (typeof content === 'string' ? content : content.subarray(0, MAX_FIELD_TEXT).toString('utf8')).slice(0, MAX_FIELD_TEXT)
  const m = /\r?\n\r?\n/.exec(text)
  return m ? text.slice(0, m.index) : text
}

/**
 * Parses a block of `Name: value` lines with folding. Lines that are not fields are skipped
 * (a lenient reader: real reports carry stray text), as are fields past MAX_FIELDS.
 */
export function parseFields(text: string): Field[] {
  const fields: Field[] = []
  for (const line of text.slice(0, MAX_FIELD_TEXT).split(/\r?\n/)) {
    if (/^[ \t]/.test(line)) {
      const last = fields[fields.length - 1]
      if (last) last.value = `${last.value} ${line.trim()}`.trim()
      continue
    }
    const m = /^([!-9;-~]+)[ \t]*:(.*)$/.exec(line)
    if (!m) continue
    if (fields.length >= MAX_FIELDS) break
    fields.push({ name: m[1]!.toLowerCase(), value: m[2]!.trim() })
  }
  return fields
}

/**
 * Splits a report body into groups separated by empty lines (RFC 3464 section 2.1: the
 * per-message fields, then one group per recipient), each parsed with parseFields.
 */
export function parseFieldGroups(text: string): Field[][] {
  return text
    .slice(0, MAX_FIELD_TEXT)
    .split(/\r?\n(?:[ \t]*\r?\n)+/)
    .map(parseFields)
    .filter((g) => g.length > 0)
}

/** The first value of a field, or null. */
export function field(fields: Field[], name: string): string | null {
  const f = fields.find((x) => x.name === name)
  return f && f.value !== '' ? f.value : null
}

/** Every value of a repeatable field. */
export function fieldAll(fields: Field[], name: string): string[] {
  return fields.filter((x) => x.name === name && x.value !== '').map((x) => x.value)
}

const ADDRESS_IN_BRACKETS = /<\s*([^<>\s@]+@[^<>\s@]+)\s*>/
const BARE_ADDRESS = /([^\s<>()[\]\\,;:"'@]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)/i

/**
 * The lower-cased addr-spec in a value such as `rfc822; a@b` (RFC 3464 address-type; address),
 * `Name <a@b>` or `<a@b>`; null when there is none. Only the first address is taken.
 */
export function extractAddress(value: string | null | undefined): string | null {
  if (!value) return null
  // An address is at most 254 octets (RFC 5321 4.5.3.1.3); a bounded input keeps the regexes linear.
  let v = value.slice(0, 1000).trim()
  const typed = /^(rfc822|utf-8)\s*;\s*(.*)$/i.exec(v)
  if (typed) v = typed[2]!.trim()
  const m = ADDRESS_IN_BRACKETS.exec(v) ?? BARE_ADDRESS.exec(v)
  if (!m) return null
  return m[1]!.replace(/^["']|["'.,;:]$/g, '').toLowerCase()
}

/** Every lower-cased address in a list header (To, X-Failed-Recipients ...), in order, without duplicates. */
export function extractAddresses(value: string | null | undefined): string[] {
  if (!value) return []
  const out: string[] = []
  for (const part of value
    .slice(0, 64 * 1024)
    .split(',')
    .slice(0, 1000)) {
    const a = extractAddress(part)
    if (a && !out.includes(a)) out.push(a)
  }
  return out
}

/** A Message-ID without angle brackets (as stored in messages.message_id_header), or null. */
export function cleanMessageId(value: string | null | undefined): string | null {
  if (!value) return null
  const m = /<([^<>\s]+)>/.exec(value) ?? /^\s*([^<>\s]+)\s*$/.exec(value)
  return m ? m[1]! : null
}

/** The value after `type;` in an RFC 3464 typed field (`dns; mx.example.net`), trimmed. */
export function typedValue(value: string | null): string | null {
  if (!value) return null
  const semi = value.indexOf(';')
  const v = (semi >= 0 ? value.slice(semi + 1) : value).trim()
  return v === '' ? null : v
}

/** What the included original message says about itself (from its header section). */
export interface OriginalMessage {
  /** Message-ID without angle brackets. */
  messageId: string | null
  from: string | null
  to: string[]
  subject: string | null
  /** The Return-Path header (added at final delivery, RFC 5322 section 3.6.7), lower-cased. */
  returnPath: string | null
  /** Every field of the header section, for the callers that need more. */
  fields: Field[]
}

/** Reads the header section of an included original message (message/rfc822 or text/rfc822-headers). */
export function readOriginal(content: Buffer | string): OriginalMessage {
  const fields = parseFields(headerSection(content))
  return {
    messageId: cleanMessageId(field(fields, 'message-id')),
    from: extractAddress(field(fields, 'from')),
    to: extractAddresses(fieldAll(fields, 'to').join(', ')),
    subject: field(fields, 'subject'),
    returnPath: extractAddress(field(fields, 'return-path')),
    fields,
  }
}

/** MIME types of parts that carry the original message or its headers (RFC 3462/6522, RFC 6533). */
export const ORIGINAL_TYPES = ['message/rfc822', 'text/rfc822-headers', 'message/global', 'message/global-headers']

/** The first attachment of one of the types, or undefined. */
export function findPart(mail: ParsedMail, types: string[]): Attachment | undefined {
  return mail.attachments.find((a) => types.includes(a.contentType.toLowerCase()))
}

/** Bounce-address tokens found in the header fields of an original message, Return-Path first. */
export function tokensInFields(fields: Field[]): string[] {
  const out: string[] = []
  const rp = fields.filter((f) => f.name === 'return-path')
  for (const f of [...rp, ...fields.filter((f) => f.name !== 'return-path')]) {
    for (const m of f.value.matchAll(/bounces\+[a-z0-9-]{1,64}@[a-z0-9.-]+/gi)) {
      const t = tokenFromAddress(m[0])
      if (t && !out.includes(t)) out.push(t)
    }
  }
  return out
}

/** The verified decoding of a return-path token. */
export interface ReturnPath {
  messageId: string
  recipientId: number
}

/**
 * Chooses among candidate tokens (in order of trust): with a secret, the first that verifies
 * (and its decoding); without one, or when none verifies, the first candidate, unverified.
 */
export function pickToken(candidates: (string | null)[], secret?: Buffer): { token: string | null; returnPath: ReturnPath | null } {
  const list = candidates.filter((c): c is string => !!c)
  if (secret) {
    for (const t of list) {
      const rp = parseReturnPathToken(secret, t)
      if (rp) return { token: t, returnPath: rp }
    }
  }
  return { token: list[0] ?? null, returnPath: null }
}
