import type { Deps } from '../../deps'
import { createResolver } from '../../lib/dns'
import { checkDkim, checkDmarc, checkReturnPath, type DnsRecordSpec, type RecordCheck, type RecordPurpose } from './records'

/** A failed lookup as a check: no such name or no record of the type is `missing`; anything else (SERVFAIL, timeout, refused) is `error`. */
function lookupFailure(err: unknown): RecordCheck {
  const code = (err as { code?: string }).code
  if (code === 'ENOTFOUND' || code === 'ENODATA') return { state: 'missing' }
  return { state: 'error', message: (err as Error).message || String(code) }
}

type Resolve = (name: string, type: string) => Promise<unknown>

/**
 * SPF is verified when, for every address mail of the domain leaves from, an SPF evaluation
 * (RFC 7208 check_host(), by mailauth, with `postmaster@<domain>` as sender) gives `pass`.
 * That accepts any record that really authorises the addresses: ip4:/ip6: ranges, a:, mx:,
 * include: and redirect=. The addresses are the IPs of the domain's pool (or the default
 * pool); with none, the A/AAAA addresses of the server's host name.
 */
async function checkSpf(
  deps: Deps,
  domain: string,
  addresses: readonly string[],
  resolve: Resolve,
  txt: (name: string) => Promise<string[]>,
): Promise<RecordCheck> {
  let records: string[]
  try {
    records = await txt(domain)
  } catch (err) {
    return lookupFailure(err)
  }
  const spfRecords = records.filter((r) => /^v=spf1( |$)/i.test(r))
  if (spfRecords.length === 0) return { state: 'missing' }
  if (spfRecords.length > 1)
    return {
      state: 'mismatch',
      found: spfRecords,
      message: 'more than one SPF record: receivers treat that as an error (RFC 7208 section 4.5); merge them into one',
    }

  let sources = [...addresses]
  if (sources.length === 0) {
    const hostname = deps.config.hostname
    const found = await Promise.allSettled([resolve(hostname, 'A'), resolve(hostname, 'AAAA')])
    sources = found.flatMap((r) => (r.status === 'fulfilled' ? (r.value as string[]) : []))
    if (sources.length === 0) {
      return { state: 'error', message: `no pool IPs, and the host name ${hostname} has no A or AAAA record: cannot tell which addresses to check` }
    }
  }
  // Loaded here, not with the server: mailauth is about 14 MiB that only this check needs (issue 18).
  const { spf } = await import('mailauth/lib/spf')
  const failures: string[] = []
  for (const ip of sources) {
    const result = await spf({ sender: `postmaster@${domain}`, ip, mta: deps.config.hostname, resolver: resolve as never })
    const outcome = result.status.result
    if (outcome === 'pass') continue
    if (outcome === 'temperror') return { state: 'error', message: `SPF evaluation for ${ip}: ${result.status.comment || 'temporary DNS error'}` }
    failures.push(`${ip} (${outcome})`)
  }
  if (failures.length === 0) return { state: 'verified' }
  return {
    state: 'mismatch',
    found: spfRecords,
    message: `the record does not authorise ${failures.join(', ')}; add ip4:/ip6: mechanisms for them to your SPF record`,
  }
}

/** Looks every record up with the configured DNS servers; lookups run concurrently. */
export async function checkRecords(
  deps: Deps,
  records: DnsRecordSpec[],
  expected: { publicKey: string; addresses: readonly string[] },
): Promise<Record<RecordPurpose, RecordCheck>> {
  const resolver = createResolver(deps.config.dns_servers)
  // One answer per question for the whole check (SPF evaluations of several addresses share them).
  const cache = new Map<string, Promise<unknown>>()
  const resolve: Resolve = (name, type) => {
    const key = `${type} ${name.toLowerCase()}`
    let answer = cache.get(key)
    if (!answer) {
      // TXT answers keep their record boundaries (lib/dns-query.ts).
      answer = resolver.resolve(name, type)
      answer.catch(() => {})
      cache.set(key, answer)
    }
    return answer
  }
  const txt = async (name: string) => ((await resolve(name, 'TXT')) as string[][]).map((strings) => strings.join(''))
  const spec = (purpose: RecordPurpose) => records.find((r) => r.purpose === purpose)!

  const [dkim, spfCheck, dmarc, returnPath] = await Promise.all([
    txt(spec('dkim').name).then(
      (found) => checkDkim(found, expected.publicKey),
      (err) => lookupFailure(err),
    ),
    checkSpf(deps, spec('spf').name, expected.addresses, resolve, txt),
    txt(spec('dmarc').name).then(checkDmarc, lookupFailure),
    resolve(spec('return_path').name, 'CNAME').then(
      (found) => checkReturnPath(found as string[], deps.config.hostname),
      (err) => lookupFailure(err),
    ),
  ])
  return { dkim, spf: spfCheck, dmarc, return_path: returnPath }
}
