import { t, type Static } from 'elysia'
import { PageQuery } from '../../http/schemas'

export const ReportSchema = t.Object({
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
export type DmarcReportView = Static<typeof ReportSchema>

export const RowSchema = t.Object({
  source_ip: t.String(),
  count: t.Integer(),
  disposition: t.String({ description: 'none, quarantine or reject.' }),
  dkim: t.String({ description: 'DMARC-aligned DKIM result: pass or fail.' }),
  spf: t.String({ description: 'DMARC-aligned SPF result: pass or fail.' }),
  header_from: t.String(),
})
export type DmarcRecordView = Static<typeof RowSchema>

/** A report with its rows. */
export const ReportWithRowsSchema = t.Object({ ...ReportSchema.properties, rows: t.Array(RowSchema) })
export type DmarcReportWithRows = Static<typeof ReportWithRowsSchema>

const Counts = {
  messages: t.Integer(),
  dkim: t.Object({ pass: t.Integer(), fail: t.Integer() }),
  spf: t.Object({ pass: t.Integer(), fail: t.Integer() }),
  disposition: t.Record(t.String(), t.Integer(), { description: 'Messages by the disposition the receiver applied.' }),
}

export const SummarySchema = t.Object({
  domain: t.String(),
  from: t.String({ format: 'date-time' }),
  to: t.String({ format: 'date-time' }),
  reports: t.Integer({ description: 'Reports with rows in the range.' }),
  totals: t.Object(Counts),
  sources: t.Array(t.Object({ source_ip: t.String(), ...Counts }), { description: 'Per source IP, most messages first.' }),
})
export type DmarcSummary = Static<typeof SummarySchema>
export type DmarcSourceSummary = DmarcSummary['sources'][number]

export const ListDmarcReportsQuery = t.Object({
  ...PageQuery,
  domain: t.Optional(t.String({ maxLength: 253, description: 'Only reports about this policy domain.' })),
})

export const DmarcSummaryQuery = t.Object({
  from: t.Optional(t.String({ format: 'date-time', description: 'Start of the range (inclusive); default 30 days before `to`.' })),
  to: t.Optional(t.String({ format: 'date-time', description: 'End of the range (exclusive); default now.' })),
})
