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
 * Least time between two commits. An fsync costs ~0.6 ms of the main thread here (measured
 * with synchronous=FULL), so committing on every event-loop turn under load spends most of
 * the thread waiting for the disk. Holding writes for up to this long makes each fsync carry
 * more of them (at most ~250 commits a second) at the cost of that much added latency.
 */
const MIN_INTERVAL_MS = 4

export function createGroupCommitter(db: Db): GroupCommitter {
  const client = db.$client
  const queue: Pending[] = []
  let scheduled = false
  let lastFlush = 0

  const flush = () => {
    scheduled = false
    lastFlush = performance.now()
    const group = queue.splice(0, MAX_GROUP)
    if (queue.length > 0) schedule()
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = []
    try {
      client
        .transaction(() => {
          for (const p of group) {
            client.run('SAVEPOINT group_item')
            try {
              outcomes.push({ ok: true, value: p.work() })
              client.run('RELEASE group_item')
            } catch (error) {
              client.run('ROLLBACK TO group_item')
              client.run('RELEASE group_item')
              outcomes.push({ ok: false, error })
            }
          }
        })
        .immediate()
    } catch (error) {
      // The COMMIT itself failed (disk full, I/O error): nothing of the group is stored.
      for (const p of group) p.reject(error)
      return
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
    const wait = lastFlush + MIN_INTERVAL_MS - performance.now()
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
