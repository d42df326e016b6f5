import { dlopen, FFIType, toArrayBuffer } from 'bun:ffi'
import type { Database } from 'bun:sqlite'
import { openSync, readSync } from 'node:fs'
import type { Db } from './client'
import { preparedFor } from './prepared'

/**
 * A number that changes whenever a transaction commits to the database, on any connection of
 * any process; null when it cannot be known, which callers treat as "changed".
 *
 * Why: in WAL mode every read SQLite answers starts a read transaction, which takes and drops
 * a lock on the database file and checks it (two `fcntl` and an `fstat` here): about 4.5 µs
 * for a one-row read on this machine against 0.3 µs for the same read in memory, and two such
 * reads were a third of an authenticated GET's server time (issue 18). A cache that asks "has
 * anything committed since?" before each use needs an answer that costs less than the read.
 *
 * How: SQLite keeps the WAL-index header at the start of the `-shm` file, shared by every
 * connection, and a writer increments its `iChange` counter in every commit before the commit
 * is visible to any new reader (https://www.sqlite.org/walformat.html, "The WAL-Index Header":
 * "iChange: Unsigned integer counter, incremented with each transaction"). The header is kept
 * twice; a writer updates the second copy, then the first, and a reader that sees them differ
 * is reading during an update.
 *
 * The header is read from a read-only shared mapping of the file's first page: 2 ns a read,
 * where one `pread` of it costs 1.5 µs on this machine (a system call here costs more than
 * the SQLite read the counter saves), and the `pread`s were a fifth of the server thread's
 * profile under the HTTP benchmark (docs/benchmarks.md, issue 18). The mapping is made with
 * libc's `mmap` through bun:ffi on our own descriptor, because `Bun.mmap` opens and closes a
 * descriptor of its own (see below); where libc cannot be loaded the header is read with
 * `pread`. A mapping past the end of a file faults, but SQLite truncates the -shm file only
 * when it opens it with no other connection in any process holding it (its "DMS" lock), and
 * the counter is read only while its handle is open (`inTransaction` throws once closed).
 *
 * The file descriptor is opened once and never closed. POSIX advisory locks belong to the
 * process, and closing any descriptor of a file drops all of the process's locks on it
 * (https://www.sqlite.org/howtocorrupt.html, section 2.2): closing ours would drop SQLite's
 * locks on the `-shm` file, and another process would then reset the WAL index under this
 * one's connection. (`Bun.mmap` closes its descriptor after mapping; it did exactly that.)
 *
 * Inside a transaction of the caller's own connection the counter is null: what a read sees
 * there may still be rolled back, so it must not be kept.
 */
export type CommitCounter = (() => number | null) & { readonly via?: 'mapping' | 'pread' }

/** The header's two copies are 48 bytes each; iChange is the third 32-bit word of a copy (native byte order). */
const HEADER_BYTES = 48
const ICHANGE = 8

const unknown: CommitCounter = () => null

/** The commit counter of an open database, made once per handle; always null in memory or outside WAL. */
export const commitCounterOf = preparedFor((db: Db): CommitCounter => openCounter(db.$client))

function openCounter(client: Database): CommitCounter {
  const file = client.filename
  if (!file || file === ':memory:') return unknown
  const mode = (client.query('PRAGMA journal_mode').get() as { journal_mode?: string } | null)?.journal_mode
  if (String(mode).toLowerCase() !== 'wal') return unknown
  let fd: number
  try {
    // The pragma above read the database, so the -shm file exists and holds an initialised header.
    fd = openSync(`${file}-shm`, 'r')
  } catch {
    return unknown
  }
  const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1
  /** iChange when the header's two copies agree; null while a writer is between them. */
  const countIn = (header: DataView) => {
    const first = header.getUint32(ICHANGE, littleEndian)
    return first === header.getUint32(HEADER_BYTES + ICHANGE, littleEndian) ? first : null
  }
  const mapped = mapHeader(fd)
  if (mapped) return Object.assign(() => (client.inTransaction ? null : countIn(mapped)), { via: 'mapping' as const })
  const bytes = new Uint8Array(HEADER_BYTES * 2)
  const copy = new DataView(bytes.buffer)
  const read = () => {
    if (client.inTransaction) return null
    return readSync(fd, bytes, 0, bytes.length, 0) === bytes.length ? countIn(copy) : null
  }
  return Object.assign(read, { via: 'pread' as const })
}

/** The C library, where `mmap` is (null where it cannot be loaded: the counter then reads with pread). */
const LIBC = process.platform === 'linux' ? 'libc.so.6' : process.platform === 'darwin' ? '/usr/lib/libSystem.B.dylib' : null
/** PROT_READ and MAP_SHARED: 1 on Linux and macOS alike. */
const PROT_READ = 1
const MAP_SHARED = 1

let libc: { mmap: (addr: null, length: number, prot: number, flags: number, fd: number, offset: number) => unknown } | null | undefined

/** The header's bytes, mapped read-only and shared (never unmapped, like the descriptor), or null. */
function mapHeader(fd: number): DataView | null {
  if (libc === undefined) {
    try {
      libc = LIBC
        ? (dlopen(LIBC, { mmap: { args: [FFIType.ptr, FFIType.u64, FFIType.i32, FFIType.i32, FFIType.i32, FFIType.i64], returns: FFIType.ptr } })
            .symbols as NonNullable<typeof libc>)
        : null
    } catch {
      libc = null
    }
  }
  if (!libc) return null
  const address = libc.mmap(null, HEADER_BYTES * 2, PROT_READ, MAP_SHARED, fd, 0)
  // MAP_FAILED is (void *) -1, which does not fit a safe integer; a null pointer comes back as null.
  if (typeof address !== 'number' || address <= 0 || address > Number.MAX_SAFE_INTEGER) return null
  return new DataView(toArrayBuffer(address as Parameters<typeof toArrayBuffer>[0], 0, HEADER_BYTES * 2))
}

/**
 * Reads kept while nothing commits: `read(key, load)` answers a value `load` gave for the same
 * key since the last commit to the database, or calls `load`. For reads whose answer depends
 * on the database alone (not on the clock), on hot request paths. Values are shared between
 * callers, so they must not be changed; at most `maxEntries` are kept, and all are dropped at
 * the first commit seen.
 */
export function createReadCache<V>(db: Db, maxEntries = 1024): (key: string | number, load: () => V) => V {
  const commits = commitCounterOf(db)
  const values = new Map<string | number, V>()
  let filledAt: number | null = null
  return (key, load) => {
    // Read before loading: a commit that lands during the load shows as a change next time.
    const count = commits()
    if (count === null) return load()
    if (count !== filledAt) {
      values.clear()
      filledAt = count
    } else if (values.has(key)) {
      return values.get(key)!
    }
    const value = load()
    if (values.size < maxEntries) values.set(key, value)
    return value
  }
}
