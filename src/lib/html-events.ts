/**
 * A streaming HTML scanner for html-text.ts: open tags (with their attributes), text
 * (entities decoded) and close tags, balanced as htmlparser2's Parser balances them in HTML
 * mode, which it replaced on the accept path. htmlparser2 reads one character at a time
 * through a state machine; mail HTML is mostly text, so this finds each `<` with indexOf and
 * hands the text between as one slice: the same events in a third of the time
 * (docs/benchmarks.md, "Text from HTML"). What it keeps of htmlparser2 (so the text is the
 * same, test/lib/html-events.test.ts compares the two on a corpus):
 *
 * - Tokens (WHATWG HTML 13.2.5, simplified as htmlparser2 does): `<` + ASCII letter starts a
 *   tag, `</` + letter a close tag; `<!--` to `-->` is a comment; `<!`, `<?` and `</` + other
 *   run to the next `>` and are dropped; any other `<` is text. Attribute values are quoted
 *   with `"` or `'`, or run to white space or `>`. Names are lower-cased.
 * - Raw text: the content of script, style, xmp, textarea (not decoded) and title (decoded)
 *   is text up to the matching close tag, never markup.
 * - The tree: void elements close at once; an open tag closes the elements it implies
 *   (`<p>` an open `<p>`, `<li>` an open `<li>`, ...); a close tag closes every element
 *   opened after its own; a close tag with no open element is dropped, except `</p>` (an
 *   empty paragraph) and `</br>` (a line break); `<x/>` closes only inside svg and math; the
 *   end of input closes everything. So every open has its close.
 */
import { decodeHTML, decodeHTMLAttribute } from 'entities/decode'

export interface HtmlEvents {
  open(name: string, attrs: Record<string, string>): void
  text(text: string): void
  close(name: string): void
}

const P = new Set(['p'])
const FORM = new Set(['input', 'option', 'optgroup', 'select', 'button', 'datalist', 'textarea'])
const DD_DT = new Set(['dd', 'dt'])
const RT_RP = new Set(['rt', 'rp'])
const TABLE_SECTION = new Set(['thead', 'tbody'])

/** The open elements an opening tag closes first (htmlparser2's openImpliesClose). */
const IMPLIES_CLOSE = new Map<string, Set<string>>([
  ['tr', new Set(['tr', 'th', 'td'])],
  ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])],
  ['body', new Set(['head', 'link', 'script'])],
  ['li', new Set(['li'])],
  ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])],
  ['dd', DD_DT],
  ['dt', DD_DT],
  ['rt', RT_RP],
  ['rp', RT_RP],
  ['tbody', TABLE_SECTION],
  ['tfoot', TABLE_SECTION],
  ...['select', 'input', 'output', 'button', 'datalist', 'textarea'].map((t) => [t, FORM] as const),
  ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p', 'address', 'article', 'aside', 'blockquote', 'details', 'div', 'dl', 'fieldset'].map((t) => [t, P] as const),
  ...['figcaption', 'figure', 'footer', 'form', 'header', 'hr', 'main', 'nav', 'ol', 'pre', 'section', 'table', 'ul'].map((t) => [t, P] as const),
])

const VOID = new Set([
  'area',
  'base',
  'basefont',
  'br',
  'col',
  'command',
  'embed',
  'frame',
  'hr',
  'img',
  'input',
  'isindex',
  'keygen',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
])

/** Elements whose content is text up to their close tag; the value says whether entities in it are decoded. */
const RAW_TEXT = new Map([
  ['script', false],
  ['style', false],
  ['xmp', false],
  ['title', true],
  ['textarea', false],
])

/** Where `<x/>` closes the element (foreign content, WHATWG HTML 13.2.6.5). */
const FOREIGN = new Set(['svg', 'math'])

const isLetter = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a)
/** White space as htmlparser2 counts it: space, \t, \n, \f, \r. */
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d

/** A tag or attribute name: up to white space, `/`, `>` (and `=` for an attribute). */
const TAG_NAME = /[^\t\n\f\r />]*/y
const ATTRIBUTE_NAME = /[^\t\n\f\r />=]*/y
/** An unquoted attribute value: up to white space or `>`. */
const UNQUOTED = /[^\t\n\f\r >]*/y

/** The end of the name that starts at `from`, by a sticky pattern (native speed, no substring). */
function nameEnd(pattern: RegExp, html: string, from: number): number {
  pattern.lastIndex = from
  pattern.test(html)
  return pattern.lastIndex
}

/**
 * Scans `html` once, calling `on` for each open tag, text and close tag, in document order.
 * `attributes`: the attribute names to report (lower case); the others are read past but not
 * kept (a newsletter's style and layout attributes are most of its tags). All when omitted.
 */
