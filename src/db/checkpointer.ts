import type { Logger } from '../lib/logger'
import { workerUrl } from '../lib/worker-url'

/**
 * WAL checkpoints off the main thread.
 *
 * SQLite checkpoints a WAL database from the committing connection once the WAL passes
 * `wal_autocheckpoint` pages: it copies the pages into the database file and fsyncs it, inside
 * the COMMIT of whichever request was unlucky. Measured on the delivery path (bench/delivery.ts
 * setup): those checkpoints were over half of the time spent committing. So the server's own
 * connection checkpoints only as a backstop (openDatabase sets a large wal_autocheckpoint)
 * and this worker runs PASSIVE checkpoints every second on a second connection, which copies
 * what no reader still needs without blocking the writer (https://sqlite.org/wal.html).
 */
export function startCheckpointer(path: string, log: Logger, everyMs = 1000) {
  const worker = new Worker(workerUrl(import.meta.url, './checkpoint-worker.ts', './db/checkpoint-worker.ts')) as Worker & { unref(): void }
  worker.postMessage({ path })
  type Outcome = { done?: boolean; error?: string; checkpointed?: number }
  let waiting: ((outcome: Outcome) => void) | null = null
  worker.onmessage = (event: MessageEvent<Outcome>) => {
    if (event.data.error) log.warn('WAL checkpoint failed', { error: event.data.error })
    waiting?.(event.data)
    waiting = null
  }
  worker.onerror = (event) => {
    // The backstop (wal_autocheckpoint) keeps the WAL bounded without the worker; say so loudly.
    log.error('the WAL checkpoint worker failed', { error: event.message })
    waiting?.({ error: event.message })
    waiting = null
  }
  const run = (what: 'checkpoint' | 'truncate') =>
    new Promise<Outcome>((resolve) => {
      waiting = resolve
      worker.postMessage(what)
    })
  let busy = false
  const timer = setInterval(() => {
    if (busy) return
    busy = true
    void run('checkpoint').finally(() => (busy = false))
  }, everyMs)
  timer.unref()
  worker.unref()
  return {
    /** A last TRUNCATE checkpoint, then the worker ends. */
    async stop(): Promise<void> {
      clearInterval(timer)
      while (busy) await Bun.sleep(5)
      const last = await run('truncate')
      if (last.done) log.info('WAL checkpointed', { pages: last.checkpointed })
      worker.terminate()
    },
  }
}
