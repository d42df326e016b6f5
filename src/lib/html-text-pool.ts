import { htmlToText } from './html-text'
import type { Logger } from './logger'
import { startWorker, type WorkerClient } from './worker-client'
import { workerUrl } from './worker-url'

/**
 * The text part of HTML-only sends made on a worker thread (issue 18). Delivery is bound by
 * the server's one JavaScript thread (docs/benchmarks.md, "Issue 18, fourth round"), and the
 * text part is the largest piece of a send's preparation there: 40-60 µs for 5 KB of HTML.
 * It is a pure function of the HTML, so it moves whole; the answer is what htmlToText gives
 * on the server's thread (the test compares them). If the worker fails, texts are made inline.
 */
export interface TextPool {
  toText(html: string): Promise<string>
  close(): Promise<void>
}

export function createTextPool(log: Logger): TextPool {
  let worker: WorkerClient<string, string> | null = startWorker(workerUrl(import.meta.url, './html-text-worker.ts', './lib/html-text-worker.ts'), {
    name: 'the text worker',
    onFailure: (error) => {
      worker = null
      log.error('the text worker failed; text parts are made on the main thread from now on', { error: error.message })
    },
  })
  return {
    async toText(html) {
      if (!worker) return htmlToText(html)
      try {
        return await worker.request(html)
      } catch {
        // The worker failed with this request in hand (onFailure has logged it).
        return htmlToText(html)
      }
    },
    async close() {
      const w = worker
      worker = null
      if (!w) return
      w.terminate(new Error('text pool closed'))
      await w.closed
    },
  }
}
