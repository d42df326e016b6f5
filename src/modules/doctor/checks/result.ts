import type { CheckCategory, CheckResult, CheckStatus } from '../model'

/** One check's outcome; the id is the check's name and its subject (`ip.ptr:192.0.2.5`), so runs can be compared. */
export function result(
  category: CheckCategory,
  check: string,
  subject: string | null,
  title: string,
  status: CheckStatus,
  detail: string,
  fix: string | null = null,
): CheckResult {
  return { id: subject ? `${check}:${subject}` : check, category, subject, title, status, detail, fix: status === 'pass' || status === 'skipped' ? null : fix }
}

/** The fix of a check whose DNS lookup failed (not a finding about the record). */
export const DNS_OUTAGE_FIX = 'Check that the DNS servers (dns_servers) answer, then run the doctor again.'

/** The outcomes of one check of a sending domain, its id and title given once. */
export const domainCheck =
  (domain: string, check: string, title: string) =>
  (status: CheckStatus, detail: string, fix: string | null = null): CheckResult =>
    result('domain', check, domain, title, status, detail, fix)
