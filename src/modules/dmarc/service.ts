import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { columnsOf } from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import { toIso } from '../../lib/clock'
import { invalidField, notFound } from '../../lib/errors'
import { pageMeta, pageRequest } from '../../lib/pagination'
import type { DmarcReport } from '../../smtp/reports'
import type { DmarcRecordView, DmarcReportView, DmarcReportWithRows, DmarcSourceSummary, DmarcSummary } from './model'

/**
 * DMARC aggregate reports (RFC 7489 section 7.2) as received by the inbound listener or a
 * feedback-loop mailbox, and their summary per sending domain. A report is identified by
 * (org_name, report_id) (section 7.2.1.1: the id is unique per reporting organisation), so
 * a report sent twice, or to two of our addresses, is stored once.
 */

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    insertReport: c.prepare<{ id: number }, [string, string, string, number, number, string, number]>(
      `INSERT INTO dmarc_reports (domain, org_name, report_id, begin_at, end_at, policy, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (org_name, report_id) DO NOTHING RETURNING id`,
    ),
    insertRecord: c.prepare<never, [number, string, number, string, string, string, string]>(
      'INSERT INTO dmarc_records (report_id, source_ip, count, disposition, dkim, spf, header_from) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
  }
})

/**
 * Stores a parsed report and its rows. Call inside the transaction of the inbound message
 * that carried it. Returns the new report id, or null when (org, report id) is already stored.
 */
export function storeDmarcReport(db: Db, report: DmarcReport, now: number): number | null {
  const st = statements(db)
  const policy = { ...report.policy, domain: report.policy.domain.toLowerCase() }
  const row = st.insertReport.get(policy.domain, report.orgName, report.reportId, report.dateRange.begin, report.dateRange.end, JSON.stringify(policy), now)
  if (!row) return null
  for (const r of report.records) {
    st.insertRecord.run(row.id, r.sourceIp, r.count, r.disposition.toLowerCase(), r.dkim, r.spf, r.headerFrom.toLowerCase())
  }
  return row.id
}

interface ReportRow {
  id: number
  domain: string
  org_name: string
  report_id: string
  begin_at: number
  end_at: number
  policy: string
  received_at: number
  records: number
  messages: number | null
}

const REPORT_COLUMNS = `r.id, r.domain, r.org_name, r.report_id, r.begin_at, r.end_at, r.policy, r.received_at,
  (SELECT COUNT(*) FROM dmarc_records d WHERE d.report_id = r.id) AS records,
  (SELECT SUM(count) FROM dmarc_records d WHERE d.report_id = r.id) AS messages`

function toView(r: ReportRow): DmarcReportView {
  return {
    ...columnsOf(r, ['id', 'domain', 'org_name', 'report_id', 'records']),
    begin_at: toIso(r.begin_at)!,
    end_at: toIso(r.end_at)!,
    policy: JSON.parse(r.policy) as Record<string, unknown>,
    messages: r.messages ?? 0,
    received_at: toIso(r.received_at)!,
  }
}

/** Reports, newest period first, optionally for one policy domain. */
export function listDmarcReports(deps: Deps, query: { page?: number; per_page?: number; domain?: string }) {
  const req = pageRequest(query)
  const c = deps.db.$client
  const domain = query.domain?.trim().toLowerCase().replace(/\.$/, '') || null
  const where = domain ? 'WHERE r.domain = ?1' : 'WHERE ?1 IS NULL'
  const total = c.query<{ n: number }, [string | null]>(`SELECT COUNT(*) AS n FROM dmarc_reports r ${where}`).get(domain)!.n
  const rows = c
    .query<ReportRow, [string | null, number, number]>(
      `SELECT ${REPORT_COLUMNS} FROM dmarc_reports r ${where} ORDER BY r.begin_at DESC, r.id DESC LIMIT ?2 OFFSET ?3`,
    )
    .all(domain, req.per_page, req.offset)
  return { items: rows.map(toView), meta: pageMeta(req, total) }
}

/** One report with its rows. */
export function getDmarcReport(deps: Deps, id: number): DmarcReportWithRows {
  const c = deps.db.$client
  const row = c.query<ReportRow, [number]>(`SELECT ${REPORT_COLUMNS} FROM dmarc_reports r WHERE r.id = ?`).get(id)
  if (!row) throw notFound('DMARC report', id)
  const rows = c
    .query<DmarcRecordView, [number]>('SELECT source_ip, count, disposition, dkim, spf, header_from FROM dmarc_records WHERE report_id = ? ORDER BY id')
    .all(id)
  return { ...toView(row), rows }
}

const DAY = 86_400_000
/** Default window of the summary: the last 30 days. */
export const DEFAULT_SUMMARY_DAYS = 30

function parseTime(field: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text === '') return fallback
  const ms = Date.parse(text)
  if (!Number.isFinite(ms)) throw invalidField(field, 'must be an ISO 8601 date-time such as 2026-03-01T00:00:00Z')
  return ms
}

/**
 * Pass/fail by source IP for one sending domain over [from, to): the rows of every report
 * whose period overlaps the range and whose policy domain or header From is the domain.
 * DKIM and SPF are the DMARC-aligned results the receiver evaluated (policy_evaluated).
 */
export function dmarcSummary(deps: Deps, domainId: number, query: { from?: string; to?: string }): DmarcSummary {
  const c = deps.db.$client
  const domain = c.query<{ name: string }, [number]>('SELECT name FROM sending_domains WHERE id = ?').get(domainId)
  if (!domain) throw notFound('sending domain', domainId)
  const to = parseTime('to', query.to, deps.clock.now())
  const from = parseTime('from', query.from, to - DEFAULT_SUMMARY_DAYS * DAY)
  if (from >= to) throw invalidField('from', 'must be before to')
  const match = `FROM dmarc_records d JOIN dmarc_reports r ON r.id = d.report_id
    WHERE r.end_at > ?2 AND r.begin_at < ?3 AND (r.domain = ?1 OR d.header_from = ?1)`
  const rows = c
    .query<{ source_ip: string; disposition: string; dkim: string; spf: string; n: number }, [string, number, number]>(
      `SELECT d.source_ip, d.disposition, d.dkim, d.spf, SUM(d.count) AS n ${match} GROUP BY d.source_ip, d.disposition, d.dkim, d.spf`,
    )
    .all(domain.name, from, to)
  const reports = c.query<{ n: number }, [string, number, number]>(`SELECT COUNT(DISTINCT r.id) AS n ${match}`).get(domain.name, from, to)!.n
  const empty = (): Omit<DmarcSourceSummary, 'source_ip'> => ({ messages: 0, dkim: { pass: 0, fail: 0 }, spf: { pass: 0, fail: 0 }, disposition: {} })
  const totals = empty()
  const bySource = new Map<string, DmarcSourceSummary>()
  for (const r of rows) {
    let s = bySource.get(r.source_ip)
    if (!s) bySource.set(r.source_ip, (s = { source_ip: r.source_ip, ...empty() }))
    for (const target of [s, totals]) {
      target.messages += r.n
      target.dkim[r.dkim === 'pass' ? 'pass' : 'fail'] += r.n
      target.spf[r.spf === 'pass' ? 'pass' : 'fail'] += r.n
      target.disposition[r.disposition] = (target.disposition[r.disposition] ?? 0) + r.n
    }
  }
  const sources = [...bySource.values()].sort((a, b) => b.messages - a.messages || a.source_ip.localeCompare(b.source_ip))
  return { domain: domain.name, from: toIso(from)!, to: toIso(to)!, reports, totals, sources }
}
