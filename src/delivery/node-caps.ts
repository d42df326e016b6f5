/**
 * Hourly and daily caps of sending nodes: how many deliveries a node may take now, and when
 * it may take more. The caps and the usage counters are the sending-nodes module's data
 * (nodeCaps, nodeUsage, countNodeUsage); the decisions are the engine's. Usage is kept per
 * clock hour; the daily cap is the sum of the hours of the current UTC day.
 */
import type { Deps } from '../deps'
import { countNodeUsage, nodeCaps, nodeUsage } from '../modules/sending-nodes/service'

const HOUR = 3_600_000
const DAY = 86_400_000

/**
 * How many of `wanted` deliveries the node's caps allow now, counted as used in the same
 * transaction (so two workers cannot both take the last slot). A node without caps allows
 * everything (and still counts, for the usage figures); an unknown node allows nothing.
 */
export function takeNodeCapacity(deps: Deps, nodeId: number, wanted: number): number {
  const now = deps.clock.now()
  return deps.db.$client
    .transaction(() => {
      const caps = nodeCaps(deps, nodeId)
      if (!caps || wanted <= 0) return 0
      const used = nodeUsage(deps, nodeId, now)
      let allowed = wanted
      if (caps.hourly_cap !== null) allowed = Math.min(allowed, caps.hourly_cap - used.this_hour)
      if (caps.daily_cap !== null) allowed = Math.min(allowed, caps.daily_cap - used.today)
      allowed = Math.max(0, allowed)
      if (allowed > 0) countNodeUsage(deps, nodeId, now, allowed)
      return allowed
    })
    .immediate()
}

/** When the node's caps allow deliveries again (ms since the epoch): now when they do already. */
export function nextCapWindow(deps: Deps, nodeId: number): number {
  const now = deps.clock.now()
  const caps = nodeCaps(deps, nodeId)
  if (!caps) return now
  const hour = Math.floor(now / HOUR) * HOUR
  const day = Math.floor(now / DAY) * DAY
  const used = nodeUsage(deps, nodeId, now)
  let at = now
  if (caps.hourly_cap !== null && used.this_hour >= caps.hourly_cap) at = Math.max(at, hour + HOUR)
  if (caps.daily_cap !== null && used.today >= caps.daily_cap) at = Math.max(at, day + DAY)
  return at
}
