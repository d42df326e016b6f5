import type { DnsResolver } from '../lib/dns'

/** One mail exchanger with the addresses to connect to (A records first, then AAAA). */
export interface MxHost {
  host: string
  priority: number
  addresses: string[]
}

export type Destination =
  { kind: 'hosts'; hosts: MxHost[]; implicit: boolean; ttlMs: number } | { kind: 'fail'; permanent: boolean; reason: string; enhanced: string }

/** A DNS answer: records, "name has none" (NXDOMAIN and NODATA look the same here), or a temporary failure. */
type Answer<T> = { ok: true; records: T[]; ttlMs: number } | { ok: false; none: true } | { ok: false; none: false; code: string }

/**
 * Error codes that mean "no such records". Bun's c-ares binding reports both NXDOMAIN and
 * NOERROR-without-answers (NODATA) as ENOTFOUND, so "the domain exists without MX" is told
 * apart from "the domain does not exist" only by the follow-up address lookup.
 */
const NONE_CODES = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN', 'ENONAME'])

/** Longest time an answer is kept in memory, whatever its TTL. */
const MAX_TTL_MS = 300_000

async function ask<T>(run: () => Promise<T[]>, ttlOf: (record: T) => number | undefined): Promise<Answer<T>> {
  try {
    const records = await run()
    if (records.length === 0) return { ok: false, none: true }
    const ttls = records.map(ttlOf).filter((t): t is number => typeof t === 'number')
    return { ok: true, records, ttlMs: ttls.length ? Math.min(...ttls) * 1000 : 0 }
  } catch (e) {
    const code = String((e as NodeJS.ErrnoException).code ?? 'EDNS')
    return NONE_CODES.has(code) ? { ok: false, none: true } : { ok: false, none: false, code }
  }
}

interface Addresses {
  addresses: string[]
  ttlMs: number
  /** Set when no address was found and at least one lookup failed temporarily. */
  temporary: string | null
}

/** A then AAAA for one name, with the smallest TTL of what came back. */
async function lookupAddresses(resolver: DnsResolver, name: string): Promise<Addresses> {
  const [a, aaaa] = await Promise.all([
    ask(
      () => resolver.resolve4(name, { ttl: true }),
      (r) => r.ttl,
    ),
    ask(
      () => resolver.resolve6(name, { ttl: true }),
      (r) => r.ttl,
    ),
  ])
  const addresses = [...(a.ok ? a.records.map((r) => r.address) : []), ...(aaaa.ok ? aaaa.records.map((r) => r.address) : [])]
  const ttls = [a, aaaa].filter((x) => x.ok).map((x) => (x as { ttlMs: number }).ttlMs)
  const failed = [a, aaaa].find((x): x is { ok: false; none: false; code: string } => !x.ok && !x.none)
  return { addresses, ttlMs: ttls.length ? Math.min(...ttls) : 0, temporary: addresses.length === 0 && failed ? failed.code : null }
}

/** Fisher-Yates; RFC 5321 section 5.1 asks senders to randomise among MX records of equal preference. */
function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[items[i], items[j]] = [items[j]!, items[i]!]
  }
  return items
}

/**
 * Where mail for `domain` goes, following RFC 5321 section 5.1:
 *   - MX records sorted by preference, equal preferences shuffled;
 *   - no MX records: the domain itself is the implicit MX (its A/AAAA records);
 *   - a null MX (RFC 7505: a single MX whose exchange is ".") fails permanently at once;
 *   - neither MX nor address records (NXDOMAIN or a name without mail records): permanent;
 *   - SERVFAIL, timeouts, refused queries: temporary.
 * MX hosts whose address lookup fails are skipped; if none has an address the result is a
 * temporary failure (a broken MX host name is usually fixed by its owner, and the message
 * age limit ends the retries otherwise).
 */
