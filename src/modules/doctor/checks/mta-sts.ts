import type { Config } from '../../../config'
import { lookupStsPolicy, stsMxAllowed, type StsPolicyFile } from '../../../lib/mta-sts'
import type { CheckResult } from '../model'
import { isNoRecord, lookupError, type DoctorDns } from './dns'
import { DNS_OUTAGE_FIX, domainCheck } from './result'

/**
 * Inbound TLS of a sending domain (issue 17, "MTA-STS and TLS-RPT on the domain"):
 *
 * - `domain.mta_sts`: the _mta-sts TXT record (RFC 8461 section 3.1), the policy it announces
 *   fetched from https://mta-sts.<domain>/.well-known/mta-sts.txt exactly as the delivery
 *   engine fetches recipients' policies (lib/mta-sts.ts, mailauth, strict), and its mode.
 *   Not published warns; announced but not usable (bad TXT, no policy host, fetch or parse
 *   error) fails, since senders then act as if there were no policy and report the failure
 *   (RFC 8460 "sts-policy-fetch-error"); testing and none warn (nothing is protected yet).
 * - `domain.mta_sts_mx`: every MX of the domain (or the domain itself without MX records, the
 *   implicit MX of RFC 5321 section 5.1) must match one of the policy's mx patterns (RFC 8461
 *   section 4.1); in enforce mode a sender refuses an MX that does not (section 5), so that
 *   fails, in testing mode it warns. Whether the domain receives its mail through this server
 *   is known from its MX records: when one of them is the server's host name the detail says
 *   so, and the host name must then match the policy too (its certificate is host.tls).
 * - `domain.tls_rpt`: one v=TLSRPTv1 record at _smtp._tls.<domain> with rua= URIs that are
 *   mailto: or https: (RFC 8460 section 3); any problem only loses reports, so it warns.
 */

/** How long the doctor waits for a policy fetch (mailauth's default is a minute, RFC 8461 section 3.3). */
const POLICY_TIMEOUT_MS = 15_000
/** The TXT record syntax of RFC 8461 section 3.1, as far as the doctor judges it: an id of 1 to 32 letters and digits. */
const STS_ID = /(^|;)\s*id=([A-Za-z0-9]{1,32})\s*(;|$)/

/** A TXT lookup: the records that start with `prefix`, or null for an outage (an absent name is no records). */
async function txtRecords(dns: DoctorDns, name: string, prefix: RegExp): Promise<string[] | { error: string }> {
  try {
    return (await dns.txt(name)).filter((r) => prefix.test(r.trim()))
  } catch (err) {
    return isNoRecord(err) ? [] : { error: lookupError(err) }
  }
}

/**
 * The hosts mail to the domain goes to, most preferred first: its MX records, or the domain
 * itself when it has none (RFC 5321 section 5.1); [] for a null MX (RFC 7505: no mail at all).
 */
async function mailHosts(dns: DoctorDns, domain: string): Promise<string[] | { error: string }> {
  try {
    const mx = (await dns.resolve(domain, 'MX')) as Array<{ exchange: string; priority: number }>
    if (mx.length === 0) return [domain]
    const hosts = mx
      .sort((a, b) => a.priority - b.priority)
      .map((m) => m.exchange.toLowerCase().replace(/\.$/, ''))
      .filter((h) => h !== '')
    return [...new Set(hosts)]
  } catch (err) {
    return isNoRecord(err) ? [domain] : { error: lookupError(err) }
  }
}

/** A policy id for a new or changed policy: today's date and a counter, never the current one (RFC 8461 section 3.1: a changed policy needs a new id). */
export function newStsId(now: number, current: string | null): string {
  const day = new Date(now).toISOString().slice(0, 10).replace(/-/g, '')
  return current === `${day}01` ? `${day}02` : `${day}01`
}

/** The policy file to serve, one field a line (RFC 8461 section 3.2), as a quoted list for a fix text. */
function policyText(mode: 'enforce' | 'testing', hosts: readonly string[]): string {
  const mx = hosts.length ? hosts.map((h) => `"mx: ${h}"`) : ['"mx: <each MX host of the domain>"']
  return ['"version: STSv1"', `"mode: ${mode}"`, ...mx, '"max_age: 604800"'].join(', ')
}

