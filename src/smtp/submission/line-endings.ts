/**
 * Bare CR and bare LF detection for DATA (SMTP smuggling, CVE-2023-51764 and its family).
 *
 * RFC 5321 section 2.3.8 allows CR and LF in DATA only as the CRLF pair, and section 4.1.1.4
 * ends the data with CRLF "." CRLF alone. smtp-server ends DATA only on that exact sequence,
 * so `<LF>.<LF>`, `<CR>.<LF>`, `<LF>.<CR><LF>` and the like arrive here as message content.
 * Accepting such content is how smuggling works: a later hop that is lenient about line
 * endings (Postfix before smtpd_forbid_bare_newline, Exchange, older Sendmail) sees the end of
 * the message at the bare line ending and runs what follows as SMTP commands, i.e. a second,
 * forged message. Postfix now refuses bare newlines by default; so do we: any CR not followed
 * by LF, or any LF not preceded by CR, and the whole message is refused.
 */
export interface LineEndingCheck {
  /** Feeds the next chunk of DATA (after dot-unstuffing) in order. */
  push(chunk: Buffer): void
  /** True when every CR and LF seen so far is part of a CRLF pair (a final lone CR counts as bare). */
  ok(): boolean
}

const CR = 0x0d
const LF = 0x0a

/** Checks a message arriving in chunks; the pairs may straddle chunk boundaries. */
export function createLineEndingCheck(): LineEndingCheck {
  let bad = false
  /** The previous chunk ended with CR: the next byte must be LF. */
  let pendingCr = false
  return {
    push(chunk) {
      if (bad || chunk.length === 0) return
      const afterCr = pendingCr
      if (pendingCr) {
        if (chunk[0] !== LF) return void (bad = true)
        pendingCr = false
      }
      // Buffer.indexOf is native, so a message is scanned at memory speed, not byte by byte in JS.
      for (let i = chunk.indexOf(LF); i !== -1; i = chunk.indexOf(LF, i + 1)) {
        if (i === 0 ? !afterCr : chunk[i - 1] !== CR) return void (bad = true)
      }
      for (let i = chunk.indexOf(CR); i !== -1; i = chunk.indexOf(CR, i + 1)) {
        if (i === chunk.length - 1) pendingCr = true
        else if (chunk[i + 1] !== LF) return void (bad = true)
      }
    },
    ok: () => !bad && !pendingCr,
  }
}
