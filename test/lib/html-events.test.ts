import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Parser } from 'htmlparser2'
import { scanHtml } from '../../src/lib/html-events'

/** The events as one list: ["open", name, attrs] / ["text", text] / ["close", name], adjacent texts joined. */
type Event = ['open', string, Record<string, string>] | ['text', string] | ['close', string]

function collect(run: (on: { open(n: string, a: Record<string, string>): void; text(t: string): void; close(n: string): void }) => void): Event[] {
  const events: Event[] = []
  run({
    open: (name, attrs) => events.push(['open', name, { ...attrs }]),
    text: (text) => {
      const last = events.at(-1)
      if (last?.[0] === 'text') last[1] += text
      else events.push(['text', text])
    },
    close: (name) => events.push(['close', name]),
  })
  return events
}

const ours = (html: string) => collect((on) => scanHtml(html, on))
/** What the scanner replaced: htmlparser2's Parser in HTML mode, as html-text.ts used it. */
const reference = (html: string) =>
  collect((on) => {
    const parser = new Parser(
      { onopentag: (n, a) => on.open(n, a), ontext: (t) => on.text(t), onclosetag: (n) => on.close(n) },
      { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
    )
    parser.write(html)
    parser.end()
  })

/** A responsive newsletter as email builders write them: conditional comments, nested tables, a preheader, buttons. */
const NEWSLETTER = `<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:v="urn:schemas-microsoft-com:vml" lang="en">
<head>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8" /><meta name="viewport" content="width=device-width, initial-scale=1.0" />
<title>November news &amp; offers</title>
<!--[if mso]><xml><o:OfficeDocumentSettings><o:PixelsPerInch>96</o:PixelsPerInch></o:OfficeDocumentSettings></xml><![endif]-->
<style type="text/css">body { margin: 0 } @media (max-width: 600px) { .col > td { display: block !important } } a[x-apple-data-detectors] { color: inherit }</style>
</head>
<body style="margin:0;padding:0;background:#f4f4f4">
<div style="display:none;max-height:0;overflow:hidden">Our biggest sale of the year starts now&nbsp;&zwnj;&nbsp;&zwnj;&#8203;&#8203;</div>
<center><table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"><tr><td align="center">
<!--[if (gte mso 9)|(IE)]><table width="600" align="center"><tr><td><![endif]-->
<table class="container" width="600" style="max-width:600px"><tbody>
<tr><td class="header" style="padding:24px"><a href="https://shop.example/?utm_source=news&utm_medium=email"><img src="https://shop.example/logo.png" width="120" alt="Shop" style="display:block" border=0></a></td></tr>
<tr class="col"><td><h1 style="font-size:28px">Hello, Ada!</h1><p>Everything in the <b>autumn</b> range is <em>30&nbsp;% off</em> until Sunday.<br>Shipping is free over &euro;50.</p>
<table role="presentation"><tr><td bgcolor="#0a66c2" style="border-radius:4px"><a href="https://shop.example/sale" target="_blank" style="color:#fff;padding:12px 24px;display:inline-block">Shop the sale &rarr;</a></td></tr></table>
<ul><li>Wool coats<li>Boots &amp; bags</li><li>Gift cards</ul></td>
<td width="200"><img src="https://shop.example/coat.jpg" alt="A coat"></td></tr>
<tr><td class="footer" style="font-size:12px;color:#666">You get this because you subscribed at shop.example.<br/>
<a href="https://mail.example/u/abc123">Unsubscribe</a> | <a href="https://mail.example/p/abc123">Preferences</a><br>
Shop Ltd, 1 High St, London &middot; &copy; 2026</td></tr>
</tbody></table>
<!--[if (gte mso 9)|(IE)]></td></tr></table><![endif]-->
</td></tr></table></center>
<img src="https://mail.example/o/abc123.gif" width="1" height="1" alt="">
</body>
</html>`

describe('scanHtml', () => {
  test.each([
    ['text and entities', 'Fish &amp; chips &lt;3 &euro;5&nbsp;each &copy 2026 &#x41;&#66;'],
    ['a < that starts no tag is text', 'a < b, 1 <2, <3 and <> and trailing <'],
    [
      'attributes: quoted, unquoted, bare, duplicated, entities, > inside quotes',
      `<a HREF="x?a=1&amp;b=2" title='it > is' data-x=y disabled href=second>t</a>`,
    ],
    [
      'comments, conditional comments, doctype, processing instruction, CDATA',
      '<!DOCTYPE html><!-- c --><!--[if mso]><table><![endif]--><?xml x?><![CDATA[x]]><!-->a<!--->b',
    ],
    [
      'implied closes: p, li, td, tr, dd, option',
      '<p>one<p>two<div>three</div><ul><li>a<li>b</ul><table><tr><td>1<td>2<tr><th>3</table><dl><dt>t<dd>d</dl><select><option>a<option>b</select>',
    ],
    ['void elements and self-closing tags', '<p>a<br>b<br/>c<hr><img src=x alt="y"/><input value=v><div/>inside</p>'],
    ['stray close tags: </p>, </br>, an unopened element', '</p>a</br>b</span>c</div>'],
    ['a close tag closes what was opened after its element', '<div><b><i>x</div>y'],
    [
      'raw text: script, style, xmp, title, textarea',
      '<script>if (a < b) { x = "</scr" + "ipt>" }</script><style>p > a { }</style><xmp><b>&amp;</b></xmp><title>A &amp; B</title><textarea><b>&lt;</b></textarea>',
    ],
    ['raw text close tag in another case, and unclosed at the end', '<SCRIPT>x</Script >after<style>never closed'],
    ['svg self-closing elements close inside svg only', '<svg><path d="M0"/><g/></svg><span/>text'],
    ['upper-case names, white space in tags', '<P CLASS = "a" >x</P ><BR\n/>'],
    [
      'odd attributes: a name starting with =, empty values, a quoted name, repeated in another case',
      `<p =x a= b=>y</p><p "q"=1 A=1 a=2>z</p><a href='x'y=2>w</a>`,
    ],
    ['unfinished close tag at the end', 'text</p'],
    ['an unfinished comment runs to the end', 'a<!-- never closed <p>b'],
  ])('%s: the events htmlparser2 gives', (_name, html) => {
    expect(ours(html)).toEqual(reference(html))
  })

  test('with a set of attribute names, only those are reported; the events are otherwise the same', () => {
    const keep = new Set(['href', 'start'])
    const filtered = collect((on) => scanHtml(NEWSLETTER, on, keep))
    const expected = reference(NEWSLETTER).map((e) =>
      e[0] === 'open' ? (['open', e[1], Object.fromEntries(Object.entries(e[2]).filter(([k]) => keep.has(k)))] as Event) : e,
    )
    expect(filtered).toEqual(expected)
    expect(filtered.some((e) => e[0] === 'open' && e[2].href)).toBe(true)
  })

  test('an unfinished tag at the end is dropped whole (htmlparser2 closes an element it never opened)', () => {
    expect(ours('text<a href="x')).toEqual([['text', 'text']])
    expect(reference('text<a href="x')).toEqual([
      ['text', 'text'],
      ['close', 'a'],
    ])
  })

  test('a newsletter template and the HTML parts of the bounce corpus give the same events', () => {
    const dir = join(import.meta.dir, '../fixtures/reports/corpus')
    const parts = readdirSync(dir)
      .map((f) => readFileSync(join(dir, f), 'latin1'))
      .flatMap((eml) => [...eml.matchAll(/<html[\s\S]*?<\/html>/gi)].map((m) => m[0]))
    expect(parts.length).toBeGreaterThanOrEqual(2)
    for (const html of [NEWSLETTER, ...parts]) expect(ours(html)).toEqual(reference(html))
  })

  test('random documents of mail markup give the same events (seeded, 3,000 documents)', () => {
    const pieces = [
      '<p>',
      '</p>',
      '<div class="x">',
      '</div>',
      '<table>',
      '<tr>',
      '<td>',
      '</td>',
      '</tr>',
      '</table>',
      '<ul>',
      '<ol start="3">',
      '<li>',
      '</li>',
      '</ul>',
      '</ol>',
      '<a href="https://example.org/?a=1&amp;b=2">',
      '</a>',
      '<br>',
      '<br/>',
      '<hr>',
      '<img src="x.png">',
      '<h1>',
      '</h1>',
      '<blockquote>',
      '</blockquote>',
      '<pre>',
      '</pre>',
      '<b>',
      '</b>',
      '<span style="color:red">',
      '</span>',
      '<!-- note -->',
      '<style>p{}</style>',
      '<head>',
      '</head>',
      '<body>',
      '</body>',
      'Hello',
      ' world ',
      '\n',
      '  ',
      '&amp;',
      '&nbsp;',
      '&#8203;',
      'a < b',
      'x>y',
      '&copy',
      'Ünïcode',
      '<svg><rect/></svg>',
      '<dl>',
      '<dt>',
      '<dd>',
      '</dl>',
      '<textarea>',
      '</textarea>',
      '<select>',
      '<option>',
      '</select>',
      '</br>',
      '<P>',
      '</P>',
      '<tbody>',
      '<tfoot>',
      '<th>',
      '<!DOCTYPE html>',
    ]
    let seed = 42
    const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed / 0x7fffffff)
    for (let d = 0; d < 3000; d++) {
      let html = ''
      const length = 1 + Math.floor(random() * 40)
      for (let i = 0; i < length; i++) html += pieces[Math.floor(random() * pieces.length)]
      expect({ html, events: ours(html) }).toEqual({ html, events: reference(html) })
    }
  })
})
