import { parseHeaderValue } from 'nodemailer/lib/mime-funcs'
import * as qp from 'nodemailer/lib/qp'
import { headerFields, type HeaderField as Field } from '../../lib/header-fields'
import { rewriteHtml, type HtmlTracking } from './rewrite'

/**
 * Tracking for messages that arrive whole (SMTP submission): the client built the MIME, so
 * the HTML is found in it, rewritten with rewriteHtml, and put back, and every other byte of
 * the message stays as it was (other parts, preamble and epilogue, headers), so nothing the
 * client built is lost and DKIM signs what it sent plus our links.
 *
 * Why a small parser of our own: mailparser and its kin decode a message into a new model and
 * cannot write it back byte for byte. This one only finds where entities start and end
 * (RFC 2045 and RFC 2046 section 5.1) and works on latin1 strings, where one character is one
 * byte, so slices of the string are slices of the message.
 *
 * What is rewritten: every text/html entity that is not an attachment, at the top or inside
 * multipart/* entities at any depth. message/rfc822 entities are someone else's message
 * (a forwarded one) and are left alone. A rewritten part is decoded (its transfer encoding,
 * then its charset) and re-encoded as UTF-8 quoted-printable: always 7-bit and short lines,
 * whatever the next hop supports. A part that cannot be read with certainty (unknown
 * charset or transfer encoding, bytes invalid in their charset, 8-bit text that names no
 * charset, a repeated Content-Type) is sent as written, untracked, rather than garbled.
 */

const CRLF = '\r\n'

/** Deeper nesting than any mail client writes; past it, entities are left as they are. */
const MAX_DEPTH = 32

/** The value of a field that may appear once: undefined when absent, null when repeated (which of them counts is unknowable). */
function single(fields: Field[], name: string): string | undefined | null {
  const found = fields.filter((f) => f.name === name)
  return found.length > 1 ? null : found[0]?.value
}

const parsed = (value: string) => parseHeaderValue(value, { stripComments: true })

/** Rewrites the HTML of a whole message (header and body); returns it unchanged when nothing is rewritten. */
export function rewriteRawHtml(raw: Buffer, tracking: HtmlTracking): Buffer {
  const rewritten = rewriteEntity(raw.toString('latin1'), tracking, 0)
  return rewritten === null ? raw : Buffer.from(rewritten, 'latin1')
}

/** One entity (a message or a body part), rewritten, or null when it stays as it is. */
function rewriteEntity(text: string, tracking: HtmlTracking, depth: number): string | null {
  if (depth > MAX_DEPTH) return null
  // RFC 2046 section 5.1.1: a part with no header fields starts with the empty line; it is
  // text/plain (or message/rfc822 in a digest), never HTML.
  if (text.startsWith(CRLF)) return null
  const split = text.indexOf('\r\n\r\n')
  if (split < 0) return null
  const fields = headerFields(text.slice(0, split + 2))
  // RFC 2045 section 4: without MIME-Version a message is not MIME, and its Content-Type means nothing.
  if (depth === 0 && !fields.some((f) => f.name === 'mime-version')) return null
  const contentType = single(fields, 'content-type')
  if (!contentType) return null
  const type = parsed(contentType)
  const mediaType = type.value.toLowerCase()
  const body = text.slice(split + 4)

  if (mediaType.startsWith('multipart/')) {
    const boundary = type.params.boundary
    if (!boundary) return null
    const inner = rewriteMultipart(body, boundary, tracking, depth)
    return inner === null ? null : text.slice(0, split + 4) + inner
  }
  if (mediaType !== 'text/html') return null
  const disposition = single(fields, 'content-disposition')
  if (disposition === null || (disposition !== undefined && parsed(disposition).value.toLowerCase() === 'attachment')) return null
  return rewriteHtmlPart(fields, type.params.charset, body, tracking)
}

interface Delimiter {
  /** Where the delimiter line ("--boundary") starts. */
  start: number
  /** Just after its CRLF (delimiter) or after "--boundary--" (close delimiter). */
  end: number
  close: boolean
}

/**
 * The next boundary delimiter line at or after `from` (RFC 2046 section 5.1.1): "--" and the
 * boundary at the start of a line, then "--" (the close delimiter) or optional linear white
 * space and CRLF. A line that only starts with the boundary is content.
 */
