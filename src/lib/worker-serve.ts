/**
 * The worker-thread side of worker-client.ts: answers each request with the handler's value,
 * or with the message of what it threw (so one bad request never takes the worker down).
 * Messages are handled one at a time in the order they arrive, so a set-up message sent
 * before the first request is done before that request starts.
 */
import type { WorkerReply, WorkerRequest } from './worker-client'

declare const self: Worker

export interface ServeOptions<Rep> {
  /** Buffers of an answer to transfer rather than copy. */
  transfer?(answer: Rep): Transferable[]
}

/** Makes this worker thread answer worker-client requests with `handle`. */
export function serveRequests<Req, Rep>(handle: (body: Req) => Rep | Promise<Rep>, options: ServeOptions<Rep> = {}): void {
  let queue: Promise<void> = Promise.resolve()
  self.onmessage = (event: MessageEvent<WorkerRequest<Req>>) => {
    const { id, body } = event.data
    queue = queue.then(async () => {
      let reply: WorkerReply<Rep>
      let transfer: Transferable[] = []
      try {
        const answer = await handle(body)
        reply = { id: id ?? 0, body: answer }
        transfer = options.transfer?.(answer) ?? []
      } catch (e) {
        reply = { id: id ?? 0, error: (e as Error).message }
      }
      if (id !== null) self.postMessage(reply, transfer)
    })
  }
}
