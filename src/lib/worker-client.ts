/**
 * The main-thread side of a worker thread that answers requests (its other side is
 * worker-serve.ts). The signer pool, the segment count pool, the import reader and the WAL
 * checkpointer all talk to their workers through it, so the three things each got subtly
 * different once are written here once:
 *
 * - Request ids: every request carries one and its answer names it, so answers can be
 *   matched whatever order they come in.
 * - Keeping the process alive: a worker is referenced only while it has requests in hand.
 *   An idle worker must not keep a process alive (a CLI command that counted a segment ends
 *   on its own; the server stops its pools when it stops). And a busy one must be
 *   referenced: measured with Bun 1.4, while the only handles an awaiting thread has are
 *   unref()'d workers, it spins at a full core (process CPU time twice the wall time)
 *   instead of sleeping, and on two cores that took a core from the workers.
 * - Failure: a worker that throws outside a request (a module that fails to load, a crash)
 *   fails every request in hand with one error naming the worker, and every later one at
 *   once; the error event is handled, so it never surfaces as an uncaught error.
 */

/** What the client posts: `id` null for a message that wants no answer. */
export interface WorkerRequest<T> {
  id: number | null
  body: T
}

/** What the worker posts back: the answer to request `id`, or the message of what it threw. */
export type WorkerReply<R> = { id: number; body: R } | { id: number; error: string }

export interface WorkerClient<Req, Rep> {
  /** Sends a request; resolves with the worker's answer, rejects with what it threw, or when it fails or is terminated. */
  request(body: Req, transfer?: Transferable[]): Promise<Rep>
  /** Sends a message that gets no answer (set-up); messages are handled in the order sent. */
  send(body: Req, transfer?: Transferable[]): void
  /** Requests sent and not answered yet. */
  readonly pending: number
  /** Answers received so far (values and errors alike). */
  readonly answered: number
  /** The failure, once the worker has failed. */
  readonly failure: Error | null
  /** Fails the requests in hand with `error` and ends the thread. */
  terminate(error?: Error): void
  /** Resolves when the thread has closed (after terminate, or when it ended by itself). */
  readonly closed: Promise<void>
}

export interface WorkerClientOptions {
  /** Names the worker in errors: "<name> failed: <message>". */
  name: string
  /** Called once when the worker fails, after the requests in hand were rejected. */
  onFailure?(error: Error): void
}

// Bun's Worker has ref()/unref() like node:worker_threads; the DOM type does not declare them.
type RefWorker = Worker & { ref(): void; unref(): void }

/** Starts the worker module at `url` (see worker-url.ts) and returns its request channel. Throws when the worker cannot be created. */
export function startWorker<Req, Rep>(url: URL | string, options: WorkerClientOptions): WorkerClient<Req, Rep> {
  const worker = new Worker(url) as RefWorker
  const pending = new Map<number, { resolve(value: Rep): void; reject(error: Error): void }>()
  let nextId = 1
  let answered = 0
  let failure: Error | null = null
  let ended = false
  const closed = new Promise<void>((resolve) => worker.addEventListener('close', () => resolve(), { once: true }))
  // Idle until the first request.
  worker.unref()

  const settle = (id: number) => {
    const job = pending.get(id)
    pending.delete(id)
    if (job && pending.size === 0) worker.unref()
    return job
  }
  const rejectAll = (error: Error) => {
    const jobs = [...pending.values()]
    pending.clear()
    worker.unref()
    for (const job of jobs) job.reject(error)
  }

  worker.onmessage = (event: MessageEvent<WorkerReply<Rep>>) => {
    const reply = event.data
    answered++
    const job = settle(reply.id)
    if (!job) return
    if ('error' in reply) job.reject(new Error(reply.error))
    else job.resolve(reply.body)
  }
  worker.onerror = (event: ErrorEvent) => {
    event.preventDefault()
    if (failure || ended) return
    failure = new Error(`${options.name} failed: ${event.message}`)
    rejectAll(failure)
    options.onFailure?.(failure)
  }

  return {
    request(body, transfer) {
      if (failure) return Promise.reject(failure)
      if (ended) return Promise.reject(new Error(`${options.name} was stopped`))
      const id = nextId++
      return new Promise<Rep>((resolve, reject) => {
        pending.set(id, { resolve, reject })
        if (pending.size === 1) worker.ref()
        worker.postMessage({ id, body } satisfies WorkerRequest<Req>, transfer ?? [])
      })
    },
    send(body, transfer) {
      if (failure || ended) return
      worker.postMessage({ id: null, body } satisfies WorkerRequest<Req>, transfer ?? [])
    },
    get pending() {
      return pending.size
    },
    get answered() {
      return answered
    },
    get failure() {
      return failure
    },
    terminate(error = new Error(`${options.name} was stopped`)) {
      if (ended) return
      ended = true
      rejectAll(error)
      worker.terminate()
    },
    closed,
  }
}