export async function resolveDestination(resolver: DnsResolver, domain: string, random: () => number = Math.random): Promise<Destination> {
  const name = domain.toLowerCase().replace(/\.$/, '')
  const mx = await ask(
    () => resolver.resolveMx(name),
    () => undefined,
  )
  if (!mx.ok && !mx.none) return { kind: 'fail', permanent: false, reason: `MX lookup for ${name} failed (${mx.code})`, enhanced: '4.4.3' }

  if (mx.ok) {
    // c-ares reports the root name "." of a null MX as an empty exchange.
    const real = mx.records.filter((r) => r.exchange !== '' && r.exchange !== '.')
    if (real.length === 0) return { kind: 'fail', permanent: true, reason: `${name} does not accept mail (null MX, RFC 7505)`, enhanced: '5.1.10' }
    // Group by preference, shuffle inside a group, lowest preference first.
    const byPriority = new Map<number, string[]>()
    for (const r of real) byPriority.set(r.priority, [...(byPriority.get(r.priority) ?? []), r.exchange.toLowerCase().replace(/\.$/, '')])
    const ordered = [...byPriority.keys()].sort((a, b) => a - b).flatMap((p) => shuffle(byPriority.get(p)!, random).map((host) => ({ host, priority: p })))
    const lookups = await Promise.all(ordered.map((h) => lookupAddresses(resolver, h.host)))
    const hosts = ordered.map((h, i) => ({ ...h, addresses: lookups[i]!.addresses })).filter((h) => h.addresses.length > 0)
    if (hosts.length === 0) {
      const temp = lookups.find((l) => l.temporary)?.temporary
      return { kind: 'fail', permanent: false, reason: `no address for any MX host of ${name}${temp ? ` (${temp})` : ''}`, enhanced: '4.4.3' }
    }
    const ttlMs = Math.min(MAX_TTL_MS, ...lookups.filter((l) => l.addresses.length).map((l) => l.ttlMs))
    return { kind: 'hosts', hosts, implicit: false, ttlMs }
  }

  // No MX: the implicit MX is the domain itself (RFC 5321 section 5.1).
  const own = await lookupAddresses(resolver, name)
  if (own.addresses.length > 0)
    return { kind: 'hosts', hosts: [{ host: name, priority: 0, addresses: own.addresses }], implicit: true, ttlMs: Math.min(MAX_TTL_MS, own.ttlMs) }
  if (own.temporary) return { kind: 'fail', permanent: false, reason: `address lookup for ${name} failed (${own.temporary})`, enhanced: '4.4.3' }
  return {
    kind: 'fail',
    permanent: true,
    reason: `${name} has no MX and no address records (domain does not exist or does not receive mail)`,
    enhanced: '5.1.2',
  }
}

export interface DestinationCache {
  resolve(domain: string): Promise<Destination>
  clear(): void
}

/**
 * resolveDestination with a bounded in-memory cache and in-flight coalescing: concurrent
 * jobs for one domain share one lookup, and an answer is kept for the smallest TTL of its
 * address records (at most 5 minutes; MX TTLs are not exposed by node:dns). Failures are not
 * cached. A TTL of 0 (the test DNS server's default) disables caching, so a test that
 * changes a zone is heard at once.
 */
export function createDestinationCache(opts: { resolver: DnsResolver; maxEntries?: number; now: () => number }): DestinationCache {
  const { resolver, maxEntries = 10_000, now } = opts
  const cache = new Map<string, { until: number; value: Destination }>()
  const inflight = new Map<string, Promise<Destination>>()
  return {
    resolve(domain) {
      const key = domain.toLowerCase()
      const hit = cache.get(key)
      if (hit && hit.until > now()) return Promise.resolve(hit.value)
      if (hit) cache.delete(key)
      const running = inflight.get(key)
      if (running) return running
      const lookup = resolveDestination(resolver, key)
        .then((value) => {
          if (value.kind === 'hosts' && value.ttlMs > 0) {
            // Map keeps insertion order: the first key is the oldest entry.
            if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!)
            cache.set(key, { until: now() + value.ttlMs, value })
          }
          return value
        })
        .finally(() => inflight.delete(key))
      inflight.set(key, lookup)
      return lookup
    },
    clear: () => cache.clear(),
  }
}
