import { describe, expect, test } from 'bun:test'
import { createSecretBox, generateSecretKey, isSealed, parseSecretKey, SecretKeyError, sealedKeyId } from '../../src/lib/secret-box'

describe('secret box', () => {
  const key = generateSecretKey()
  const box = createSecretBox(key)

  test('seals to the versioned form and opens back; each seal takes a fresh nonce', () => {
    const a = box.seal('hunter2 ✓')
    const b = box.seal('hunter2 ✓')
    expect(a).toMatch(/^enc:v1:[A-Za-z0-9_-]{11}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$/)
    expect(a).not.toBe(b)
    expect(a).not.toContain('hunter2')
    expect(box.open(a)).toBe('hunter2 ✓')
    expect(sealedKeyId(a)).toBe(box.keyId)
    expect(box.isCurrent(a)).toBe(true)
  })

  test('plaintext (written before encryption existed) passes through and is not current', () => {
    expect(isSealed('whsec_abc')).toBe(false)
    expect(box.open('whsec_abc')).toBe('whsec_abc')
    expect(box.isCurrent('whsec_abc')).toBe(false)
  })

  test('another key is named in the error; an altered value does not open', () => {
    const other = createSecretBox(generateSecretKey())
    const sealed = other.seal('x')
    expect(() => box.open(sealed)).toThrow(SecretKeyError)
    expect(() => box.open(sealed)).toThrow(`sealed with key ${other.keyId}, but the key in use is ${box.keyId}`)
    const s = box.seal('payload')
    const last = s.at(-2) === 'A' ? 'B' : 'A'
    expect(() => box.open(s.slice(0, -2) + last + s.at(-1))).toThrow(/does not open/)
  })

  test('a box with older keys opens their values and seals under the primary', () => {
    const next = createSecretBox(generateSecretKey(), [key])
    const old = box.seal('rotating')
    expect(next.open(old)).toBe('rotating')
    expect(next.isCurrent(old)).toBe(false)
    expect(sealedKeyId(next.seal('rotating'))).toBe(next.keyId)
  })

  test('keys are base64 of 32 bytes', () => {
    expect(parseSecretKey(key.toString('base64') + '\n', 'k').equals(key)).toBe(true)
    expect(parseSecretKey(key.toString('base64url'), 'k').equals(key)).toBe(true)
    expect(() => parseSecretKey('c2hvcnQ=', 'MAILROOM_SECRET_KEY')).toThrow('MAILROOM_SECRET_KEY: expected the base64 form of 32 random bytes')
  })
})
