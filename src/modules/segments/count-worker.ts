/**
 * Worker thread of the parallel segment count (count-pool.ts): its own read-only connection
 * to the database file, counting the contacts of one rowid range that match a compiled
 * segment condition. In WAL mode readers never block the writer or each other
 * (https://sqlite.org/wal.html), so two of these scan two halves of `contacts` at once.
 *
 * Requests (worker-client.ts): one `open`, answered once the connection is open, then
 * `count`s, each answered with its count, strictly in order (SQLite runs them synchronously
 * on this thread).
 */
import { Database, type Statement } from 'bun:sqlite'
import { serveRequests } from '../../lib/worker-serve'
import type { SqlValue } from './rules'

export type CountRequest = { type: 'open'; path: string; busyTimeoutMs: number } | { type: 'count'; sql: string; params: SqlValue[] }

/** How much of the database file a count worker maps (SQLite reads the rest as before). */
export const COUNT_MMAP_BYTES = 1024 * 1024 * 1024

let db: Database | null = null
// The last statement only: a count is one statement run over several ranges in a row, and
// keeping every segment's SQL ever counted would grow without bound in a long-lived server.
let last: { sql: string; stmt: Statement<{ n: number }, SqlValue[]> } | null = null

function count(sql: string, params: SqlValue[]): number {
  if (!db) throw new Error('the count worker has no database open')
  if (last?.sql !== sql) {
    last?.stmt.finalize()
    // Cleared first: a prepare that throws must not leave the finalized statement behind.
    last = null
    last = { sql, stmt: db.prepare<{ n: number }, SqlValue[]>(sql) }
  }
  return last.stmt.get(...params)!.n
}

serveRequests<CountRequest, number>((req) => {
  if (req.type === 'open') {
    // Read-only: this connection can never write, so it cannot take the write lock or run a
    // checkpoint; the same busy_timeout as the server's connection (src/db/client.ts) for the
    // moments SQLite needs a lock to read the WAL index.
    db = new Database(req.path, { readonly: true })
    db.run(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(req.busyTimeoutMs))}`)
    // Pages read through a memory mapping instead of a read() system call and a copy each
    // (https://sqlite.org/mmap.html): a count that scans a million contacts reads ~50,000 pages.
    // Measured (decision 75): 165 -> 96 ms for the scan on one thread, 107 -> 67 ms for the
    // benchmark's count. The mapped pages are the OS's file cache, shown as file-backed RSS.
    db.run(`PRAGMA mmap_size = ${COUNT_MMAP_BYTES}`)
    return 0
  }
  return count(req.sql, req.params)
})
