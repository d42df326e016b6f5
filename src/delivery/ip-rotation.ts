/**
 * Weighted rotation of source addresses over IP pools. The pools and their members are the
 * ip-pools module's data (read through allPoolMembers and defaultPoolId); which address the
 * next connection leaves from is the engine's decision, made here.
 */
import type { Deps } from '../deps'
import { allPoolMembers, defaultPoolId } from '../modules/ip-pools/service'
import { poolsVersion } from '../modules/ip-pools/version'

export interface SourceIp {
  address: string
  hostname: string
  pool_id: number
}

export interface IpRotation {
  /** The next source address of a pool (null = the default pool); null when there is no such pool or it has no IPs. */
  next(poolId: number | null): SourceIp | null
  /** Forgets the loaded membership; the next call reads it again. */
  invalidate(): void
}

interface PoolState {
  members: Array<{ address: string; hostname: string; weight: number; current: number }>
  total: number
}

/** Reload at least this often even when no write was seen here (e.g. `mailroom` CLI writes from another process). */
const RELOAD_AFTER_MS = 60_000

/**
 * Picks source addresses by smooth weighted round-robin (the algorithm of nginx's upstream
 * module): each pick adds every member's weight to its running score, takes the highest
 * score and subtracts the pool's total weight from it. Over any window of `total` picks each
 * address gets exactly its weight's share, and picks of one address are spread out instead
 * of coming in bursts (weights 3:1 give a a b a, not a a a b), which keeps the connection
 * rate per IP even.
 *
 * Called once per SMTP connection, so it answers from memory: membership is reloaded only
 * when the change counter of the IP and pool services moved, after invalidate(), or at most
 * every minute. Deterministic for a given membership; the state is per rotation instance.
 */
export function createIpRotation(deps: Deps): IpRotation {
  let loadedVersion = -1
  let loadedAt = 0
  let defaultId: number | null = null
  let pools = new Map<number, PoolState>()

  const load = () => {
    const next = new Map<number, PoolState>()
    for (const r of allPoolMembers(deps)) {
      let state = next.get(r.pool_id)
      if (!state) next.set(r.pool_id, (state = { members: [], total: 0 }))
      state.members.push({ address: r.address, hostname: r.hostname, weight: r.weight, current: 0 })
      state.total += r.weight
    }
    pools = next
    defaultId = defaultPoolId(deps)
    loadedVersion = poolsVersion(deps.db)
    loadedAt = deps.clock.now()
  }

  return {
    next(poolId) {
      const now = deps.clock.now()
      if (loadedVersion !== poolsVersion(deps.db) || now - loadedAt >= RELOAD_AFTER_MS || now < loadedAt) load()
      const id = poolId ?? defaultId
      if (id === null) return null
      const state = pools.get(id)
      if (!state || state.members.length === 0) return null
      let best = state.members[0]!
      for (const m of state.members) {
        m.current += m.weight
        if (m.current > best.current) best = m
      }
      best.current -= state.total
      return { address: best.address, hostname: best.hostname, pool_id: id }
    },
    invalidate() {
      loadedVersion = -1
    },
  }
}
