import { closeSync, fdatasync, openSync } from 'node:fs'
import type { Db } from './client'
import { commitCounterOf } from './commit-counter'

/**
 * Group commit: many callers' writes share one transaction and one fsync, and the fsync runs
 * off this thread.
 *
 * With `synchronous=FULL` every COMMIT blocks the thread for the disk: 0.3-1 ms on a quiet
 * disk here, 2-50 ms when the VM's disk is busy. Paced so that the thread stayed free for
 * other work, that capped POST /api/v2/track at about 3,800 events a second with the thread
 * 40 % idle, waiting (docs/benchmarks.md, issue 16). So the group's transaction commits with
 * `synchronous=NORMAL` (SQLite writes the WAL frames to the OS, no fsync), and then the WAL
 * file is flushed with `fdatasync` on Bun's thread pool; the callers are answered after that
 * returns. Frames are appended in order, so one fdatasync makes every earlier commit durable:
 * the same guarantee as FULL (https://sqlite.org/wal.html, "Durability"), so "2xx means on
 * disk" still holds for every request. Every other transaction on the connection still
 * commits with FULL.
 *
 * A group that wrote nothing (the pollers' claims when there is no work: four a second each
 * for webhooks and automations) is answered without a flush: no transaction committed frames
 * to the WAL, which the WAL-index header's commit counter (commit-counter.ts) tells for free.
 * An idle server flushed nine times a second before (docs/benchmarks.md, ninth round).
 *
 * One flush at a time: functions queued while a group commits and syncs form the next group,
 * which commits as soon as the sync returns. So the group grows with the disk's latency and a
 * slow disk costs latency, not the thread. Each function runs inside its own SAVEPOINT, so
 * one failing write is rolled back alone and only its caller sees the error (at once: nothing
 * of it was stored).
 */
export interface GroupCommitter {
  run<T>(work: () => T): Promise<T>
}

interface Pending {
  work: () => unknown
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

/** Largest number of callers in one transaction; more wait for the next one. */
const MAX_GROUP = 500

/** Flushes a file's data to the disk off this thread; `done` gets the error, if any. */
export type SyncFile = (path: string, done: (error: Error | null) => void) => void

const syncFile: SyncFile = (path, done) => {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch (e) {
    return done(e as Error)
  }
  fdatasync(fd, (error) => {
    closeSync(fd)
    done(error)
  })
}

export function createGroupCommitter(db: Db, opts: { sync?: SyncFile } = {}): GroupCommitter {
  const client = db.$client
  const sync = opts.sync ?? syncFile
  // An in-memory database has no WAL file to flush (tests).
  const wal = client.filename && client.filename !== ':memory:' ? `${client.filename}-wal` : null
  // Null (unknown, e.g. no mapping) counts as "changed": the flush is skipped only when known to be needless.
  const commitCounter = wal ? commitCounterOf(db) : () => null
  // Prepared once: a savepoint per caller is parsed again on every use otherwise.
  const savepoint = client.prepare('SAVEPOINT group_item')
  const release = client.prepare('RELEASE group_item')
  const rollback = client.prepare('ROLLBACK TO group_item')
  // Not prepared: SQLite applies `PRAGMA synchronous = X` when the statement is compiled, so a
  // prepared one run again changes nothing (the test checks the mode inside the group).
  const deferSync = () => client.run('PRAGMA synchronous = NORMAL')
  const fullSync = () => client.run('PRAGMA synchronous = FULL')
  const queue: Pending[] = []
  let busy = false

  const settle = (committed: Array<{ p: Pending; value: unknown }>, error: Error | null) => {
    for (const { p, value } of committed)
      if (error) p.reject(error)
      else p.resolve(value)
  }

  const flush = () => {
    const group = queue.splice(0, MAX_GROUP)
    const committed: Array<{ p: Pending; value: unknown }> = []
    let failure: Error | null = null
    const before = commitCounter()
    if (wal) deferSync()
    try {
      client
        .transaction(() => {
          for (const p of group) {
            savepoint.run()
            try {
              const value = p.work()
              release.run()
              committed.push({ p, value })
            } catch (error) {
              rollback.run()
              release.run()
              p.reject(error)
            }
          }
        })
        .immediate()
    } catch (error) {
      // The COMMIT itself failed (disk full, I/O error): nothing of the group is stored.
      failure = error as Error
    } finally {
      if (wal) fullSync()
    }
    // No frame was committed since `before` (by this group or anyone): there is nothing to flush.
    const unchanged = before !== null && commitCounter() === before
    if (failure || !wal || unchanged) return finish(() => settle(committed, failure))
    sync(wal, (error) =>
      // The transaction is in the WAL but may not be on the disk: its callers get an error.
      finish(() => settle(committed, error ? new Error(`the write-ahead log could not be flushed to disk: ${error.message}`) : null)),
    )
  }

  /** Answers a flush's callers, then starts the next flush if writes are waiting. */
  const finish = (answer: () => void) => {
    busy = false
    answer()
    if (queue.length > 0) start()
  }

  const start = () => {
    if (busy) return
    busy = true
    // The next turn, so every caller of this turn joins the group.
    setImmediate(flush)
  }

  return {
    run<T>(work: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, resolve: resolve as (v: unknown) => void, reject })
        start()
      })
    },
  }
}
