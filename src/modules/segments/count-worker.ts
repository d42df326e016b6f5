/**
 * Worker thread of the parallel segment count (count-pool.ts): its own read-only connection
 * to the database file, counting the contacts of one rowid range that match a compiled
 * segment condition. In WAL mode readers never block the writer or each other
 * (https://sqlite.org/wal.html), so two of these scan two halves of `contacts` at once.
 *
 * Messages in: one `open`, then `count`s, answered strictly in order (SQLite runs them
 * synchronously on this thread); out: `ready` or `failed` for the open, `counted` or
 * `failed` for each count.
 */
import { Database, type Statement } from 'bun:sqlite'
import type { SqlValue } from './rules'

export type CountRequest = { type: 'open'; path: string; busyTimeoutMs: number } | { type: 'count'; id: number; sql: string; params: SqlValue[] }
export type CountReply = { type: 'ready' } | { type: 'counted'; id: number; n: number } | { type: 'failed'; id: number | null; message: string }

declare const self: Worker

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

self.onmessage = (event: MessageEvent<CountRequest>) => {
  const req = event.data
  if (req.type === 'open') {
    try {
      // Read-only: this connection can never write, so it cannot take the write lock or run a
      // checkpoint; the same busy_timeout as the server's connection (src/db/client.ts) for the
      // moments SQLite needs a lock to read the WAL index.
      db = new Database(req.path, { readonly: true })
      db.run(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(req.busyTimeoutMs))}`)
      self.postMessage({ type: 'ready' } satisfies CountReply)
    } catch (e) {
      self.postMessage({ type: 'failed', id: null, message: (e as Error).message } satisfies CountReply)
    }
    return
  }
  try {
    self.postMessage({ type: 'counted', id: req.id, n: count(req.sql, req.params) } satisfies CountReply)
  } catch (e) {
    self.postMessage({ type: 'failed', id: req.id, message: (e as Error).message } satisfies CountReply)
  }
}
