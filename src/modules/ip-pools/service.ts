import { asc, eq, inArray } from 'drizzle-orm'
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import {
  assertNameFree as assertUnique,
  bulkDeleteByIds,
  pageOfTable,
  type BulkDeleteOutcome,
  findById,
  columnsOf,
  timestampsOf,
  viewOf,
  viewsWith,
} from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import { ipPoolMembers, ipPools, ips } from '../../db/schema'
import { AppError, type ErrorDetails } from '../../lib/errors'
import { bumpPoolsVersion } from './version'

type Row = typeof ipPools.$inferSelect

import type { PoolInput, PoolMemberView, PoolView } from './model'

function membersOf(deps: Deps, poolIds: number[]): Map<number, PoolMemberView[]> {
  const out = new Map<number, PoolMemberView[]>(poolIds.map((id) => [id, []]))
  if (poolIds.length === 0) return out
  const rows = deps.db
    .select({ pool_id: ipPoolMembers.pool_id, ip_id: ips.id, address: ips.address, hostname: ips.hostname, weight: ipPoolMembers.weight })
    .from(ipPoolMembers)
    .innerJoin(ips, eq(ips.id, ipPoolMembers.ip_id))
    .where(inArray(ipPoolMembers.pool_id, poolIds))
    .orderBy(asc(ipPoolMembers.pool_id), asc(ips.id))
    .all()
  for (const { pool_id, ...member } of rows) out.get(pool_id)!.push(member)
  return out
}

function toView(r: Row, members: PoolMemberView[]): PoolView {
  return { ...columnsOf(r, ['id', 'name', 'is_default']), members, ...timestampsOf(r) }
}

function findPool(deps: Deps, id: number): Row {
  return findById(deps.db, ipPools, id, 'IP pool')
}

/** True when the pool exists (sending domains and nodes check their pool_id with this). */
export function poolExists(deps: Deps, id: number): boolean {
  return deps.db.select({ id: ipPools.id }).from(ipPools).where(eq(ipPools.id, id)).get() !== undefined
}

// Read by every sending-domain view and every pool rotation: prepared once (db/prepared.ts).
const defaultPoolStatement = preparedFor((db: Db) => db.$client.prepare<{ id: number }, []>('SELECT id FROM ip_pools WHERE is_default = 1'))

/** The id of the default pool, or null. */
export function defaultPoolId(deps: Deps): number | null {
  return defaultPoolStatement(deps.db).get()?.id ?? null
}

/**
 * The addresses mail over a pool leaves from: `poolId`, or the default pool when null. Empty
 * when there is no such pool or it has no IPs (mail then leaves from the host's default address).
 */
export function poolAddresses(deps: Deps, poolId: number | null): string[] {
  const id = poolId ?? defaultPoolId(deps)
  if (id === null) return []
  return (membersOf(deps, [id]).get(id) ?? []).map((m) => m.address)
}

/** Checks the member list: known IPs, each once; 422 naming `members.<i>.ip_id`. */
function checkMembers(deps: Deps, members: NonNullable<PoolInput['members']>): void {
  const ids = [...new Set(members.map((m) => m.ip_id))]
  const known = new Set(
    ids.length
      ? deps.db
          .select({ id: ips.id })
          .from(ips)
          .where(inArray(ips.id, ids))
          .all()
          .map((r) => r.id)
      : [],
  )
  const details: ErrorDetails = {}
  const seen = new Set<number>()
  members.forEach((m, i) => {
    if (!known.has(m.ip_id)) details[`members.${i}.ip_id`] = [`no IP with id ${m.ip_id}; GET /api/v2/ips lists them`]
    else if (seen.has(m.ip_id)) details[`members.${i}.ip_id`] = ['appears more than once']
    seen.add(m.ip_id)
  })
  if (Object.keys(details).length) throw new AppError('validation_failed', 'The request data is invalid.', details)
}

