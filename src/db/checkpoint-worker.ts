/**
 * Worker thread body of the checkpointer (checkpointer.ts): its own connection to the
 * database file, copying committed WAL pages back into the database and syncing it, so that
 * work (and its fsyncs) never runs on the thread that serves HTTP and delivers mail.
 * Messages in: { path } once, then 'checkpoint' or 'truncate'; out: { done, busy, log, checkpointed } or { error }.
 */
import { Database } from 'bun:sqlite'

declare const self: Worker

let db: Database | null = null

self.onmessage = (event: MessageEvent<{ path: string } | 'checkpoint' | 'truncate'>) => {
  try {
    if (typeof event.data === 'object') {
      db = new Database(event.data.path)
      db.run('PRAGMA busy_timeout = 5000')
      db.run('PRAGMA synchronous = FULL')
      return
    }
    // PASSIVE never waits for readers or the writer; TRUNCATE (at shutdown) also empties the WAL file.
    const mode = event.data === 'truncate' ? 'TRUNCATE' : 'PASSIVE'
    const row = db!.query(`PRAGMA wal_checkpoint(${mode})`).get() as { busy: number; log: number; checkpointed: number }
    self.postMessage({ done: true, ...row })
  } catch (e) {
    self.postMessage({ error: (e as Error).message })
  }
}
