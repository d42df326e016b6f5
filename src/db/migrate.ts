import { createHash } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { migrations as embedded, type EmbeddedMigration } from '../../migrations'
import { backupDatabase, type Db } from './client'

/**
 * Applies the drizzle-kit migrations embedded in the binary. Bookkeeping uses drizzle's own
 * `__drizzle_migrations` table and rule (a migration is pending when its journal time is
 * after the newest applied one), so `drizzle-kit migrate` and this agree. All pending
 * migrations run in one transaction: a failure leaves the database as it was.
 */
export interface MigrationResult {
  applied: string[]
  backup: string | null
}

const statements = (m: EmbeddedMigration) =>
  m.sql
    .split('--> statement-breakpoint')
    .map((s) => s.trim())
    .filter(Boolean)

/** Migrations not yet applied to this database. */
export function pendingMigrations(db: Db, all: EmbeddedMigration[] = embedded): EmbeddedMigration[] {
  const client = db.$client
  client.run('CREATE TABLE IF NOT EXISTS __drizzle_migrations (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)')
  const last = client.query('SELECT created_at FROM __drizzle_migrations ORDER BY created_at DESC LIMIT 1').get() as { created_at: number } | null
  return all.filter((m) => !last || m.createdAt > Number(last.created_at))
}

/**
 * Runs pending migrations. When the database already holds applied migrations, it is first
 * copied to `<backupDir>/pre-migrate-<time>.db`, so an upgrade can always be rolled back.
 */
export function migrate(db: Db, opts: { backupDir?: string; now: number; all?: EmbeddedMigration[] }): MigrationResult {
  const pending = pendingMigrations(db, opts.all)
  if (pending.length === 0) return { applied: [], backup: null }

  const client = db.$client
  const hasApplied = (client.query('SELECT count(*) AS n FROM __drizzle_migrations').get() as { n: number }).n > 0
  let backup: string | null = null
  if (hasApplied && opts.backupDir) {
    mkdirSync(opts.backupDir, { recursive: true, mode: 0o700 })
    backup = join(opts.backupDir, `pre-migrate-${new Date(opts.now).toISOString().replace(/[:.]/g, '-')}.db`)
    backupDatabase(db, backup)
  }

  client.transaction(() => {
    for (const m of pending) {
      for (const stmt of statements(m)) client.run(stmt)
      client.run('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)', [createHash('sha256').update(m.sql).digest('hex'), m.createdAt])
    }
  })()
  return { applied: pending.map((m) => m.tag), backup }
}
