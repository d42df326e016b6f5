import { describe, expect, test } from 'bun:test'
import { htmlToText } from '../../src/lib/html-text'

/** The text part generated for HTML-only sends: what a reader of the plain-text alternative sees. */
describe('htmlToText', () => {
  test.each([
    ['paragraphs are separated by a blank line, whitespace collapsed', '<p>One\n   two</p><p>Three</p>', 'One two\n\nThree'],
    ['whitespace collapses across elements', '<p>Fish <b> &amp;\n</b> <i> chips</i></p>', 'Fish & chips'],
    ['entities are decoded', '<p>Fish &amp; chips &lt;3 &euro;5&nbsp;each</p>', 'Fish & chips <3 €5 each'],
    ['head, style and script are dropped', '<html><head><title>T</title><style>p{}</style></head><body><script>x()</script><p>Body</p></body></html>', 'Body'],
    ['a link keeps its address in brackets', '<p>Read the <a href="https://example.org/guide">guide</a>.</p>', 'Read the guide [https://example.org/guide].'],
    [
      'a link whose text is its address is not repeated',
      '<a href="https://example.org">https://example.org</a> <a href="mailto:a@b.test">a@b.test</a>',
      'https://example.org a@b.test',
    ],
    ['in-page anchors and javascript: links show only their text', '<a href="#top">Top</a> <a href="javascript:void(0)">Menu</a>', 'Top Menu'],
    ['a link without text shows its address', '<a href="https://example.org/x"><img src="x.png"></a>', 'https://example.org/x'],
    ['images are dropped', '<p>Hi<img src="a.png" alt="logo"> there</p>', 'Hi there'],
    ['br breaks a line; two leave an empty one', '<p>a<br>b<br><br>c</p>', 'a\nb\n\nc'],
    ['headings are in capitals', '<h1>Welcome, Ada</h1><p>text</p>', 'WELCOME, ADA\n\ntext'],
    [
      'unordered and ordered lists, with a start and a nested list',
      '<ul><li>one</li><li>two</li></ul><ol start="3"><li>three<ul><li>inner</li></ul></li></ol>',
      '* one\n* two\n\n3. three\n  * inner',
    ],
    ['a quote is prefixed', '<p>He said:</p><blockquote><p>first</p><p>second</p></blockquote>', 'He said:\n\n> first\n>\n> second'],
    ['pre keeps its spacing', '<pre>  a  b\n    c</pre>', '  a  b\n    c'],
    ['table cells are lines of their own', '<table><tr><td>Item</td><td>€2.00</td></tr></table>', 'Item\n€2.00'],
    ['a horizontal rule is a line of dashes', '<p>a</p><hr><p>b</p>', `a\n\n${'-'.repeat(40)}\n\nb`],
    ['no markup at all', 'just text', 'just text'],
    ['unclosed markup is closed', '<p>open <b>bold', 'open bold'],
  ])('%s', (_name, html, text) => {
    expect(htmlToText(html)).toBe(text)
  })

  test('lines wrap at 78 columns on spaces; a word longer than that stays whole', () => {
    const words = 'lorem ipsum dolor sit amet '.repeat(12)
    const url = `https://example.org/${'x'.repeat(90)}`
    const out = htmlToText(`<p>${words}</p><p>see ${url} now</p>`)
    const lines = out.split('\n')
    expect(lines.filter((l) => l !== url).every((l) => l.length <= 78)).toBe(true)
    expect(lines).toContain(url)
    expect(out.replace(/\s+/g, ' ')).toBe(`${words.trim()} see ${url} now`)
  })

  test('deep nesting of quotes and lists stops indenting at 10 levels, so the text stays proportional to the HTML', () => {
    for (const unit of ['<blockquote>x', '<ul><li>x']) {
      const html = unit.repeat(4000)
      const out = htmlToText(html)
      expect(out.length).toBeLessThan(html.length * 4)
      const deepest = out.split('\n').at(-1)!
      expect(deepest.endsWith('x')).toBe(true)
      expect(deepest.length).toBeLessThanOrEqual(2 * 10 + 3 + 1)
    }
  })

  test('list items wrap under their text', () => {
    const out = htmlToText(`<ul><li>${'word '.repeat(30)}</li></ul>`)
    const [first, ...rest] = out.split('\n')
    expect(first!.startsWith('* word')).toBe(true)
    expect(rest.length).toBeGreaterThan(0)
    expect(rest.every((l) => l.startsWith('  word') && l.length <= 78)).toBe(true)
  })
})
