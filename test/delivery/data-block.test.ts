import { describe, expect, test } from 'bun:test'
import DataStream from 'nodemailer/lib/smtp-connection/data-stream'
import { dataBlock } from '../../src/delivery/data-block'

/** What nodemailer's DataStream (the stream this replaces) makes of the same bytes. */
async function viaDataStream(raw: Buffer): Promise<Buffer> {
  const stream = new DataStream()
  const chunks: Buffer[] = []
  stream.on('data', (c: Buffer) => chunks.push(c))
  const ended = new Promise((resolve) => stream.on('end', resolve))
  stream.end(raw)
  await ended
  return Buffer.concat(chunks)
}

describe('dataBlock', () => {
  test.each([
    ['plain', 'Subject: x\r\n\r\nhello\r\n'],
    ['no final line ending', 'Subject: x\r\n\r\nhello'],
    ['ends in a bare CR', 'a\r'],
    ['dot lines', '.\r\n..\r\n.x\r\nmid.dle\r\n.'],
    ['bare LF and CR', 'a\nb\rc\r\n\n.\n\r.'],
    ['CR followed by a dot', 'a\r.b'],
    ['empty', ''],
    ['starts with a dot', '.hidden'],
  ])('%s: the same bytes as nodemailer DataStream', async (_, text) => {
    const raw = Buffer.from(text, 'latin1')
    expect(dataBlock(raw).toString('latin1')).toBe((await viaDataStream(raw)).toString('latin1'))
  })

  test('random bytes heavy in CR, LF and dots match too', async () => {
    let seed = 7
    const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff)
    const alphabet = [0x0d, 0x0a, 0x2e, 0x41, 0x20, 0xe9]
    for (let n = 0; n < 200; n++) {
      const raw = Buffer.from(Array.from({ length: next() % 64 }, () => alphabet[next() % alphabet.length]!))
      expect(dataBlock(raw).equals(await viaDataStream(raw))).toBe(true)
    }
  })

  test('a clean message is the message and the terminator', () => {
    expect(dataBlock(Buffer.from('a\r\n')).toString()).toBe('a\r\n.\r\n')
  })
})
