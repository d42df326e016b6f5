import { eq } from 'drizzle-orm'
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { assertNameFree, bulkDeleteByIds, pageOfTable, type BulkDeleteOutcome, findById, columnsOf, timestampsOf } from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import { spinTags } from '../../db/schema'
import { AppError } from '../../lib/errors'
import type { SpinTagView } from './model'
import { checkAlternatives, SPIN_TAG_NAME } from './rules'

type Row = typeof spinTags.$inferSelect

function toView(r: Row): SpinTagView {
  return { ...columnsOf(r, ['id', 'name', 'alternatives']), ...timestampsOf(r) }
}

const statements = preparedFor((db: Db) => ({
  alternativesByName: db.$client.prepare<{ alternatives: string }, [string]>('SELECT alternatives FROM spin_tags WHERE name = ?'),
}))

function findSpinTag(deps: Deps, id: number): Row {
  return findById(deps.db, spinTags, id, 'spin tag')
}

function checkInput(input: { name?: string; alternatives?: string[] }): void {
  const errors: Record<string, string[]> = {}
  if (input.name !== undefined && !SPIN_TAG_NAME.test(input.name)) {
    errors.name = ['must be a lower-case identifier: a letter, then letters, digits or underscores (at most 63 characters)']
  }
  if (input.alternatives !== undefined) Object.assign(errors, checkAlternatives(input.alternatives))
  if (Object.keys(errors).length) throw new AppError('validation_failed', 'The spin tag is invalid.', errors)
}

/** Creates a spin tag; 409 when the name is taken. */
export function createSpinTag(deps: Deps, input: { name: string; alternatives: string[] }): SpinTagView {
  checkInput(input)
  assertNameFree(deps.db, spinTags, spinTags.name, input.name, { message: `A spin tag named "${input.name}" already exists.` })
  const now = deps.clock.now()
  const row = deps.db.insert(spinTags).values({ name: input.name, alternatives: input.alternatives, created_at: now, updated_at: now }).returning().get()
  return toView(row)
}

/** One spin tag by id. */
export function getSpinTag(deps: Deps, id: number): SpinTagView {
  return toView(findSpinTag(deps, id))
}

/** A page of spin tags, oldest first. */
export function listSpinTags(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, spinTags, query, (rows: Row[]) => rows.map(toView))
}

/**
 * Replaces a tag's alternatives. The name cannot change: templates refer to the tag by
 * name, so a rename would silently empty every use of it.
 */
export function updateSpinTag(deps: Deps, id: number, input: { name?: string; alternatives?: string[] }): SpinTagView {
  const row = findSpinTag(deps, id)
  if (input.name !== undefined && input.name !== row.name) {
    throw new AppError('validation_failed', 'The spin tag is invalid.', {
      name: ['cannot change (templates refer to the tag by name); create a new tag and point the templates at it'],
    })
  }
  checkInput({ alternatives: input.alternatives })
  deps.db
    .update(spinTags)
    .set({ ...(input.alternatives !== undefined && { alternatives: input.alternatives }), updated_at: deps.clock.now() })
    .where(eq(spinTags.id, id))
    .run()
  return getSpinTag(deps, id)
}

/** Bulk delete: which ids were deleted and which did not exist, in one statement. Templates using them render them empty from then on (and report it). */
export function deleteSpinTags(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return bulkDeleteByIds(deps.db, spinTags, ids)
}

/**
 * The alternatives of the named tags that exist now (absent names are simply missing from
 * the map). One prepared point lookup per name: templates render on the send path.
 */
export function spinTagAlternatives(deps: Deps, names: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>()
  if (names.length === 0) return out
  const stmt = statements(deps.db).alternativesByName
  for (const name of names) {
    const row = stmt.get(name)
    if (row) out.set(name, JSON.parse(row.alternatives) as string[])
  }
  return out
}