function nextDelimiter(body: string, dash: string, from: number): Delimiter | null {
  for (let i = body.indexOf(dash, from); i >= 0; i = body.indexOf(dash, i + 1)) {
    if (i > 0 && !(body[i - 2] === '\r' && body[i - 1] === '\n')) continue
    const after = i + dash.length
    if (body.startsWith('--', after)) return { start: i, end: after + 2, close: true }
    let j = after
    while (body[j] === ' ' || body[j] === '\t') j++
    if (j === body.length) return { start: i, end: j, close: false }
    if (body.startsWith(CRLF, j)) return { start: i, end: j + 2, close: false }
  }
  return null
}

/**
 * The body of a multipart entity with its parts rewritten. The CRLF before a delimiter
 * belongs to the delimiter, not to the part above it (RFC 2046 section 5.1.1), so a part's
 * content ends before it. A missing close delimiter ends the last part at the end of the
 * body, as readers take it.
 */
function rewriteMultipart(body: string, boundary: string, tracking: HtmlTracking, depth: number): string | null {
  const dash = `--${boundary}`
  const first = nextDelimiter(body, dash, 0)
  if (!first || first.close) return null
  let out = body.slice(0, first.end)
  let changed = false
  let cursor = first.end
  for (;;) {
    const next = nextDelimiter(body, dash, cursor)
    const end = next ? Math.max(cursor, next.start - 2) : body.length
    const part = body.slice(cursor, end)
    const rewritten = rewriteEntity(part, tracking, depth + 1)
    if (rewritten !== null) changed = true
    out += rewritten ?? part
    if (!next) break
    if (next.close) {
      out += body.slice(end)
      break
    }
    out += body.slice(end, next.end)
    cursor = next.end
  }
  return changed ? out : null
}

