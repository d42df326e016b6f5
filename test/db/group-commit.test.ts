import { describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/client'
import { createGroupCommitter } from '../../src/db/group-commit'

function setup() {
  const db = openDatabase(join(mkdtempSync(join(tmpdir(), 'group-commit-')), 'test.db'))
  db.$client.run('CREATE TABLE t (v INTEGER UNIQUE)')
  const commits = createGroupCommitter(db)
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
})
