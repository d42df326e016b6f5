/**
 * MTA-STS (RFC 8461) for direct delivery: which recipient domains publish a policy, and what
 * it demands. lib/mta-sts.ts (mailauth) does the discovery (the _mta-sts TXT record), the
 * HTTPS fetch from mta-sts.<domain> with a verified certificate, and the parsing; this module
 * caches the result per domain in memory:
 *
 * - A policy is used until its max_age runs out (RFC 8461 5.1). The TXT record is looked at
 *   again at most once an hour meanwhile, to pick up a new policy id (mailauth refetches only
 *   then); a failed refresh keeps the cached, unexpired policy (RFC 8461 5.1: "a sender
 *   SHOULD continue to use the cached policy").
 * - A domain without a policy is asked again after an hour; a lookup that fails without a
 *   cached policy counts as no policy for a few minutes (RFC 8461 5: absent a valid policy,
 *   delivery proceeds as it would without MTA-STS).
 */
import type { DnsResolver } from '../lib/dns'
import { lookupStsPolicy, stsMxAllowed } from '../lib/mta-sts'
import type { Logger } from '../lib/logger'

export interface StsPolicy {
  mode: 'enforce' | 'testing' | 'none'
  mx: string[]
  /** Epoch ms after which the policy must not be used (fetch time + max_age). */
  expires: number
}

export interface MtaStsLookup {
  /** The domain's policy, or null when it has none (or none could be had). */
  policyFor(domain: string): Promise<StsPolicy | null>
}

/** True when an MX host name matches one of the policy's mx patterns (RFC 8461 4.1). */
export function mxAllowed(policy: StsPolicy, mx: string): boolean {
  return stsMxAllowed(policy, mx)
}

const RECHECK_MS = 3600_000
const ERROR_RETRY_MS = 5 * 60_000

/** Creates the per-domain policy cache (see the module comment). `now` is wall-clock epoch ms (deps.clock.now). */
export function createMtaStsCache(opts: { resolver: DnsResolver; now: () => number; log: Logger; timeoutMs?: number }): MtaStsLookup {
  type Entry = { policy: StsPolicy | null; raw: unknown; checkAt: number }
  const cache = new Map<string, Entry>()
  const pending = new Map<string, Promise<StsPolicy | null>>()
  const resolver = (name: string, type: string) => opts.resolver.resolve(name, type)

  async function refresh(domain: string, known: Entry | undefined): Promise<StsPolicy | null> {
    const now = opts.now()
    const cached = known?.policy && known.policy.expires > now ? known : undefined
    const result = await lookupStsPolicy(domain, cached?.raw ?? null, { resolve: resolver, timeoutMs: opts.timeoutMs ?? 30_000 })
    const p = result.policy
    if (result.status === 'errored') {
      opts.log.warn(
        cached ? 'delivery: MTA-STS refresh failed, keeping the cached policy' : 'delivery: MTA-STS policy could not be fetched, delivering without it',
        {
          domain,
          error: result.error ?? 'unknown',
        },
      )
    }
    if (!p || p.mode === 'none') {
      cache.set(domain, { policy: null, raw: null, checkAt: now + (result.status === 'errored' ? ERROR_RETRY_MS : RECHECK_MS) })
      return null
    }
    const expires = result.status === 'found' || !cached ? now + p.maxAge * 1000 : cached.policy!.expires
    const policy: StsPolicy = { mode: p.mode, mx: p.mx, expires }
    const checkAt = Math.min(expires, now + (result.status === 'errored' ? ERROR_RETRY_MS : RECHECK_MS))
    cache.set(domain, { policy, raw: result.raw, checkAt })
    return policy
  }

  return {
    policyFor(domain) {
      const key = domain.toLowerCase()
      const entry = cache.get(key)
      if (entry && entry.checkAt > opts.now()) return Promise.resolve(entry.policy)
      let p = pending.get(key)
      if (!p) {
        p = refresh(key, entry).finally(() => pending.delete(key))
        pending.set(key, p)
      }
      return p
    },
  }
}
