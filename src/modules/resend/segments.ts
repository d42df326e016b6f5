import { eq } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { lists } from '../../db/schema'
import type { Deps } from '../../deps'
import { requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import type { ListView } from '../lists/model'
import { createList, deleteLists, getList, updateList } from '../lists/service'
import { cursorPage, decodeId, encodeId, ListOf, PaginationQuery } from './ids'
import { deleted } from './shapes'

/**
 * resend.segments (and resend.audiences, the SDK's deprecated alias of the same paths) onto
 * Mailroom's lists: a Resend segment is a group contacts are added to by hand, which is what
 * a list is. Mailroom's own segments (rule-based) have no Resend counterpart.
 */

/** Resend's name for the group a contact lands in when the request names none (its old default audience). */
export const DEFAULT_SEGMENT_NAME = 'General'

/** The list behind a Resend segment id; not_found when there is none. */
export function segmentList(deps: Deps, id: string): number {
  const n = decodeId('segment', id)
  try {
    getList(deps, n)
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw new AppError('not_found', 'Segment not found.')
    throw e
  }
  return n
}

/** The list contacts go to when no segment is named, made through the lists service the first time. */
export function defaultList(deps: Deps): number {
  const found = deps.db.select({ id: lists.id }).from(lists).where(eq(lists.name, DEFAULT_SEGMENT_NAME)).get()
  return found
    ? found.id
    : createList(deps, { name: DEFAULT_SEGMENT_NAME, description: 'Contacts added through the Resend-compatible API without a segment.' }).id
}

export const SegmentSchema = t.Object({ id: t.String(), name: t.String(), created_at: t.String() })

/** A list as Resend shows a segment. */
export function segmentOf(v: ListView) {
  return { id: encodeId('segment', v.id), name: v.name, created_at: v.created_at }
}

/** /compat/resend/segments */
export function segmentRoutes(deps: Deps) {
  const tags = ['resend-compatible']
  return new Elysia()
    .post(
      '/segments',
      ({ body }) => {
        const v = createList(deps, { name: body.name })
        return { object: 'segment' as const, id: encodeId('segment', v.id), name: v.name }
      },
      {
        body: t.Object({ name: t.String({ minLength: 1, maxLength: 200 }) }),
        response: { 200: t.Object({ object: t.Literal('segment'), id: t.String(), name: t.String() }) },
        detail: requires('lists.create', 'Create a segment (Resend-compatible; a list)', { tags }),
      },
    )
    .get(
      '/segments',
      ({ query }) => {
        const page = cursorPage(deps.db, lists, 'segment', query)
        return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((i) => segmentOf(getList(deps, i))) }
      },
      { query: PaginationQuery, response: { 200: ListOf(SegmentSchema) }, detail: requires('lists.read', 'List segments (Resend-compatible)', { tags }) },
    )
    .get('/segments/:id', ({ params }) => ({ object: 'segment' as const, ...segmentOf(getList(deps, segmentList(deps, params.id))) }), {
      response: { 200: t.Composite([t.Object({ object: t.Literal('segment') }), SegmentSchema]) },
      detail: requires('lists.read', 'Get a segment (Resend-compatible)', { tags }),
    })
    .patch(
      '/segments/:id',
      ({ params, body }) => {
        updateList(deps, segmentList(deps, params.id), { name: body.name })
        return { object: 'segment' as const, id: params.id }
      },
      {
        body: t.Object({ name: t.String({ minLength: 1, maxLength: 200 }) }),
        response: { 200: t.Object({ object: t.Literal('segment'), id: t.String() }) },
        detail: requires('lists.update', 'Rename a segment (Resend-compatible)', { tags }),
      },
    )
    .delete(
      '/segments/:id',
      ({ params }) => {
        deleteLists(deps, [segmentList(deps, params.id)])
        return deleted('segment', params.id)
      },
      {
        response: { 200: t.Object({ object: t.Literal('segment'), id: t.String(), deleted: t.Boolean() }) },
        detail: requires('lists.delete', 'Remove a segment and its contacts (Resend-compatible)', { tags }),
      },
    )
}
