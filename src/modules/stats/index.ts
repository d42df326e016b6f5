import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { commonErrors, Envelope, ok, requires } from '../../http/schemas'
import { StatsQuerySchema, StatsSchema } from './model'
import { queryStats, statsCsv } from './service'

const tags = ['statistics']

/** GET /api/v2/stats and its CSV export, both served from the hourly rollups (rollup.ts). */
export function statsRoutes(deps: Deps) {
  return new Elysia()
    .get('/api/v2/stats', ({ query }) => ok(queryStats(deps, query)), {
      query: StatsQuerySchema,
      response: { 200: Envelope(StatsSchema), ...commonErrors },
      detail: requires('statistics.read', 'Event counts and rates over time', { tags }),
    })
    .get(
      '/api/v2/stats/export',
      ({ query }) =>
        new Response(statsCsv(queryStats(deps, query)), {
          headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': 'attachment; filename="mailroom-stats.csv"' },
        }),
      {
        query: StatsQuerySchema,
        response: { 200: t.String({ description: 'CSV: bucket_start,group, one column per kind, then the rates.' }), ...commonErrors },
        detail: requires('statistics.read', 'The same statistics as CSV', { tags }),
      },
    )
}
