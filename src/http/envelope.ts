import { Elysia, ValidationError } from 'elysia'
import { AppError, ERROR_CODES, type ErrorCode, type ErrorDetails } from '../lib/errors'
import type { Logger } from '../lib/logger'
import { CONTROL_CHARACTERS, NAME_PATTERN, type SemanticCheck } from './schemas'

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
 * answers errors the way Resend does, with Resend's statuses, so its SDK reads them).
 */
export interface ErrorDialect {
  prefix: string
  format(failure: Failure, request: Request): { status: number; body: unknown }
}

/** One schema issue as Elysia lists it (TypeBox's ValueError plus Elysia's summary). */
interface SchemaIssue {
  type?: number
  path?: string
  message?: string
  summary?: string
  value?: unknown
  schema?: Schema
}

/** The parts of a JSON schema the messages read. */
interface Schema {
  type?: string | string[]
  format?: string
  const?: unknown
  enum?: unknown[]
  anyOf?: Schema[]
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  minItems?: number
  maxItems?: number
  minProperties?: number
  maxProperties?: number
}

// TypeBox's ValueErrorType codes (@sinclair/typebox/errors), the ones worded below.
const E = {
  arrayMaxItems: 2,
  arrayMinItems: 4,
  arrayUniqueItems: 5,
  array: 6,
  boolean: 14,
  integerExclusiveMaximum: 22,
  integerExclusiveMinimum: 23,
  integerMaximum: 24,
  integerMinimum: 25,
  integer: 27,
  kind: 31,
  literal: 32,
  never: 33,
  null: 35,
  numberExclusiveMaximum: 36,
  numberExclusiveMinimum: 37,
  numberMaximum: 38,
  numberMinimum: 39,
  number: 41,
  additionalProperty: 42,
  maxProperties: 43,
  minProperties: 44,
  requiredProperty: 45,
  object: 46,
  stringFormat: 50,
  stringMaxLength: 51,
  stringMinLength: 52,
  stringPattern: 53,
  string: 54,
  tupleLength: 56,
  tuple: 57,
  union: 62,
} as const

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`
const joinOr = (words: string[]) => (words.length <= 2 ? words.join(' or ') : `${words.slice(0, -1).join(', ')}, or ${words.at(-1)}`)
const FORMATS: Record<string, string> = {
  email: 'an email address',
  uri: 'a URL',
  'date-time': 'an ISO 8601 date and time',
  date: 'a date (YYYY-MM-DD)',
  integer: 'a whole number',
  numeric: 'a number',
  boolean: 'true or false',
  ipv4: 'an IPv4 address',
  ipv6: 'an IPv6 address',
  uuid: 'a UUID',
}

/** "from 1 to 100", "of at least 1", "" : the bounds of a number schema in words. */
function bounds(schema: Schema): string {
  const { minimum: min, maximum: max } = schema
  if (min !== undefined && max !== undefined) return ` from ${min.toLocaleString('en-US')} to ${max.toLocaleString('en-US')}`
  if (min !== undefined) return ` of at least ${min.toLocaleString('en-US')}`
  if (max !== undefined) return ` of at most ${max.toLocaleString('en-US')}`
  return ''
}

/**
 * What a schema accepts, in words, as alternatives ("a whole number", "null"). Elysia's
 * `t.Integer` is a union of a digit string and an integer, and `t.Numeric` of a numeric
 * string and a number: each reads as the one thing it stands for.
 */
function describe(schema: Schema | undefined): string[] {
  if (!schema) return []
  if (Array.isArray(schema.enum)) return [`one of: ${schema.enum.join(', ')}`]
  if ('const' in schema) return [JSON.stringify(schema.const)]
  if (schema.anyOf) {
    const numeric = schema.anyOf.find((s) => s.type === 'integer' || s.type === 'number')
    const digits = schema.anyOf.find((s) => s.type === 'string' && (s.format === 'integer' || s.format === 'numeric'))
    if (schema.anyOf.length === 2 && numeric && digits) return [`${numeric.type === 'integer' ? 'a whole number' : 'a number'}${bounds(numeric)}`]
    if (schema.anyOf.every((s) => 'const' in s)) return [`one of: ${schema.anyOf.map((s) => String(s.const)).join(', ')}`]
    return [...new Set(schema.anyOf.flatMap(describe))]
  }
  switch (schema.type) {
    case 'string':
      return [schema.format && FORMATS[schema.format] ? FORMATS[schema.format]! : 'a string']
    case 'integer':
      return [`a whole number${bounds(schema)}`]
    case 'number':
      return [`a number${bounds(schema)}`]
    case 'boolean':
      return ['true or false']
    case 'null':
      return ['null']
    case 'array':
      return ['a list']
    case 'object':
      return ['an object']
  }
  return []
}

const mustBe = (schema: Schema | undefined, fallback: string) => {
  const words = describe(schema)
  return words.length ? `must be ${joinOr(words)}` : fallback
}

/** A number bound's failures (integer and number), the schema keyword that holds the bound, and how to say it. */
const NUMBER_BOUNDS: Array<{ failures: number[]; keyword: 'minimum' | 'maximum' | 'exclusiveMinimum' | 'exclusiveMaximum'; words: string }> = [
  { failures: [E.integerMinimum, E.numberMinimum], keyword: 'minimum', words: 'at least' },
  { failures: [E.integerMaximum, E.numberMaximum], keyword: 'maximum', words: 'at most' },
  { failures: [E.integerExclusiveMinimum, E.numberExclusiveMinimum], keyword: 'exclusiveMinimum', words: 'more than' },
  { failures: [E.integerExclusiveMaximum, E.numberExclusiveMaximum], keyword: 'exclusiveMaximum', words: 'less than' },
]

/**
 * A schema issue in plain words. TypeBox and Elysia word failures for programmers
 * ("Expected union value", "should be one of: 'integer', 'integer'", "Expected property
 * 'to' to be string but found: ..."); people read these, so they say what is allowed.
 */
export function humanMessage(issue: SchemaIssue): string {
  const s = issue.schema ?? {}
  const bound = NUMBER_BOUNDS.find((b) => issue.type !== undefined && b.failures.includes(issue.type))
  if (bound) return `must be ${bound.words} ${s[bound.keyword]!.toLocaleString('en-US')}`
  switch (issue.type) {
    case E.requiredProperty:
      return 'is required'
    case E.additionalProperty:
      return 'is not a known field'
    case E.never:
      return 'is not allowed'
    case E.string:
    case E.number:
    case E.integer:
    case E.boolean:
    case E.null:
    case E.array:
    case E.object:
    case E.literal:
    case E.union:
    case E.kind:
      // Elysia's compiled check reports a missing field as one of the wrong type (undefined).
      return issue.value === undefined ? 'is required' : mustBe(s, 'is invalid')
    case E.stringMinLength:
      return s.minLength === 1 ? 'must not be empty' : `must be at least ${plural(s.minLength!, 'character')} long`
    case E.stringMaxLength:
      return `must be at most ${plural(s.maxLength!, 'character')} long`
    case E.stringFormat:
      return s.format && FORMATS[s.format] ? `must be ${FORMATS[s.format]}` : `must be in the ${s.format} format`
    case E.stringPattern:
      if (s.pattern === NAME_PATTERN) {
        const value = typeof issue.value === 'string' ? issue.value : ''
        return value.trim() !== '' && CONTROL_CHARACTERS.test(value) ? 'must be text without control characters' : 'must not be blank'
      }
      // A whole number checked as text (PageQuery) says so; other patterns are described in the OpenAPI document.
      return s.minimum !== undefined || s.maximum !== undefined ? `must be a whole number${bounds(s)}` : 'is not in the expected form'
    case E.arrayMinItems:
      return `must have at least ${plural(s.minItems!, 'item')}`
    case E.arrayMaxItems:
      return `must have at most ${plural(s.maxItems!, 'item')}`
    case E.arrayUniqueItems:
      return 'must not repeat an item'
    case E.minProperties:
      return `must have at least ${plural(s.minProperties!, 'key')}`
    case E.maxProperties:
      return `must have at most ${plural(s.maxProperties!, 'key')}`
    case E.tuple:
    case E.tupleLength:
      return 'must be a list of the expected length'
  }
  return 'is invalid'
}

/** Turns a schema failure into field -> messages in plain words; `/allowed_ips/0` becomes `allowed_ips.0`. */
export function validationDetails(error: ValidationError): ErrorDetails {
  const details: ErrorDetails = {}
  for (const issue of (error.all ?? []) as SchemaIssue[]) {
    const field = (issue.path ?? '').replace(/^\//, '').replace(/\//g, '.') || error.type
    const message = humanMessage(issue)
    const messages = (details[field] ??= [])
    // A missing field is "required"; that it is then also not a string says nothing more.
    if (messages.includes('is required')) continue
    if (message === 'is required') details[field] = [message]
    else if (!messages.includes(message)) messages.push(message)
  }
  if (Object.keys(details).length === 0) details[error.type] = ['is invalid']
  return details
}

/**
 * Merges a route's semantic check into a schema failure of its body: the check runs on the
 * top-level fields the schema did not refuse, and adds the fields it finds wrong that the
 * schema did not already name. A check that throws is a bug; the schema's answer stands.
 */
export function mergeSemanticDetails(log: Logger, details: ErrorDetails, body: unknown, check: SemanticCheck | undefined): ErrorDetails {
  if (!check || body === null || typeof body !== 'object' || Array.isArray(body)) return details
  const refused = new Set(Object.keys(details).map((f) => f.split('.')[0]!))
  const passed = Object.fromEntries(Object.entries(body).filter(([k]) => !refused.has(k)))
  let more: ErrorDetails
  try {
    more = check(passed)
  } catch (error) {
    log.error('semantic check failed', { error: error instanceof Error ? (error.stack ?? error.message) : String(error) })
    return details
  }
  const merged = { ...details }
  for (const [field, messages] of Object.entries(more)) {
    if (!refused.has(field.split('.')[0]!)) merged[field] = messages
  }
  return merged
}

/**
 * Maps every error to the spec's failure envelope. Registered first so it covers every
 * route; a 500 says only "internal" on the wire and the cause goes to the log with the
 * request id. `checkOf` finds a route's SemanticCheck (by method and route pattern).
 */
export function envelopePlugin(
  log: Logger,
  onFailure: (request: Request, status: number) => void = () => {},
  dialects: ErrorDialect[] = [],
  checkOf: (method: string, route: string) => SemanticCheck | undefined = () => undefined,
) {
  // Destructured on purpose: Elysia reads a hook's parameter list to decide what to parse
  // for every request; a hook that takes the whole context makes it parse cookies and all.
  return new Elysia({ name: 'envelope' }).onError({ as: 'global' }, ({ code, error, request, set, route, body }) => {
    let failure = toFailure(log, { code, error, request, set })
    if (code === 'VALIDATION' && (error as ValidationError).type === 'body' && failure.details) {
      failure = { ...failure, details: mergeSemanticDetails(log, failure.details, body, checkOf(request.method, route)) }
    }
    const path = dialects.length > 0 ? new URL(request.url).pathname : ''
    const dialect = dialects.find((d) => path.startsWith(d.prefix))
    const spoken = dialect?.format(failure, request)
    const status = spoken?.status ?? ERROR_CODES[failure.code]
    const response = spoken
      ? new Response(JSON.stringify(spoken.body), { status, headers: { 'content-type': 'application/json; charset=utf-8' } })
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
