import { t, type TSchema } from 'elysia'
import { ERROR_CODES, type ErrorCode } from '../lib/errors'
import { MAX_PER_PAGE, type PageMeta } from '../lib/pagination'

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

/** page and per_page, as the spec defines them; out-of-range values get 422. */
export const PageQuery = {
  page: t.Optional(t.Integer({ minimum: 1, default: undefined, description: 'Page number, from 1.' })),
  per_page: t.Optional(t.Integer({ minimum: 1, maximum: MAX_PER_PAGE, description: `Records per page, default 25, at most ${MAX_PER_PAGE}.` })),
}

export const IdParams = t.Object({ id: t.Integer({ minimum: 1, description: 'Record id.' }) })

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
 * Route metadata: the permission the route requires (read by the auth layer) and its
 * OpenAPI summary. Every /api/v2 and /v1 route declares one.
 */
export function requires(permission: string, summary: string, extra: { description?: string; tags?: string[]; contentTypes?: string[] } = {}) {
  const group = permission.split('.')[0]!
  return {
    summary,
    description: [extra.description, `Requires the \`${permission}\` permission.`].filter(Boolean).join('\n\n'),
    tags: extra.tags ?? [group],
    'x-permission': permission,
    ...(extra.contentTypes ? { 'x-content-types': extra.contentTypes } : {}),
  }
}

/** Route metadata for the few routes open without a key. */
export function publicRoute(summary: string, tags: string[] = ['system']) {
  return { summary, tags, security: [] }
}

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
