import { Elysia, ValidationError } from 'elysia'
import { AppError, ERROR_CODES, type ErrorCode, type ErrorDetails } from '../lib/errors'
import type { Logger } from '../lib/logger'

/** A failure before it is written in a wire format. */
export interface Failure {
  code: ErrorCode
  message: string
  details?: ErrorDetails
}

/** The failure envelope of the spec, as a Response. Headers already set on the request (rate limits) are kept by the framework. */
export function errorResponse(code: ErrorCode, message: string, details?: ErrorDetails, headers: Record<string, string> = {}): Response {
  const body = { success: false, error: details ? { code, message, details } : { code, message } }
  return new Response(JSON.stringify(body), {
    status: ERROR_CODES[code],
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  })
}

/**
 * Another API's error format for the paths under `prefix` (the Resend-compatible surface
 * answers errors the way Resend does, so its SDK reads them). Status codes stay ours.
 */
export interface ErrorDialect {
  prefix: string
  format(failure: Failure): unknown
}

/** Turns a schema failure into field -> messages; `/allowed_ips/0` becomes `allowed_ips.0`. */
export function validationDetails(error: ValidationError): ErrorDetails {
  const details: ErrorDetails = {}
  const all = (error.all ?? []) as Array<{
    path?: string
    message?: string
    summary?: string
    schema?: { description?: string; enum?: unknown[]; error?: unknown }
  }>
  for (const issue of all) {
    const field = (issue.path ?? '').replace(/^\//, '').replace(/\//g, '.') || error.type
    // TypeBox words an enum failure as "Expected kind 'UnionEnum'"; say what is allowed instead.
    const allowed = Array.isArray(issue.schema?.enum) ? `must be one of: ${issue.schema.enum.join(', ')}` : null
    // A schema may word its own failure (`error`, as NameString does).
    const own = typeof issue.schema?.error === 'string' ? issue.schema.error : null
    const message = own ?? allowed ?? (issue.summary || issue.message || 'is invalid')
    ;(details[field] ??= []).includes(message) || details[field]!.push(message)
  }
  if (Object.keys(details).length === 0) details[error.type] = ['is invalid']
  return details
}

/**
 * Maps every error to the spec's failure envelope. Registered first so it covers every
 * route; a 500 says only "internal" on the wire and the cause goes to the log with the
 * request id.
 */
export function envelopePlugin(log: Logger, onFailure: (request: Request, status: number) => void = () => {}, dialects: ErrorDialect[] = []) {
  // Destructured on purpose: Elysia reads a hook's parameter list to decide what to parse
  // for every request; a hook that takes the whole context makes it parse cookies and all.
  return new Elysia({ name: 'envelope' }).onError({ as: 'global' }, ({ code, error, request, set }) => {
    const failure = toFailure(log, { code, error, request, set })
    const status = ERROR_CODES[failure.code]
    const path = dialects.length > 0 ? new URL(request.url).pathname : ''
    const dialect = dialects.find((d) => path.startsWith(d.prefix))
    const response = dialect
      ? new Response(JSON.stringify(dialect.format(failure)), { status, headers: { 'content-type': 'application/json; charset=utf-8' } })
      : errorResponse(failure.code, failure.message, failure.details)
    // Later hooks (the access log) read the status from here, not from the Response.
    set.status = status
    onFailure(request, status)
    return response
  })
}

function toFailure(
  log: Logger,
  { code, error, request, set }: { code: unknown; error: unknown; request: Request; set: { headers: Record<string, unknown> } },
): Failure {
  if (error instanceof AppError) return { code: error.code, message: error.message, details: error.details }
  // Elysia wraps whatever a parse hook throws in its ParseError; ours may be a 413.
  const cause = (error as { cause?: unknown } | null)?.cause
  if (code === 'PARSE' && cause instanceof AppError) return { code: cause.code, message: cause.message, details: cause.details }
  switch (code) {
    case 'VALIDATION': {
      const v = error as ValidationError
      if (v.type === 'response') break
      const where = v.type === 'body' ? 'request body' : v.type === 'query' ? 'query string' : v.type === 'params' ? 'path' : v.type
      return { code: 'validation_failed', message: `The ${where} is invalid.`, details: validationDetails(v) }
    }
    case 'PARSE':
      return { code: 'bad_request', message: 'The request body could not be parsed; send valid JSON with Content-Type: application/json.' }
    case 'NOT_FOUND':
      return { code: 'not_found', message: `No route for ${request.method} ${new URL(request.url).pathname}.` }
    case 'INVALID_COOKIE_SIGNATURE':
    case 'INVALID_FILE_TYPE':
      return { code: 'bad_request', message: 'The request is malformed.' }
  }
  const requestId = typeof set.headers['x-request-id'] === 'string' ? set.headers['x-request-id'] : undefined
  log.error('unhandled error', {
    request_id: requestId,
    method: request.method,
    url: request.url,
    error: error instanceof Error ? (error.stack ?? error.message) : String(error),
  })
  return { code: 'internal', message: `Something went wrong on our side. Quote request id ${requestId ?? 'unknown'} when you report it.` }
}