/** Where `text` ends without its trailing spaces and tabs (a loop: a regular expression backtracks quadratically over long runs). */
function trimWsp(text: string): number {
  let end = text.length
  while (end > 0 && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--
  return end
}

const HEX = /^[0-9A-Fa-f]{2}$/

/** Decodes a quoted-printable body to bytes (RFC 2045 section 6.7); a malformed "=" is kept as it is, as the RFC advises. */
function decodeQuotedPrintable(body: string): Buffer {
  const out = Buffer.allocUnsafe(body.length)
  let n = 0
  const lines = body.split(CRLF)
  lines.forEach((line, index) => {
    // Rule 3: white space at the end of an encoded line was added on the way and is dropped;
    // rule 5: "=" at the end of a line is a soft line break.
    let end = trimWsp(line)
    const soft = end > 0 && line[end - 1] === '='
    if (soft) end--
    for (let i = 0; i < end; i++) {
      const hex = line[i] === '=' && i + 2 < end ? line.slice(i + 1, i + 3) : ''
      if (HEX.test(hex)) {
        out[n++] = parseInt(hex, 16)
        i += 2
      } else out[n++] = line.charCodeAt(i) & 0xff
    }
    if (!soft && index < lines.length - 1) n += out.write(CRLF, n, 'latin1')
  })
  return out.subarray(0, n)
}

/** The bytes of a part's body after its Content-Transfer-Encoding, or null for an encoding we do not read. */
function decodeTransfer(encoding: string, body: string): Buffer | null {
  switch (encoding) {
    case '7bit':
    case '8bit':
    case 'binary':
      return Buffer.from(body, 'latin1')
    case 'quoted-printable':
      return decodeQuotedPrintable(body)
    case 'base64':
      // RFC 2045 section 6.8: characters outside the alphabet (line breaks) are ignored.
      return Buffer.from(body.replace(/[^A-Za-z0-9+/]/g, ''), 'base64')
    default:
      return null
  }
}

/** The text of the bytes in a charset (WHATWG labels: utf-8, iso-8859-*, windows-125x, ...), or null when it cannot be read with certainty. */
function decodeCharset(bytes: Buffer, charset: string | undefined): { text: string; utf8: boolean } | null {
  const label = (charset ?? 'us-ascii').trim().toLowerCase()
  // RFC 2045 section 5.2: no charset means US-ASCII. 8-bit bytes under that label are in some
  // other charset nobody named; guessing would garble the text for good.
  if ((label === 'us-ascii' || label === 'ascii') && bytes.some((b) => b > 0x7f)) return null
  let decoder: TextDecoder
  try {
    decoder = new TextDecoder(label, { fatal: true })
  } catch {
    return null
  }
  try {
    return { text: decoder.decode(bytes), utf8: decoder.encoding === 'utf-8' }
  } catch {
    return null
  }
}

/**
 * The HTML is sent as UTF-8 now: a `<meta charset>` or `<meta http-equiv="Content-Type">`
 * naming its old charset would contradict the MIME label, and readers that trust the meta
 * (HTML Standard 13.2.3.2: a browser opening the part as a file) would garble it.
 */
function declareUtf8(html: string): string {
  return new HTMLRewriter()
    .on('meta[charset]', {
      element(el) {
        el.setAttribute('charset', 'utf-8')
      },
    })
    .on('meta[http-equiv]', {
      element(el) {
        if (el.getAttribute('http-equiv')!.trim().toLowerCase() === 'content-type') el.setAttribute('content', 'text/html; charset=utf-8')
      },
    })
    .transform(html)
}

/**
 * Splits a header value at the semicolons between its parameters (RFC 2045 section 5.1),
 * not those inside quoted strings or comments. Joining the pieces with ";" gives the value back.
 */
function splitParameters(value: string): string[] {
  const pieces: string[] = []
  let start = 0
  let quoted = false
  let comment = 0
  for (let i = 0; i < value.length; i++) {
    const c = value[i]
    if (c === '\\' && (quoted || comment > 0)) i++
    else if (quoted) quoted = c !== '"'
    else if (c === '"' && comment === 0) quoted = true
    else if (c === '(') comment++
    else if (c === ')' && comment > 0) comment--
    else if (c === ';' && comment === 0) {
      pieces.push(value.slice(start, i))
      start = i + 1
    }
  }
  pieces.push(value.slice(start))
  return pieces
}

/**
 * The Content-Type field with `charset=utf-8` instead of its charset, every other parameter
 * and the folding kept as written (rebuilding the value would re-encode RFC 2231 parameters
 * such as a non-ASCII name). Null when the result does not read back as intended.
 */
function withUtf8Charset(field: Field): string | null {
  const colon = field.raw.indexOf(':')
  const [type, ...params] = splitParameters(field.raw.slice(colon + 1))
  const kept = params.filter((p) => {
    const eq = p.indexOf('=')
    const name = (eq < 0 ? p : p.slice(0, eq)).replace(/[ \t\r\n]/g, '').toLowerCase()
    // charset, or charset* / charset*0* ... in RFC 2231 form.
    return name !== 'charset' && !name.startsWith('charset*')
  })
  const joined = `${field.raw.slice(0, colon + 1)}${[type, ...kept].join(';')}`
  let end = joined.length
  while (end > 0 && ' \t\r\n'.includes(joined[end - 1]!)) end--
  const head = joined.slice(0, end)
  // Folded before the new parameter when it would make the last line longer than 76 (RFC 5322 section 2.1.1 asks for 78).
  const fold = head.lastIndexOf(CRLF)
  const lastLine = fold < 0 ? head.length : head.length - fold - 2
  const out = `${head}${lastLine + '; charset=utf-8'.length > 76 ? `;${CRLF} ` : '; '}charset=utf-8`
  const check = parsed(out.slice(colon + 1).replace(/\r\n/g, ''))
  return check.params.charset === 'utf-8' && check.value.toLowerCase() === 'text/html' ? out : null
}

/** A text/html part: decoded, rewritten, re-encoded as UTF-8 quoted-printable; null when it stays as written. */
function rewriteHtmlPart(fields: Field[], charset: string | undefined, body: string, tracking: HtmlTracking): string | null {
  const encoding = single(fields, 'content-transfer-encoding')
  if (encoding === null) return null
  const bytes = decodeTransfer(encoding === undefined ? '7bit' : parsed(encoding).value.toLowerCase(), body)
  if (!bytes) return null
  const decoded = decodeCharset(bytes, charset)
  if (!decoded) return null
  const html = rewriteHtml(decoded.text, tracking).html
  if (html === decoded.text) return null

  const typeField = fields.find((f) => f.name === 'content-type')!
  const typeRaw = withUtf8Charset(typeField)
  if (typeRaw === null) return null
  const cte = 'Content-Transfer-Encoding: quoted-printable'
  const head: string[] = []
  for (const f of fields) {
    if (f === typeField) {
      head.push(typeRaw)
      if (encoding === undefined) head.push(cte)
    } else head.push(f.name === 'content-transfer-encoding' ? cte : f.raw)
  }
  // Text in MIME has CRLF line breaks (RFC 2046 section 4.1.1); the encoder keeps them as
  // hard breaks and wraps longer lines with soft ones, at most 76 characters (RFC 2045 6.7).
  const text = (decoded.utf8 ? html : declareUtf8(html)).replace(/\r\n|\r|\n/g, CRLF)
  const encoded = qp.wrap(qp.encode(text), 76).replace(/\r?\n/g, CRLF)
  return `${head.join(CRLF)}${CRLF}${CRLF}${encoded}`
}
