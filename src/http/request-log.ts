import { Elysia } from 'elysia'
import type { Logger } from '../lib/logger'

/** One access-log line waiting to be written: request id, method, path, status, milliseconds. */
type Pending = [string | undefined, string, string, unknown, number | undefined]

/**
 * Gives every request an id (the X-Request-Id response header, quoted in 500 messages) and
 * writes one access-log line after the response, when the operator wants them.
 *
 * The after-response hook only records the line's fields (issue 18); the lines are made and
 * handed to the (buffered) logger once per turn of the event loop, after the responses of
 * that turn are out. With the log level above info the lines would be dropped, so no hook
 * is registered at all.
 */
export function requestLogPlugin(log: Logger, accessLog: boolean) {
  const on = accessLog && log.enabled('info')
  const started = new WeakMap<Request, number>()
  const plugin = new Elysia({ name: 'request-log' }).onRequest(({ request, set }) => {
    set.headers['x-request-id'] = crypto.randomUUID()
    if (on) started.set(request, performance.now())
  })
  if (!on) return plugin
  const pending: Pending[] = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    for (const [request_id, method, path, status, ms] of pending.splice(0)) log.info('request', { request_id, method, path, status, ms })
  }
  return plugin.onAfterResponse({ as: 'global' }, ({ request, path, set }) => {
    const start = started.get(request)
    const id = set.headers['x-request-id']
    pending.push([
      typeof id === 'string' ? id : undefined,
      request.method,
      path,
      set.status,
      start === undefined ? undefined : Math.round((performance.now() - start) * 100) / 100,
    ])
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  })
}
