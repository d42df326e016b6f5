import { and, asc, count, eq, inArray, ne, sql, type SQL } from 'drizzle-orm'
import type { SQLiteColumn, SQLiteTable } from 'drizzle-orm/sqlite-core'
import { toIso } from '../lib/clock'
import { AppError, notFound } from '../lib/errors'
import { pageMeta, pageRequest, type PageMeta } from '../lib/pagination'
import type { Db } from './client'
import { preparedFor } from './prepared'

/** A database handle or a transaction on it: both build and run the same queries. */
export type DbOrTx = Pick<Db, 'select' | 'insert' | 'update' | 'delete'>

/** A table with an integer primary key named `id`, the shape every CRUD resource has. */
export type TableWithId = SQLiteTable & { id: SQLiteColumn }

/** What every bulk delete answers (spec "Batch and bulk operations"). */
export interface BulkDeleteOutcome {
  deleted: number[]
  not_found: number[]
}

/**
 * Deletes the rows with these ids that exist and says which did not, in one statement
 * (`DELETE ... RETURNING id`), so the answer is exactly what the delete removed. Foreign
 * keys cascade as the schema says. `afterDelete` runs on the same handle (pass a transaction
 * to make the side effects, such as a cache-version bump, commit with the delete).
 */
export function bulkDeleteByIds(db: DbOrTx, table: TableWithId, ids: number[], afterDelete?: (deleted: number[]) => void): BulkDeleteOutcome {
  const unique = [...new Set(ids)]
  if (unique.length === 0) return { deleted: [], not_found: [] }
  const rows = db.delete(table).where(inArray(table.id, unique)).returning({ id: table.id }).all() as Array<{ id: number }>
  const deleted = rows.map((r) => r.id).sort((a, b) => a - b)
  if (deleted.length && afterDelete) afterDelete(deleted)
  const gone = new Set(deleted)
  return { deleted, not_found: unique.filter((id) => !gone.has(id)) }
}

/** The statements findById and pageOfTable run for one table, prepared on the database handle. */
interface TableStatements {
  byId: { get(values: { id: number }): unknown }
  total: { get(): { n: number } | undefined }
  page: { all(values: { limit: number; offset: number }): unknown[] }
}

/**
 * findById and pageOfTable run drizzle queries prepared once per database handle (`preparedFor`) and table.
 * Built per call, a primary-key read cost about 57 µs here (drizzle building the SQL, then
 * SQLite compiling it), prepared about 8 (docs/benchmarks.md, "Issue 18, eleventh round").
 * A transaction handle (no `$client`) builds the query each time: it is the same connection,
 * but a prepared query belongs to the handle that made it.
 */
const tableStatements = preparedFor(() => new Map<TableWithId, TableStatements>())

function statementsOf(db: DbOrTx, table: TableWithId): TableStatements | null {
  if (!('$client' in db)) return null
  const root = db as Db
  const byTable = tableStatements(root)
  let statements = byTable.get(table)
  if (!statements) {
    statements = {
      byId: root
        .select()
        .from(table as SQLiteTable)
        .where(eq(table.id, sql.placeholder('id')))
        .prepare(),
      total: root.select({ n: count() }).from(table).prepare(),
      page: root
        .select()
        .from(table as SQLiteTable)
        .orderBy(asc(table.id))
        .limit(sql.placeholder('limit'))
        .offset(sql.placeholder('offset'))
        .prepare(),
    }
    byTable.set(table, statements)
  }
  return statements
}

/** The row with this id, or 404 `not_found` naming the resource ("No sending node with id 7."). */
export function findById<T extends TableWithId>(db: DbOrTx, table: T, id: number, resource: string): T['$inferSelect'] {
  const prepared = statementsOf(db, table)
  const row = (
    prepared
      ? prepared.byId.get({ id })
      : db
          .select()
          .from(table as SQLiteTable)
          .where(eq(table.id, id))
          .get()
  ) as T['$inferSelect'] | undefined
  if (!row) throw notFound(resource, id)
  return row
}

/**
 * 409 `conflict` when another row already uses this name. `caseInsensitive` compares with
 * SQLite's `lower()` (ASCII case folding), for names people type in several spellings.
 */
export function assertNameFree(
  db: DbOrTx,
  table: TableWithId,
  column: SQLiteColumn,
  name: string,
  options: { exceptId?: number | null; caseInsensitive?: boolean; message: string | ((clashId: number) => string) },
): void {
  const same: SQL = options.caseInsensitive ? sql`lower(${column}) = lower(${name})` : eq(column, name)
  const clash = db
    .select({ id: table.id })
    .from(table)
    .where(and(same, options.exceptId ? ne(table.id, options.exceptId) : undefined))
    .get()
  if (clash) throw new AppError('conflict', typeof options.message === 'string' ? options.message : options.message(clash.id as number))
}

/**
 * Rows to views where each view needs related rows (counts, members), fetched for the whole
 * page in one query by `fetch` (id -> related), never one query per row.
 */
export function viewsWith<Row extends { id: number }, Related, View>(
  fetch: (ids: number[]) => Map<number, Related>,
  toView: (row: Row, related: Related) => View,
): (rows: Row[]) => View[] {
  return (rows) => {
    const related = fetch(rows.map((r) => r.id))
    return rows.map((r) => toView(r, related.get(r.id)!))
  }
}

/** One row's view through a page's mapper (see `viewsWith`), so get-one and list build views the same way. */
export function viewOf<Row, View>(toViews: (rows: Row[]) => View[], row: Row): View {
  return toViews([row])[0]!
}

/**
 * A page of a whole table in id order, with the spec's `meta`. `toViews` turns the page's
 * rows into their views at once, so views that need related rows fetch them in one query.
 */
export function pageOfTable<Row, View>(
  db: DbOrTx,
  table: TableWithId,
  query: { page?: number; per_page?: number },
  toViews: (rows: Row[]) => View[],
): { items: View[]; meta: PageMeta } {
  const req = pageRequest(query)
  const prepared = statementsOf(db, table)
  const total = prepared ? prepared.total.get()!.n : db.select({ n: count() }).from(table).get()!.n
  const rows = (
    prepared
      ? prepared.page.all({ limit: req.per_page, offset: req.offset })
      : db.select().from(table).orderBy(asc(table.id)).limit(req.per_page).offset(req.offset).all()
  ) as Row[]
  return { items: toViews(rows), meta: pageMeta(req, total) }
}

/**
 * The named columns of a row, as they are stored: the part of a view that needs no
 * conversion (times and JSON still do), so mappers list names instead of `x: r.x` lines.
 */
export function columnsOf<Row extends object, K extends keyof Row>(row: Row, keys: readonly K[]): Pick<Row, K> {
  const out = {} as Pick<Row, K>
  for (const key of keys) out[key] = row[key]
  return out
}

/** A record's creation and change times as the wire shows them (ISO 8601 UTC). */
export function timestampsOf(row: { created_at: number; updated_at: number }): { created_at: string; updated_at: string } {
  return { created_at: toIso(row.created_at)!, updated_at: toIso(row.updated_at)! }
}
