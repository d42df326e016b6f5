import { expect, test } from 'bun:test'
import { htmlToText } from '../../src/lib/html-text'
import { createTextPool } from '../../src/lib/html-text-pool'
import { memoryLogger } from '../../src/lib/logger'
import { withTextParts } from '../../src/modules/messages/service'

const samples = [
  `<html><body>${'<p>The quick brown fox jumps over the lazy dog.</p>\n'.repeat(20)}</body></html>`,
  '<h1>Receipt</h1><ul><li>One</li><li>Two <a href="https://example.com/x">link</a></li></ul><blockquote>quoted</blockquote>',
  '<table><tr><td>a</td><td>b</td></tr></table><pre>  kept\n  as is</pre><p>caf\u00e9 &amp; cr\u00e8me</p>',
  '',
]

test("the worker's text is the text made on the server's thread, for many requests at once", async () => {
  const pool = createTextPool(memoryLogger())
  try {
    const texts = await Promise.all(samples.flatMap((html) => [html, html]).map((html) => pool.toText(html)))
    expect(texts).toEqual(samples.flatMap((html) => [htmlToText(html), htmlToText(html)]))
  } finally {
    await pool.close()
  }
})

test('more texts at once than one message carries: every one answered, in order', async () => {
  const pool = createTextPool(memoryLogger())
  try {
    const htmls = Array.from({ length: 150 }, (_, i) => `<p>message ${i}</p>`)
    expect(await Promise.all(htmls.map((html) => pool.toText(html)))).toEqual(htmls.map((html) => htmlToText(html)))
  } finally {
    await pool.close()
  }
})

test('once closed, texts are made inline', async () => {
  const pool = createTextPool(memoryLogger())
  await pool.close()
  expect(await pool.toText(samples[1]!)).toBe(htmlToText(samples[1]!))
})

test('withTextParts: an HTML-only send gets the text the inline check would make; other sends are left as they are', async () => {
  const pool = createTextPool(memoryLogger())
  try {
    const htmlOnly = { from: 'a@example.com', to: ['b@example.net'], subject: 's', html: samples[1]! }
    const both = { ...htmlOnly, text: 'own text' }
    const textOnly = { from: 'a@example.com', to: ['b@example.net'], subject: 's', text: 'plain' }
    const [a, b, c] = await withTextParts({ textPool: pool }, [htmlOnly, both, textOnly])
    expect(a).toEqual({ ...htmlOnly, text: htmlToText(samples[1]!) })
    expect(b).toBe(both)
    expect(c).toBe(textOnly)
    // Without a worker (tests, the CLI) the inputs go on unchanged and checkMessage makes the text inline.
    expect((await withTextParts({}, [htmlOnly]))[0]).toBe(htmlOnly)
  } finally {
    await pool.close()
  }
})
