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
 * is reading during an update. One `pread` of the two copies costs about 1.6 µs here.
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
export type CommitCounter = () => number | null

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
  const header = new Uint8Array(HEADER_BYTES * 2)
  const view = new DataView(header.buffer)
  const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1
  return () => {
    if (client.inTransaction) return null
    if (readSync(fd, header, 0, header.length, 0) !== header.length) return null
    const first = view.getUint32(ICHANGE, littleEndian)
    return first === view.getUint32(HEADER_BYTES + ICHANGE, littleEndian) ? first : null
  }
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