export function scanHtml(html: string, on: HtmlEvents, attributes?: ReadonlySet<string>): void {
  const stack: string[] = []
  /** How many of each name are open: a close tag for a name that is not open costs no search of the stack. */
  const openCount = new Map<string, number>()
  let foreign = 0
  const n = html.length
  let i = 0
  const wantedLengths = attributes ? new Set([...attributes].map((a) => a.length)) : null

  const text = (from: number, to: number, decode = true) => {
    if (to <= from) return
    const raw = html.slice(from, to)
    on.text(decode && raw.includes('&') ? decodeHTML(raw) : raw)
  }
  const closeTop = () => {
    const name = stack.pop()!
    openCount.set(name, openCount.get(name)! - 1)
    if (FOREIGN.has(name)) foreign--
    on.close(name)
  }
  const open = (name: string, attrs: Record<string, string>, selfClosing: boolean) => {
    const implied = IMPLIES_CLOSE.get(name)
    if (implied) while (stack.length > 0 && implied.has(stack.at(-1)!)) closeTop()
    on.open(name, attrs)
    if (VOID.has(name)) on.close(name)
    else if (selfClosing && foreign > 0) on.close(name)
    else {
      stack.push(name)
      openCount.set(name, (openCount.get(name) ?? 0) + 1)
      if (FOREIGN.has(name)) foreign++
    }
  }
  const close = (name: string) => {
    if (VOID.has(name)) {
      if (name === 'br') (on.open('br', {}), on.close('br'))
      return
    }
    // Each search that finds its element closes everything above it, so the searches cost
    // linear time in all: deep nesting cannot make a document quadratic.
    const at = openCount.get(name) ? stack.lastIndexOf(name) : -1
    if (at !== -1) while (stack.length > at) closeTop()
    else if (name === 'p') (on.open('p', {}), on.close('p'))
  }

  while (i < n) {
    const lt = html.indexOf('<', i)
    if (lt === -1 || lt === n - 1) {
      text(i, n)
      break
    }
    const next = html.charCodeAt(lt + 1)
    if (isLetter(next)) {
      text(i, lt)
      i = openTag(lt + 1)
    } else if (next === 0x2f /* / */ && isLetter(html.charCodeAt(lt + 2))) {
      text(i, lt)
      const end = nameEnd(TAG_NAME, html, lt + 2)
      const name = html.slice(lt + 2, end).toLowerCase()
      const gt = html.indexOf('>', end)
      if (gt === -1) break // an unfinished tag at the end is dropped, as htmlparser2 does
      i = gt + 1
      close(name)
    } else if (next === 0x21 /* ! */ || next === 0x3f /* ? */ || next === 0x2f) {
      text(i, lt)
      if (html.startsWith('<!--', lt)) {
        const end = html.indexOf('-->', lt + 2) // `<!-->` is an empty comment too
        i = end === -1 ? n : end + 3
      } else {
        const gt = html.indexOf('>', lt + 2)
        i = gt === -1 ? n : gt + 1
      }
    } else {
      // A `<` that starts no markup is text: keep it with what follows.
      const more = html.indexOf('<', lt + 1)
      text(i, more === -1 ? n : more)
      i = more === -1 ? n : more
    }
  }
  while (stack.length > 0) closeTop()

  /** Reads the tag whose name starts at `from`; returns where scanning goes on. */
  function openTag(from: number): number {
    let j = nameEnd(TAG_NAME, html, from)
    const name = html.slice(from, j).toLowerCase()
    const attrs: Record<string, string> = {}
    let selfClosing = false
    for (;;) {
      while (j < n && (isSpace(html.charCodeAt(j)) || html.charCodeAt(j) === 0x2f)) {
        selfClosing = html.charCodeAt(j) === 0x2f
        j++
      }
      if (j >= n) return n // an unfinished tag at the end is dropped, as htmlparser2 does
      if (html.charCodeAt(j) === 0x3e) break
      selfClosing = false
      const nameStart = j
      // A `=` that starts a name is part of it (WHATWG HTML 13.2.5.32).
      j = nameEnd(ATTRIBUTE_NAME, html, html.charCodeAt(j) === 0x3d ? j + 1 : j)
      // A name of another length than the wanted ones is not cut out and lower-cased at all.
      const cut = !wantedLengths || wantedLengths.has(j - nameStart)
      const attr = cut ? html.slice(nameStart, j).toLowerCase() : ''
      const wanted = cut && (!attributes || attributes.has(attr)) && !Object.hasOwn(attrs, attr)
      while (j < n && isSpace(html.charCodeAt(j))) j++
      let value = ''
      if (html.charCodeAt(j) === 0x3d /* = */) {
        j++
        while (j < n && isSpace(html.charCodeAt(j))) j++
        const quote = html.charCodeAt(j)
        const start = quote === 0x22 || quote === 0x27 ? j + 1 : j
        const end = start === j ? nameEnd(UNQUOTED, html, j) : html.indexOf(quote === 0x22 ? '"' : "'", start)
        if (end === -1) return n
        if (wanted) value = html.slice(start, end)
        j = start === j ? end : end + 1
      }
      if (wanted) attrs[attr] = value.includes('&') ? decodeHTMLAttribute(value) : value
    }
    open(name, attrs, selfClosing)
    const afterTag = j + 1
    const decoded = RAW_TEXT.get(name)
    if (decoded === undefined || stack.at(-1) !== name) return afterTag
    // Raw text runs to `</name` (in any case) followed by white space, `/` or `>`.
    let k = afterTag
    for (;;) {
      k = html.indexOf('</', k)
      if (k === -1) {
        text(afterTag, n, decoded)
        return n
      }
      const after = html.charCodeAt(k + 2 + name.length)
      if (html.slice(k + 2, k + 2 + name.length).toLowerCase() === name && (Number.isNaN(after) || isSpace(after) || after === 0x3e || after === 0x2f)) break
      k += 2
    }
    text(afterTag, k, decoded)
    return k
  }
}
