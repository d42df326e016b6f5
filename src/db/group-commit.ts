import type { Db } from './client'

/**
 * Group commit: many callers' writes share one transaction and so one fsync.
 *
 * With `synchronous=FULL` every COMMIT waits for the disk (about 1-4 ms here), which would
 * cap the send API at a few hundred requests a second if each request committed alone.
 * Instead each caller hands in a function; the functions queued during one turn of the event
 * loop run in one IMMEDIATE transaction, each inside its own SAVEPOINT so that one failing
 * write is rolled back alone and only its caller sees the error. A caller's promise settles
 * after the COMMIT returned, so "2xx means on disk" still holds for every request.
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
/**
 * Pacing. A COMMIT with synchronous=FULL blocks this thread for the fsync: 0.3-1 ms on a
 * quiet disk here, but 2-50 ms when the VM's disk is busy (measured on the delivery path).
 * Committing on every event-loop turn would then spend the thread waiting for the disk. So
 * the next commit waits at least MIN_INTERVAL_MS, and at least PACE times as long as the last
 * commit took: when the disk slows down, each fsync carries more writes and the thread stays
 * free for at least two thirds of the time. The price is that much added latency per write.
 */
const MIN_INTERVAL_MS = 4
const PACE = 2
const MAX_INTERVAL_MS = 100

export function createGroupCommitter(db: Db): GroupCommitter {
  const client = db.$client
  // Prepared once: a savepoint per caller is parsed again on every use otherwise.
  const savepoint = client.prepare('SAVEPOINT group_item')
  const release = client.prepare('RELEASE group_item')
  const rollback = client.prepare('ROLLBACK TO group_item')
  const queue: Pending[] = []
  let scheduled = false
  let lastFlush = 0
  let lastDuration = 0

  const flush = () => {
    scheduled = false
    const started = performance.now()
    const group = queue.splice(0, MAX_GROUP)
    if (queue.length > 0) schedule()
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = []
    try {
      client
        .transaction(() => {
          for (const p of group) {
            savepoint.run()
            try {
              outcomes.push({ ok: true, value: p.work() })
              release.run()
            } catch (error) {
              rollback.run()
              release.run()
              outcomes.push({ ok: false, error })
            }
          }
        })
        .immediate()
    } catch (error) {
      // The COMMIT itself failed (disk full, I/O error): nothing of the group is stored.
      for (const p of group) p.reject(error)
      return
    } finally {
      lastFlush = performance.now()
      lastDuration = lastFlush - started
    }
    group.forEach((p, i) => {
      const o = outcomes[i]!
      if (o.ok) p.resolve(o.value)
      else p.reject(o.error)
    })
  }

  const schedule = () => {
    if (scheduled) return
    scheduled = true
    const gap = Math.min(MAX_INTERVAL_MS, Math.max(MIN_INTERVAL_MS, PACE * lastDuration))
    const wait = lastFlush + gap - performance.now()
    if (wait > 0 && queue.length < MAX_GROUP) setTimeout(flush, wait)
    else setImmediate(flush)
  }

  return {
    run<T>(work: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, resolve: resolve as (v: unknown) => void, reject })
        schedule()
      })
    },
  }
}
