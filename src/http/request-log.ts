import { Elysia } from 'elysia'
import type { Logger } from '../lib/logger'
import { pathnameOf } from '../lib/route-table'

/** One access-log line waiting to be written: request id, method, path, status, milliseconds. */
type Pending = [string | undefined, string, string, number, number]

/** The status of a handler's answer: a Response's own, `status(code, body)`'s, or the one set on the context. */
function statusOf(value: unknown, set: { status?: unknown }): number {
  if (value instanceof Response) return value.status
  const code = (value as { code?: unknown } | null)?.code
  if (typeof code === 'number') return code
  return typeof set.status === 'number' ? set.status : 200
}

/**
 * Gives every request an id (the X-Request-Id response header, quoted in 500 messages) and
 * writes one access-log line per request, when the operator wants them.
 *
 * The line is recorded when the answer is ready (`record`): app.ts calls it from its one
 * answer hook (answerPlugin below) and from the error envelope, and the Resend routes for the
 * 308 they give from a global onRequest hook. The lines are made and handed to the (buffered)
 * logger once per turn of the event loop. With the log level above info the lines would be
 * dropped, so nothing is recorded.
 */
export function requestLogPlugin(log: Logger, accessLog: boolean) {
  const on = accessLog && log.enabled('info')
  // Requests whose line is not recorded yet, with their id and start; a request is recorded once.
  const started = new WeakMap<Request, { id: string; at: number }>()
  const pending: Pending[] = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    for (const [request_id, method, path, status, ms] of pending.splice(0)) log.info('request', { request_id, method, path, status, ms })
  }
  const record = (request: Request, status: number) => {
    const start = started.get(request)
    if (start === undefined) return
    started.delete(request)
    pending.push([start.id, request.method, pathnameOf(request.url), status, Math.round((performance.now() - start.at) * 100) / 100])
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }
  const plugin = new Elysia({ name: 'request-log' }).onRequest(({ request, set }) => {
    const id = crypto.randomUUID()
    set.headers['x-request-id'] = id
    if (on) started.set(request, { id, at: performance.now() })
  })
  return { plugin, record: on ? record : (_request: Request, _status: number) => {} }
}

/**
 * The one global `onAfterHandle` hook, which tells `answered` the status of every answer a
 * handler gives (failures reach the error envelope instead). One hook for the access log and
 * the activity log together: each global hook is a call on every request (decision 86). Not
 * `onAfterResponse`: with such a hook Elysia schedules an async callback for every request
 * (setImmediate), which cost 4.5 µs of the 7.7 µs of a whole `/health` in process (issue 18).
 */
export function answerPlugin(answered: (request: Request, status: number) => void) {
  // A function statement without `return`, minified or not: Elysia guesses from a hook's text
  // whether it is async (an arrow to a call counts) and whether it returns an answer, and
  // would otherwise await it and map its result on every request (decision 86).
  return new Elysia({ name: 'answers' }).onAfterHandle({ as: 'global' }, function answer({ request, set, responseValue }) {
    answered(request, statusOf(responseValue, set))
  })
}
