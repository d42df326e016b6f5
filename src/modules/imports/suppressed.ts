import type { Deps } from '../../deps'
import type { ContactStatus } from '../../db/schema'
import { checkRecipient } from '../suppressions/service'

/**
 * The status a new contact gets when its address is suppressed for its list: imported,
 * not dropped, but marked so that nobody mails it by mistake. A complaint stays a
 * complaint, a hard bounce a bounce; any other suppression reads as unsubscribed.
 */
export function statusUnderSuppression(deps: Deps, email: string, requested: ContactStatus, listId: number): ContactStatus {
  const decision = checkRecipient(deps, { email, list_id: listId })
  if (decision.allowed) return requested
  switch (decision.suppression.reason) {
    case 'complaint':
      return 'complained'
    case 'hard_bounce':
      return 'bounced'
    default:
      return requested === 'subscribed' || requested === 'unconfirmed' ? 'unsubscribed' : requested
  }
}
