import { asc, count, eq, inArray } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { CONTACT_STATUSES, contactCounts, lists, type ContactStatus } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { notFound } from '../../lib/errors'
import { pageMeta, pageRequest } from '../../lib/pagination'

type Row = typeof lists.$inferSelect

export interface ListView {
  id: number
  name: string
  description: string
  /** Contacts by status, and their total. */
  counts: Record<ContactStatus, number> & { total: number }
  created_at: string
  updated_at: string
}

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
  return { id: r.id, name: r.name, description: r.description, counts, created_at: toIso(r.created_at)!, updated_at: toIso(r.updated_at)! }
}

/** True when the list exists (contacts and imports check this before writing). */
export function listExists(deps: Deps, id: number): boolean {
  return deps.db.select({ id: lists.id }).from(lists).where(eq(lists.id, id)).get() !== undefined
}

export function getList(deps: Deps, id: number): ListView {
  const row = deps.db.select().from(lists).where(eq(lists.id, id)).get()
  if (!row) throw notFound('list', id)
  return toView(row, countsFor(deps, [id]).get(id)!)
}

export function listLists(deps: Deps, query: { page?: number; per_page?: number }) {
  const req = pageRequest(query)
  const total = deps.db.select({ n: count() }).from(lists).get()!.n
  const rows = deps.db.select().from(lists).orderBy(asc(lists.id)).limit(req.per_page).offset(req.offset).all()
  const counts = countsFor(
    deps,
    rows.map((r) => r.id),
  )
  return { items: rows.map((r) => toView(r, counts.get(r.id)!)), meta: pageMeta(req, total) }
}

export function createList(deps: Deps, input: { name: string; description?: string }): ListView {
  const now = deps.clock.now()
  const row = deps.db
    .insert(lists)
    .values({ name: input.name.trim(), description: input.description ?? '', created_at: now, updated_at: now })
    .returning()
    .get()
  return toView(row, countsFor(deps, [row.id]).get(row.id)!)
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

/** Deletes lists with their contacts, list suppressions and imports (foreign keys cascade), in one transaction. */
export function deleteLists(deps: Deps, ids: number[]): { deleted: number[]; not_found: number[] } {
  const unique = [...new Set(ids)]
  const found = unique.length
    ? deps.db
        .select({ id: lists.id })
        .from(lists)
        .where(inArray(lists.id, unique))
        .all()
        .map((r) => r.id)
    : []
  if (found.length) deps.db.delete(lists).where(inArray(lists.id, found)).run()
  return { deleted: found, not_found: unique.filter((id) => !found.includes(id)) }
}
