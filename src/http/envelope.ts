import { Elysia, ValidationError } from 'elysia'
import { AppError, ERROR_CODES, type ErrorCode, type ErrorDetails } from '../lib/errors'
import type { Logger } from '../lib/logger'

/** The failure envelope of the spec, as a Response. Headers already set on the request (rate limits) are kept by the framework. */
export function errorResponse(code: ErrorCode, message: string, details?: ErrorDetails, headers: Record<string, string> = {}): Response {
  const body = { success: false, error: details ? { code, message, details } : { code, message } }
  return new Response(JSON.stringify(body), {
    status: ERROR_CODES[code],
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  })
}

/** Turns a schema failure into field -> messages; `/allowed_ips/0` becomes `allowed_ips.0`. */
export function validationDetails(error: ValidationError): ErrorDetails {
  const details: ErrorDetails = {}
  const all = (error.all ?? []) as Array<{ path?: string; message?: string; summary?: string; schema?: { description?: string; enum?: unknown[] } }>
  for (const issue of all) {
    const field = (issue.path ?? '').replace(/^\//, '').replace(/\//g, '.') || error.type
    // TypeBox words an enum failure as "Expected kind 'UnionEnum'"; say what is allowed instead.
    const allowed = Array.isArray(issue.schema?.enum) ? `must be one of: ${issue.schema.enum.join(', ')}` : null
    const message = allowed ?? (issue.summary || issue.message || 'is invalid')
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
export function envelopePlugin(log: Logger, onFailure: (request: Request, status: number) => void = () => {}) {
  // Destructured on purpose: Elysia reads a hook's parameter list to decide what to parse
  // for every request; a hook that takes the whole context makes it parse cookies and all.
  return new Elysia({ name: 'envelope' }).onError({ as: 'global' }, ({ code, error, request, set }) => {
    const response = toErrorResponse(log, { code, error, request, set })
    // Later hooks (the access log) read the status from here, not from the Response.
    set.status = response.status
    onFailure(request, response.status)
    return response
  })
}

function toErrorResponse(
  log: Logger,
  { code, error, request, set }: { code: unknown; error: unknown; request: Request; set: { headers: Record<string, unknown> } },
): Response {
  if (error instanceof AppError) return errorResponse(error.code, error.message, error.details)
  // Elysia wraps whatever a parse hook throws in its ParseError; ours may be a 413.
  const cause = (error as { cause?: unknown } | null)?.cause
  if (code === 'PARSE' && cause instanceof AppError) return errorResponse(cause.code, cause.message, cause.details)
  switch (code) {
    case 'VALIDATION': {
      const v = error as ValidationError
      if (v.type === 'response') break
      const where = v.type === 'body' ? 'request body' : v.type === 'query' ? 'query string' : v.type === 'params' ? 'path' : v.type
      return errorResponse('validation_failed', `The ${where} is invalid.`, validationDetails(v))
    }
    case 'PARSE':
      return errorResponse('bad_request', 'The request body could not be parsed; send valid JSON with Content-Type: application/json.')
    case 'NOT_FOUND':
      return errorResponse('not_found', `No route for ${request.method} ${new URL(request.url).pathname}.`)
    case 'INVALID_COOKIE_SIGNATURE':
    case 'INVALID_FILE_TYPE':
      return errorResponse('bad_request', 'The request is malformed.')
  }
  const requestId = typeof set.headers['x-request-id'] === 'string' ? set.headers['x-request-id'] : undefined
  log.error('unhandled error', {
    request_id: requestId,
    method: request.method,
    url: request.url,
    error: error instanceof Error ? (error.stack ?? error.message) : String(error),
  })
  return errorResponse('internal', `Something went wrong on our side. Quote request id ${requestId ?? 'unknown'} when you report it.`)
}
