import { eq } from 'drizzle-orm'
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { bulkDeleteByIds, pageOfTable, type BulkDeleteOutcome, findById, columnsOf, timestampsOf } from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import { segments, type CustomFieldType } from '../../db/schema'
import { AppError, invalidField } from '../../lib/errors'
import { pageMeta, pageRequest, pageWindow, type PageMeta } from '../../lib/pagination'
import type { ContactView } from '../contacts/model'
import { contactView } from '../contacts/service'
import type { RawContact } from '../contacts/writer'
import { parallelCount } from './count-pool'
import type { SegmentView } from './model'
import {
  compileRules,
  describeFields,
  DAY_MS,
  inlineParams,
  MAX_INDEXED_SEGMENTS,
  type FieldDescription,
  type CompiledRules,
  type Condition,
  type CustomFieldInfo,
  type RuleCatalog,
  type RuleNode,
  type SqlValue,
} from './rules'

type Row = typeof segments.$inferSelect

function toView(r: Row): SegmentView {
  return { ...columnsOf(r, ['id', 'name', 'description']), rules: r.rules as RuleNode, indexed: r.index_where !== null, ...timestampsOf(r) }
}

const statements = preparedFor((db: Db) => ({
  customFields: db.$client.prepare<{ key: string; type: CustomFieldType; options: string }, []>('SELECT key, type, options FROM custom_fields'),
  listExists: db.$client.prepare<{ one: number }, [number]>('SELECT 1 AS one FROM lists WHERE id = ?'),
  statusCounts: db.$client.prepare<{ status: string; n: number }, []>('SELECT status, sum(n) AS n FROM contact_counts GROUP BY status'),
  indexExists: db.$client.prepare<{ one: number }, [string]>("SELECT 1 AS one FROM sqlite_master WHERE type = 'index' AND name = ?"),
  indexedSegments: db.$client.prepare<{ id: number; index_where: string }, []>('SELECT id, index_where FROM segments WHERE index_where IS NOT NULL'),
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

/**
 * Where a segment's contacts are read from: `contacts` with the compiled condition, or, for
 * an indexed segment, `contacts INDEXED BY` its partial index with the index's own WHERE
 * (parameters written in), which SQLite counts from the index alone and pages through it.
 */
export interface Source {
  from: string
  where: string
  params: SqlValue[]
  indexed: boolean
}

const scanOf = (compiled: Condition): Source => ({
  from: 'contacts',
  where: compiled.where,
  params: compiled.params,
  indexed: false,
})

/** How many contacts match: one COUNT(*) that SQLite evaluates, nothing loaded. */
function countWhere(deps: Deps, source: Source): number {
  const stmt = deps.db.$client.prepare<{ n: number }, SqlValue[]>(`SELECT COUNT(*) AS n FROM ${source.from} WHERE ${source.where}`)
  try {
    return stmt.get(...source.params)!.n
  } finally {
    stmt.finalize()
  }
}

// ---------------------------------------------------------------------------------------
// Indexed segments
// ---------------------------------------------------------------------------------------

/** The partial index holding an indexed segment's members (created with its row, dropped with it). */
function memberIndex(id: number): string {
  return `segment_members_${id}`
}

/**
 * Rules compiled for a partial index, values written in: the same text for the same rules
 * and custom fields, whatever the clock or the contacts say (rules.ts, forIndex).
 */
function indexTextOf(deps: Deps, rules: unknown, now: number): string | null {
  const compiled = compileRules(rules, { now, catalog: catalogOf(deps), checkReferences: false, forIndex: true })
  return compiled.ok ? inlineParams(compiled.where, compiled.params) : null
}

/**
 * The WHERE of an indexed segment's partial index, or a 422 on `indexed`: MAX_INDEXED_SEGMENTS
 * other segments are indexed already, or these rules cannot have one. SQLite keeps a partial
 * index right on every write to contacts, so the condition may depend on the contact's own
 * row only: not on the clock (relative dates; compiled a day apart, the text differs) nor on
 * other rows (a subquery: in_list, not_in_list; SQLite refuses those in an index).
 */
function indexWhereFor(deps: Deps, rules: unknown, segmentId: number | null): string {
  const others = statements(deps.db)
    .indexedSegments.all()
    .filter((r) => r.id !== segmentId).length
  if (others >= MAX_INDEXED_SEGMENTS)
    throw invalidField('indexed', `at most ${MAX_INDEXED_SEGMENTS} segments can be indexed, and ${others} are; turn indexing off on one of them first`)
  const now = deps.clock.now()
  const text = indexTextOf(deps, rules, now)
  if (text === null) throw invalidField('indexed', 'must be false: a value of these rules holds a NUL character, which cannot be written into an index')
  if (/\bSELECT\b/.test(text)) throw invalidField('indexed', 'must be false for rules with in_list or not_in_list: who matches them depends on other contacts')
  if (indexTextOf(deps, rules, now + DAY_MS) !== text)
    throw invalidField(
      'indexed',
      'must be false for rules with relative dates ({"days_ago": n}, {"days_from_now": n}): who matches them changes with the clock',
    )
  return text
}

/** The statement creating a segment's member index; on the id column: members in id order, for pages of them. */
export function memberIndexSql(id: number, where: string): string {
  return `CREATE INDEX ${memberIndex(id)} ON contacts (id) WHERE ${where}`
}

/** Creates, replaces or drops a segment's member index and records its WHERE; inside the caller's transaction. */
function setMemberIndex(deps: Deps, id: number, where: string | null): void {
  dropMemberIndex(deps, id)
  if (where !== null) deps.db.$client.run(memberIndexSql(id, where))
  deps.db.$client.run('UPDATE segments SET index_where = ? WHERE id = ?', [where, id])
}

function dropMemberIndex(deps: Deps, id: number): void {
  deps.db.$client.run(`DROP INDEX IF EXISTS ${memberIndex(id)}`)
}

/**
 * Where to read a saved segment's contacts from. An indexed segment reads its index when its
 * rules still compile to the index's WHERE (which they do only if they compile at all) and
 * the index exists. Otherwise the rules are compiled as for any segment (a 409 when they went
 * stale) and scanned: a release whose compiler writes them otherwise finds a different text
 * and scans (the same contacts, more slowly) until the segment is saved again, which rebuilds
 * the index; INDEXED BY a missing index would be an error, and a count never fails for want
 * of one.
 */
function sourceOf(deps: Deps, segment: Row): Source {
  const where = segment.index_where
  const served =
    where !== null && indexTextOf(deps, segment.rules, deps.clock.now()) === where && statements(deps.db).indexExists.get(memberIndex(segment.id)) !== null
  if (!served) return scanOf(compileSaved(deps, segment))
  return { from: `contacts INDEXED BY ${memberIndex(segment.id)}`, where, params: [], indexed: true }
}

/**
 * Creates the member indexes that are missing, and names their segments. A migration that
 * rebuilds `contacts` (drizzle-kit does for some column changes: a new table, the rows
 * copied, the old one dropped) drops every index on it, these too. Run at start, after the
 * migrations (cli.ts); each one reads every contact once.
 */
export function restoreMemberIndexes(deps: Deps): number[] {
  const s = statements(deps.db)
  const missing = s.indexedSegments.all().filter((r) => !s.indexExists.get(memberIndex(r.id)))
  for (const r of missing) deps.db.$client.run(memberIndexSql(r.id, r.index_where))
  return missing.map((r) => r.id)
}

/** Where a saved segment's count and pages read its contacts from (404 / 409 as GET count). */
export function segmentSource(deps: Deps, id: number): Source {
  return sourceOf(deps, findSegment(deps, id))
}

export interface SegmentInput {
  name: string
  description?: string
  rules: unknown
  indexed?: boolean
}

/** Saves a segment after checking its rules; the stored tree is the canonical one. An indexed segment's index is built before the answer. */
export function createSegment(deps: Deps, input: SegmentInput): SegmentView {
  const compiled = compileInput(deps, input.rules)
  const where = input.indexed ? indexWhereFor(deps, compiled.rules, null) : null
  const now = deps.clock.now()
  return deps.db.$client.transaction(() => {
    const row = deps.db
      .insert(segments)
      .values({ name: input.name.trim(), description: input.description ?? '', rules: compiled.rules, created_at: now, updated_at: now })
      .returning()
      .get()
    if (where === null) return toView(row)
    setMemberIndex(deps, row.id, where)
    return toView({ ...row, index_where: where })
  })()
}

/** One segment (its rules, not its members: counting can take a while on a large audience). */
export function getSegment(deps: Deps, id: number): SegmentView {
  return toView(findSegment(deps, id))
}

/** A page of segments, oldest first. */
export function listSegments(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, segments, query, (rows: Row[]) => rows.map(toView))
}

/**
 * Changes name, description, rules or `indexed`; new rules are checked like on create. When
 * the rules or `indexed` are given, the member index is created, rebuilt or dropped to match,
 * in the same transaction as the row; an index already built on the same text is kept (a
 * console save sends the rules every time, and a rebuild reads every contact).
 */
export function updateSegment(deps: Deps, id: number, input: Partial<SegmentInput>): SegmentView {
  const current = findSegment(deps, id)
  const patch: Partial<Row> = { updated_at: deps.clock.now() }
  if (input.name !== undefined) patch.name = input.name.trim()
  if (input.description !== undefined) patch.description = input.description
  if (input.rules !== undefined) patch.rules = compileInput(deps, input.rules).rules
  const indexed = input.indexed ?? current.index_where !== null
  const reindex = input.rules !== undefined || input.indexed !== undefined
  const where = reindex && indexed ? indexWhereFor(deps, patch.rules ?? current.rules, id) : null
  const kept = where !== null && where === current.index_where && statements(deps.db).indexExists.get(memberIndex(id)) !== null
  deps.db.$client.transaction(() => {
    deps.db.update(segments).set(patch).where(eq(segments.id, id)).run()
    if (reindex && !kept) setMemberIndex(deps, id, where)
  })()
  return getSegment(deps, id)
}

/** Bulk delete: which ids were deleted and which did not exist, in one statement, their member indexes with them. Contacts are not touched. */
export function deleteSegments(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return deps.db.$client.transaction(() =>
    bulkDeleteByIds(deps.db, segments, ids, (deleted) => {
      for (const id of deleted) dropMemberIndex(deps, id)
    }),
  )()
}

/**
 * A count on its own (not part of a read transaction): on a large file database a full scan
 * runs on worker threads, cut by rowid (count-pool.ts), otherwise on the server's connection.
 */
async function countMatching(deps: Deps, compiled: Condition): Promise<number> {
  return (await parallelCount(deps, compiled)) ?? countWhere(deps, scanOf(compiled))
}

/** How many contacts a saved segment matches now: from its member index when it has one (a count of index entries, no rows read). */
export async function countSegment(deps: Deps, id: number): Promise<{ count: number }> {
  const source = sourceOf(deps, findSegment(deps, id))
  return { count: source.indexed ? countWhere(deps, source) : await countMatching(deps, source) }
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
  const source = sourceOf(deps, findSegment(deps, id))
  const req = pageRequest(query)
  const client = deps.db.$client
  return client.transaction(() => {
    // On this connection, never the workers: the total must come from the page's snapshot.
    const total = countWhere(deps, source)
    let rows: RawContact[] = []
    const window = pageWindow(req, total)
    if (window) {
      const sql = `SELECT ${CONTACT_COLUMNS} FROM ${source.from} WHERE ${source.where} ORDER BY id ${window.descending ? 'DESC' : 'ASC'} LIMIT ? OFFSET ?`
      const stmt = client.prepare<RawContact, SqlValue[]>(sql)
      try {
        rows = stmt.all(...source.params, window.limit, window.offset)
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
