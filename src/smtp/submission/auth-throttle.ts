import { parseAddress } from '../../lib/ip-allowlist'

/**
 * Failed-AUTH throttling per client address, against password guessing.
 *
 * After `limit` failures within `windowMs` the address is refused (AUTH and new connections)
 * until its oldest counted failure leaves the window. IPv6 clients are grouped by their /64,
 * the smallest block a host is usually given, so rotating addresses inside one block does not
 * reset the count. State is in memory: a restart forgets it, which costs an attacker a restart
 * of ours per `limit` guesses. Bridge passwords are generated with enough entropy that guessing
 * is hopeless anyway; the throttle keeps the log and the CPU quiet.
 */
/** True for 127.0.0.0/8 and ::1 (IPv4-mapped forms included): a client on this machine. */
export function isLoopback(address: string): boolean {
  const parsed = parseAddress(address)
  if (!parsed) return false
  return parsed.family === 4 ? parsed.value >> 24n === 127n : parsed.value === 1n
}

export interface AuthThrottle {
  /** True when the address may try (again). */
  allowed(address: string): boolean
  /** Counts a failed attempt. */
  fail(address: string): void
  /** A success clears the address's failures. */
  succeed(address: string): void
}

/** Entries kept at most; beyond it, expired ones are swept and then the oldest dropped (a flood of addresses must not grow memory without bound). */
const MAX_ENTRIES = 50_000

function bucket(address: string): string {
  const parsed = parseAddress(address)
  if (!parsed) return address
  // Keyed by value, so "::ffff:192.0.2.1" and "192.0.2.1" are one client.
  if (parsed.family === 4) return `4:${parsed.value}`
  return `6:${parsed.value >> 64n}`
}

/** A throttle on the given clock: `limit` failures per `windowMs` per address (IPv6: per /64). */
export function createAuthThrottle(clock: { now(): number }, opts: { limit: number; windowMs: number }): AuthThrottle {
  const failures = new Map<string, number[]>()
  const recent = (key: string): number[] => {
    const since = clock.now() - opts.windowMs
    const list = (failures.get(key) ?? []).filter((t) => t > since)
    if (list.length) failures.set(key, list)
    else failures.delete(key)
    return list
  }
  return {
    allowed: (address) => recent(bucket(address)).length < opts.limit,
    fail(address) {
      const key = bucket(address)
      const list = recent(key)
      list.push(clock.now())
      failures.set(key, list)
      if (failures.size > MAX_ENTRIES) {
        for (const k of [...failures.keys()]) recent(k)
        for (const k of failures.keys()) {
          if (failures.size <= MAX_ENTRIES) break
          failures.delete(k)
        }
      }
    },
    succeed: (address) => void failures.delete(bucket(address)),
  }
}
