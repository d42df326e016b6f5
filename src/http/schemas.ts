import { t, type TSchema } from 'elysia'
import { ERROR_CODES, type ErrorCode, type ErrorDetails } from '../lib/errors'
import { MAX_PAGE, MAX_PER_PAGE, type PageMeta } from '../lib/pagination'

/** `{ success: true, data }` around a record schema. */
export const Envelope = <T extends TSchema>(data: T) => t.Object({ success: t.Literal(true), data })

export const PageMetaSchema = t.Object({
  current_page: t.Integer(),
  per_page: t.Integer(),
  total: t.Integer(),
  last_page: t.Integer(),
})

/** `{ success: true, data: [...], meta }` for paginated lists. */
export const Paged = <T extends TSchema>(item: T) => t.Object({ success: t.Literal(true), data: t.Array(item), meta: PageMetaSchema })

/** The closed list of error codes (src/lib/errors.ts), so the OpenAPI document names every one. */
const ErrorCodeSchema = enumOf(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]], { description: 'A code from the closed list in docs/api.md.' })

/** `{ success: false, error }`, the failure envelope of the spec. */
export const ErrorEnvelope = t.Object(
  {
    success: t.Literal(false),
    error: t.Object({
      code: ErrorCodeSchema,
      message: t.String(),
      details: t.Optional(t.Record(t.String(), t.Array(t.String()))),
    }),
  },
  { $id: '#/components/schemas/Error' },
)

/**
 * A whole number in a query string, checked as text. Elysia's `t.Integer` accepts any
 * string that `Number()` reads as an integer (" " is 0, "1e20" is 10^20) and checks the range
 * only when decoding, where its error loses the field name ("property"). Here the digits and
 * the range are one pattern, so the schema check itself fails, naming the field, and the
 * handler gets a number. `minimum` and `maximum` (which TypeBox does not check on a string)
 * tell readers of the OpenAPI document, and `humanMessage`, the range.
 */
function queryWholeNumber(pattern: string, minimum: number, maximum: number, description: string) {
  return t
    .Transform(t.String({ pattern, minimum, maximum, description }))
    .Decode((text) => Number(text))
    .Encode((n) => String(n))
}

/** page and per_page, as the spec defines them; out-of-range values get 422 naming the field. */
export const PageQuery = {
  // 1 to 1,000,000,000: leading zeros, signs, exponents and spaces are refused.
  page: t.Optional(queryWholeNumber('^(?:[1-9][0-9]{0,8}|1000000000)$', 1, MAX_PAGE, `Page number, from 1 to ${MAX_PAGE}.`)),
  // 1 to 100 (MAX_PER_PAGE).
  per_page: t.Optional(queryWholeNumber('^(?:[1-9][0-9]?|100)$', 1, MAX_PER_PAGE, `Records per page, default 25, at most ${MAX_PER_PAGE}.`)),
}

/**
 * A record id in a path: up to 15 digits, every id a table can hold, and never a float that
 * SQLite would bind as one. Path ids use this rather than `t.Integer`, which Elysia turns into
 * a union with a default; Elysia 1.4.32 then redefines the parameter on Bun's own params
 * object, which refuses it (a 500; decision 87, test/http-routes-over-socket.test.ts).
 */
export const RecordId = (description = 'Record id.') => queryWholeNumber('^[1-9][0-9]{0,14}$', 1, 999_999_999_999_999, description)

export const IdParams = t.Object({ id: RecordId() })

/** C0 controls, DEL and C1 controls: what must not reach an operator's terminal. */
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/

/**
 * A name's pattern: no control characters (C0, DEL, C1), which would reach an operator's
 * terminal through `mailroom keys list` and the logs (ESC sequences recolour, move the
 * cursor, ring), and at least one character that is not white space: names are stored
 * trimmed, so "   " would pass `minLength: 1` and be stored as "" (issue 13).
 */
export const NAME_PATTERN = '^(?=[\\s\\S]*\\S)[^\\u0000-\\u001f\\u007f-\\u009f]*$'

/** A name a person gives a record (key, role, list, template...): 1 to `maxLength` characters, see NAME_PATTERN. */
export const NameString = (maxLength = 200, extra: { description?: string } = {}) => t.String({ minLength: 1, maxLength, pattern: NAME_PATTERN, ...extra })

/** Wraps a record in the success envelope. */
export function ok<T>(data: T): { success: true; data: T } {
  return { success: true, data }
}

/** Wraps a page of records with its meta. */
export function okPage<T>(page: { items: T[]; meta: PageMeta }): { success: true; data: T[]; meta: PageMeta } {
  return { success: true, data: page.items, meta: page.meta }
}

/** The error responses every authenticated route can give, for the OpenAPI document. */
export const commonErrors = {
  401: ErrorEnvelope,
  403: ErrorEnvelope,
  422: ErrorEnvelope,
  429: ErrorEnvelope,
}

/**
 * A route's own checks of a request body (that a list exists, that an address is valid),
 * as field -> messages. Its handler runs them too; the error envelope runs them when the
 * schema refused the body, on the fields that passed, so that one 422 names every failing
 * field (issue 13). It must not write anything and must accept any subset of the fields.
 */
export type SemanticCheck = (body: Record<string, unknown>) => ErrorDetails

/** Where `requires` keeps a route's SemanticCheck in its `detail`: a symbol, so it stays out of the OpenAPI document. */
export const SEMANTIC_CHECK = Symbol('semantic check')

/**
 * Route metadata: the permission the route requires (read by the auth layer) and its
 * OpenAPI summary. Every /api/v2 and /v1 route declares one.
 */
export function requires(
  permission: string,
  summary: string,
  extra: { description?: string; tags?: string[]; contentTypes?: string[]; check?: SemanticCheck } = {},
) {
  const group = permission.split('.')[0]!
  return {
    summary,
    description: [extra.description, `Requires the \`${permission}\` permission.`].filter(Boolean).join('\n\n'),
    tags: extra.tags ?? [group],
    'x-permission': permission,
    ...(extra.contentTypes ? { 'x-content-types': extra.contentTypes } : {}),
    ...(extra.check ? { [SEMANTIC_CHECK]: extra.check } : {}),
  }
}

/** Route metadata for the few routes open without a key. */
export function publicRoute(summary: string, tags: string[] = ['system']) {
  return { summary, tags, security: [] }
}

/** A record's creation and change times on the wire (ISO 8601 UTC; `timestampsOf` in db/crud writes them). */
export const Timestamps = { created_at: t.String({ format: 'date-time' }), updated_at: t.String({ format: 'date-time' }) }

/** Bulk delete (spec "Batch and bulk operations"): the same request and answer for every resource. */
export const BulkDeleteBody = t.Object({ ids: t.Array(t.Integer({ minimum: 1 }), { minItems: 1, maxItems: 1000, description: 'Record ids, at most 1,000.' }) })
export const BulkDeleteResult = t.Object({ deleted: t.Array(t.Integer()), not_found: t.Array(t.Integer()) })

/**
 * A string enum schema. Elysia's `t.UnionEnum` sets `default` to the first value, and
 * Elysia applies defaults to query strings and bodies, so an omitted optional filter
 * would silently become that value; this clears the default.
 */
export function enumOf<const T extends readonly [string, ...string[]]>(values: T, options: { description?: string } = {}) {
  return t.UnionEnum(values, { ...options, default: undefined })
}
