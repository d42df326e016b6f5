/**
 * Worker thread body of the checkpointer (checkpointer.ts): its own connection to the
 * database file, copying committed WAL pages back into the database and syncing it, so that
 * work (and its fsyncs) never runs on the thread that serves HTTP and delivers mail.
 * Requests (worker-client.ts): { open: path } once, then 'checkpoint' or 'truncate', answered
 * with SQLite's { busy, log, checkpointed }.
 */
import { Database } from 'bun:sqlite'
import { serveRequests } from '../lib/worker-serve'

export type CheckpointRequest = { open: string } | 'checkpoint' | 'truncate'
export interface CheckpointResult {
  busy: number
  log: number
  checkpointed: number
}

let db: Database | null = null

serveRequests<CheckpointRequest, CheckpointResult | null>((req) => {
  if (typeof req === 'object') {
    db = new Database(req.open)
    db.run('PRAGMA busy_timeout = 5000')
    db.run('PRAGMA synchronous = FULL')
    return null
  }
  if (!db) throw new Error('the checkpoint worker has no database open')
  // PASSIVE never waits for readers or the writer; TRUNCATE (at shutdown) also empties the WAL file.
  const mode = req === 'truncate' ? 'TRUNCATE' : 'PASSIVE'
  return db.query(`PRAGMA wal_checkpoint(${mode})`).get() as CheckpointResult
})
