import type { Deps } from '../../../deps'
import { dmarcSuggestion, expectedRecords, type DnsRecordSpec, type RecordCheck, type RecordPurpose } from '../../sending-domains/records'
import { checkRecords } from '../../sending-domains/verify'
import type { CheckResult } from '../model'
import { isNoRecord, lookupError, type DoctorDns } from './dns'
import { checkMtaSts } from './mta-sts'
import { DNS_OUTAGE_FIX, domainCheck } from './result'
import { countSpfLookups, SPF_LOOKUP_LIMIT } from './spf-lookups'

/** A sending domain as the doctor sees it. */
export interface DoctorDomain {
  name: string
  selector: string
  publicKey: string
  returnPathHost: string
  /** The addresses its mail leaves from (its pool, or the default pool). */
  addresses: string[]
}

const publish = (spec: DnsRecordSpec) => `Publish ${spec.type} ${spec.name} = ${spec.value}`

/** A record check of sending-domains/verify.ts as a doctor check: verified passes, an outage warns, anything else fails with the record to publish. */
function fromRecordCheck(domain: string, check: string, title: string, spec: DnsRecordSpec, found: RecordCheck): CheckResult {
  const outcome = domainCheck(domain, check, title)
  if (found.state === 'verified') return outcome('pass', `${spec.type} ${spec.name} is published as expected.`)
  if (found.state === 'error') return outcome('warn', `The lookup failed: ${found.message}.`, DNS_OUTAGE_FIX)
  if (found.state === 'missing') return outcome('fail', `${spec.type} ${spec.name} is not published.`, publish(spec))
  const was = found.found?.length ? ` (found: ${found.found.join(' | ')})` : ''
  return outcome(
    'fail',
    `${spec.type} ${spec.name} is wrong: ${found.message}${was}.`,
    `${publish(spec)}${spec.purpose === 'spf' ? ', merging your other senders into this one record' : ''}`,
  )
}

/** DMARC tags (RFC 7489 section 6.3), lower-cased names. */
function dmarcTags(record: string): Map<string, string> {
  const tags = new Map<string, string>()
  for (const part of record.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0) tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim())
  }
  return tags
}

/** The domain's one DMARC record, or why there is none. */
async function dmarcRecord(dns: DoctorDns, domain: string): Promise<{ record: string } | { problem: 'missing' | 'several' | 'error'; message: string }> {
  let records: string[]
  try {
    records = (await dns.txt(`_dmarc.${domain}`)).filter((r) => /^v=DMARC1\s*(;|$)/i.test(r.trim()))
  } catch (err) {
    if (isNoRecord(err)) return { problem: 'missing', message: `_dmarc.${domain} has no TXT record` }
    return { problem: 'error', message: lookupError(err) }
  }
  if (records.length === 0) return { problem: 'missing', message: `no TXT record at _dmarc.${domain} starts with v=DMARC1` }
  if (records.length > 1)
    return { problem: 'several', message: `_dmarc.${domain} has ${records.length} DMARC records: receivers ignore them all (RFC 7489 section 6.6.3)` }
  return { record: records[0]! }
}

const under = (host: string, domain: string) => host === domain || host.endsWith(`.${domain}`)

/**
 * Every check of one sending domain: the records sending-domains verifies (DKIM, SPF, return
 * path, DMARC), SPF's lookup count, DMARC's policy and reports, alignment, MTA-STS and TLS-RPT.
 */