/** Every MTA-STS and TLS-RPT check of one sending domain (see the module comment). */
export async function checkMtaSts(config: Pick<Config, 'hostname'>, now: number, dns: DoctorDns, domain: string): Promise<CheckResult[]> {
  const [sts, rpt, hosts] = await Promise.all([
    txtRecords(dns, `_mta-sts.${domain}`, /^v=STSv1\s*(;|$)/i),
    txtRecords(dns, `_smtp._tls.${domain}`, /^v=TLSRPTv1\s*(;|$)/i),
    mailHosts(dns, domain),
  ])
  const knownHosts = Array.isArray(hosts) ? hosts : []
  const policyUrl = `https://mta-sts.${domain}/.well-known/mta-sts.txt`
  const serve = (mode: 'enforce' | 'testing', id: string | null) =>
    `Serve ${policyUrl} (text/plain, over HTTPS with a certificate for mta-sts.${domain}; A mta-sts.${domain} -> your web server) with the lines ${policyText(mode, knownHosts)}, and publish TXT _mta-sts.${domain} = v=STSv1; id=${newStsId(now, id)};`
  const title = 'MTA-STS policy is published and served'
  const stsResult = domainCheck(domain, 'domain.mta_sts', title)
  const out: CheckResult[] = []

  // The TXT record, then the policy it announces.
  let policy: StsPolicyFile | null = null
  if (!Array.isArray(sts)) out.push(stsResult('warn', `The lookup of _mta-sts.${domain} failed: ${sts.error}.`, DNS_OUTAGE_FIX))
  else if (sts.length === 0)
    out.push(
      stsResult('warn', `No MTA-STS record at _mta-sts.${domain}: mail to ${domain} can be downgraded to plain text (RFC 8461).`, serve('testing', null)),
    )
  else if (sts.length > 1)
    out.push(
      stsResult(
        'fail',
        `_mta-sts.${domain} has ${sts.length} STSv1 records: senders then apply no policy (RFC 8461 section 3.1).`,
        `Keep one record: TXT _mta-sts.${domain} = v=STSv1; id=${newStsId(now, null)};`,
      ),
    )
  else if (!STS_ID.test(sts[0]!))
    out.push(
      stsResult(
        'fail',
        `_mta-sts.${domain} has no valid id= (1 to 32 letters and digits): ${sts[0]}`,
        `Publish TXT _mta-sts.${domain} = v=STSv1; id=${newStsId(now, null)};`,
      ),
    )
  else {
    const id = STS_ID.exec(sts[0]!)![2]!
    const found = await lookupStsPolicy(domain, null, { resolve: dns.resolve, timeoutMs: POLICY_TIMEOUT_MS })
    if (found.status === 'errored' || found.status === 'not_found' || !found.policy) {
      const why =
        found.status === 'not_found'
          ? `mta-sts.${domain} has no A or AAAA record, so the policy cannot be fetched`
          : `${policyUrl} could not be fetched or is not a valid policy: ${found.error ?? 'unknown error'}`
      out.push(
        stsResult(
          'fail',
          `_mta-sts.${domain} announces policy ${id}, but ${why}. Senders apply no policy and report the failure to the TLS-RPT address.`,
          serve('testing', id),
        ),
      )
    } else {
      policy = found.policy
      const summary = `Policy ${id}: mode ${policy.mode}, mx ${policy.mx.join(', ') || '(none)'}, max_age ${policy.maxAge} s.`
      if (policy.mode === 'enforce') out.push(stsResult('pass', summary))
      else if (policy.mode === 'testing')
        out.push(
          stsResult(
            'warn',
            `${summary} In testing mode senders report TLS failures but deliver anyway: nothing is protected yet.`,
            `Once the TLS-RPT reports show no failures, change "mode: testing" to "mode: enforce" in ${policyUrl} and publish TXT _mta-sts.${domain} = v=STSv1; id=${newStsId(now, id)};`,
          ),
        )
      else out.push(stsResult('warn', `${summary} Mode none withdraws MTA-STS (RFC 8461 section 8.3): senders forget the policy.`, serve('enforce', id)))
    }
  }

  // The domain's MX hosts against the policy's mx patterns.
  const mxResult = domainCheck(domain, 'domain.mta_sts_mx', 'The MX hosts match the MTA-STS policy')
  const own = config.hostname.toLowerCase()
  if (!policy || policy.mode === 'none') out.push(mxResult('skipped', 'No MTA-STS policy in testing or enforce mode to match the MX hosts against.'))
  else if (!Array.isArray(hosts)) out.push(mxResult('warn', `The MX lookup of ${domain} failed: ${hosts.error}.`, DNS_OUTAGE_FIX))
  else if (hosts.length === 0) out.push(mxResult('skipped', `${domain} publishes a null MX (RFC 7505): it receives no mail.`))
  else {
    const here = hosts.includes(own)
      ? `${own} (this server) is an MX of ${domain}, so senders also check its certificate (see host.tls).`
      : `${domain} does not receive mail through this server (${own} is not among its MX hosts); its MX hosts were checked.`
    const missing = hosts.filter((h) => !stsMxAllowed({ mode: 'enforce', mx: policy!.mx }, h))
    if (missing.length === 0) out.push(mxResult('pass', `${hosts.join(', ')} match the policy. ${here}`))
    else {
      const enforce = policy.mode === 'enforce'
      out.push(
        mxResult(
          enforce ? 'fail' : 'warn',
          `${missing.join(', ')} ${missing.length === 1 ? 'matches' : 'match'} no mx line of the policy (${policy.mx.join(', ')}): ${
            enforce
              ? 'senders that apply MTA-STS refuse to deliver there (RFC 8461 section 5)'
              : 'senders report every delivery there as a failure, and would refuse it in enforce mode'
          }. ${here}`,
          `Add ${missing.map((h) => `"mx: ${h}"`).join(', ')} to ${policyUrl} and publish TXT _mta-sts.${domain} = v=STSv1; id=${newStsId(now, policy.id)};`,
        ),
      )
    }
  }

  // TLS reporting (RFC 8460 section 3).
  const rptTitle = 'TLS-RPT is published'
  const rptResult = domainCheck(domain, 'domain.tls_rpt', rptTitle)
  const rptFix = `Publish TXT _smtp._tls.${domain} = v=TLSRPTv1; rua=mailto:tls-reports@${domain}`
  const blind = policy && policy.mode === 'testing' ? ' In testing mode these reports are the only sign of MTA-STS failures.' : ''
  if (!Array.isArray(rpt)) out.push(rptResult('warn', `The lookup of _smtp._tls.${domain} failed: ${rpt.error}.`, DNS_OUTAGE_FIX))
  else if (rpt.length !== 1)
    out.push(
      rptResult(
        'warn',
        rpt.length
          ? `_smtp._tls.${domain} has ${rpt.length} TLSRPTv1 records: senders then send no reports (RFC 8460 section 3).`
          : `No TLS-RPT record at _smtp._tls.${domain}: nobody hears of TLS failures of mail to ${domain}.${blind}`,
        rpt.length ? `Keep one record: ${rptFix.replace('Publish ', '')}` : rptFix,
      ),
    )
  else {
    const rua = /(?:^|;)\s*rua=([^;]*)/i.exec(rpt[0]!)?.[1]?.trim()
    const uris = rua ? rua.split(',').map((u) => u.trim()) : []
    const bad = uris.filter((u) => !/^(mailto:[^@\s]+@[^@\s]+|https:\/\/\S+)$/i.test(u))
    if (!rua) out.push(rptResult('warn', `_smtp._tls.${domain} has no rua= (where reports go): ${rpt[0]}${blind}`, rptFix))
    else if (bad.length)
      out.push(
        rptResult(
          'warn',
          `_smtp._tls.${domain}: ${bad.join(', ')} ${bad.length === 1 ? 'is' : 'are'} neither a mailto: address nor an https: URL (RFC 8460 section 3).`,
          rptFix,
        ),
      )
    else out.push(rptResult('pass', `_smtp._tls.${domain}: reports go to ${uris.join(', ')}.`))
  }
  return out
}
