import type { Db } from '../../db/client'

/**
 * A change counter for IPs and pool membership, per database handle. Every write of the ips
 * and ip-pools services bumps it; the rotation (src/delivery/ip-rotation.ts) reloads when it
 * moves, so picking an address for an SMTP connection costs no query while nothing changed.
 */
const versions = new WeakMap<Db, number>()

/** The current change count of IPs and pools on this database handle. */
export function poolsVersion(db: Db): number {
  return versions.get(db) ?? 0
}

/** Records that IPs or pool membership changed (after the write committed). */
export function bumpPoolsVersion(db: Db): void {
  versions.set(db, poolsVersion(db) + 1)
}
