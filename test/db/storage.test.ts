import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildApp } from '../../src/app'
import { backupDatabase, DEFAULT_CACHE_MIB, openDatabase } from '../../src/db/client'
import { migrate, pendingMigrations } from '../../src/db/migrate'
import { migrations } from '../../migrations'
import { renderMigrationIndex } from '../../scripts/embed-migrations'
import { emit } from '../../src/modules/events/service'
import { testDeps } from '../support/app'
import { createApiKey } from '../../src/modules/api-keys/service'
import { CLI_ACTOR } from '../../src/modules/roles/service'
import { tempDir as tempDirNamed } from '../support/temp-dirs'

const tempDir = () => tempDirNamed('mailroom-db-')

describe('database settings', () => {
  test('a file database runs in WAL with synchronous=FULL, foreign keys and a busy timeout', () => {
    const db = openDatabase(join(tempDir(), 'm.db'))
    const q = (p: string) => Object.values(db.$client.query(`PRAGMA ${p}`).get() as object)[0]
    expect(q('journal_mode')).toBe('wal')
    expect(q('synchronous')).toBe(2)
    expect(q('foreign_keys')).toBe(1)
    expect(Number(q('busy_timeout'))).toBeGreaterThan(0)
  })

  test('the page cache is DEFAULT_CACHE_MIB unless the sqlite_cache_mib setting says otherwise', () => {
    const cache = (db: ReturnType<typeof openDatabase>) => (db.$client.query('PRAGMA cache_size').get() as { cache_size: number }).cache_size
    expect(cache(openDatabase(join(tempDir(), 'a.db')))).toBe(-DEFAULT_CACHE_MIB * 1024)
    expect(cache(openDatabase(join(tempDir(), 'b.db'), { cacheMiB: 64 }))).toBe(-64 * 1024)
  })
})

describe('migrations', () => {
  test('migrations/index.ts embeds exactly the drizzle-kit journal', () => {
    expect(readFileSync(join(import.meta.dir, '../../migrations/index.ts'), 'utf8')).toBe(renderMigrationIndex())
    expect(migrations.length).toBe(readdirSync(join(import.meta.dir, '../../migrations')).filter((f) => f.endsWith('.sql')).length)
  })

  test('apply once, then nothing is pending', () => {
    const db = openDatabase(':memory:')
    expect(migrate(db, { now: 0 }).applied).toEqual(migrations.map((m) => m.tag))
    expect(pendingMigrations(db)).toEqual([])
    expect(migrate(db, { now: 0 }).applied).toEqual([])
  })

  test('an upgrade backs the database up first; a failed migration changes nothing', () => {
    const dir = tempDir()
    const db = openDatabase(join(dir, 'm.db'))
    migrate(db, { now: 0, backupDir: join(dir, 'backups') })
    expect(existsSync(join(dir, 'backups'))).toBe(false) // a fresh database needs no backup

    const later = [...migrations, { tag: '9999_next', createdAt: Date.parse('2100-01-01'), sql: 'CREATE TABLE next_thing (id integer);' }]
    const result = migrate(db, { now: Date.parse('2026-05-01T00:00:00Z'), backupDir: join(dir, 'backups'), all: later })
    expect(result.applied).toEqual(['9999_next'])
    expect(result.backup).toBe(join(dir, 'backups', 'pre-migrate-2026-05-01T00-00-00-000Z.db'))
    const copy = openDatabase(result.backup!)
    expect(copy.$client.query("SELECT name FROM sqlite_master WHERE name = 'next_thing'").get()).toBeNull()
    expect(copy.$client.query("SELECT name FROM sqlite_master WHERE name = 'api_keys'").get()).not.toBeNull()

    const broken = [
      ...later,
      { tag: '9999_ok', createdAt: Date.parse('2100-01-02'), sql: 'CREATE TABLE ok_thing (id integer);' },
      { tag: '9999_broken', createdAt: Date.parse('2100-01-03'), sql: 'CREATE TABLE broken (' },
    ]
    expect(() => migrate(db, { now: 1, all: broken })).toThrow()
    expect(db.$client.query("SELECT name FROM sqlite_master WHERE name = 'ok_thing'").get()).toBeNull()
    expect(pendingMigrations(db, broken).map((m) => m.tag)).toEqual(['9999_ok', '9999_broken'])
  })
})

describe('secrets at rest', () => {
  test('no API key value or secret appears anywhere in the database files', async () => {
    const dir = tempDir()
    const deps = testDeps({}, join(dir, 'mailroom.db'))
    const { app } = buildApp(deps)
    const first = createApiKey(deps, CLI_ACTOR, { name: 'first', role_id: 1 })
    const created = await app.handle(
      new Request('http://mailroom.test/api/v2/api-keys', {
        method: 'POST',
        headers: { authorization: `Bearer ${first.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'second', role_id: 1 }),
      }),
    )
    const second = ((await created.json()) as { data: { key: string } }).data.key
    const before = readdirSync(dir)
    const bytes = before.map((f) => readFileSync(join(dir, f)).toString('latin1')).join('')
    deps.db.$client.close()
    const after = readdirSync(dir)
      .map((f) => readFileSync(join(dir, f)).toString('latin1'))
      .join('')
    for (const key of [first.key, second]) {
      const secret = key.slice('mr_'.length + 12 + 1) // base64url may itself contain '_'
      expect(secret).toHaveLength(43)
      for (const content of [bytes, after]) {
        expect(content).not.toContain(key)
        expect(content).not.toContain(secret)
        expect(content).not.toContain(Buffer.from(secret).toString('base64'))
      }
    }
    // The hash is there, so the test is looking at the right files.
    expect(bytes + after).toContain(new Bun.CryptoHasher('sha256').update(first.key).digest('hex'))
  })
})

describe('backup', () => {
  test('VACUUM INTO makes a consistent, openable copy', () => {
    const dir = tempDir()
    const deps = testDeps({}, join(dir, 'a.db'))
    createApiKey(deps, CLI_ACTOR, { name: 'k', role_id: 1 })
    backupDatabase(deps.db, join(dir, 'copy.db'))
    const copy = openDatabase(join(dir, 'copy.db'))
    expect((copy.$client.query('SELECT name FROM api_keys').get() as { name: string }).name).toBe('k')
  })
})

describe('events', () => {
  test('emit appends a row; inside a rolled-back transaction it leaves nothing', () => {
    const deps = testDeps()
    const id = emit(deps.db, deps.clock.now(), { kind: 'contact.subscribed', contact_id: 7, list_id: 2, data: { email: 'a@example.com' } })
    // Raw SQL on purpose: the test is of the stored row and the transaction that holds it.
    const row = deps.db.$client.query('SELECT * FROM events WHERE id = ?').get(id) as Record<string, unknown>
    expect(row).toMatchObject({ kind: 'contact.subscribed', contact_id: 7, list_id: 2, message_id: null })
    expect(JSON.parse(row.data as string)).toEqual({ email: 'a@example.com' })
    expect(() =>
      deps.db.transaction((tx) => {
        emit(tx, deps.clock.now(), { kind: 'contact.unsubscribed', contact_id: 7 })
        throw new Error('the change failed')
      }),
    ).toThrow('the change failed')
    expect((deps.db.$client.query('SELECT count(*) AS n FROM events').get() as { n: number }).n).toBe(1)
  })
})
