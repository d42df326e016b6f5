import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { promises as nodeDns } from 'node:dns'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { normaliseLineEndings, signMessage, type DkimKey } from '../../src/delivery/dkim'
import { createSignerPool } from '../../src/delivery/signer-pool'
import { startDnsServer, type DnsServer } from '../support/dns-server'

let dns: DnsServer
let key: DkimKey
let verifyResolver: (name: string, type: string) => Promise<unknown>

const message = (eol: string) =>
  [
    'From: Sender <sender@signing.test>',
    'To: rcpt@example.test',
    'Subject: Hello   there',
    'Date: Thu, 01 Jan 2026 00:00:00 +0000',
    'Message-ID: <m1@signing.test>',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'List-Unsubscribe: <https://signing.test/u/1>',
    '',
    'line one',
    'line two with trailing spaces   ',
    '',
  ].join(eol)

/** The DKIM verdicts mailauth gives a message, checked against the harness DNS. */
async function verify(raw: Buffer) {
  const result = await dkimVerify(raw, { resolver: verifyResolver as never })
  return result.results.map((r) => ({ result: r.status.result, domain: r.signingDomain, selector: r.selector, canon: r.format, algo: r.algo }))
}

beforeAll(async () => {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 })
  key = { domain: 'signing.test', selector: 'mr1', privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() }
  const publicKey = pair.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')
  dns = await startDnsServer({ zones: { 'mr1._domainkey.signing.test': { TXT: [`v=DKIM1; k=rsa; p=${publicKey}`] } } })
  const resolver = new nodeDns.Resolver({ timeout: 1000, tries: 1 })
  resolver.setServers([dns.server])
  // Bun 1.4.5's c-ares binding returns each character-string of a TXT record as a record of
  // its own ([[s1], [s2]] where node gives [[s1, s2]]), and a 2048-bit key does not fit in one
  // 255-byte string. A DKIM key name holds one record, so its strings are joined back here.
  verifyResolver = async (name, type) => {
    const answer = await resolver.resolve(name, type)
    return type === 'TXT' ? [(answer as string[][]).flat()] : answer
  }
})
afterAll(() => dns.close())

describe('signMessage', () => {
  test('rsa-sha256 relaxed/relaxed signature that mailauth verifies against the published key', async () => {
    const signed = await signMessage(Buffer.from(message('\r\n')), key)
    expect(signed.toString().startsWith('DKIM-Signature: ')).toBe(true)
    const header = signed
      .toString()
      .split('\r\n\r\n')[0]!
      .replace(/\r\n\s+/g, ' ')
    expect(header).toMatch(/a=rsa-sha256/)
    expect(header).toMatch(/c=relaxed\/relaxed/)
    const h = /\bh=([^;]+)/.exec(header)![1]!.replace(/\s/g, '').toLowerCase().split(':')
    expect(h).toEqual(expect.arrayContaining(['from', 'to', 'subject', 'date', 'message-id', 'mime-version', 'content-type', 'list-unsubscribe']))
    expect(await verify(signed)).toEqual([{ result: 'pass', domain: 'signing.test', selector: 'mr1', canon: 'relaxed/relaxed', algo: 'rsa-sha256' }])
  })

  test('bare LF input is normalised to CRLF before signing, so the bytes on the wire verify', async () => {
    const signed = await signMessage(Buffer.from(message('\n')), key)
    expect(signed.includes('\n') && /[^\r]\n/.test(signed.toString())).toBe(false)
    expect(signed.toString().endsWith(message('\r\n'))).toBe(true)
    expect(await verify(signed)).toMatchObject([{ result: 'pass' }])
  })

  test('a changed body fails verification (the verifier is really checking)', async () => {
    const signed = await signMessage(Buffer.from(message('\r\n')), key)
    const tampered = Buffer.from(signed.toString().replace('line one', 'line 1'))
    const [verdict] = await verify(tampered)
    // mailauth's lenient mode reports a body hash mismatch as neutral, strict mode as fail.
    expect(['fail', 'neutral']).toContain(verdict!.result)
  })

  test('a bad key is an error, not an unsigned message', async () => {
    await expect(signMessage(Buffer.from(message('\r\n')), { ...key, privateKey: 'not a key' })).rejects.toThrow(/DKIM signing failed/)
  })
})

