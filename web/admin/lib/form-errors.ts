import { toast } from 'sonner'
import { ApiError, errorMessage, fieldError } from './api'

/** The API's message for a field, counting its list entries too (`domains.0`, `allowed_ips`). */
export function fieldErrorOf(error: unknown, field: string): string | undefined {
  const own = fieldError(error, field)
  if (own) return own
  if (!(error instanceof ApiError) || !error.details) return undefined
  const entries = Object.keys(error.details).filter((k) => k.startsWith(`${field}.`))
  return entries.length ? entries.map((k) => fieldError(error, k)).join(' ') : undefined
}

/**
 * Reports a failed change: when the API named fields this form shows (`fields`, read with
 * `shown`; without `fields`, any field), the form shows them beside those fields (so no
 * toast); anything else goes to a toast.
 */
export function reportError(error: unknown, fields?: readonly string[], shown: (error: unknown, field: string) => string | undefined = fieldErrorOf): void {
  if (error instanceof ApiError && error.details && (!fields || fields.some((f) => shown(error, f)))) return
  toast.error(errorMessage(error))
}
