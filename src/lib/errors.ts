/**
 * The closed list of API error codes. Each code is part of the public contract
 * (docs/api.md lists them); adding one is an API change, renaming one is a break.
 */
export const ERROR_CODES = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  ip_not_allowed: 403,
  not_found: 404,
  method_not_allowed: 405,
  domain_not_verified: 403,
  conflict: 409,
  idempotency_key_reused: 409,
  idempotency_in_progress: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation_failed: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
} as const

export type ErrorCode = keyof typeof ERROR_CODES

/** Field name -> messages, as the spec shows for validation_failed. */
export type ErrorDetails = Record<string, string[]>

/** The one error type services throw; only the HTTP envelope plugin turns it into a response. */
export class AppError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
  ) {
    super(message)
    this.name = 'AppError'
    this.status = ERROR_CODES[code]
  }
}

/** Shorthand for a 422 about one field. */
export function invalidField(field: string, message: string): AppError {
  return new AppError('validation_failed', 'The request data is invalid.', { [field]: [message] })
}

/** Shorthand for a missing resource, phrased the same everywhere. */
export function notFound(resource: string, id: string | number): AppError {
  return new AppError('not_found', `No ${resource} with id ${id}.`)
}
