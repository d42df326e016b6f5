/**
 * A whole message as the bytes of an SMTP DATA block (RFC 5321 section 4.5.2 and 2.3.8):
 * every line ending CRLF (bare CR and bare LF become CRLF), a period at the start of a line
 * doubled, and the terminating CRLF "." CRLF appended. The same bytes nodemailer's DataStream
 * produces, made in one pass over a buffer we already hold, rather than through a Transform
 * stream piped into the socket for every message (issue 18).
 */
export function dataBlock(raw: Buffer): Buffer {
  const len = raw.length
  // Count what is inserted first, so the output is allocated once.
  let extra = 0
  let prev = -1
  for (let i = 0; i < len; i++) {
    const b = raw[i]!
    if (prev === 0x0d && b !== 0x0a) extra += b === 0x2e ? 2 : 1
    else if (b === 0x0a && prev !== 0x0d) extra += 1
    else if (b === 0x2e && (prev === 0x0a || prev === -1)) extra += 1
    prev = b
  }
  const last = len === 0 ? -1 : raw[len - 1]!
  const tail = last === 0x0a ? '.\r\n' : last === 0x0d ? '\n.\r\n' : '\r\n.\r\n'
  if (extra === 0) return Buffer.concat([raw, Buffer.from(tail, 'latin1')], len + tail.length)
  const out = Buffer.allocUnsafe(len + extra + tail.length)
  let o = 0
  prev = -1
  for (let i = 0; i < len; i++) {
    const b = raw[i]!
    if (prev === 0x0d && b !== 0x0a) {
      out[o++] = 0x0a
      if (b === 0x2e) out[o++] = 0x2e
    } else if (b === 0x0a && prev !== 0x0d) out[o++] = 0x0d
    else if (b === 0x2e && (prev === 0x0a || prev === -1)) out[o++] = 0x2e
    out[o++] = b
    prev = b
  }
  o += out.write(tail, o, 'latin1')
  return out.subarray(0, o)
}
