import { integer, primaryKey, sqliteTable, type AnySQLiteColumn } from 'drizzle-orm/sqlite-core'

// Column shapes that most tables share, written once. Each call makes a new builder, so a
// table's columns stay its own; the generated SQL is what the spelled-out columns gave.

/** The integer primary key of a record (the rowid, AUTOINCREMENT so ids are never reused). */
export const serialId = () => integer('id').primaryKey({ autoIncrement: true })

/** Times are integer milliseconds since the epoch; the wire shows ISO 8601 UTC. */
export const createdAt = () => integer('created_at').notNull()

/** When a record was created and last changed. */
export const timestamps = () => ({ created_at: createdAt(), updated_at: integer('updated_at').notNull() })

/** A required reference to the row this one belongs to: deleting the parent deletes it. */
export const ownedBy = <N extends string>(name: N, parent: () => AnySQLiteColumn) => integer(name).notNull().references(parent, { onDelete: 'cascade' })

/** An optional reference that falls back to null (the default) when the row it names is deleted. */
export const usesOptional = <N extends string>(name: N, target: () => AnySQLiteColumn) => integer(name).references(target, { onDelete: 'set null' })

/** A boolean stored as 0/1, never null. */
export const flag = <N extends string>(name: N, initial: boolean) => integer(name, { mode: 'boolean' }).notNull().default(initial)

/** A count that starts at zero. */
export const counter = <N extends string>(name: N) => integer(name).notNull().default(0)

/**
 * A count per owner row and clock hour (bridge quotas, node caps): `hour` is the start of the
 * clock hour in ms since the epoch; the owner's rows go with it.
 */
export function hourlyUsageTable<N extends string>(table: string, owner: N, parent: () => AnySQLiteColumn) {
  const ownerColumn = { [owner]: ownedBy(owner, parent) } as Record<N, ReturnType<typeof ownedBy<N>>>
  return sqliteTable(table, { ...ownerColumn, hour: integer('hour').notNull(), count: counter('count') }, (t) => [
    primaryKey({ columns: [t[owner] as AnySQLiteColumn, t.hour] }),
  ])
}
