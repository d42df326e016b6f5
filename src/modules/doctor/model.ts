import { t, type Static } from 'elysia'
import { enumOf } from '../../http/schemas'

/**
 * The deliverability doctor's report (issue 17): one row per check and subject, each with
 * what was found and the exact thing to do about it.
 */

export const CHECK_STATUSES = ['pass', 'warn', 'fail', 'skipped'] as const
export type CheckStatus = (typeof CHECK_STATUSES)[number]

export const CHECK_CATEGORIES = ['network', 'host', 'ip', 'domain', 'blocklist', 'bulk_sender'] as const
export type CheckCategory = (typeof CHECK_CATEGORIES)[number]

export const CheckSchema = t.Object({
  id: t.String({ description: 'Stable id of the check and its subject, e.g. "ip.fcrdns:203.0.113.5" or "domain.spf:example.com".' }),
  category: enumOf(CHECK_CATEGORIES),
  subject: t.Nullable(t.String({ description: 'The IP address, domain or host the check is about; null for server-wide checks.' })),
  title: t.String(),
  status: enumOf(CHECK_STATUSES),
  detail: t.String({ description: 'What was found.' }),
  fix: t.Nullable(
    t.String({ description: 'The exact thing to do (the DNS record to publish, with its name and value, ...); null when there is nothing to do.' }),
  ),
})

export const SummarySchema = t.Object({ pass: t.Integer(), warn: t.Integer(), fail: t.Integer(), skipped: t.Integer() })

export const ReportSchema = t.Object({
  ran_at: t.String({ format: 'date-time' }),
  summary: SummarySchema,
  checks: t.Array(CheckSchema),
})

export const DoctorQuery = t.Object({
  refresh: t.Optional(
    enumOf(['true', 'false'], { description: 'true runs every check now; otherwise the last run is returned (and a first run is made when there is none).' }),
  ),
})

export type CheckResult = Static<typeof CheckSchema>
export type DoctorReport = Static<typeof ReportSchema>
export type DoctorSummary = Static<typeof SummarySchema>
