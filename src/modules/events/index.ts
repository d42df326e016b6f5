import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { commonErrors, okPage, Paged, requires } from '../../http/schemas'
import { EventQuery, EventSchema } from './model'
import { listEvents } from './service'

/** GET /api/v2/events: the event log, filtered, newest first. */
export function eventRoutes(deps: Deps) {
  return new Elysia().get('/api/v2/events', ({ query }) => okPage(listEvents(deps, query)), {
    query: EventQuery,
    response: { 200: Paged(EventSchema), ...commonErrors },
    detail: requires('statistics.read', 'List events', { tags: ['events'] }),
  })
}
