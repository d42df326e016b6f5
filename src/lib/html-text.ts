/**
 * The plain-text alternative of an HTML body, generated for an HTML-only send (as Resend
 * does). One streaming pass over the events of html-events.ts: no DOM, no selectors. It replaced
 * html-to-text on the accept path, where that library (DOM, selector matching, formatters per
 * element) was 45 % of the server's CPU (docs/benchmarks.md, "Text from HTML"; decision 55).
 * It keeps that library's defaults that matter in a mail client: paragraphs, headings, lists
 * and quotes separated by line breaks, headings in capitals, list items as "* " or "1. ",
 * quotes as "> ", links as "text [href]", images and <head>/<script>/<style> dropped, <pre>
 * as it is, lines wrapped at 78 columns (RFC 5322 2.1.1 recommends at most 78).
 */
import { scanHtml } from './html-events'

const WIDTH = 78

/** Elements whose content is not text for a reader. */
const SKIPPED = new Set(['head', 'script', 'style', 'template', 'title', 'noscript', 'svg'])

/** Line breaks around block elements: 2 leaves a blank line, 1 starts a new line. */
const BLOCK_BREAKS = new Map<string, number>([
  ...['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote', 'pre', 'ul', 'ol', 'table', 'hr'].map((t) => [t, 2] as const),
  ...['div', 'section', 'article', 'header', 'footer', 'main', 'nav', 'aside', 'address', 'center', 'form', 'figure', 'figcaption'].map((t) => [t, 1] as const),
  ...['li', 'tr', 'td', 'th', 'dl', 'dt', 'dd', 'caption', 'tbody', 'thead', 'tfoot'].map((t) => [t, 1] as const),
])

const HEADINGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6'])

/** The only attributes the text reads: a link's address and an ordered list's start. */
const READ_ATTRIBUTES = new Set(['href', 'start'])

/**
 * Quote marks and list indentation stop growing at this depth. Every line carries its
 * prefix, so without a cap the text grew with the square of the nesting: 52 KB of nested
 * <blockquote> made 32 MB of text, and an HTML body near the send limit would have made
 * gigabytes.
 */
const MAX_PREFIX_DEPTH = 10

/** Whitespace as HTML collapses it (and the zero-width space and no-break space of preheader spacers). */
const SPACES = /[ \t\n\r\f\u200b\u00a0]+/g
/** Whether a text has whitespace to collapse: testing is cheaper than replacing, and most text nodes have only single spaces. */
const COLLAPSIBLE = /[\t\n\r\f\u200b\u00a0]| {2}/

/** Whether a text is nothing but white space that SPACES collapses (the line breaks between blocks). */
function onlySpaces(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09 && c !== 0x0c && c !== 0x200b && c !== 0xa0) return false
  }
  return true
}

/** Greedy word wrap of collapsed text (single spaces); a word longer than the width (a URL) stays whole on its own line. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = []
  let start = 0
  while (text.length - start > width) {
    let cut = text.lastIndexOf(' ', start + width)
    if (cut <= start) cut = text.indexOf(' ', start + width)
    if (cut === -1) break
    lines.push(text.slice(start, cut))
    start = cut + 1
  }
  lines.push(text.slice(start))
  return lines
}

/** Whether a link's address adds something to its text (not an in-page anchor or script, not the text itself). */
function shownHref(href: string | undefined, text: string): string | null {
  if (!href || href.startsWith('#') || /^javascript:/i.test(href)) return null
  if (href === text || href.replace(/^mailto:/i, '') === text) return null
  return href
}

interface List {
  ordered: boolean
  next: number
}

