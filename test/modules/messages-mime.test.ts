import { describe, expect, test } from 'bun:test'
import { checkMessage } from '../../src/modules/messages/compose'
import { buildMessage } from '../../src/modules/messages/mime'

/** The text/plain part of a message built from `text`: its transfer encoding and body. */
function textPartOf(text: string): { encoding: string; body: string } {
  const raw = buildMessage(checkMessage({ from: 'ada@example.com', to: ['bob@example.net'], subject: 'Hi', text }), {
    messageIdHeader: 'id@example.com',
    date: new Date('2026-03-01T12:00:00Z'),
  }).toString('latin1')
  const match = /Content-Transfer-Encoding: (\S+)\r\n\r\n([\s\S]*)\r\n$/.exec(raw)
  if (!match) throw new Error(`no text part in ${raw}`)
  return { encoding: match[1]!, body: match[2]! }
}

describe('buildMessage: a text part (RFC 2045 section 2.7)', () => {
  test('ASCII text goes as 7bit with every line break as CRLF, whichever the caller used', () => {
    expect(textPartOf('one\ntwo\n\tthree')).toEqual({ encoding: '7bit', body: 'one\r\ntwo\r\n\tthree' })
    expect(textPartOf('one\r\ntwo\rthree\nfour')).toEqual({ encoding: '7bit', body: 'one\r\ntwo\r\nthree\r\nfour' })
  })

  test.each([
    ['a letter past ASCII', 'café'],
    ['a character past the Basic Multilingual Plane', 'mail 📬'],
    ['a lone surrogate', 'x\ud800y'],
    ['a control character', 'bell\x07'],
    ['DEL', 'del\x7f'],
    ['NUL', 'nul\x00'],
    ['a form feed', 'page\x0cbreak'],
  ])('%s makes it quoted-printable', (_, text) => {
    expect(textPartOf(text).encoding).toBe('quoted-printable')
  })

  test('a line over 998 octets makes it quoted-printable, folded under 78', () => {
    const part = textPartOf(`${'a'.repeat(999)}\nshort`)
    expect(part.encoding).toBe('quoted-printable')
    expect(Math.max(...part.body.split('\r\n').map((l) => l.length))).toBeLessThanOrEqual(76)
    expect(textPartOf(`${'a'.repeat(998)}\nshort`).encoding).toBe('7bit')
  })
})
