import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { commonErrors, okPage, Paged, requires } from '../../http/schemas'
import { ActivityQuery, ActivitySchema } from './model'
import { listActivity } from './service'

/** GET /api/v2/activity-logs: every change made through the API, newest first. */
export function activityLogRoutes(deps: Deps) {
  return new Elysia().get('/api/v2/activity-logs', ({ query }) => okPage(listActivity(deps, query)), {
    query: ActivityQuery,
    response: { 200: Paged(ActivitySchema), ...commonErrors },
    detail: requires('activity_logs.read', 'List activity log entries', { tags: ['activity logs'] }),
  })
}
