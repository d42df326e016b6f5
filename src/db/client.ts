import { Database } from 'bun:sqlite'
import { chmodSync, closeSync, existsSync, openSync, statSync } from 'node:fs'
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import * as schema from './schema'

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database }

/** The page cache of a connection unless the `sqlite_cache_mib` setting says otherwise. */
export const DEFAULT_CACHE_MIB = 16

/**
 * Opens the database with the settings durability depends on, and checks that SQLite
 * really applied them (a PRAGMA on a read-only or in-memory file can be silently ignored).
 * WAL lets readers run beside the writer; synchronous=FULL fsyncs the WAL on every commit,
 * so a committed transaction survives power loss (https://sqlite.org/pragma.html#pragma_synchronous).
 */
export function openDatabase(path: string, opts: { cacheMiB?: number } = {}): Db {
  const client = new Database(path, { create: true, strict: true })
  client.run('PRAGMA busy_timeout = 5000')
  client.run('PRAGMA journal_mode = WAL')
  client.run('PRAGMA synchronous = FULL')
  client.run('PRAGMA foreign_keys = ON')
  // The page cache is the largest part of the server's memory it controls: 64 MB of it put a
  // server with 20,000 queued messages at 318 MiB against 234 MiB with 16 MB (decision 56),
  // so 16 MB unless the operator says otherwise (`sqlite_cache_mib`); imports set their own
  // (imports/runner.ts). No memory-mapped I/O: mapped pages count as the process's memory (a
  // million-contact database pushed the server past 400 MB) for 5-20 % faster reads.
  client.run(`PRAGMA cache_size = ${-Math.round((opts.cacheMiB ?? DEFAULT_CACHE_MIB) * 1024)}`)
  client.run('PRAGMA temp_store = MEMORY')
  // Checkpoints run on a worker thread (checkpointer.ts); this connection checkpoints only
  // if the WAL reaches 10,000 pages (~40 MB), a backstop should that worker fall behind.
  client.run('PRAGMA wal_autocheckpoint = 10000')
  assertPragmas(client, path === ':memory:')
  return drizzle({ client, schema }) as Db
}

function pragma(client: Database, name: string): unknown {
  const row = client.query(`PRAGMA ${name}`).get() as Record<string, unknown> | null
  return row ? Object.values(row)[0] : undefined
}

/** Throws when a setting did not take; in-memory databases cannot use WAL and are exempt from that one. */
export function assertPragmas(client: Database, inMemory: boolean): void {
  const problems: string[] = []
  if (!inMemory && String(pragma(client, 'journal_mode')).toLowerCase() !== 'wal') problems.push('journal_mode is not WAL')
  if (Number(pragma(client, 'synchronous')) !== 2) problems.push('synchronous is not FULL')
  if (Number(pragma(client, 'foreign_keys')) !== 1) problems.push('foreign_keys is off')
  if (Number(pragma(client, 'busy_timeout')) <= 0) problems.push('busy_timeout is not set')
  if (problems.length) throw new Error(`database settings: ${problems.join(', ')}`)
}

/**
 * A consistent online copy of the whole database (VACUUM INTO takes a read snapshot). The
 * target is made empty with mode 0600 first (VACUUM INTO accepts an empty file), so the copy
 * is never readable by others, not even for a moment.
 */
export function backupDatabase(db: Db, target: string): void {
  closeSync(openSync(target, 'wx', 0o600))
  db.$client.run('VACUUM INTO ?', [target])
}

/**
 * Opens the database file, creating it with mode 0600 when missing; SQLite gives the -wal and
 * -shm files the mode of the database file. Files an older version made 0644 are narrowed to 0600.
 */
export function openDatabaseFile(path: string, opts: { cacheMiB?: number } = {}): Db {
  if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600))
  for (const file of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(file) && (statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600)
  return openDatabase(path, opts)
}