describe('normaliseLineEndings', () => {
  test.each([
    ['a\r\nb\r\n', 'a\r\nb\r\n'],
    ['a\nb\n', 'a\r\nb\r\n'],
    ['a\rb\r\n', 'a\r\nb\r\n'],
    ['a\r\n\nb', 'a\r\n\r\nb'],
  ])('%j', (input, expected) => {
    expect(normaliseLineEndings(Buffer.from(input)).toString()).toBe(expected)
  })

  test('8-bit bytes are kept', () => {
    const input = Buffer.from('caf\u00e9\n', 'utf8')
    expect(normaliseLineEndings(input).toString('utf8')).toBe('caf\u00e9\r\n')
  })
})

describe('createSignerPool', () => {
  test('signs on worker threads, round-robin, with results matching each input', async () => {
    const pool = createSignerPool({ size: 2 })
    try {
      const inputs = Array.from({ length: 6 }, (_, i) => Buffer.from(message('\n').replace('line one', `message ${i}`)))
      const signed = await Promise.all(inputs.map((raw) => pool.sign(raw, key)))
      for (let i = 0; i < inputs.length; i++) {
        expect(signed[i]!.toString()).toContain(`message ${i}`)
        expect(await verify(signed[i]!)).toMatchObject([{ result: 'pass' }])
      }
      // The caller's buffer is not detached by the transfer.
      expect(inputs[0]!.length).toBeGreaterThan(0)
    } finally {
      await pool.close()
    }
  })

  test('a thread starts with the first message its lane gets: a pool that never signs has none', async () => {
    const pool = createSignerPool({ size: 2 })
    try {
      expect(pool.stats().threads).toBe(0)
      expect(await verify(await pool.sign(Buffer.from(message('\r\n')), key))).toMatchObject([{ result: 'pass' }])
      expect(pool.stats().threads).toBe(1)
      await Promise.all([pool.sign(Buffer.from(message('\r\n')), key), pool.sign(Buffer.from(message('\r\n')), key)])
      expect(pool.stats().threads).toBe(2)
    } finally {
      await pool.close()
    }
    // Closing a pool whose threads never started is fine too.
    await createSignerPool({ size: 2 }).close()
  })

  test('a signing error comes back as a rejection; the pool keeps working', async () => {
    const pool = createSignerPool({ size: 1 })
    try {
      await expect(pool.sign(Buffer.from(message('\r\n')), { ...key, privateKey: 'nope' })).rejects.toThrow(/DKIM signing failed/)
      expect(await verify(await pool.sign(Buffer.from(message('\r\n')), key))).toMatchObject([{ result: 'pass' }])
    } finally {
      await pool.close()
    }
    await expect(pool.sign(Buffer.from('x'), key)).rejects.toThrow(/closed/)
  })

  test('each key goes to a worker once; messages of one turn travel as one batch', async () => {
    const pool = createSignerPool({ size: 1 })
    try {
      const inputs = Array.from({ length: 10 }, (_, i) => Buffer.from(message('\r\n').replace('line one', `batch ${i}`)))
      const signed = await Promise.all(inputs.map((raw) => pool.sign(raw, { ...key })))
      for (const s of signed) expect(await verify(s)).toMatchObject([{ result: 'pass' }])
      expect(pool.stats()).toEqual({ keysSent: 1, batches: 1, signed: 10, threads: 1 })
      // Later messages with the same key (a new object, the same PEM) reuse the worker's parsed key.
      await pool.sign(inputs[0]!, { ...key })
      expect(pool.stats()).toMatchObject({ keysSent: 1, batches: 2, signed: 11 })
    } finally {
      await pool.close()
    }
  })

  test('a rotated key under the same selector is a new key: the signature follows the PEM given', async () => {
    const pool = createSignerPool({ size: 1 })
    try {
      await pool.sign(Buffer.from(message('\r\n')), key)
      const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
      const [bad, good] = await Promise.all([
        pool.sign(Buffer.from(message('\r\n')), { ...key, privateKey: other }),
        pool.sign(Buffer.from(message('\r\n')), key),
      ])
      // The published key is the first one: a message signed with the other key must not verify.
      expect((await verify(bad!))[0]!.result).not.toBe('pass')
      expect(await verify(good!)).toMatchObject([{ result: 'pass' }])
      expect(pool.stats().keysSent).toBe(2)
    } finally {
      await pool.close()
    }
  })

  test('a bad key in a batch fails only its own message', async () => {
    const pool = createSignerPool({ size: 1 })
    try {
      const results = await Promise.allSettled([
        pool.sign(Buffer.from(message('\r\n')), key),
        pool.sign(Buffer.from(message('\r\n')), { ...key, privateKey: 'nope' }),
        pool.sign(Buffer.from(message('\r\n')), key),
      ])
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
      expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/DKIM signing failed/)
      expect(pool.stats().batches).toBe(1)
    } finally {
      await pool.close()
    }
  })
})
