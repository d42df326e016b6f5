/** A header field of a message or body part (RFC 5322 section 2.2). */
export interface HeaderField {
  /** Lower-case name; empty for a line that is not a field. */
  name: string
  /** The whole field as received, folded lines included, without its final CRLF. */
  raw: string
  /** Unfolded value, trimmed. */
  value: string
}

/**
 * Splits a header block (CRLF line ends) into its fields: a line that starts with WSP
 * continues the field above it (RFC 5322 section 2.2.3). A line without a colon is kept as a
 * field with an empty name, for the caller to refuse or carry over as it was.
 */
export function headerFields(head: string): HeaderField[] {
  return head
    .split(/\r\n(?![ \t])/)
    .filter((f) => f.length > 0)
    .map((raw) => {
      const colon = raw.indexOf(':')
      if (colon <= 0) return { name: '', raw, value: '' }
      return {
        name: raw.slice(0, colon).trim().toLowerCase(),
        raw,
        value: raw
          .slice(colon + 1)
          .replace(/\r\n/g, '')
          .trim(),
      }
    })
}
