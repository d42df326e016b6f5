/**
 * A streaming CSV record reader (RFC 4180) built for imports: fast on plain lines, and
 * able to report a broken row as that row alone. General-purpose parsers either stop at
 * the first quoting error or, recovering, swallow the rest of the file into it; an import
 * of a million rows must instead report row 4,812 and go on with row 4,813.
 *
 * Rules: fields are separated by commas, records by LF or CRLF; a field that starts with a
 * double quote runs to the matching quote, may contain commas and line breaks, and writes
 * a quote as two (RFC 4180 section 2). A quote inside an unquoted field is kept as text.
 * After a closing quote only a comma or the end of the record may follow; anything else is
 * a broken row, which ends at the next line break. A quoted field still open after
 * MAX_QUOTED_CHARS is taken as never closed: its first line is the broken row and reading
 * resumes on the next line.
 */
export const MAX_QUOTED_CHARS = 64 * 1024

export type CsvRecord = { fields: string[]; raw: string } | { error: string; raw: string }

/** The next record in `s` from `pos`, or null when more text is needed (and `eof` is false). */
export function nextRecord(s: string, pos: number, eof: boolean): { record: CsvRecord; next: number } | null {
  const nl = s.indexOf('\n', pos)
  if (nl === -1 && !eof) return null
  const lineEnd = nl === -1 ? s.length : nl
  const afterLine = nl === -1 ? s.length : nl + 1
  const firstQuote = s.indexOf('"', pos)
  if (firstQuote === -1 || firstQuote > lineEnd) {
    // The fast path: a line without quotes is its fields.
    const line = s.charCodeAt(lineEnd - 1) === 13 ? s.slice(pos, lineEnd - 1) : s.slice(pos, lineEnd)
    return { record: { fields: line.split(','), raw: s.slice(pos, afterLine) }, next: afterLine }
  }
  const fields: string[] = []
  let i = pos
  const brokenAt = (from: number, error: string) => {
    const end = s.indexOf('\n', from)
    const next = end === -1 ? s.length : end + 1
    return { record: { error, raw: s.slice(pos, next) }, next }
  }
  for (;;) {
    if (s.charCodeAt(i) === 34 /* " */) {
      let value = ''
      let j = i + 1
      for (;;) {
        const q = s.indexOf('"', j)
        if (q === -1 || q - i > MAX_QUOTED_CHARS) {
          if (!eof && q === -1 && s.length - i <= MAX_QUOTED_CHARS) return null
          return { record: { error: 'a quoted value is never closed', raw: s.slice(pos, afterLine) }, next: afterLine }
        }
        if (q + 1 >= s.length && !eof) return null
        if (s.charCodeAt(q + 1) === 34) {
          value += s.slice(j, q) + '"'
          j = q + 2
          continue
        }
        value += s.slice(j, q)
        i = q + 1
        break
      }
      const c = s.charCodeAt(i)
      if (i >= s.length || c === 10 || (c === 13 && s.charCodeAt(i + 1) === 10)) {
        fields.push(value)
        const next = i >= s.length ? s.length : c === 10 ? i + 1 : i + 2
        return { record: { fields, raw: s.slice(pos, next) }, next }
      }
      if (c === 44 /* , */) {
        fields.push(value)
        i++
        continue
      }
      return brokenAt(i, 'broken quoting: a closing quote is followed by other characters')
    }
    // An unquoted field runs to the next comma or line break.
    let end = i
    while (end < s.length) {
      const c = s.charCodeAt(end)
      if (c === 44 || c === 10) break
      end++
    }
    if (end >= s.length && !eof) return null
    const text = s.slice(i, end)
    fields.push(text.endsWith('\r') && s.charCodeAt(end) !== 44 ? text.slice(0, -1) : text)
    if (end >= s.length || s.charCodeAt(end) === 10) {
      const next = end >= s.length ? s.length : end + 1
      return { record: { fields, raw: s.slice(pos, next) }, next }
    }
    i = end + 1
  }
}

/** Records of a stream of text chunks, in order; blank lines are skipped. */
export async function* csvRecords(chunks: AsyncIterable<string>): AsyncGenerator<CsvRecord> {
  let buffer = ''
  let pos = 0
  const drain = function* (eof: boolean): Generator<CsvRecord> {
    for (;;) {
      if (pos >= buffer.length) return
      const step = nextRecord(buffer, pos, eof)
      if (!step) return
      pos = step.next
      const r = step.record
      if ('fields' in r && r.fields.length === 1 && r.fields[0]!.trim() === '') continue
      yield r
    }
  }
  for await (const chunk of chunks) {
    buffer = pos > 0 ? buffer.slice(pos) + chunk : buffer + chunk
    pos = 0
    yield* drain(false)
  }
  yield* drain(true)
}