export async function checkDomain(deps: Deps, dns: DoctorDns, d: DoctorDomain): Promise<CheckResult[]> {
  const specs = expectedRecords({
    domain: d.name,
    selector: d.selector,
    publicKey: d.publicKey,
    returnPathHost: d.returnPathHost,
    addresses: d.addresses,
    hostname: deps.config.hostname,
  })
  const spec = (p: RecordPurpose) => specs.find((s) => s.purpose === p)!
  const [records, lookups, dmarc, stsChecks, returnPathAddresses] = await Promise.all([
    checkRecords(deps, specs, { publicKey: d.publicKey, addresses: d.addresses }),
    countSpfLookups(d.name, dns.txt),
    dmarcRecord(dns, d.name),
    checkMtaSts(deps.config, deps.clock.now(), dns, d.name),
    dns.addresses(d.returnPathHost),
  ])
  const out: CheckResult[] = []
  const domain = d.name

  // DKIM (RFC 6376 section 3.6.2.1): the key at <selector>._domainkey must be the one we sign with.
  out.push(fromRecordCheck(domain, 'domain.dkim', 'DKIM record matches the signing key', spec('dkim'), records.dkim))

  // SPF authorises every sending IP, and costs at most 10 lookups (RFC 7208 section 4.6.4).
  out.push(fromRecordCheck(domain, 'domain.spf', 'SPF authorises the sending IPs', spec('spf'), records.spf))
  const spfLookupsResult = domainCheck(domain, 'domain.spf_lookups', `SPF needs at most ${SPF_LOOKUP_LIMIT} DNS lookups`)
  if (records.spf.state === 'missing') out.push(spfLookupsResult('skipped', 'No SPF record to count.'))
  else if (lookups.count > SPF_LOOKUP_LIMIT)
    out.push(
      spfLookupsResult(
        'fail',
        `The SPF record of ${domain} needs ${lookups.count} DNS lookups (${lookups.terms.join(', ')}); past ${SPF_LOOKUP_LIMIT} receivers return permerror and SPF fails for all its mail.`,
        `Cut it to ${SPF_LOOKUP_LIMIT} or fewer: drop includes of services you no longer use, and replace a:/mx:/include: terms with the ip4:/ip6: ranges they stand for, e.g. ${spec('spf').value}`,
      ),
    )
  else
    out.push(
      spfLookupsResult(
        lookups.problems.length ? 'warn' : 'pass',
        `${lookups.count} of ${SPF_LOOKUP_LIMIT} lookups.${lookups.problems.length ? ` Could not follow: ${lookups.problems.join('; ')}.` : ''}`,
        `Fix or remove the terms that could not be followed: receivers treat a missing include target as permerror.`,
      ),
    )

  // DMARC (RFC 7489): published, with a policy and aggregate reports (rua, section 6.3).
  const suggestion = dmarcSuggestion(d.returnPathHost)
  const dmarcResult = domainCheck(domain, 'domain.dmarc', 'DMARC is published with a policy and reports')
  let tags: Map<string, string> | null = null
  if ('record' in dmarc) {
    tags = dmarcTags(dmarc.record)
    const policy = tags.get('p')?.toLowerCase()
    if (!policy || !['none', 'quarantine', 'reject'].includes(policy))
      out.push(dmarcResult('fail', `_dmarc.${domain} has no valid p= policy: ${dmarc.record}`, `Publish TXT _dmarc.${domain} = ${suggestion}`))
    else if (!tags.get('rua'))
      out.push(
        dmarcResult(
          'warn',
          `DMARC policy p=${policy}, but no rua=: nobody receives the aggregate reports that show who sends as ${domain}.`,
          `Add rua=mailto:dmarc@${d.returnPathHost} to TXT _dmarc.${domain} (this server reads those reports).`,
        ),
      )
    else out.push(dmarcResult('pass', `p=${policy}, reports to ${tags.get('rua')}.`))
  } else if (dmarc.problem === 'error') out.push(dmarcResult('warn', `The lookup failed: ${dmarc.message}.`, DNS_OUTAGE_FIX))
  else
    out.push(
      dmarcResult(
        'fail',
        `${dmarc.message}; Gmail and Yahoo require DMARC of bulk senders since February 2024.`,
        dmarc.problem === 'several' ? `Keep one record: TXT _dmarc.${domain} = ${suggestion}` : `Publish TXT _dmarc.${domain} = ${suggestion}`,
      ),
    )

  // Return path: a CNAME to this server (bounces come back here), which must resolve.
  const rp = fromRecordCheck(domain, 'domain.return_path', 'The return-path host points here and resolves', spec('return_path'), records.return_path)
  if (rp.status === 'pass' && returnPathAddresses.length === 0) {
    rp.status = 'fail'
    rp.detail = `${d.returnPathHost} points to ${deps.config.hostname}, which has no A or AAAA record: bounces cannot reach this server.`
    rp.fix = `Publish A ${deps.config.hostname} -> this server's public address.`
  }
  out.push(rp)

  // Alignment (RFC 7489 section 3.1): DKIM d= is the domain itself; SPF's domain is the return
  // path, aligned in relaxed mode as a subdomain, not in strict mode (aspf=s).
  const alignmentResult = domainCheck(domain, 'domain.alignment', 'DKIM and SPF align with the From domain (DMARC)')
  const rpHost = d.returnPathHost.toLowerCase()
  const strictSpf = tags?.get('aspf')?.toLowerCase() === 's'
  const spfAligned = records.spf.state === 'verified' && (strictSpf ? rpHost === domain : under(rpHost, domain))
  const dkimAligned = records.dkim.state === 'verified'
  if (dkimAligned && spfAligned) out.push(alignmentResult('pass', `DKIM signs as ${domain}; the return path ${rpHost} is under ${domain}.`))
  else if (dkimAligned || spfAligned) {
    const why = dkimAligned
      ? strictSpf && rpHost !== domain
        ? `SPF does not align: the DMARC record asks for strict SPF alignment (aspf=s) and the return path is ${rpHost}`
        : `SPF does not align (the return path ${rpHost} ${under(rpHost, domain) ? 'is under the domain, but SPF does not pass' : `is not under ${domain}`})`
      : 'DKIM does not align: the DKIM record is not published as expected'
    out.push(
      alignmentResult(
        'warn',
        `Only one of the two aligns: ${why}. DMARC passes, but one broken record away from failing.`,
        dkimAligned
          ? strictSpf
            ? `Remove aspf=s from TXT _dmarc.${domain} (relaxed alignment is the default).`
            : `${publish(spec('spf'))} and ${publish(spec('return_path'))}`
          : publish(spec('dkim')),
      ),
    )
  } else
    out.push(
      alignmentResult(
        'fail',
        `Neither DKIM nor SPF aligns with ${domain}: receivers enforcing DMARC reject or junk its mail.`,
        `${publish(spec('dkim'))}; ${publish(spec('spf'))}`,
      ),
    )

  // MTA-STS (RFC 8461) and TLS reporting (RFC 8460): inbound TLS for the domain.
  out.push(...stsChecks)
  return out
}
