import { describe, expect, test } from 'bun:test'
import { utf8Check } from '../../src/lib/utf8-check'

/** What the check says of `bytes` cut into chunks at `cuts`. */
function checkInChunks(bytes: Uint8Array, cuts: number[]): boolean {
  const check = utf8Check()
  let from = 0
  for (const at of [...cuts, bytes.length]) {
    if (!check.push(bytes.subarray(from, at))) return false
    from = at
  }
  return check.end()
}

/** The reference: a fatal TextDecoder over the whole input. */
function isUtf8ByDecoding(bytes: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    return true
  } catch {
    return false
  }
}

describe('utf8Check', () => {
  const text = new TextEncoder().encode('a,é,€,𝄞,Zoë "Smith, Jr."\n')

  test('accepts UTF-8 cut at every byte, characters of 2, 3 and 4 bytes included', () => {
    for (let at = 0; at <= text.length; at++) expect(checkInChunks(text, [at])).toBe(true)
    for (let a = 0; a <= text.length; a++) for (let b = a; b <= text.length; b++) expect(checkInChunks(text, [a, b])).toBe(true)
  })

  test('refuses a stream that ends inside a character', () => {
    const euro = new TextEncoder().encode('€')
    expect(checkInChunks(euro.subarray(0, 2), [1])).toBe(false)
    expect(checkInChunks(euro.subarray(0, 1), [])).toBe(false)
  })

  test('refuses bytes that are never UTF-8: a lone continuation, an overlong form, a surrogate, 0xFF', () => {
    for (const bad of [
      [0x61, 0x80],
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
      [0x61, 0xff, 0x61],
      [0xf8, 0x88, 0x80, 0x80, 0x80],
    ]) {
      const bytes = new Uint8Array(bad)
      for (let at = 0; at <= bytes.length; at++) expect(checkInChunks(bytes, [at])).toBe(false)
    }
  })

  test('agrees with a fatal TextDecoder on random bytes cut at random places', () => {
    // A small generator with a fixed seed: the same cases every run.
    let seed = 12345
    const next = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / (1 << 24)
    // Whole characters of 1 to 4 bytes, and now and then a byte of one cut loose or a byte UTF-8 never has.
    const pieces = ['A', ',', '\n', 'é', '€', '𝄞'].map((c) => [...new TextEncoder().encode(c)])
    const strays = [0xc3, 0xe2, 0xf0, 0x80, 0xbf, 0xff, 0xed]
    let valid = 0
    for (let n = 0; n < 3000; n++) {
      const list: number[] = []
      for (let i = 1 + Math.floor(next() * 6); i > 0; i--)
        list.push(...(next() < 0.1 ? [strays[Math.floor(next() * strays.length)]!] : pieces[Math.floor(next() * pieces.length)]!))
      const bytes = new Uint8Array(list)
      const cuts = [Math.floor(next() * (bytes.length + 1)), Math.floor(next() * (bytes.length + 1))].sort((a, b) => a - b)
      const expected = isUtf8ByDecoding(bytes)
      if (expected) valid++
      expect(checkInChunks(bytes, cuts)).toBe(expected)
    }
    // Both answers occur often enough for the comparison to mean something.
    expect(valid).toBeGreaterThan(500)
    expect(valid).toBeLessThan(2500)
  })
})
