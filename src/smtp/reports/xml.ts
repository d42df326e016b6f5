/**
 * A small, strict XML reader for data documents such as DMARC aggregate reports: elements,
 * attributes (read and discarded), text, CDATA, comments and processing instructions.
 *
 * Refused on purpose: any DOCTYPE (and so every ENTITY declaration: no external entities,
 * no XXE, no "billion laughs" expansion), entity references other than the five predefined
 * ones and numeric character references, mismatched or unclosed tags, and content after
 * the root element. Limits on depth and element count bound memory on hostile input.
 */

export interface XmlElement {
  /** Local name, without a namespace prefix. */
  name: string
  children: XmlElement[]
  /** The element's own text (child elements' text not included), entities decoded. */
  text: string
}

export class XmlError extends Error {}

export interface XmlLimits {
  maxDepth?: number
  maxElements?: number
}

const NAME_RE = /^[A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?$/
const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }

function decodeEntities(text: string, at: number): string {
  if (!text.includes('&')) return text
  return text.replace(/&([^;&<]{0,10});|&/g, (whole, ref: string | undefined) => {
    if (ref === undefined) throw new XmlError(`bare & at offset ${at}`)
    if (ref in PREDEFINED) return PREDEFINED[ref]!
    const num = /^#(?:x([0-9a-fA-F]{1,6})|([0-9]{1,7}))$/.exec(ref)
    if (num) {
      const cp = num[1] !== undefined ? parseInt(num[1], 16) : Number(num[2])
      // XML 1.0 section 2.2 Char production: no NUL, no surrogates, nothing past U+10FFFF.
      if (cp === 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) throw new XmlError(`invalid character reference ${whole}`)
      return String.fromCodePoint(cp)
    }
    throw new XmlError(`undeclared entity ${whole}`)
  })
}

function localName(name: string): string {
  const colon = name.indexOf(':')
  return colon >= 0 ? name.slice(colon + 1) : name
}

/** Parses a document into its root element; throws XmlError on anything outside the subset. */
export function parseXml(input: string, limits: XmlLimits = {}): XmlElement {
  const maxDepth = limits.maxDepth ?? 64
  const maxElements = limits.maxElements ?? 2_000_000
  let s = input.charCodeAt(0) === 0xfeff ? input.slice(1) : input
  let i = 0
  let count = 0
  const stack: { el: XmlElement; raw: string; text: string[] }[] = []
  let root: XmlElement | null = null

  const fail = (msg: string): never => {
    throw new XmlError(`${msg} at offset ${i}`)
  }
  const skipTo = (needle: string, what: string): number => {
    const end = s.indexOf(needle, i)
    if (end < 0) fail(`unterminated ${what}`)
    return end
  }

  while (i < s.length) {
    const lt = s.indexOf('<', i)
    const textEnd = lt < 0 ? s.length : lt
    if (textEnd > i) {
      const text = s.slice(i, textEnd)
      const top = stack[stack.length - 1]
      if (top) top.text.push(decodeEntities(text, i))
      else if (text.trim() !== '') fail('text outside the root element')
      i = textEnd
      if (lt < 0) break
    }
    if (s.startsWith('<!--', i)) {
      const end = skipTo('-->', 'comment')
      i = end + 3
    } else if (s.startsWith('<![CDATA[', i)) {
      const top = stack[stack.length - 1]
      if (!top) fail('CDATA outside the root element')
      const end = skipTo(']]>', 'CDATA section')
      top!.text.push(s.slice(i + 9, end))
      i = end + 3
    } else if (s.startsWith('<!', i)) {
      // <!DOCTYPE, <!ENTITY, <!ELEMENT ...: declarations are how entity bombs and XXE work.
      fail('DOCTYPE and other declarations are not allowed')
    } else if (s.startsWith('<?', i)) {
      const end = skipTo('?>', 'processing instruction')
      i = end + 2
    } else if (s.startsWith('</', i)) {
      const end = skipTo('>', 'end tag')
      const name = s.slice(i + 2, end).trim()
      const top = stack.pop()
      if (!top || top.raw !== name) fail(`mismatched end tag </${name}>`)
      top!.el.text = top!.text.join('')
      if (stack.length === 0) root = top!.el
      i = end + 1
    } else {
      if (root) fail('content after the root element')
      // Find the tag's end, skipping a '>' inside a quoted attribute value (one linear scan).
      let close = i + 1
      let quote = 0
      for (; close < s.length; close++) {
        const c = s.charCodeAt(close)
        if (quote) {
          if (c === quote) quote = 0
        } else if (c === 34 || c === 39) quote = c
        else if (c === 62) break
        else if (c === 60) fail('"<" inside a start tag')
      }
      if (close >= s.length) fail('unterminated start tag')
      let inner = s.slice(i + 1, close)
      const selfClosing = inner.endsWith('/')
      if (selfClosing) inner = inner.slice(0, -1)
      const m = /^([^\s/>]+)([\s\S]*)$/.exec(inner)
      if (!m || !NAME_RE.test(m[1]!)) fail('invalid element name')
      const attrs = m![2]!.trim()
      if (attrs !== '' && !/^(?:[A-Za-z_][\w.:-]*\s*=\s*(?:"[^"<]*"|'[^'<]*')\s*)+$/.test(attrs)) fail('invalid attributes')
      if (attrs !== '') for (const v of attrs.matchAll(/=\s*(?:"([^"]*)"|'([^']*)')/g)) decodeEntities(v[1] ?? v[2] ?? '', i)
      if (++count > maxElements) fail('too many elements')
      const el: XmlElement = { name: localName(m![1]!), children: [], text: '' }
      const parent = stack[stack.length - 1]
      if (parent) parent.el.children.push(el)
      else if (root) fail('more than one root element')
      if (selfClosing) {
        if (!parent) root = el
      } else {
        if (stack.length >= maxDepth) fail('elements nested too deeply')
        stack.push({ el, raw: m![1]!, text: [] })
      }
      i = close + 1
    }
  }
  if (stack.length > 0) fail(`unclosed element <${stack[stack.length - 1]!.raw}>`)
  if (!root) fail('no root element')
  s = ''
  return root!
}

/** The first child element with this local name. */
export function child(el: XmlElement | undefined, name: string): XmlElement | undefined {
  return el?.children.find((c) => c.name === name)
}

/** Every child element with this local name. */
export function childrenNamed(el: XmlElement | undefined, name: string): XmlElement[] {
  return el ? el.children.filter((c) => c.name === name) : []
}

/** The trimmed text of the first child with this name, or null when absent or empty. */
export function childText(el: XmlElement | undefined, name: string): string | null {
  const t = child(el, name)?.text.trim()
  return t ? t : null
}
