/**
 * How a message's bytes are kept in `messages.raw`: compressed with zstd (RFC 8878), which
 * takes an HTML mail with its text part to a fraction of its size for about 15 us, so each
 * queued message writes less to the WAL and the database file and a broadcast's database
 * grows by less per recipient (decision 59). Rows written before, and anything stored as it
 * is, stay readable: a zstd frame begins with the magic number 28 B5 2F FD, and a message
 * never does (0xB5 cannot occur in a header field name, RFC 5322 section 3.6.8).
 */

const ZSTD_MAGIC = 0xfd2fb528

/** zstd's default level (18 us for 10 KB of mail here, and decompression 3x faster than after level 1). */
const LEVEL = 3

/** Whether stored bytes are a compressed message. */
export function isPacked(stored: Uint8Array | null): boolean {
  if (!stored) return false
  return stored.byteLength >= 4 && new DataView(stored.buffer, stored.byteOffset, 4).getUint32(0, true) === ZSTD_MAGIC
}

/** The bytes to store for a message. */
export function packMessage(raw: Uint8Array): Buffer {
  return Bun.zstdCompressSync(raw, { level: LEVEL })
}

/** The message from its stored bytes (compressed or, for older rows, as they were). */
export function unpackMessage(stored: Uint8Array): Buffer {
  if (isPacked(stored)) return Bun.zstdDecompressSync(stored)
  return Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength)
}
