import { describe, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { rewriteRawHtml } from '../../src/modules/tracking/raw-mime'

/**
 * rewriteRawHtml on hand-written MIME: the HTML parts a reader sees get the links and the
 * image, re-encoded as UTF-8 quoted-printable; every other byte stays as the client wrote it.
 * Results are read back with mailparser, an independent MIME reader.
 */

const tracking = { pixelUrl: 'https://t.test/o/px', clickUrl: (u: string) => `https://t.test/c/${encodeURIComponent(u)}` }
const CLICK = `https://t.test/c/${encodeURIComponent('https://shop.example/order?id=7&ref=mail')}`

/** Lines joined with CRLF, as on the wire. */
const crlf = (...lines: string[]) => lines.join('\r\n')
const rewrite = (text: string, encoding: BufferEncoding = 'utf8') => rewriteRawHtml(Buffer.from(text, encoding), tracking)

const HEAD = crlf('From: Shop <orders@example.com>', 'To: ada@example.net', 'Subject: Your order', 'MIME-Version: 1.0')

/** Every line of the rewritten part ends in CRLF and is at most 76 characters (RFC 2045 section 6.7). */
function expectQpLines(part: string) {
  expect(part).not.toMatch(/\r(?!\n)|(?<!\r)\n/)
  for (const line of part.split('\r\n')) expect(line.length).toBeLessThanOrEqual(76)
  // eslint-disable-next-line no-control-regex
  expect(part).not.toMatch(/[^\x09\x0d\x0a\x20-\x7e]/)
}

describe('rewriteRawHtml', () => {
  test('a single-part quoted-printable HTML message: links, image, UTF-8 quoted-printable; the other headers as written', async () => {
    const raw = crlf(
      HEAD,
      'X-Folded: one',
      '  two',
      'Content-Type: text/html; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      '<html><body><p>Gr=C3=BC=C3=9Fe! <a href=3D"https://shop.example/order?id=3D7&amp;ref=',
      '=3Dmail">Your order</a> <a href=3D"mailto:help@example.com">help</a></p></body></html>',
      '',
    )
    const out = rewrite(raw).toString('latin1')
    const [head, body] = [out.slice(0, out.indexOf('\r\n\r\n')), out.slice(out.indexOf('\r\n\r\n') + 4)]
    expect(head).toBe(crlf(HEAD, 'X-Folded: one', '  two', 'Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: quoted-printable'))
    expectQpLines(body)

    const mail = await simpleParser(Buffer.from(out, 'latin1'))
    const html = mail.html as string
    expect(html).toContain('Grüße!')
    expect(html).toContain(`<a href="${CLICK}">Your order</a>`)
    expect(html).toContain('<a href="mailto:help@example.com">help</a>')
    expect(html).toMatch(/<img src="https:\/\/t\.test\/o\/px" width="1" height="1"[^>]*><\/body><\/html>/)
  })

  test('quoted-printable as found in the wild: a soft break with white space after it, white space added in transport, a stray "="', async () => {
    const raw = crlf(
      HEAD,
      'Content-Type: text/html; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      '<p>a=zz b <a href=3D"https://shop.ex= \t',
      'ample/">x</a>   ',
      '</p>',
    )
    const mail = await simpleParser(rewrite(raw))
    expect(mail.html).toStartWith(`<p>a=zz b <a href="https://t.test/c/${encodeURIComponent('https://shop.example/')}">x</a>\n</p>`)
  })

  test('base64 HTML inside multipart/alternative inside multipart/mixed: only that part changes; the text part and an HTML attachment stay', async () => {
    const attachmentHtml = '<a href="https://shop.example/invoice">invoice</a>'
    const htmlPart = crlf(
      'Content-Type: text/html; charset="UTF-8"',
      'Content-Transfer-Encoding: base64',
      '',
      ...Buffer.from('<p>Danke, Zoë: <a href="https://shop.example/order?id=7&amp;ref=mail">order</a></p>\n')
        .toString('base64')
        .match(/.{1,20}/g)!,
    )
    const before = crlf(
      HEAD,
      'Content-Type: multipart/mixed;',
      ' boundary="outer"',
      '',
      'This is a preamble.',
      '--outer',
      'Content-Type: multipart/alternative; boundary=inner',
      '',
      '--inner',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      'Order: https://shop.example/order?id=3D7',
      '--inner',
      '',
    )
    const after = crlf(
      '',
      '--inner--',
      '',
      '--outer',
      'Content-Type: text/html; name="invoice.html"',
      'Content-Disposition: attachment; filename="invoice.html"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from(attachmentHtml).toString('base64'),
      '--outer--',
      'An epilogue.',
      '',
    )
    const out = rewrite(before + htmlPart + after).toString('latin1')
    expect(out.startsWith(before)).toBe(true)
    expect(out.endsWith(after)).toBe(true)
    const part = out.slice(before.length, out.length - after.length)
    expect(part).toStartWith(crlf('Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: quoted-printable', ''))
    expectQpLines(part)

    const mail = await simpleParser(Buffer.from(out, 'latin1'))
    expect(mail.html).toContain(`Danke, Zoë: <a href="${CLICK}">order</a>`)
    expect(mail.html).toContain('<img src="https://t.test/o/px"')
    expect(mail.text!.trim()).toBe('Order: https://shop.example/order?id=7')
    expect(mail.attachments).toHaveLength(1)
    expect(mail.attachments[0]!.filename).toBe('invoice.html')
    expect(mail.attachments[0]!.content.toString()).toBe(attachmentHtml)
  })

  test('an ISO-8859-1 part is decoded and sent as UTF-8, its meta charset too; other parameters and the folding are kept', async () => {
    const raw = crlf(
      HEAD,
      'Content-Type: text/html;',
      ' format=flowed; charset="ISO-8859-1";',
      " name*=utf-8''r%C3%A9sum%C3%A9.html",
      'Content-Transfer-Encoding: 8bit',
      '',
      '<html><head><meta charset="iso-8859-1"></head><body><p>Caf\xe9 <a href="https://shop.example/">menu</a></p></body></html>',
      '',
    )
    const out = rewrite(raw, 'latin1').toString('latin1')
    expect(out).toContain(
      crlf(
        'Content-Type: text/html;',
        ' format=flowed;',
        " name*=utf-8''r%C3%A9sum%C3%A9.html; charset=utf-8",
        'Content-Transfer-Encoding: quoted-printable',
        '',
      ),
    )
    const mail = await simpleParser(Buffer.from(out, 'latin1'))
    expect(mail.html).toContain('<meta charset="utf-8">')
    expect(mail.html).toContain(`<p>Café <a href="https://t.test/c/${encodeURIComponent('https://shop.example/')}">menu</a></p>`)
  })

  test('windows-1252 with a http-equiv declaration, and a part without Content-Transfer-Encoding (7bit) gets one', async () => {
    const raw = crlf(
      HEAD,
      'Content-Type: text/html; charset=windows-1252',
      '',
      '<meta http-equiv="Content-Type" content="text/html; charset=windows-1252"><p>\x93quoted\x94 <a href="https://shop.example/">x</a></p>',
    )
    const out = rewrite(raw, 'latin1').toString('latin1')
    expect(out).toContain(crlf('Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: quoted-printable', ''))
    const mail = await simpleParser(Buffer.from(out, 'latin1'))
    expect(mail.html).toContain('content="text/html; charset=utf-8"')
    expect(mail.html).toContain('“quoted”')
  })

  test('a long Content-Type is folded before the new charset instead of growing past 76 characters', () => {
    const raw = crlf(HEAD, 'Content-Type: text/html; name="a-rather-long-file-name-for-an-inline-part.html"', '', '<a href="https://shop.example/">x</a>')
    expect(rewrite(raw).toString()).toContain(crlf('Content-Type: text/html; name="a-rather-long-file-name-for-an-inline-part.html";', ' charset=utf-8', ''))
  })

  // What cannot be read with certainty, and what is not a reader's HTML, goes out as written.
  const untouched: Array<[string, string, BufferEncoding?]> = [
    ['an unknown charset', crlf(HEAD, 'Content-Type: text/html; charset=x-unknown-7', '', '<a href="https://shop.example/">x</a>')],
    [
      'an unknown transfer encoding',
      crlf(HEAD, 'Content-Type: text/html', 'Content-Transfer-Encoding: x-uuencode', '', '<a href="https://shop.example/">x</a>'),
    ],
    [
      'bytes that are not UTF-8 under charset=utf-8',
      crlf(HEAD, 'Content-Type: text/html; charset=utf-8', '', '<p>\xe9</p><a href="https://shop.example/">x</a>'),
      'latin1',
    ],
    ['8-bit text that names no charset', crlf(HEAD, 'Content-Type: text/html', '', '<p>\xe9</p><a href="https://shop.example/">x</a>'), 'latin1'],
    ['two Content-Type fields', crlf(HEAD, 'Content-Type: text/html', 'Content-Type: text/plain', '', '<a href="https://shop.example/">x</a>')],
    ['text/plain', crlf(HEAD, 'Content-Type: text/plain; charset=utf-8', '', 'https://shop.example/')],
    [
      'no MIME-Version (not a MIME message, RFC 2045 section 4)',
      crlf('From: orders@example.com', 'Content-Type: text/html', '', '<a href="https://shop.example/">x</a>'),
    ],
    [
      'an HTML attachment at the top',
      crlf(HEAD, 'Content-Type: text/html', 'Content-Disposition: attachment; filename=a.html', '', '<a href="https://shop.example/">x</a>'),
    ],
    [
      'a forwarded message (message/rfc822) with HTML inside',
      crlf(
        HEAD,
        'Content-Type: multipart/mixed; boundary=b',
        '',
        '--b',
        'Content-Type: text/plain',
        '',
        'See below.',
        '--b',
        'Content-Type: message/rfc822',
        '',
        'From: x@example.org',
        'MIME-Version: 1.0',
        'Content-Type: text/html',
        '',
        '<a href="https://shop.example/">x</a>',
        '--b--',
        '',
      ),
    ],
    [
      'a multipart without a boundary parameter',
      crlf(HEAD, 'Content-Type: multipart/mixed', '', '--b', 'Content-Type: text/html', '', '<a href="https://shop.example/">x</a>', '--b--'),
    ],
  ]
  test.each(untouched)('leaves the message byte for byte: %s', (_name: string, text: string, encoding: BufferEncoding = 'utf8') => {
    const raw = Buffer.from(text, encoding)
    expect(rewriteRawHtml(raw, tracking).equals(raw)).toBe(true)
  })

  test('with clicks only, HTML without links stays as written', () => {
    const raw = Buffer.from(crlf(HEAD, 'Content-Type: text/html; charset=utf-8', '', '<p>No links</p>'))
    expect(rewriteRawHtml(raw, { clickUrl: tracking.clickUrl }).equals(raw)).toBe(true)
  })

  test('a line that only starts with the boundary is content; the part ends at the CRLF before the delimiter', async () => {
    const raw = crlf(
      HEAD,
      'Content-Type: multipart/alternative; boundary=b',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      '--bx is not a delimiter',
      '--b  ',
      'Content-Type: text/html',
      '',
      '<a href="https://shop.example/">x</a>',
      '--b--',
    )
    const out = rewrite(raw).toString()
    expect(out).toContain(crlf('--bx is not a delimiter', '--b  ', 'Content-Type: text/html; charset=utf-8'))
    // The image went in before the CRLF that belongs to the close delimiter.
    expect(out).toEndWith('/>\r\n--b--')
    const mail = await simpleParser(Buffer.from(out))
    expect(mail.text!.trim()).toBe('--bx is not a delimiter')
    expect(mail.html).toContain(`href="https://t.test/c/${encodeURIComponent('https://shop.example/')}"`)
  })
})
