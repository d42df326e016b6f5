import { and, asc, desc, gt, lt, type SQL } from 'drizzle-orm'
import { t } from 'elysia'
import type { DbOrTx, TableWithId } from '../../db/crud'
import { AppError } from '../../lib/errors'

/**
 * Resend's ids are UUID strings; ours are integers. Each record kind gets a fixed tag in the
 * first group and the integer sits in the last group, so an id round-trips without a lookup
 * table: `00000003-0000-4000-8000-00000000002a` is webhook 42. The version nibble (4) and
 * variant bits (8) keep the string a valid RFC 9562 UUID for clients that check its form.
 * A tag also stops an id of one kind from naming a record of another.
 */
export const ID_KINDS = {
  domain: 1,
  api_key: 2,
  webhook: 3,
  contact: 4,
  segment: 5,
  contact_property: 6,
  suppression: 7,
  template: 8,
  contact_import: 9,
  webhook_event: 10,
  template_version: 11,
  webhook_attempt: 12,
  broadcast: 13,
  automation: 14,
  automation_run: 15,
  event: 16,
  broadcast_recipient: 17,
  clicked_link: 18,
} as const
export type IdKind = keyof typeof ID_KINDS

const ID_PATTERN = /^([0-9a-f]{8})-0000-4000-8000-([0-9a-f]{12})$/i
/** The largest id that fits in 12 hex digits (far above any SQLite rowid Mailroom will reach). */
const MAX_ID = 0xffffffffffff

/** The Resend-style id of native record `id` of `kind`. */
export function encodeId(kind: IdKind, id: number): string {
  return `${ID_KINDS[kind].toString(16).padStart(8, '0')}-0000-4000-8000-${id.toString(16).padStart(12, '0')}`
}

/** The native id behind a Resend-style id; not_found (as Resend answers an unknown id) when it is not one of `kind`. */
export function decodeId(kind: IdKind, text: string, resource = kind.replace('_', ' ')): number {
  const m = ID_PATTERN.exec(text)
  const id = m && parseInt(m[1]!, 16) === ID_KINDS[kind] ? parseInt(m[2]!, 16) : NaN
  if (!Number.isSafeInteger(id) || id < 1 || id > MAX_ID) throw new AppError('not_found', `${capitalise(resource)} not found.`)
  return id
}

/** Like decodeId, but null when the text is not an id of this kind (for parameters that also take an email or a name). */
export function tryDecodeId(kind: IdKind, text: string): number | null {
  const m = ID_PATTERN.exec(text)
  return m && parseInt(m[1]!, 16) === ID_KINDS[kind] ? parseInt(m[2]!, 16) : null
}

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

// ---------------------------------------------------------------------------------------
// Cursor pagination (https://resend.com/docs/api-reference/pagination)
// ---------------------------------------------------------------------------------------

export const PaginationQuery = t.Object({
  // Digits and range in one pattern, as PageQuery does (src/http/schemas.ts): a bad value is refused naming the field.
  limit: t.Optional(
    t
      .Transform(t.String({ pattern: '^(?:[1-9][0-9]?|100)$', minimum: 1, maximum: 100, description: 'Items per page, 1 to 100 (default 20).' }))
      .Decode((text) => Number(text))
      .Encode((n) => String(n)),
  ),
  after: t.Optional(t.String({ description: 'The id of the last item of the previous page.' })),
  before: t.Optional(t.String({ description: 'The id of the first item of the next page (going back).' })),
})
export type Pagination = typeof PaginationQuery.static

/** Resend's list envelope. */
export const ListOf = <T extends Parameters<typeof t.Array>[0]>(item: T) => t.Object({ object: t.Literal('list'), has_more: t.Boolean(), data: t.Array(item) })

/**
 * One page of a table's ids, newest first as Resend lists: `after` walks to older records,
 * `before` back to newer ones; `has_more` says whether another page lies in that direction.
 * The caller turns the ids into views with the native service.
 */
export function cursorPage(db: DbOrTx, table: TableWithId, kind: IdKind, q: Pagination, where?: SQL): { ids: number[]; has_more: boolean } {
  if (q.after !== undefined && q.before !== undefined)
    throw new AppError('validation_failed', 'Use `after` or `before`, not both.', { before: ['cannot be used with after'] })
  const limit = q.limit ?? 20
  const back = q.before !== undefined
  const cursor = q.after ?? q.before
  const from = cursor === undefined ? undefined : decodeId(kind, cursor)
  const bound = from === undefined ? undefined : back ? gt(table.id, from) : lt(table.id, from)
  const rows = db
    .select({ id: table.id })
    .from(table)
    .where(and(where, bound))
    .orderBy(back ? asc(table.id) : desc(table.id))
    .limit(limit + 1)
    .all() as Array<{ id: number }>
  const ids = rows.slice(0, limit).map((r) => r.id)
  return { ids: back ? ids.reverse() : ids, has_more: rows.length > limit }
}
