import { describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { classifyInbound, type InboundReport } from '../../../src/smtp/reports'
import { bounceEnvelope, fixture, FIXTURES, SECRET, TOKENS } from './support'

const KINDS = ['dsn', 'arf', 'dmarc', 'unknown']

/** Deterministic pseudo-random numbers (a linear congruential generator) for the mutations. */
function rng(seed: number): () => number {
  let x = seed >>> 0
  return () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    return x / 2 ** 32
  }
}

describe('classifyInbound chooses the parser by structure', () => {
  test.each([
    ['postfix-hard.eml', 'dsn'],
    ['postfix-delayed.eml', 'dsn'],
    ['office365-ndr.eml', 'dsn'],
    ['gmail.eml', 'dsn'],
    ['sendmail.eml', 'dsn'],
    ['qmail.eml', 'dsn'],
    ['yahoo-plain.eml', 'dsn'],
    ['exchange-legacy.eml', 'dsn'],
    ['yahoo-arf.eml', 'arf'],
    ['aol-arf.eml', 'arf'],
    ['microsoft-jmrp.eml', 'arf'],
    ['dmarc-google.eml', 'dmarc'],
    ['dmarc-microsoft.eml', 'dmarc'],
    ['dmarc-yahoo.eml', 'dmarc'],
  ])('%s -> %s', async (name, kind) => {
    expect((await classifyInbound(fixture(name), { mailFrom: '', rcptTo: [] })).kind).toBe(kind as InboundReport['kind'])
  })

  test('of several recipients, the one with a token is taken as the bounce address', async () => {
    const t = TOKENS.qmail!
    const raw = fixture('qmail.eml')
      .toString()
      .replace(/^To: bounces\+\S+$/m, 'To: postmaster@example.com')
    const noCopy = raw.slice(0, raw.indexOf('--- Below this line'))
    const report = await classifyInbound(
      Buffer.from(noCopy),
      { mailFrom: '<>', rcptTo: ['abuse@example.com', `bounces+${t.token}@bounces.example.com`] },
      { secret: SECRET },
    )
    expect(report.kind === 'dsn' && report.returnPath).toEqual({ messageId: t.messageId, recipientId: t.recipientId })
  })
})

describe('malformed and hostile input never throws', () => {
  test.each([
    ['truncated.eml', /report-type=delivery-status and nothing readable/],
    ['no-boundary.eml', /report-type=delivery-status and nothing readable/],
    ['garbage.bin', /not a bounce/],
    ['nested-rfc822.eml', /not a bounce/],
    ['dmarc-zip-bomb.eml', /decompresses to more than/],
    ['xml-entity-bomb.eml', /DOCTYPE/],
  ])('%s -> unknown', async (name, reason) => {
    const report = await classifyInbound(fixture(name), bounceEnvelope(TOKENS.postfixHard!.token), { secret: SECRET })
    expect(report.kind).toBe('unknown')
    if (report.kind === 'unknown') expect(report.reason).toMatch(reason)
  })

  test('a 10 MB junk body under bounce headers', async () => {
    const next = rng(7)
    const junk = Buffer.alloc(10 * 1024 * 1024)
    // Printable junk in lines, with things that look like addresses and codes sprinkled in.
    for (let i = 0; i < junk.length; i++) junk[i] = i % 77 === 76 ? 10 : 33 + Math.floor(next() * 90)
    junk.write(' someone@example.org 550 5.1.1 ', 4096, 'latin1')
    const head = Buffer.from(
      `From: MAILER-DAEMON@mx.example.org\r\nTo: bounces+x@bounces.example.com\r\nSubject: Undelivered Mail Returned to Sender\r\nContent-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n`,
    )
    const report = await classifyInbound(Buffer.concat([head, junk]), bounceEnvelope('x'))
    expect(KINDS).toContain(report.kind)
    // Also past the size limit: only the first bytes are parsed.
    const cut = await classifyInbound(Buffer.concat([head, junk]), bounceEnvelope('x'), { maxBytes: 64 * 1024 })
    expect(KINDS).toContain(cut.kind)
  })

  test('a 10 MB body of binary garbage', async () => {
    const next = rng(11)
    const junk = Buffer.alloc(10 * 1024 * 1024)
    for (let i = 0; i < junk.length; i++) junk[i] = Math.floor(next() * 256)
    expect((await classifyInbound(junk, { mailFrom: '', rcptTo: [] })).kind).toBe('unknown')
  })

  test('empty, non-buffer input and a broken envelope', async () => {
    expect((await classifyInbound(Buffer.alloc(0), { mailFrom: '', rcptTo: [] })).kind).toBe('unknown')
    expect((await classifyInbound('text' as unknown as Buffer, { mailFrom: '', rcptTo: [] })).kind).toBe('unknown')
    const broken = { mailFrom: undefined, rcptTo: undefined } as unknown as { mailFrom: string; rcptTo: string[] }
    expect((await classifyInbound(fixture('postfix-hard.eml'), broken)).kind).toBe('dsn')
    expect((await classifyInbound(fixture('postfix-hard.eml'), null as never)).kind).toBe('dsn')
  })

  test('a message cut at the size limit still yields its report parts (they come first)', async () => {
    const raw = fixture('postfix-hard.eml')
    const report = await classifyInbound(raw, bounceEnvelope(TOKENS.postfixHard!.token), { maxBytes: raw.indexOf('Content-Description: Undelivered Message') })
    expect(report.kind).toBe('dsn')
    if (report.kind === 'dsn') expect(report.recipients[0]?.recipient).toBe('bob@example.org')
  })

  test('truncations and byte flips of every fixture', async () => {
    const names = readdirSync(FIXTURES).filter((n) => n.endsWith('.eml') && !n.includes('bomb'))
    const next = rng(2026)
    for (const name of names) {
      const raw = fixture(name)
      for (let k = 0; k < 6; k++) {
        const cut = raw.subarray(0, Math.floor(next() * raw.length))
        const flipped = Buffer.from(raw)
        for (let j = 0; j < 20; j++) flipped[Math.floor(next() * flipped.length)] = Math.floor(next() * 256)
        for (const input of [cut, flipped]) {
          const report = await classifyInbound(input, bounceEnvelope('x'), { secret: SECRET })
          expect(KINDS).toContain(report.kind)
        }
      }
    }
  })
})
