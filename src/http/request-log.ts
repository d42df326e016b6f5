import { Elysia } from 'elysia'
import type { Logger } from '../lib/logger'

/**
 * Gives every request an id (the X-Request-Id response header, quoted in 500 messages) and
 * writes one access-log line after the response, when the operator wants them.
 */
export function requestLogPlugin(log: Logger, accessLog: boolean) {
  const started = new WeakMap<Request, number>()
  const plugin = new Elysia({ name: 'request-log' }).onRequest(({ request, set }) => {
    set.headers['x-request-id'] = crypto.randomUUID()
    if (accessLog) started.set(request, performance.now())
  })
  if (!accessLog) return plugin
  return plugin.onAfterResponse({ as: 'global' }, ({ request, path, set }) => {
    const start = started.get(request)
    log.info('request', {
      request_id: set.headers['x-request-id'],
      method: request.method,
      path,
      status: set.status,
      ms: start === undefined ? undefined : Math.round((performance.now() - start) * 100) / 100,
    })
  })
}
