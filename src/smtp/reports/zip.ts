/**
 * Decompression of report attachments with hard output limits: gzip (RFC 1952) and a
 * minimal ZIP reader (PKWARE APPNOTE 6.3: end of central directory, central directory,
 * local header; methods 0 stored and 8 deflate only; no ZIP64, no encryption).
 *
 * Zip bombs: the sizes a ZIP declares are checked first, and inflation itself stops at the
 * limit (zlib's maxOutputLength), because declared sizes can lie.
 */
import zlib from 'node:zlib'

export class ArchiveError extends Error {}

/** Default most bytes one report may decompress to. */
export const MAX_DECOMPRESSED = 20 * 1024 * 1024
const MAX_ENTRIES = 64

function inflateLimited(fn: (b: Buffer, o: zlib.ZlibOptions) => Buffer, data: Buffer, limit: number, what: string): Buffer {
  try {
    return fn(data, { maxOutputLength: limit })
  } catch (e) {
    const code = (e as { code?: string }).code
    if (code === 'ERR_BUFFER_TOO_LARGE' || e instanceof RangeError) throw new ArchiveError(`${what} decompresses to more than ${limit} bytes`)
    throw new ArchiveError(`${what} is corrupt: ${(e as Error).message}`)
  }
}

/** Gunzips with an output limit; ArchiveError when over it or corrupt. */
export function gunzipLimited(data: Buffer, limit = MAX_DECOMPRESSED): Buffer {
  return inflateLimited(zlib.gunzipSync, data, limit, 'gzip data')
}

export interface ZipEntry {
  name: string
  data: Buffer
}

/**
 * Extracts the first file entry accepted by `pick` (all files when pick is omitted, first
 * wins) from a ZIP archive, with an output limit; ArchiveError on anything unsupported.
 */
export function unzipFirst(buf: Buffer, pick: (name: string) => boolean = () => true, limit = MAX_DECOMPRESSED): ZipEntry | null {
  // End of central directory record: 22 bytes plus a comment of at most 65535 bytes, at the end.
  const floor = Math.max(0, buf.length - 22 - 0xffff)
  let eocd = -1
  for (let p = buf.length - 22; p >= floor; p--) {
    if (buf.readUInt32LE(p) === 0x06054b50) {
      eocd = p
      break
    }
  }
  if (eocd < 0) throw new ArchiveError('zip: no end of central directory')
  const entries = buf.readUInt16LE(eocd + 10)
  const cdSize = buf.readUInt32LE(eocd + 12)
  const cdOffset = buf.readUInt32LE(eocd + 16)
  if (cdOffset === 0xffffffff || entries === 0xffff) throw new ArchiveError('zip: ZIP64 is not supported')
  if (cdOffset + cdSize > eocd) throw new ArchiveError('zip: central directory out of bounds')
  let p = cdOffset
  for (let n = 0; n < Math.min(entries, MAX_ENTRIES); n++) {
    if (p + 46 > eocd || buf.readUInt32LE(p) !== 0x02014b50) throw new ArchiveError('zip: bad central directory entry')
    const flags = buf.readUInt16LE(p + 8)
    const method = buf.readUInt16LE(p + 10)
    const crc = buf.readUInt32LE(p + 16)
    const compressed = buf.readUInt32LE(p + 20)
    const size = buf.readUInt32LE(p + 24)
    const nameLen = buf.readUInt16LE(p + 28)
    const extraLen = buf.readUInt16LE(p + 30)
    const commentLen = buf.readUInt16LE(p + 32)
    const local = buf.readUInt32LE(p + 42)
    const name = buf.subarray(p + 46, p + 46 + nameLen).toString('utf8')
    p += 46 + nameLen + extraLen + commentLen
    if (name.endsWith('/') || !pick(name)) continue
    if (flags & 1) throw new ArchiveError('zip: encrypted entries are not supported')
    if (compressed === 0xffffffff || size === 0xffffffff) throw new ArchiveError('zip: ZIP64 is not supported')
    if (size > limit) throw new ArchiveError(`zip: ${name} declares ${size} bytes, more than ${limit}`)
    if (local + 30 > buf.length || buf.readUInt32LE(local) !== 0x04034b50) throw new ArchiveError('zip: bad local header')
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28)
    if (start + compressed > buf.length) throw new ArchiveError('zip: entry data out of bounds')
    const raw = buf.subarray(start, start + compressed)
    let data: Buffer
    if (method === 0) data = raw
    else if (method === 8) data = inflateLimited(zlib.inflateRawSync, raw, limit, `zip entry ${name}`)
    else throw new ArchiveError(`zip: compression method ${method} is not supported`)
    if (data.length !== size) throw new ArchiveError(`zip: ${name} size mismatch`)
    if (typeof zlib.crc32 === 'function' && zlib.crc32(data) >>> 0 !== crc) throw new ArchiveError(`zip: ${name} CRC mismatch`)
    return { name, data }
  }
  return null
}
