import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** Small named values the server keeps for itself (readiness probe, scheduler marks). */
export const systemState = sqliteTable('system_state', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updated_at: integer('updated_at').notNull(),
})
