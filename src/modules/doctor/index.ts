import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { commonErrors, Envelope, ok, requires } from '../../http/schemas'
import { DoctorQuery, ReportSchema } from './model'
import { getDoctorReport, type DoctorHooks } from './service'

/** GET /api/v2/doctor: the deliverability doctor's last report, or a fresh run with ?refresh=true (issue 17). */
export function doctorRoutes(deps: Deps, hooks: DoctorHooks = {}) {
  return new Elysia().get('/api/v2/doctor', async ({ query }) => ok(await getDoctorReport(deps, query.refresh === 'true', hooks)), {
    query: DoctorQuery,
    response: { 200: Envelope(ReportSchema), ...commonErrors },
    detail: requires('doctor.read', 'Deliverability checks, each pass / warn / fail with the exact fix', {
      description:
        'Returns the last run of the deliverability doctor (the server runs it at start and daily), or runs it now when there is none or `refresh=true`. A run looks up DNS and can take several seconds.',
      tags: ['doctor'],
    }),
  })
}
