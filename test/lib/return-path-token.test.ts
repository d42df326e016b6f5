import { describe, expect, test } from 'bun:test'
import { returnPathAddress } from '../../src/delivery/return-path'
import { makeReturnPathToken, parseReturnPathToken, tokenFromAddress } from '../../src/lib/return-path-token'

const secret = Buffer.from('mailroom-test-return-path-secret')
const other = Buffer.from('another-secret-of-another-server')
const messageId = '0195f1d2-7c3a-7b4e-9a10-2b3c4d5e6f70'
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'

describe('return-path tokens', () => {
  test.each([0, 1, 42, 255, 256, 65535, 1_000_000, 2 ** 32, Number.MAX_SAFE_INTEGER])('round trip for recipient %p', (recipientId) => {
    const token = makeReturnPathToken(secret, messageId, recipientId)
    expect(token).toMatch(/^[a-z2-7]+$/)
    expect(parseReturnPathToken(secret, token)).toEqual({ messageId, recipientId })
  })

  test('an upper-case message id comes back in canonical lower case', () => {
    const token = makeReturnPathToken(secret, messageId.toUpperCase(), 7)
    expect(parseReturnPathToken(secret, token)).toEqual({ messageId, recipientId: 7 })
  })

  test('the local part stays under 64 octets even for the largest id (RFC 5321 4.5.3.1.1)', () => {
    const address = returnPathAddress(secret, messageId, Number.MAX_SAFE_INTEGER, 'Bounces.Example.com')
    const local = address.slice(0, address.lastIndexOf('@'))
    expect(local.length).toBeLessThan(64)
    expect(address.endsWith('@bounces.example.com')).toBe(true)
    expect(local.startsWith('bounces+')).toBe(true)
  })

  test('case changes by an MTA do not matter', () => {
    const token = makeReturnPathToken(secret, messageId, 42)
    expect(parseReturnPathToken(secret, token.toUpperCase())).toEqual({ messageId, recipientId: 42 })
    const mixed = [...token].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('')
    expect(parseReturnPathToken(secret, mixed)).toEqual({ messageId, recipientId: 42 })
  })

  test('the wrong secret is refused', () => {
    expect(parseReturnPathToken(other, makeReturnPathToken(secret, messageId, 42))).toBeNull()
  })

  test('every single-character change is refused', () => {
    const token = makeReturnPathToken(secret, messageId, 42)
    for (let i = 0; i < token.length; i++) {
      for (const c of ALPHABET) {
        if (c === token[i]) continue
        const tampered = token.slice(0, i) + c + token.slice(i + 1)
        expect(parseReturnPathToken(secret, tampered)).toBeNull()
      }
    }
  })

  test('truncated, extended, empty and foreign tokens are refused', () => {
    const token = makeReturnPathToken(secret, messageId, 42)
    for (let n = 0; n < token.length; n++) expect(parseReturnPathToken(secret, token.slice(0, n))).toBeNull()
    expect(parseReturnPathToken(secret, token + 'a')).toBeNull()
    expect(parseReturnPathToken(secret, token + 'aaaaaaaa')).toBeNull()
    expect(parseReturnPathToken(secret, messageId)).toBeNull() // the unsigned form of issue 4
    expect(parseReturnPathToken(secret, token.replace(/.$/, '1'))).toBeNull()
    expect(parseReturnPathToken(secret, 'a'.repeat(500))).toBeNull()
    expect(parseReturnPathToken(Buffer.alloc(0), token)).toBeNull()
  })

  test('another recipient of the same message gets another token', () => {
    const a = makeReturnPathToken(secret, messageId, 1)
    const b = makeReturnPathToken(secret, messageId, 2)
    expect(a).not.toBe(b)
    // Splicing the recipient part of one token into the other breaks the MAC.
    expect(parseReturnPathToken(secret, a.slice(0, 30) + b.slice(30))).toBeNull()
  })

  test('invalid inputs are programming errors', () => {
    expect(() => makeReturnPathToken(secret, 'not-a-uuid', 1)).toThrow(TypeError)
    expect(() => makeReturnPathToken(secret, messageId, -1)).toThrow(TypeError)
    expect(() => makeReturnPathToken(secret, messageId, 1.5)).toThrow(TypeError)
    expect(() => makeReturnPathToken(secret, messageId, 2 ** 53)).toThrow(TypeError)
    expect(() => makeReturnPathToken(Buffer.alloc(0), messageId, 1)).toThrow(TypeError)
  })
})

describe('tokenFromAddress', () => {
  const token = makeReturnPathToken(secret, messageId, 42)
  test.each([
    [`bounces+${token}@bounces.example.com`, token],
    [`<bounces+${token}@bounces.example.com>`, token],
    [` <BOUNCES+${token.toUpperCase()}@Bounces.Example.com> `, token],
    [`"bounces+${token}"@bounces.example.com`, token],
    [`bounces+${messageId}@bounces.example.com`, messageId],
    ['bounces@bounces.example.com', null],
    ['bounces+@bounces.example.com', null],
    ['news@example.com', null],
    ['bounces+abc@', 'abc'],
    ['bounces+has space@example.com', null],
    ['', null],
    ['@example.com', null],
  ])('%p', (address, expected) => {
    expect(tokenFromAddress(address)).toBe(expected)
  })
})
