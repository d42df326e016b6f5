import type { ErrorDialect, Failure } from '../../http/envelope'
import type { ErrorCode } from '../../lib/errors'

/**
 * Resend's error names and statuses (https://resend.com/docs/api-reference/errors) for the
 * whole Resend-compatible surface under /compat/resend: the emails routes here and every
 * other method group (src/modules/resend/) import this one mapping, so a message is stated
 * once and every route answers the way the SDK expects: `{ statusCode, name, message }`.
 */
export const RESEND_PREFIX = '/compat/resend'

/** Resend's error body. */
export interface ResendError {
  statusCode: number
  name: string
  message: string
}

/** Our code -> Resend's name and status where the code alone decides it (the rest: resendError below). */
export const RESEND_ERRORS: Record<ErrorCode, { name: string; statusCode: number }> = {
  bad_request: { name: 'validation_error', statusCode: 400 },
  unauthorized: { name: 'invalid_api_key', statusCode: 403 },
  // Resend answers a key without the permission with 401 restricted_api_key.
  forbidden: { name: 'restricted_api_key', statusCode: 401 },
  ip_not_allowed: { name: 'restricted_api_key', statusCode: 401 },
  not_found: { name: 'not_found', statusCode: 404 },
  method_not_allowed: { name: 'method_not_allowed', statusCode: 405 },
  // Resend: 403 validation_error "The domain is not verified".
  domain_not_verified: { name: 'validation_error', statusCode: 403 },
  conflict: { name: 'validation_error', statusCode: 409 },
  idempotency_key_reused: { name: 'invalid_idempotent_request', statusCode: 409 },
  idempotency_in_progress: { name: 'concurrent_idempotent_requests', statusCode: 409 },
  payload_too_large: { name: 'validation_error', statusCode: 413 },
  unsupported_media_type: { name: 'validation_error', statusCode: 415 },
  validation_failed: { name: 'validation_error', statusCode: 422 },
  rate_limited: { name: 'rate_limit_exceeded', statusCode: 429 },
  internal: { name: 'internal_server_error', statusCode: 500 },
  unavailable: { name: 'application_error', statusCode: 503 },
}

/** The field names of a failure's details without a batch index: `1.to.0` -> `to`. */
const fieldsOf = (f: Failure) => Object.keys(f.details ?? {}).map((k) => k.replace(/^\d+\./, '').split('.')[0]!)

/**
 * Resend's error for one of our failures. Finer names than the code gives: no Authorization
 * header at all is `missing_api_key` (401); a bad Idempotency-Key is `invalid_idempotency_key`
 * (400); a field problem only of missing fields is `missing_required_field`, one about the
 * sender `invalid_from_address` (422 both). Field problems are appended to the one message.
 */
export function resendError(f: Failure, request?: Request): ResendError {
  let { name, statusCode } = RESEND_ERRORS[f.code]
  const fields = fieldsOf(f)
  if (f.code === 'unauthorized' && request && !request.headers.get('authorization')) {
    name = 'missing_api_key'
    statusCode = 401
  } else if (f.code === 'validation_failed' && fields.length > 0) {
    const messages = Object.values(f.details ?? {}).flat()
    if (fields.every((k) => k.toLowerCase() === 'idempotency-key')) {
      name = 'invalid_idempotency_key'
      statusCode = 400
    } else if (messages.every((m) => m === 'is required')) name = 'missing_required_field'
    else if (fields.every((k) => k === 'from')) name = 'invalid_from_address'
  }
  const parts = f.details ? Object.entries(f.details).map(([k, v]) => `${k}: ${v.join('; ')}`) : []
  return { statusCode, name, message: parts.length ? `${f.message} ${parts.join('. ')}` : f.message }
}

/** The envelope plugin's dialect for every path under /compat/resend. */
export const resendErrorDialect: ErrorDialect = {
  prefix: `${RESEND_PREFIX}/`,
  format(f: Failure, request: Request) {
    const body = resendError(f, request)
    return { status: body.statusCode, body }
  },
}
