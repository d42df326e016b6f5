import { eq, inArray } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { bulkDeleteByIds, pageOfTable, type BulkDeleteOutcome, columnsOf, findById, timestampsOf, viewOf, viewsWith } from '../../db/crud'
import { CONTACT_STATUSES, contactCounts, lists, type ContactStatus } from '../../db/schema'
import type { ListView } from './model'

type Row = typeof lists.$inferSelect

/** Status counts for some lists, from the trigger-kept contact_counts table. */
function countsFor(deps: Deps, ids: number[]): Map<number, ListView['counts']> {
  const out = new Map<number, ListView['counts']>()
  for (const id of ids) out.set(id, { ...(Object.fromEntries(CONTACT_STATUSES.map((s) => [s, 0])) as Record<ContactStatus, number>), total: 0 })
  if (ids.length === 0) return out
  const rows = deps.db
    .select({ list_id: contactCounts.list_id, status: contactCounts.status, n: contactCounts.n })
    .from(contactCounts)
    .where(inArray(contactCounts.list_id, ids))
    .all()
  for (const r of rows) {
    const c = out.get(r.list_id)!
    c[r.status] = r.n
    c.total += r.n
  }
  return out
}

function toView(r: Row, counts: ListView['counts']): ListView {
  return { ...columnsOf(r, ['id', 'name', 'description']), counts, ...timestampsOf(r) }
}

/** Lists' views with their contact counts, fetched for all of them in one query. */
function listViews(deps: Deps): (rows: Row[]) => ListView[] {
  return viewsWith((ids) => countsFor(deps, ids), toView)
}

/** True when the list exists (contacts and imports check this before writing). */
export function listExists(deps: Deps, id: number): boolean {
  return deps.db.select({ id: lists.id }).from(lists).where(eq(lists.id, id)).get() !== undefined
}

export function getList(deps: Deps, id: number): ListView {
  return viewOf(listViews(deps), findById(deps.db, lists, id, 'list'))
}

/** A page of lists, oldest first. */
export function listLists(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, lists, query, listViews(deps))
}

export function createList(deps: Deps, input: { name: string; description?: string }): ListView {
  const now = deps.clock.now()
  const row = deps.db
    .insert(lists)
    .values({ name: input.name.trim(), description: input.description ?? '', created_at: now, updated_at: now })
    .returning()
    .get()
  return viewOf(listViews(deps), row)
}

export function updateList(deps: Deps, id: number, input: { name?: string; description?: string }): ListView {
  getList(deps, id)
  deps.db
    .update(lists)
    .set({
      ...(input.name !== undefined && { name: input.name.trim() }),
      ...(input.description !== undefined && { description: input.description }),
      updated_at: deps.clock.now(),
    })
    .where(eq(lists.id, id))
    .run()
  return getList(deps, id)
}

/** Deletes lists with their contacts, list suppressions and imports (foreign keys cascade), in one statement. */
export function deleteLists(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return bulkDeleteByIds(deps.db, lists, ids)
}
