import type { Logger } from '../lib/logger'
import { startWorker } from '../lib/worker-client'
import { workerUrl } from '../lib/worker-url'
import type { CheckpointRequest, CheckpointResult } from './checkpoint-worker'

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
  const worker = startWorker<CheckpointRequest, CheckpointResult | null>(workerUrl(import.meta.url, './checkpoint-worker.ts', './db/checkpoint-worker.ts'), {
    name: 'the WAL checkpoint worker',
    // The backstop (wal_autocheckpoint) keeps the WAL bounded without the worker; say so loudly.
    onFailure: (error) => log.error('the WAL checkpoint worker failed', { error: error.message }),
  })
  /** One checkpoint; null when it failed (logged). */
  const run = async (req: CheckpointRequest): Promise<CheckpointResult | null> => {
    try {
      return await worker.request(req)
    } catch (e) {
      if (!worker.failure) log.warn('WAL checkpoint failed', { error: (e as Error).message })
      return null
    }
  }
  void run({ open: path })
  let busy = false
  const timer = setInterval(() => {
    if (busy) return
    busy = true
    void run('checkpoint').finally(() => (busy = false))
  }, everyMs)
  timer.unref()
  return {
    /** A last TRUNCATE checkpoint, then the worker ends. */
    async stop(): Promise<void> {
      clearInterval(timer)
      while (busy) await Bun.sleep(5)
      const last = await run('truncate')
      if (last) log.info('WAL checkpointed', { pages: last.checkpointed })
      worker.terminate()
    },
  }
}
