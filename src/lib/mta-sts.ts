/**
 * One MTA-STS (RFC 8461) lookup through mailauth: the _mta-sts TXT record (section 3.1), the
 * HTTPS fetch of https://mta-sts.<domain>/.well-known/mta-sts.txt with a verified certificate
 * (section 3.3) and the parsing of the policy (section 3.2), applied strictly as the RFC is
 * written. Shared by the delivery engine (delivery/mta-sts.ts caches it per recipient domain)
 * and the deliverability doctor (which checks a sending domain's own policy), so both judge
 * a policy the same way.
 */
type MailauthSts = typeof import('mailauth/lib/mta-sts')

// Loaded with the first lookup, not with the server: mailauth and what it brings (tldts,
// undici, joi) hold about 14 MiB that a server which never delivers directly or never runs
// the doctor does not need (docs/benchmarks.md, issue 18, thirteenth round).
let sts: MailauthSts | undefined
let stsLoading: Promise<MailauthSts> | undefined
const loadSts = () => (stsLoading ??= import('mailauth/lib/mta-sts').then((m) => (sts = m)))

export type StsMode = 'enforce' | 'testing' | 'none'

/** A parsed policy: its id (from the TXT record), mode, mx patterns and max_age in seconds. */
export interface StsPolicyFile {
  id: string | null
  mode: StsMode
  mx: string[]
  maxAge: number
}

/**
 * What one lookup found. `found`: a policy was fetched; `renewed`: the TXT id still matches
 * the known policy (not fetched again); `not_found`: no STSv1 TXT record, or no address for
 * the policy host (mailauth does not tell these apart); `errored`: the lookup or the fetch
 * failed, or the policy is invalid (`error` says why). `policy` is the policy to apply
 * (on an error, the unexpired known one, if any) and `raw` what to hand back as `known` next time.
 */
export interface StsLookup {
  status: 'found' | 'renewed' | 'not_found' | 'errored'
  policy: StsPolicyFile | null
  error: string | null
  raw: unknown
}

/** A DNS lookup as mailauth calls it: TXT answers are arrays of strings per record. */
export type StsResolve = (name: string, type: string) => Promise<unknown>

/** Looks up and fetches the policy of `domain`; `known` is the `raw` of the previous lookup (or null). Never throws. */
export async function lookupStsPolicy(domain: string, known: unknown, opts: { resolve: StsResolve; timeoutMs: number }): Promise<StsLookup> {
  let result: Awaited<ReturnType<MailauthSts['getPolicy']>>
  try {
    const { getPolicy } = await loadSts()
    // strict: RFC 8461 as written (text/plain, exact syntax, no expired policy reused).
    result = await getPolicy(domain, (known ?? null) as never, { resolver: opts.resolve as never, timeout: opts.timeoutMs, strict: true })
  } catch (e) {
    result = { policy: { mode: 'none', error: e as Error }, status: 'errored' } as never
  }
  const p = result.policy as { id?: string | false; mode?: StsMode; mx?: string[]; maxAge?: number; error?: Error }
  const status = result.status as StsLookup['status']
  const error = status === 'errored' ? (p.error?.message ?? 'unknown error') : null
  const policy: StsPolicyFile | null = p.mode ? { id: p.id || null, mode: p.mode, mx: p.mx ?? [], maxAge: p.maxAge ?? 0 } : null
  return { status, policy, error, raw: result.policy }
}

/**
 * True when an MX host name matches one of the policy's mx patterns (RFC 8461 section 4.1: exact, or "*." for one left-most label).
 * A policy comes only from lookupStsPolicy, which has loaded mailauth by then.
 */
export function stsMxAllowed(policy: { mode: StsMode; mx: string[] }, mx: string): boolean {
  if (!sts) throw new Error('stsMxAllowed: no MTA-STS policy has been looked up yet')
  return sts.validateMx(mx, { mode: policy.mode, mx: policy.mx } as never).valid
}
