import { AppError } from '../../lib/errors'

/**
 * Small pieces every Resend group shares. Error names and statuses come from the dialect in
 * src/modules/messages/resend.ts (every path under /compat/resend/ answers Resend's
 * `{ statusCode, name, message }`), so the groups here throw AppError like any service.
 */

/** Refuses an option Mailroom does not have, by name, instead of silently ignoring it. */
export function refuse(field: string, why: string): never {
  throw new AppError('validation_failed', `\`${field}\` is not supported: ${why}`, { [field]: [why] })
}

/** Resend's answer to a delete: the id, the object kind and `deleted: true`. */
export function deleted<K extends string>(object: K, id: string) {
  return { object, id, deleted: true as const }
}
