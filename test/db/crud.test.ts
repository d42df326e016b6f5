import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { findById, pageOfTable } from '../../src/db/crud'
import { ipPools } from '../../src/db/schema'
import { AppError } from '../../src/lib/errors'
import { testDeps } from '../support/app'

type Pool = typeof ipPools.$inferSelect

const addPool = (deps: ReturnType<typeof testDeps>, name: string) =>
  deps.db.insert(ipPools).values({ name, is_default: false, created_at: 1, updated_at: 1 }).returning().get()

describe('the CRUD kit reads through statements prepared once per handle', () => {
  test('findById sees rows written after its statement was prepared, and refuses ids that are not there', () => {
    const deps = testDeps()
    const a = addPool(deps, 'a')
    expect(findById(deps.db, ipPools, a.id, 'IP pool').name).toBe('a')
    const b = addPool(deps, 'b')
    expect(findById(deps.db, ipPools, b.id, 'IP pool')).toEqual(b)
    deps.db.update(ipPools).set({ name: 'b2' }).where(eq(ipPools.id, b.id)).run()
    expect(findById(deps.db, ipPools, b.id, 'IP pool').name).toBe('b2')
    let refused: unknown
    try {
      findById(deps.db, ipPools, 999, 'IP pool')
    } catch (e) {
      refused = e
    }
    expect(refused).toBeInstanceOf(AppError)
    expect((refused as AppError).message).toBe('No IP pool with id 999.')
  })

  test('a transaction handle reads its own uncommitted rows, and the database handle the same rows once committed', () => {
    const deps = testDeps()
    addPool(deps, 'first')
    const inside = deps.db.transaction((tx) => {
      const row = tx.insert(ipPools).values({ name: 'inside', is_default: false, created_at: 1, updated_at: 1 }).returning().get()
      return findById(tx, ipPools, row.id, 'IP pool')
    })
    expect(inside.name).toBe('inside')
    expect(findById(deps.db, ipPools, inside.id, 'IP pool')).toEqual(inside)
  })

  test('pageOfTable pages in id order with the total, on the database handle and on a transaction alike', () => {
    const deps = testDeps()
    for (const name of ['p1', 'p2', 'p3', 'p4', 'p5']) addPool(deps, name)
    const names = (rows: Pool[]) => rows.map((r) => r.name)
    const page2 = pageOfTable(deps.db, ipPools, { page: 2, per_page: 2 }, names)
    expect(page2.items).toEqual(['p3', 'p4'])
    expect(page2.meta).toMatchObject({ current_page: 2, last_page: 3, per_page: 2, total: 5 })
    addPool(deps, 'p6')
    const page3 = pageOfTable(deps.db, ipPools, { page: 3, per_page: 2 }, names)
    expect(page3.items).toEqual(['p5', 'p6'])
    expect(page3.meta.total).toBe(6)
    const inTx = deps.db.transaction((tx) => pageOfTable(tx, ipPools, { page: 3, per_page: 2 }, names))
    expect(inTx).toEqual(page3)
  })
})