export function htmlToText(html: string): string {
  const lines: string[] = []
  /** Text of the current block, whitespace collapsed (kept as it is inside <pre>). */
  let inline = ''
  /** Line breaks owed before the next text. */
  let pending = 0
  let skipped = 0
  let pre = 0
  let upper = 0
  let quote = 0
  const lists: List[] = []
  /** The marker of a list item whose first line is not written yet. */
  let marker: string | null = null
  const links: Array<{ href: string | undefined; start: number }> = []

  function prefix(first: boolean): string {
    if (quote === 0 && lists.length === 0) return ''
    const q = '> '.repeat(Math.min(quote, MAX_PREFIX_DEPTH))
    if (lists.length === 0) return q
    const outer = '  '.repeat(Math.min(lists.length - 1, MAX_PREFIX_DEPTH))
    const m = first && marker !== null ? marker : ' '.repeat(marker?.length ?? (lists.at(-1)!.ordered ? 3 : 2))
    return q + outer + m
  }

  /** The quote depth of the last line written: a blank line before a quote's first paragraph is outside it. */
  let lastQuote = 0

  function write(content: string[]): void {
    if (lines.length > 0)
      for (let i = 1; i < pending; i++) lines.push(quote > 0 && lastQuote > 0 ? '>' + ' >'.repeat(Math.min(quote, lastQuote, MAX_PREFIX_DEPTH) - 1) : '')
    lastQuote = quote
    const lead = prefix(true)
    const rest = prefix(false)
    for (let i = 0; i < content.length; i++) lines.push((i === 0 ? lead : rest) + content[i])
    marker = null
    pending = 1
  }

  function flush(): void {
    if (pre > 0) {
      if (inline.length > 0) write(inline.replace(/\r\n?/g, '\n').replace(/^\n/, '').replace(/\n$/, '').split('\n'))
    } else {
      const collapsed = inline.trim()
      if (collapsed.length > 0) write(wrap(collapsed, Math.max(20, WIDTH - prefix(false).length)))
    }
    inline = ''
    for (const l of links) l.start = 0
  }

  function block(breaks: number): void {
    flush()
    pending = Math.max(pending, breaks)
  }

  /** A list inside a list item starts on the next line, not after a blank one. */
  const nestedList = (name: string) => lists.length > 0 && (name === 'ul' || name === 'ol')

  scanHtml(
    html,
    {
      open(name, attrs) {
        // scanHtml closes every element it opens, void ones at once, so the depth balances.
        if (skipped > 0 || SKIPPED.has(name)) {
          skipped++
          return
        }
        const breaks = nestedList(name) ? 1 : BLOCK_BREAKS.get(name)
        if (breaks !== undefined) block(breaks)
        if (name === 'br') {
          if (inline.trim() || pre > 0) flush()
          else if (lines.length > 0) lines.push(prefix(false).trimEnd())
          pending = 1
        } else if (name === 'hr') {
          write(['-'.repeat(40)])
          pending = 2
        } else if (name === 'pre') pre++
        else if (name === 'blockquote') quote++
        else if (HEADINGS.has(name)) upper++
        else if (name === 'ul' || name === 'ol') lists.push({ ordered: name === 'ol', next: Number.parseInt(attrs.start ?? '1', 10) || 1 })
        else if (name === 'li') {
          const list = lists.at(-1)
          marker = list?.ordered ? `${list.next++}. ` : '* '
        } else if (name === 'a') links.push({ href: attrs.href?.trim(), start: inline.length })
      },
      text(text) {
        if (skipped > 0) return
        if (pre > 0) {
          inline += upper > 0 ? text.toUpperCase() : text
          return
        }
        // White space collapses across elements too ("a <b> b</b>" reads "a b"): a space after a space is dropped.
        const afterSpace = inline === '' || inline.endsWith(' ')
        if (onlySpaces(text)) {
          if (!afterSpace) inline += ' '
          return
        }
        let t = COLLAPSIBLE.test(text) ? text.replace(SPACES, ' ') : text
        if (afterSpace && t.startsWith(' ')) t = t.slice(1)
        inline += upper > 0 ? t.toUpperCase() : t
      },
      close(name) {
        if (skipped > 0) {
          skipped--
          return
        }
        if (name === 'a') {
          const link = links.pop()
          const href = shownHref(link?.href, inline.slice(link?.start ?? 0).trim())
          if (href) inline += inline.slice(link?.start ?? 0).trim() ? ` [${href}]` : href
        }
        const breaks = lists.length > 1 && (name === 'ul' || name === 'ol') ? 1 : BLOCK_BREAKS.get(name)
        if (breaks === undefined || name === 'hr') return
        block(breaks)
        if (name === 'pre') pre = Math.max(0, pre - 1)
        else if (name === 'blockquote') quote = Math.max(0, quote - 1)
        else if (HEADINGS.has(name)) upper = Math.max(0, upper - 1)
        else if (name === 'ul' || name === 'ol') lists.pop()
        else if (name === 'li') marker = null
      },
    },
    READ_ATTRIBUTES,
  )
  flush()
  return lines
    .map((l) => l.trimEnd())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .replace(/^\n+/, '')
    .trimEnd()
}
