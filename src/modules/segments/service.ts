import { eq } from 'drizzle-orm'
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { bulkDeleteByIds, pageOfTable, type BulkDeleteOutcome, findById, columnsOf, timestampsOf } from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import { segments, type CustomFieldType } from '../../db/schema'
import { AppError } from '../../lib/errors'
import { pageMeta, pageRequest, pageWindow, type PageMeta } from '../../lib/pagination'
import type { ContactView } from '../contacts/model'
import { contactView } from '../contacts/service'
import type { RawContact } from '../contacts/writer'
import { parallelCount } from './count-pool'
import type { SegmentView } from './model'
import {
  compileRules,
  describeFields,
  type FieldDescription,
  type CompiledRules,
  type CustomFieldInfo,
  type RuleCatalog,
  type RuleNode,
  type SqlValue,
} from './rules'

type Row = typeof segments.$inferSelect

function toView(r: Row): SegmentView {
  return { ...columnsOf(r, ['id', 'name', 'description']), rules: r.rules as RuleNode, ...timestampsOf(r) }
}

const statements = preparedFor((db: Db) => ({
  customFields: db.$client.prepare<{ key: string; type: CustomFieldType; options: string }, []>('SELECT key, type, options FROM custom_fields'),
  listExists: db.$client.prepare<{ one: number }, [number]>('SELECT 1 AS one FROM lists WHERE id = ?'),
  statusCounts: db.$client.prepare<{ status: string; n: number }, []>('SELECT status, sum(n) AS n FROM contact_counts GROUP BY status'),
}))

/** The custom fields and lists as they are now, for the rule compiler. */
function catalogOf(deps: Deps): RuleCatalog {
  const s = statements(deps.db)
  let fields: Map<string, CustomFieldInfo> | undefined
  let counts: Map<string, number> | undefined
  return {
    customField(key) {
      fields ??= new Map(s.customFields.all().map((r) => [r.key, { key: r.key, type: r.type, options: JSON.parse(r.options) as string[] }]))
      return fields.get(key)
    },
    listExists: (id) => s.listExists.get(id) !== null,
    statusShare(statuses) {
      counts ??= new Map(s.statusCounts.all().map((r) => [r.status, r.n]))
      const total = [...counts.values()].reduce((a, b) => a + b, 0)
      return total === 0 ? 0 : statuses.reduce((sum, st) => sum + (counts!.get(st) ?? 0), 0) / total
    },
  }
}

/** Checks rules a client sends (lists must exist, one_of values must be options); 422 with paths on failure. */
export function compileInput(deps: Deps, rules: unknown): CompiledRules {
  const result = compileRules(rules, { now: deps.clock.now(), catalog: catalogOf(deps), checkReferences: true })
  if (!result.ok) throw new AppError('validation_failed', 'The segment rules are invalid.', result.errors)
  return result
}

/**
 * Compiles a saved segment against the custom fields of now. Relative dates resolve
 * afresh on every evaluation. A rule on a custom field deleted since the segment was saved
 * cannot be evaluated (its type is gone): 409, naming the rule, until the segment is updated.
 */
function compileSaved(deps: Deps, segment: Row): CompiledRules {
  const result = compileRules(segment.rules, { now: deps.clock.now(), catalog: catalogOf(deps), checkReferences: false })
  if (!result.ok) {
    const problems = Object.entries(result.errors).map(([path, messages]) => `${path}: ${messages.join('; ')}`)
    throw new AppError('conflict', `The rules of segment ${segment.id} no longer match the custom fields (${problems.join(', ')}); update the segment's rules.`)
  }
  return result
}

/** A saved segment's rules as one SQL condition over `contacts` (for broadcast audiences); 404 / 409 as GET count. */
export function compiledSegment(deps: Deps, id: number): CompiledRules {
  return compileSaved(deps, findSegment(deps, id))
}

function findSegment(deps: Deps, id: number): Row {
  return findById(deps.db, segments, id, 'segment')
}

/** How many contacts match a compiled condition: one COUNT(*) that SQLite evaluates, nothing loaded. */
function countWhere(deps: Deps, compiled: CompiledRules): number {
  const stmt = deps.db.$client.prepare<{ n: number }, SqlValue[]>(`SELECT COUNT(*) AS n FROM contacts WHERE ${compiled.where}`)
  try {
    return stmt.get(...compiled.params)!.n
  } finally {
    stmt.finalize()
  }
}

export interface SegmentInput {
  name: string
  description?: string
  rules: unknown
}

