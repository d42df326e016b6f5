import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/client'
import { createGroupCommitter, type SyncFile } from '../../src/db/group-commit'
import { tempDir } from '../support/temp-dirs'

function setup(sync?: SyncFile) {
  const db = openDatabase(join(tempDir('group-commit-'), 'test.db'))
  db.$client.run('CREATE TABLE t (v INTEGER UNIQUE)')
  const commits = createGroupCommitter(db, { sync })
  const values = () => (db.$client.query('SELECT v FROM t ORDER BY v').all() as Array<{ v: number }>).map((r) => r.v)
  return { db, commits, values }
}

describe('group commit', () => {
  test('writes queued in one turn share one transaction, and each caller gets its own result', async () => {
    const { db, commits, values } = setup()
    let transactions = 0
    const begin = db.$client.transaction.bind(db.$client)
    db.$client.transaction = ((fn: () => unknown) => (transactions++, begin(fn))) as typeof db.$client.transaction
    const results = await Promise.all([1, 2, 3].map((v) => commits.run(() => (db.$client.run('INSERT INTO t VALUES (?)', [v]), v * 10))))
    expect(results).toEqual([10, 20, 30])
    expect(values()).toEqual([1, 2, 3])
    expect(transactions).toBe(1)
  })

  test('a failing write is rolled back alone; the others in its group commit', async () => {
    const { db, commits, values } = setup()
    const outcomes = await Promise.allSettled([
      commits.run(() => db.$client.run('INSERT INTO t VALUES (1)')),
      commits.run(() => {
        db.$client.run('INSERT INTO t VALUES (2)')
        throw new Error('refused after writing')
      }),
      commits.run(() => db.$client.run('INSERT INTO t VALUES (1)')), // unique violation
      commits.run(() => db.$client.run('INSERT INTO t VALUES (3)')),
    ])
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled'])
    expect((outcomes[1] as PromiseRejectedResult).reason.message).toBe('refused after writing')
    expect(values()).toEqual([1, 3])
  })

  test('the promise settles only after the commit: another connection reads the row then', async () => {
    const { db, commits } = setup()
    const reader = openDatabase(db.$client.filename)
    await commits.run(() => db.$client.run('INSERT INTO t VALUES (42)'))
    expect(reader.$client.query('SELECT v FROM t').all()).toEqual([{ v: 42 }])
  })

  /** A sync that is held until the test releases it, recording which file it was asked to flush. */
  function heldSync() {
    const held: Array<{ path: string; done: (error: Error | null) => void }> = []
    const sync: SyncFile = (path, done) => held.push({ path, done })
    return { held, sync }
  }
  const turn = () => new Promise((r) => setImmediate(r))

  test('callers are answered only after the WAL file is flushed; writes queued meanwhile wait for the next flush', async () => {
    const { held, sync } = heldSync()
    const { db, commits, values } = setup(sync)
    let firstDone = false
    const first = commits.run(() => db.$client.run('INSERT INTO t VALUES (1)')).then(() => (firstDone = true))
    await turn()
    // Committed (readable), but not yet answered: the flush of the WAL is still under way.
    expect(values()).toEqual([1])
    expect(held.map((h) => h.path)).toEqual([`${db.$client.filename}-wal`])
    let secondDone = false
    const second = commits.run(() => db.$client.run('INSERT INTO t VALUES (2)')).then(() => (secondDone = true))
    await turn()
    await turn()
    expect(firstDone).toBe(false)
    expect(values()).toEqual([1]) // the second group waits for the first flush
    held.shift()!.done(null)
    await first
    expect(firstDone).toBe(true)
    await turn()
    expect(values()).toEqual([1, 2])
    expect(secondDone).toBe(false)
    expect(held).toHaveLength(1)
    held.shift()!.done(null)
    await second
  })

  test('the group commits without an fsync of its own, and the connection is back to synchronous=FULL after it', async () => {
    const { held, sync } = heldSync()
    const { db, commits } = setup(sync)
    const modes: number[] = []
    const pending = commits.run(() => {
      db.$client.run('INSERT INTO t VALUES (1)')
      modes.push((db.$client.query('PRAGMA synchronous').get() as { synchronous: number }).synchronous)
    })
    await turn()
    expect(modes).toEqual([1]) // NORMAL inside the group's transaction
    expect((db.$client.query('PRAGMA synchronous').get() as { synchronous: number }).synchronous).toBe(2)
    held.shift()!.done(null)
    await pending
  })

  test('a failed flush fails the callers of its group, saying so; later groups go on', async () => {
    const { held, sync } = heldSync()
    const { db, commits } = setup(sync)
    const failed = commits.run(() => db.$client.run('INSERT INTO t VALUES (1)'))
    await turn()
    held.shift()!.done(new Error('EIO: i/o error'))
    expect(failed).rejects.toThrow('the write-ahead log could not be flushed to disk: EIO: i/o error')
    const next = commits.run(() => (db.$client.run('INSERT INTO t VALUES (2)'), 7))
    await turn()
    held.shift()!.done(null)
    expect(await next).toBe(7)
  })

  test('a group that wrote nothing is answered without a flush; one that wrote is flushed', async () => {
    const { held, sync } = heldSync()
    const { db, commits, values } = setup(sync)
    // A poller finding no work: reads, and an UPDATE that matches no row.
    expect(await commits.run(() => (db.$client.run('UPDATE t SET v = v + 1 WHERE v < 0'), values().length))).toBe(0)
    expect(held).toHaveLength(0)
    const wrote = commits.run(() => db.$client.run('INSERT INTO t VALUES (1)'))
    await turn()
    expect(held).toHaveLength(1)
    held.shift()!.done(null)
    await wrote
  })
})
