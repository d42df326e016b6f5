import { htmlToText } from './html-text'
import type { Logger } from './logger'
import { startWorker, type WorkerClient } from './worker-client'
import { workerUrl } from './worker-url'

/**
 * The text part of HTML-only sends made on a worker thread (issue 18). Delivery is bound by
 * the server's one JavaScript thread (docs/benchmarks.md, "Issue 18, fourth round"), and the
 * text part is the largest piece of a send's preparation there: 40-60 µs for 5 KB of HTML.
 * It is a pure function of the HTML, so it moves whole; the answer is what htmlToText gives
 * on the server's thread (the test compares them). The HTML asked for in one turn of the
 * event loop travels as one message each way: a message per text cost the server's thread
 * 12 µs of the 42 it saved. If the worker fails, texts are made inline (and that is logged).
 */
export interface TextPool {
  toText(html: string): Promise<string>
  close(): Promise<void>
}

/** Most texts in one message to the worker. */
const MAX_BATCH = 64

export function createTextPool(log: Logger): TextPool {
  // Started at the first text, not with the server: a server that never gets an HTML-only
  // send (the tests start many) has no thread for it.
  let worker: WorkerClient<string[], string[]> | null = null
  let started = false
  const fail = (error: Error) => {
    worker = null
    log.error('the text worker failed; text parts are made on the main thread from now on', { error: error.message })
  }
  const start = () => {
    started = true
    try {
      worker = startWorker(workerUrl(import.meta.url, './html-text-worker.ts', './lib/html-text-worker.ts'), { name: 'the text worker', onFailure: fail })
    } catch (e) {
      fail(e as Error)
    }
  }
  let batch: Array<{ html: string; resolve(text: string): void; reject(error: unknown): void }> = []
  const post = () => {
    const items = batch
    batch = []
    if (items.length === 0) return // a full batch was sent before this turn's timer came
    const inline = () => {
      for (const item of items)
        try {
          item.resolve(htmlToText(item.html))
        } catch (e) {
          item.reject(e)
        }
    }
    if (!worker) return inline()
    worker.request(items.map((item) => item.html)).then((texts) => items.forEach((item, i) => item.resolve(texts[i]!)), inline) // a failed worker has logged it
  }
  return {
    toText(html) {
      if (!started) start()
      if (!worker) return Promise.resolve(htmlToText(html))
      return new Promise((resolve, reject) => {
        batch.push({ html, resolve, reject })
        if (batch.length >= MAX_BATCH) post()
        else if (batch.length === 1) setImmediate(post)
      })
    },
    async close() {
      const w = worker
      worker = null
      started = true
      if (!w) return
      w.terminate(new Error('text pool closed'))
      await w.closed
    },
  }
}
