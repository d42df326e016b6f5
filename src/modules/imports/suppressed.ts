import type { Deps } from '../../deps'
import type { ContactStatus } from '../../db/schema'
import { checkRecipients } from '../suppressions/service'

/**
 * The status a new contact gets when its address is suppressed for its list: imported,
 * not dropped, but marked so that nobody mails it by mistake. A complaint stays a
 * complaint, a hard bounce a bounce; any other suppression reads as unsubscribed.
 */
export function statusUnderSuppression(reason: string, requested: ContactStatus): ContactStatus {
  if (reason === 'complaint') return 'complained'
  if (reason === 'hard_bounce') return 'bounced'
  return requested === 'subscribed' || requested === 'unconfirmed' ? 'unsubscribed' : requested
}

/** The suppression reason of each suppressed address among `emails` (normalised) for a list: one query per 500 addresses. */
export function suppressionReasons(deps: Deps, emails: string[], listId: number): Map<string, string> {
  const out = new Map<string, string>()
  if (emails.length === 0 || !deps.db.$client.query('SELECT 1 FROM suppressions LIMIT 1').get()) return out
  const decisions = checkRecipients(
    deps,
    emails.map((email) => ({ email, list_id: listId })),
  )
  decisions.forEach((d, i) => {
    if (!d.allowed) out.set(emails[i]!, d.suppression.reason)
  })
  return out
}
