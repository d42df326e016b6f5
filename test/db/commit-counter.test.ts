import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/client'
import { commitCounterOf, createReadCache } from '../../src/db/commit-counter'
import { tempDir } from '../support/temp-dirs'

const fileDb = () => {
  const path = join(tempDir('mailroom-counter-'), 'm.db')
  const db = openDatabase(path)
  db.$client.run('CREATE TABLE t (x INTEGER)')
  return { db, path }
}

describe('commit counter', () => {
  test('changes with every commit, from this connection, another connection and another process; not with reads, rollbacks or checkpoints', () => {
    const { db, path } = fileDb()
    const counter = commitCounterOf(db)
    // On Linux the header is read from a shared mapping, not with a system call per read.
    if (process.platform === 'linux') expect(counter.via).toBe('mapping')
    const c0 = counter()
    expect(c0).not.toBeNull()
    db.$client.query('SELECT count(*) FROM t').get()
    expect(counter()).toBe(c0)

    db.$client.run('INSERT INTO t VALUES (1)')
    const c1 = counter()
    expect(c1).not.toBe(c0)

    const other = new Database(path)
    other.run('INSERT INTO t VALUES (2)')
    const c2 = counter()
    expect(c2).not.toBe(c1)

    const child = Bun.spawnSync([process.execPath, '-e', `new (require('bun:sqlite').Database)(${JSON.stringify(path)}).run('INSERT INTO t VALUES (3)')`])
    expect(child.exitCode).toBe(0)
    const c3 = counter()
    expect(c3).not.toBe(c2)

    db.$client.run('BEGIN')
    db.$client.run('INSERT INTO t VALUES (4)')
    expect(counter()).toBeNull() // inside a transaction: what a read sees may still be rolled back
    db.$client.run('ROLLBACK')
    expect(counter()).toBe(c3)

    db.$client.run('PRAGMA wal_checkpoint(TRUNCATE)')
    expect(counter()).toBe(c3)
    db.$client.run('INSERT INTO t VALUES (5)')
    expect(counter()).not.toBe(c3)
    other.close()
  })

  test("never drops SQLite's own locks on the -shm file (closing any descriptor of it in this process would)", () => {
    const { db, path } = fileDb()
    const inode = statSync(`${path}-shm`).ino
    // /proc/locks: "1: POSIX  ADVISORY  READ 1234 fd:01:567 128 128" (pid, then device:inode).
    const held = () =>
      readFileSync('/proc/locks', 'utf8')
        .split('\n')
        .filter((line) => line.split(/\s+/)[4] === String(process.pid) && line.split(/\s+/)[5]?.endsWith(`:${inode}`)).length
    const before = held()
    expect(before).toBeGreaterThan(0) // the connection's DMS lock: "this file is in use"
    const counter = commitCounterOf(db)
    counter()
    db.$client.run('INSERT INTO t VALUES (1)')
    counter()
    expect(held()).toBe(before)
  })

  test('once its database is closed, throws rather than read the mapping', () => {
    const { db } = fileDb()
    const counter = commitCounterOf(db)
    expect(counter()).not.toBeNull()
    db.$client.close()
    expect(() => counter()).toThrow()
  })

  test('is unknown (null) for a database in memory', () => {
    const db = openDatabase(':memory:')
    expect(commitCounterOf(db)()).toBeNull()
  })
})

describe('read cache', () => {
  test('answers from memory until any transaction commits, then reads again', () => {
    const { db, path } = fileDb()
    db.$client.run('INSERT INTO t VALUES (1)')
    const cached = createReadCache<number>(db)
    let loads = 0
    const count = () => cached('n', () => (loads++, (db.$client.query('SELECT count(*) AS n FROM t').get() as { n: number }).n))
    expect(count()).toBe(1)
    expect(count()).toBe(1)
    expect(loads).toBe(1)

    new Database(path).run('INSERT INTO t VALUES (2)')
    expect(count()).toBe(2)
    expect(loads).toBe(2)
    expect(count()).toBe(2)
    expect(loads).toBe(2)
  })

  test('never keeps what a transaction read before it commits or rolls back', () => {
    const { db } = fileDb()
    const cached = createReadCache<number>(db)
    const count = () => cached('n', () => (db.$client.query('SELECT count(*) AS n FROM t').get() as { n: number }).n)
    db.$client.run('BEGIN')
    db.$client.run('INSERT INTO t VALUES (1)')
    expect(count()).toBe(1)
    db.$client.run('ROLLBACK')
    expect(count()).toBe(0)
  })

  test('keeps at most maxEntries values and still answers every key', () => {
    const { db } = fileDb()
    const cached = createReadCache<string>(db, 2)
    let loads = 0
    const read = (k: number) => cached(k, () => (loads++, `v${k}`))
    for (const k of [1, 2, 3, 1, 2, 3]) expect(read(k)).toBe(`v${k}`)
    expect(loads).toBe(4) // 1 and 2 kept; 3 loaded each time
  })

  test('in memory every read loads', () => {
    const cached = createReadCache<number>(openDatabase(':memory:'))
    let loads = 0
    cached('a', () => ++loads)
    cached('a', () => ++loads)
    expect(loads).toBe(2)
  })
})
