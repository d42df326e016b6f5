/**
 * 8-bit to 7-bit conversion for servers that do not offer 8BITMIME (RFC 6152 section 3: a
 * client must not send 8-bit data to such a server; it converts the message to 7 bits or
 * bounces it). As Postfix does (smtp_8bitmime downgrade), each MIME leaf whose body has
 * 8-bit bytes is re-encoded: text/* as quoted-printable (RFC 2045 6.7, still readable),
 * anything else as base64 (6.8). Multiparts and message/rfc822 are walked, boundaries and
 * everything already 7-bit left byte for byte. Headers are left alone (8-bit headers need
 * SMTPUTF8, not a transfer encoding). This runs on the unsigned message; the result is
 * signed afterwards, so the DKIM body hash covers what is sent.
 *
 * Pure: bytes in, bytes out. Strings here are latin1, one character per byte.
 */

const EIGHT_BIT = /[\x80-\xff]/

/** The message converted to 7 bits; the same buffer when its body already is. */
export function downgradeTo7bit(raw: Buffer): Buffer {
  const text = raw.toString('latin1')
  const converted = convertEntity(text, true)
  return converted === text ? raw : Buffer.from(converted, 'latin1')
}

function split(entity: string): { head: string; body: string } {
  // An entity without header fields starts with the empty line (RFC 2045 section 3).
  if (entity.startsWith('\r\n')) return { head: '', body: entity.slice(2) }
  const end = entity.indexOf('\r\n\r\n')
  return end < 0 ? { head: entity, body: '' } : { head: entity.slice(0, end), body: entity.slice(end + 4) }
}

/** The unfolded value of a header field, or null. */
function field(head: string, name: string): string | null {
  const m = new RegExp(`^${name}:[ \\t]*((?:[^\\r\\n]*)(?:\\r\\n[ \\t][^\\r\\n]*)*)`, 'im').exec(head)
  return m ? m[1]!.replace(/\r\n(?=[ \t])/g, '') : null
}

function param(value: string, name: string): string | null {
  const m = new RegExp(`;\\s*${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]+))`, 'i').exec(value)
  return m ? (m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!) : null
}

function convertEntity(entity: string, top: boolean): string {
  const { head, body } = split(entity)
  if (!EIGHT_BIT.test(body)) return entity
  const type = (field(head, 'Content-Type') ?? 'text/plain').trim()
  const mediaType = type.split(';')[0]!.trim().toLowerCase()
  if (mediaType.startsWith('multipart/')) {
    const boundary = param(type, 'boundary')
    if (boundary) return join(head, convertMultipart(body, boundary))
  }
  if (mediaType === 'message/rfc822' || mediaType === 'message/global') return join(head, convertEntity(body, false))
  const cte = (field(head, 'Content-Transfer-Encoding') ?? '7bit').trim().toLowerCase()
  // Already encoded: 8-bit bytes there are damage, not something an encoding can fix.
  if (cte === 'base64' || cte === 'quoted-printable') return entity
  const text = mediaType.startsWith('text/')
  const encoded = text ? quotedPrintable(body) : base64(body)
  let newHead = setField(head, 'Content-Transfer-Encoding', text ? 'quoted-printable' : 'base64')
  // A transfer encoding means nothing outside MIME (RFC 2045 section 4).
  if (top && field(head, 'MIME-Version') === null) newHead += '\r\nMIME-Version: 1.0'
  return `${newHead}\r\n\r\n${encoded}`
}

function join(head: string, body: string): string {
  return head === '' ? `\r\n${body}` : `${head}\r\n\r\n${body}`
}

/** Converts each body part between the delimiter lines (RFC 2046 5.1.1); the CRLF before a delimiter belongs to it. */
function convertMultipart(body: string, boundary: string): string {
  const lines = body.split('\r\n')
  const out: string[] = []
  let part: string[] | null = null
  let closed = false
  for (const line of lines) {
    const bare = line.replace(/[ \t]+$/, '')
    if (!closed && (bare === `--${boundary}` || bare === `--${boundary}--`)) {
      if (part) out.push(convertEntity(part.join('\r\n'), false))
      out.push(line)
      part = bare === `--${boundary}` ? [] : null
      if (!part) closed = true
    } else if (part) part.push(line)
    else out.push(line) // preamble or epilogue
  }
  if (part) out.push(convertEntity(part.join('\r\n'), false))
  return out.join('\r\n')
}

/** Replaces a header field (with its folded lines) or appends it. */
function setField(head: string, name: string, value: string): string {
  const re = new RegExp(`^${name}:[^\\r\\n]*(?:\\r\\n[ \\t][^\\r\\n]*)*`, 'im')
  if (re.test(head)) return head.replace(re, `${name}: ${value}`)
  return head === '' ? `${name}: ${value}` : `${head}\r\n${name}: ${value}`
}

/** RFC 2045 6.7 quoted-printable, line by line: hard line breaks stay CRLF, soft breaks keep lines at 76. */
function quotedPrintable(body: string): string {
  return body
    .split('\r\n')
    .map((line) => {
      const out: string[] = []
      let current = ''
      for (let i = 0; i < line.length; i++) {
        const c = line.charCodeAt(i)
        const last = i === line.length - 1
        // Rule 3: space and tab are literal except at the end of a line, where transport may strip them.
        const literal = (c >= 33 && c <= 126 && c !== 61) || ((c === 32 || c === 9) && !last)
        const token = literal ? line[i]! : `=${c.toString(16).toUpperCase().padStart(2, '0')}`
        if (current.length + token.length > 75) {
          out.push(`${current}=`)
          current = ''
        }
        current += token
      }
      out.push(current)
      return out.join('\r\n')
    })
    .join('\r\n')
}

function base64(body: string): string {
  const encoded = Buffer.from(body, 'latin1').toString('base64')
  return `${(encoded.match(/.{1,76}/g) ?? []).join('\r\n')}\r\n`
}
