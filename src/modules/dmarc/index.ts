import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, requires } from '../../http/schemas'
import { DmarcSummaryQuery, ListDmarcReportsQuery, ReportSchema, ReportWithRowsSchema, SummarySchema } from './model'
import { dmarcSummary, getDmarcReport, listDmarcReports } from './service'

const tags = ['dmarc']

/** /api/v2/dmarc-reports and the per-domain summary /api/v2/sending-domains/:id/dmarc. */
export function dmarcRoutes(deps: Deps) {
  return new Elysia()
    .get('/api/v2/dmarc-reports', ({ query }) => okPage(listDmarcReports(deps, query)), {
      query: ListDmarcReportsQuery,
      response: { 200: Paged(ReportSchema), ...commonErrors },
      detail: requires('sending_domains.read', 'List DMARC aggregate reports', { tags, description: 'Newest reporting period first.' }),
    })
    .get('/api/v2/dmarc-reports/:id', ({ params }) => ok(getDmarcReport(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(ReportWithRowsSchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('sending_domains.read', 'Get a DMARC aggregate report with its rows', { tags }),
    })
    .get('/api/v2/sending-domains/:id/dmarc', ({ params, query }) => ok(dmarcSummary(deps, params.id, query)), {
      params: IdParams,
      query: DmarcSummaryQuery,
      response: { 200: Envelope(SummarySchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('sending_domains.read', 'DMARC results of a sending domain by source IP', {
        tags: ['sending domains'],
        description: 'Sums the rows of the DMARC aggregate reports whose period overlaps the range.',
      }),
    })
}
