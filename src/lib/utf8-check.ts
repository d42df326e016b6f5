import { isUtf8 } from 'node:buffer'

/**
 * Where a UTF-8 sequence that the end of `bytes` cuts short begins (bytes.length when none
 * is): a chunk of a stream can end inside a character (RFC 3629 section 3: a lead byte says
 * how many bytes follow it).
 */
function completeLength(bytes: Uint8Array): number {
  for (let i = bytes.length - 1; i >= Math.max(0, bytes.length - 3); i--) {
    const b = bytes[i]!
    if ((b & 0xc0) === 0x80) continue // a continuation byte: look further back for its lead
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1
    return bytes.length - i < need ? i : bytes.length
  }
  return bytes.length
}

/**
 * Checks that a stream of chunks is UTF-8 without decoding it: decoding a 50 MB upload to
 * strings only to throw them away raised the server's memory by some 20 MiB more at the
 * start of an import (decision 75). `push` is false from the first chunk that cannot be
 * UTF-8; `end` is false when the stream stops inside a character.
 */
export function utf8Check() {
  let carry: Uint8Array | null = null
  return {
    push(chunk: Uint8Array): boolean {
      let bytes = chunk
      if (carry) {
        bytes = new Uint8Array(carry.length + chunk.length)
        bytes.set(carry)
        bytes.set(chunk, carry.length)
      }
      const cut = completeLength(bytes)
      carry = cut < bytes.length ? bytes.slice(cut) : null
      return isUtf8(bytes.subarray(0, cut))
    },
    end(): boolean {
      return carry === null
    },
  }
}
