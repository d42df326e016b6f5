import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, requires } from '../../http/schemas'
import { QueueSchema, WarmupBody, WarmupSchema } from './model'
import { getWarmup, queueView, setWarmup, stopWarmup } from './service'

const tags = ['ips']

/** GET /api/v2/queue (the queue by provider and IP, with shaping state) and the warm-up of each IP (issue 17). */
export function deliverabilityRoutes(deps: Deps) {
  return new Elysia()
    .get('/api/v2/queue', () => ok(queueView(deps)), {
      response: { 200: Envelope(QueueSchema), ...commonErrors },
      detail: requires('ips.read', 'The delivery queue by provider group and source IP', {
        tags,
        description:
          'Waiting recipients per provider group and per IP, the oldest waiting message, what left in the last minute, and each (group, IP) pair that is throttled or suspended with its current rate and hold. See docs/operations.md "Reading the queue view".',
      }),
    })
    .get('/api/v2/ips/:id/warmup', ({ params }) => ok(getWarmup(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(WarmupSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('ips.read', "An IP's warm-up: schedule, day, today's caps and counts", { tags }),
    })
    .put('/api/v2/ips/:id/warmup', ({ params, body }) => ok(setWarmup(deps, params.id, body)), {
      params: IdParams,
      body: WarmupBody,
      response: { 200: Envelope(WarmupSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('ips.update', 'Start a warm-up on an IP or change its schedule', {
        tags,
        description:
          'Without `schedule` the built-in 30-day ramp applies (docs/operations.md "IP warm-up"). Mail over a day\'s cap goes to other IPs of the pool, or waits for the next UTC day.',
      }),
    })
    .delete('/api/v2/ips/:id/warmup', ({ params }) => ok(stopWarmup(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(WarmupSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('ips.update', "Stop an IP's warm-up", { tags }),
    })
}
