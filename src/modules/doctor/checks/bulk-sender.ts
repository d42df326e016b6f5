import type { Deps } from '../../../deps'
import type { CheckResult } from '../model'
import { countEventsSince, recentBroadcastHeaders } from '../queries'
import { result } from './result'

/**
 * Gmail's and Yahoo's rules for bulk senders (in force since February 2024; Google's "Email
 * sender guidelines"): one-click unsubscribe on marketing mail (RFC 8058), a spam complaint
 * rate under 0.3 % (Google asks to stay under 0.1 %), and DMARC on every sending domain.
 */

const DAY_MS = 86_400_000
/** Google Postmaster Tools reports complaint rates per day; a week evens out a quiet day. */
const COMPLAINT_WINDOW_DAYS = 7
const COMPLAINT_RATE_LIMIT = 0.003
const COMPLAINT_RATE_AIM = 0.001
const SAMPLE = 100

/** Header fields unfolded (RFC 5322 section 2.2.3) by lower-cased name. */
function headerFields(header: string): Map<string, string[]> {
  const fields = new Map<string, string[]>()
  for (const line of header.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    const name = line.slice(0, colon).trim().toLowerCase()
    fields.set(name, [...(fields.get(name) ?? []), line.slice(colon + 1).trim()])
  }
  return fields
}

/** RFC 8058 section 3.1: List-Unsubscribe with an https URI and List-Unsubscribe-Post: List-Unsubscribe=One-Click. */
export function hasOneClickUnsubscribe(header: string): boolean {
  const fields = headerFields(header)
  const post = fields.get('list-unsubscribe-post') ?? []
  const link = fields.get('list-unsubscribe') ?? []
  return post.some((v) => v.replace(/\s+/g, '') === 'List-Unsubscribe=One-Click') && link.some((v) => /<https:\/\/[^>]+>/i.test(v))
}

/** One-click unsubscribe on the newest marketing (broadcast) mail of the last 30 days. */
export function checkOneClickUnsubscribe(deps: Pick<Deps, 'db' | 'clock'>): CheckResult {
  const title = 'Marketing mail carries one-click unsubscribe'
  const sample = recentBroadcastHeaders(deps.db, deps.clock.now() - 30 * DAY_MS, SAMPLE)
  if (sample.length === 0) return result('bulk_sender', 'bulk.one_click_unsubscribe', null, title, 'skipped', 'No broadcast mail in the last 30 days.')
  const missing = sample.filter((m) => !hasOneClickUnsubscribe(m.header))
  if (missing.length === 0)
    return result('bulk_sender', 'bulk.one_click_unsubscribe', null, title, 'pass', `All ${sample.length} recent broadcast messages checked carry it.`)
  return result(
    'bulk_sender',
    'bulk.one_click_unsubscribe',
    null,
    title,
    'fail',
    `${missing.length} of the ${sample.length} newest broadcast messages lack List-Unsubscribe with an https link and List-Unsubscribe-Post: List-Unsubscribe=One-Click (RFC 8058), e.g. message ${missing[0]!.id}.`,
    'Send marketing mail with one-click unsubscribe: for API sends set "unsubscribe": true; templates must not set their own List-Unsubscribe header; public_url must be https.',
  )
}

/** Complaints (feedback-loop reports, message.complained) per delivered message over the last week. */
export function checkComplaintRate(deps: Pick<Deps, 'db' | 'clock'>): CheckResult {
  const title = 'Spam complaint rate is under 0.3 %'
  const since = deps.clock.now() - COMPLAINT_WINDOW_DAYS * DAY_MS
  const sent = countEventsSince(deps.db, 'message.sent', since)
  const complained = countEventsSince(deps.db, 'message.complained', since)
  if (sent === 0) return result('bulk_sender', 'bulk.complaint_rate', null, title, 'skipped', `Nothing delivered in the last ${COMPLAINT_WINDOW_DAYS} days.`)
  const rate = complained / sent
  const shown = `${(rate * 100).toFixed(2)} % (${complained} complaints for ${sent} delivered messages in ${COMPLAINT_WINDOW_DAYS} days)`
  const fix =
    'Mail only people who asked for it (confirmed opt-in), make unsubscribing easy, stop mailing contacts who have not opened in months, and check the complaining lists and broadcasts in Statistics.'
  if (rate >= COMPLAINT_RATE_LIMIT)
    return result('bulk_sender', 'bulk.complaint_rate', null, title, 'fail', `${shown}: Gmail and Yahoo filter or refuse senders above 0.3 %.`, fix)
  if (rate >= COMPLAINT_RATE_AIM)
    return result('bulk_sender', 'bulk.complaint_rate', null, title, 'warn', `${shown}: under the 0.3 % limit, but above the 0.1 % Google asks for.`, fix)
  return result('bulk_sender', 'bulk.complaint_rate', null, title, 'pass', shown)
}

/** DMARC on every sending domain, summed up from the per-domain DMARC checks. */
export function checkBulkDmarc(domainChecks: readonly CheckResult[]): CheckResult {
  const title = 'Every sending domain publishes DMARC'
  const dmarc = domainChecks.filter((c) => c.id.startsWith('domain.dmarc:'))
  if (dmarc.length === 0) return result('bulk_sender', 'bulk.dmarc', null, title, 'skipped', 'No sending domains.')
  const missing = dmarc.filter((c) => c.status === 'fail')
  if (missing.length === 0) return result('bulk_sender', 'bulk.dmarc', null, title, 'pass', `All ${dmarc.length} sending domains publish DMARC.`)
  return result(
    'bulk_sender',
    'bulk.dmarc',
    null,
    title,
    'fail',
    `${missing.map((c) => c.subject).join(', ')} ${missing.length === 1 ? 'has' : 'have'} no usable DMARC record.`,
    missing.map((c) => c.fix).join('; '),
  )
}