function assertNameFree(deps: Deps, name: string, exceptId?: number): void {
  assertUnique(deps.db, ipPools, ipPools.name, name, { exceptId, message: `An IP pool named "${name}" already exists.` })
}

/** Pools' views with their members, fetched for all of them in one query. */
function poolViews(deps: Deps): (rows: Row[]) => PoolView[] {
  return viewsWith((ids) => membersOf(deps, ids), toView)
}

/** One pool with its members and their addresses. */
export function getPool(deps: Deps, id: number): PoolView {
  return viewOf(poolViews(deps), findPool(deps, id))
}

/** A page of pools, oldest first. */
export function listPools(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, ipPools, query, poolViews(deps))
}

/** Creates a pool; making it the default takes the flag from the previous default in the same transaction. */
export function createPool(deps: Deps, input: PoolInput): PoolView {
  const name = input.name.trim()
  assertNameFree(deps, name)
  const members = input.members ?? []
  checkMembers(deps, members)
  const now = deps.clock.now()
  const id = deps.db.transaction((tx) => {
    if (input.is_default) tx.update(ipPools).set({ is_default: false, updated_at: now }).where(eq(ipPools.is_default, true)).run()
    const row = tx
      .insert(ipPools)
      .values({ name, is_default: input.is_default ?? false, created_at: now, updated_at: now })
      .returning({ id: ipPools.id })
      .get()
    if (members.length)
      tx.insert(ipPoolMembers)
        .values(members.map((m) => ({ pool_id: row.id, ip_id: m.ip_id, weight: m.weight ?? 1 })))
        .run()
    return row.id
  })
  bumpPoolsVersion(deps.db)
  return getPool(deps, id)
}

/** Renames, sets or clears the default flag, or replaces the member list. */
export function updatePool(deps: Deps, id: number, input: Partial<PoolInput>): PoolView {
  findPool(deps, id)
  const patch: Partial<Row> = { updated_at: deps.clock.now() }
  if (input.name !== undefined) {
    patch.name = input.name.trim()
    assertNameFree(deps, patch.name, id)
  }
  if (input.is_default !== undefined) patch.is_default = input.is_default
  if (input.members) checkMembers(deps, input.members)
  deps.db.transaction((tx) => {
    if (input.is_default) tx.update(ipPools).set({ is_default: false, updated_at: patch.updated_at }).where(eq(ipPools.is_default, true)).run()
    tx.update(ipPools).set(patch).where(eq(ipPools.id, id)).run()
    if (input.members) {
      tx.delete(ipPoolMembers).where(eq(ipPoolMembers.pool_id, id)).run()
      if (input.members.length)
        tx.insert(ipPoolMembers)
          .values(input.members.map((m) => ({ pool_id: id, ip_id: m.ip_id, weight: m.weight ?? 1 })))
          .run()
    }
  })
  bumpPoolsVersion(deps.db)
  return getPool(deps, id)
}

/** Deletes pools; domains, nodes and queued messages that named one fall back to the default pool (foreign keys set null). */
export function deletePools(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return bulkDeleteByIds(deps.db, ipPools, ids, () => bumpPoolsVersion(deps.db))
}

// ---------------------------------------------------------------------------------------
// For the delivery engine (src/delivery/ip-rotation.ts)
// ---------------------------------------------------------------------------------------

export interface PoolMemberAddress {
  pool_id: number
  address: string
  hostname: string
  weight: number
}

const memberStatements = preparedFor((db: Db) => ({
  all: db.$client.prepare<PoolMemberAddress, []>(
    'SELECT m.pool_id, i.address, i.hostname, m.weight FROM ip_pool_members m JOIN ips i ON i.id = m.ip_id ORDER BY m.pool_id, i.id',
  ),
}))

/** Every member of every pool with its address, EHLO name and weight, by pool and then IP id: the rotation's snapshot. */
export function allPoolMembers(deps: Deps): PoolMemberAddress[] {
  return memberStatements(deps.db).all.all()
}