/** Saves a segment after checking its rules; the stored tree is the canonical one. */
export function createSegment(deps: Deps, input: SegmentInput): SegmentView {
  const compiled = compileInput(deps, input.rules)
  const now = deps.clock.now()
  const row = deps.db
    .insert(segments)
    .values({ name: input.name.trim(), description: input.description ?? '', rules: compiled.rules, created_at: now, updated_at: now })
    .returning()
    .get()
  return toView(row)
}

/** One segment (its rules, not its members: counting can take a while on a large audience). */
export function getSegment(deps: Deps, id: number): SegmentView {
  return toView(findSegment(deps, id))
}

/** A page of segments, oldest first. */
export function listSegments(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, segments, query, (rows: Row[]) => rows.map(toView))
}

/** Changes name, description or rules; new rules are checked like on create. */
export function updateSegment(deps: Deps, id: number, input: Partial<SegmentInput>): SegmentView {
  findSegment(deps, id)
  const patch: Partial<Row> = { updated_at: deps.clock.now() }
  if (input.name !== undefined) patch.name = input.name.trim()
  if (input.description !== undefined) patch.description = input.description
  if (input.rules !== undefined) patch.rules = compileInput(deps, input.rules).rules
  deps.db.update(segments).set(patch).where(eq(segments.id, id)).run()
  return getSegment(deps, id)
}

/** Bulk delete: which ids were deleted and which did not exist, in one statement. Contacts are not touched. */
export function deleteSegments(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return bulkDeleteByIds(deps.db, segments, ids)
}

/**
 * A count on its own (not part of a read transaction): on a large file database a full scan
 * runs on worker threads, cut by rowid (count-pool.ts), otherwise on the server's connection.
 */
async function countMatching(deps: Deps, compiled: CompiledRules): Promise<number> {
  return (await parallelCount(deps, compiled)) ?? countWhere(deps, compiled)
}

/** How many contacts a saved segment matches now. */
export async function countSegment(deps: Deps, id: number): Promise<{ count: number }> {
  return { count: await countMatching(deps, compileSaved(deps, findSegment(deps, id))) }
}

/** How many contacts some rules would match, without saving them (for rule builders). */
export async function previewSegment(deps: Deps, rules: unknown): Promise<{ count: number }> {
  return { count: await countMatching(deps, compileInput(deps, rules)) }
}

const CONTACT_COLUMNS = 'id, email, first_name, last_name, list_id, status, fields, created_at, updated_at'

/**
 * A page of a segment's contacts by id, in the contacts API's shape, with the total. Both run in one read transaction,
 * so they agree. Deep pages are read from the far end (pageWindow).
 */
export function segmentContacts(deps: Deps, id: number, query: { page?: number; per_page?: number }): { items: ContactView[]; meta: PageMeta } {
  const compiled = compileSaved(deps, findSegment(deps, id))
  const req = pageRequest(query)
  const client = deps.db.$client
  return client.transaction(() => {
    // On this connection, never the workers: the total must come from the page's snapshot.
    const total = countWhere(deps, compiled)
    let rows: RawContact[] = []
    const window = pageWindow(req, total)
    if (window) {
      const sql = `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE ${compiled.where} ORDER BY id ${window.descending ? 'DESC' : 'ASC'} LIMIT ? OFFSET ?`
      const stmt = client.prepare<RawContact, SqlValue[]>(sql)
      try {
        rows = stmt.all(...compiled.params, window.limit, window.offset)
      } finally {
        stmt.finalize()
      }
      if (window.descending) rows.reverse()
    }
    return { items: rows.map(contactView), meta: pageMeta(req, total) }
  })()
}

/** Names of the built-in fields, for people. */
const BUILTIN_NAMES: Record<string, string> = {
  email: 'Email',
  first_name: 'First name',
  last_name: 'Last name',
  status: 'Status',
  list_id: 'List',
  created_at: 'Created',
  updated_at: 'Updated',
}

/** The fields rules may use now (built-in, then custom fields by key), with their operators and allowed values. */
export function segmentFields(deps: Deps): Array<FieldDescription & { name: string }> {
  const rows = deps.db.$client
    .query<{ key: string; name: string; type: CustomFieldType; options: string }, []>('SELECT key, name, type, options FROM custom_fields ORDER BY key')
    .all()
  const names = new Map(rows.map((r) => [`fields.${r.key}`, r.name]))
  return describeFields(rows.map((r) => ({ key: r.key, type: r.type, options: JSON.parse(r.options) as string[] }))).map((f) => ({
    ...f,
    name: names.get(f.field) ?? BUILTIN_NAMES[f.field] ?? f.field,
  }))
}
