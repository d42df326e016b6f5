import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import { dmarcSummary, getDmarcReport, listDmarcReports } from './service'

const tags = ['dmarc']

const ReportSchema = t.Object({
  id: t.Integer(),
  domain: t.String({ description: 'The policy domain the report is about.' }),
  org_name: t.String({ description: 'The reporting organisation.' }),
  report_id: t.String(),
  begin_at: t.String({ format: 'date-time' }),
  end_at: t.String({ format: 'date-time' }),
  policy: t.Record(t.String(), t.Unknown(), { description: 'The published policy the receiver saw: domain, p, sp, pct, adkim, aspf.' }),
  records: t.Integer({ description: 'Rows (source IP with its results) in the report.' }),
  messages: t.Integer({ description: 'Messages the rows count.' }),
  received_at: t.String({ format: 'date-time' }),
})

const RowSchema = t.Object({
  source_ip: t.String(),
  count: t.Integer(),
  disposition: t.String({ description: 'none, quarantine or reject.' }),
  dkim: t.String({ description: 'DMARC-aligned DKIM result: pass or fail.' }),
  spf: t.String({ description: 'DMARC-aligned SPF result: pass or fail.' }),
  header_from: t.String(),
})

const Counts = {
  messages: t.Integer(),
  dkim: t.Object({ pass: t.Integer(), fail: t.Integer() }),
  spf: t.Object({ pass: t.Integer(), fail: t.Integer() }),
  disposition: t.Record(t.String(), t.Integer(), { description: 'Messages by the disposition the receiver applied.' }),
}

const SummarySchema = t.Object({
  domain: t.String(),
  from: t.String({ format: 'date-time' }),
  to: t.String({ format: 'date-time' }),
  reports: t.Integer({ description: 'Reports with rows in the range.' }),
  totals: t.Object(Counts),
  sources: t.Array(t.Object({ source_ip: t.String(), ...Counts }), { description: 'Per source IP, most messages first.' }),
})

/** /api/v2/dmarc-reports and the per-domain summary /api/v2/sending-domains/:id/dmarc. */
export function dmarcRoutes(deps: Deps) {
  return new Elysia()
    .get('/api/v2/dmarc-reports', ({ query }) => okPage(listDmarcReports(deps, query)), {
      query: t.Object({ ...PageQuery, domain: t.Optional(t.String({ maxLength: 253, description: 'Only reports about this policy domain.' })) }),
      response: { 200: Paged(ReportSchema), ...commonErrors },
      detail: requires('sending_domains.read', 'List DMARC aggregate reports', { tags, description: 'Newest reporting period first.' }),
    })
    .get('/api/v2/dmarc-reports/:id', ({ params }) => ok(getDmarcReport(deps, params.id)), {
      params: IdParams,
      response: { 200: Envelope(t.Object({ ...ReportSchema.properties, rows: t.Array(RowSchema) })), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('sending_domains.read', 'Get a DMARC aggregate report with its rows', { tags }),
    })
    .get('/api/v2/sending-domains/:id/dmarc', ({ params, query }) => ok(dmarcSummary(deps, params.id, query)), {
      params: IdParams,
      query: t.Object({
        from: t.Optional(t.String({ format: 'date-time', description: 'Start of the range (inclusive); default 30 days before `to`.' })),
        to: t.Optional(t.String({ format: 'date-time', description: 'End of the range (exclusive); default now.' })),
      }),
      response: { 200: Envelope(SummarySchema), 404: ErrorEnvelope, ...commonErrors },
      detail: requires('sending_domains.read', 'DMARC results of a sending domain by source IP', {
        tags: ['sending domains'],
        description: 'Sums the rows of the DMARC aggregate reports whose period overlaps the range.',
      }),
    })
}
