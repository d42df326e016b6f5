import net from 'node:net'
import type { DomainStatus } from '../../db/schema'
import { PUBLIC_HOST_NAME_PLACEHOLDER, publicHostNameWarning } from '../../lib/public-host-name'

/**
 * The DNS records a sending domain publishes, and the pure rules that judge what DNS
 * answered. The lookups themselves are in verify.ts.
 */

export const RECORD_PURPOSES = ['dkim', 'spf', 'dmarc', 'return_path'] as const
export type RecordPurpose = (typeof RECORD_PURPOSES)[number]

/** `unchecked`: not looked up since the record took its current value. */
export const RECORD_STATES = ['unchecked', 'verified', 'missing', 'mismatch', 'error'] as const
export type RecordState = (typeof RECORD_STATES)[number]

/** Records that must be verified before the domain is; DMARC is a suggestion. */
export const REQUIRED_PURPOSES: readonly RecordPurpose[] = ['dkim', 'spf', 'return_path']

export interface DnsRecordSpec {
  purpose: RecordPurpose
  type: 'TXT' | 'CNAME'
  name: string
  value: string
  required: boolean
  /** Set when `value` holds PUBLIC_HOST_NAME_PLACEHOLDER: the server's host name is not public, so the real value cannot be built. */
  warning?: string
}

/** The outcome of looking one record up. */
export interface RecordCheck {
  state: Exclude<RecordState, 'unchecked'>
  /** What DNS has instead (mismatch): the relevant TXT records or the CNAME target. */
  found?: string[]
  /** Why it is a mismatch, or why the lookup failed (error). */
  message?: string
}

/** A DKIM selector from the month of creation (`mr202603`), so a later key can get a new selector beside the old one. */
export function dkimSelector(now: number): string {
  const d = new Date(now)
  return `mr${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`
}

/**
 * The SPF record (RFC 7208) authorising the addresses mail of the domain leaves from; with
 * no pool addresses, the `a` mechanism of the server's host name (mail then leaves from the
 * host's default address, which is what that name should resolve to).
 */
export function spfValue(addresses: readonly string[], hostname: string): string {
  const unique = [...new Set(addresses)]
  const mechanisms = unique.length ? unique.map((a) => (net.isIPv6(a) ? `ip6:${a}` : `ip4:${a}`)) : [`a:${hostname}`]
  return ['v=spf1', ...mechanisms, '~all'].join(' ')
}

/** The local part of the address DMARC aggregate reports go to, at the domain's return-path host (src/smtp/inbound/listener.ts accepts it). */
export const DMARC_REPORT_LOCAL_PART = 'dmarc'

/**
 * The suggested DMARC record: monitoring only (p=none), with aggregate reports (rua, RFC 7489
 * section 6.3) sent to this server's inbound listener. The report address is at the return-path
 * host, a subdomain of the domain, so receivers need no external-destination authorisation
 * record (RFC 7489 section 7.1: same organisational domain).
 */
export function dmarcSuggestion(returnPathHost: string): string {
  return `v=DMARC1; p=none; rua=mailto:${DMARC_REPORT_LOCAL_PART}@${returnPathHost};`
}

/**
 * The records to publish, in the order they are shown. Values built from the server's host
 * name (the return-path CNAME; SPF when the pool has no addresses) hold a marked placeholder
 * and a `warning` when that name is not public (src/lib/public-host-name.ts): a record
 * pointing at "vm" could be published, and would never work.
 */
export function expectedRecords(input: {
  domain: string
  selector: string
  publicKey: string
  returnPathHost: string
  addresses: readonly string[]
  hostname: string
}): DnsRecordSpec[] {
  const warning = publicHostNameWarning(input.hostname)
  const host = warning ? PUBLIC_HOST_NAME_PLACEHOLDER : input.hostname
  const spf = spfValue(input.addresses, host)
  const marked = (value: string) => (warning && value.includes(PUBLIC_HOST_NAME_PLACEHOLDER) ? { warning } : {})
  return [
    // RFC 6376 section 3.6.1; the key record lives at <selector>._domainkey.<domain> (section 3.6.2.1).
    { purpose: 'dkim', type: 'TXT', name: `${input.selector}._domainkey.${input.domain}`, value: `v=DKIM1; k=rsa; p=${input.publicKey}`, required: true },
    { purpose: 'spf', type: 'TXT', name: input.domain, value: spf, required: true, ...marked(spf) },
    { purpose: 'dmarc', type: 'TXT', name: `_dmarc.${input.domain}`, value: dmarcSuggestion(input.returnPathHost), required: false },
    { purpose: 'return_path', type: 'CNAME', name: input.returnPathHost, value: host, required: true, ...marked(host) },
  ]
}

/** Tags of a DKIM key record (RFC 6376 section 3.2), or null when it is not a tag list. Folding whitespace is removed from values. */
export function parseDkimTags(record: string): Map<string, string> | null {
  const tags = new Map<string, string>()
  for (const spec of record.split(';')) {
    if (spec.trim() === '') continue
    const eq = spec.indexOf('=')
    if (eq < 0) return null
    const name = spec.slice(0, eq).trim()
    if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name)) return null
    tags.set(name, spec.slice(eq + 1).replace(/\s+/g, ''))
  }
  return tags
}

/**
 * DKIM is verified when one TXT record at the selector name is a DKIM1 RSA key record whose
 * p= is our public key (whitespace inside p= ignored, RFC 6376 section 3.6.1).
 */
export function checkDkim(records: readonly string[], publicKey: string): RecordCheck {
  if (records.length === 0) return { state: 'missing' }
  for (const record of records) {
    const tags = parseDkimTags(record)
    if (!tags) continue
    const version = tags.get('v')
    if (version !== undefined && version !== 'DKIM1') continue
    if ((tags.get('k') ?? 'rsa').toLowerCase() !== 'rsa') continue
    if (tags.get('p') === publicKey) return { state: 'verified' }
  }
  return { state: 'mismatch', found: [...records], message: 'no TXT record at this name carries the public key (p=) shown in value' }
}

/** DMARC (RFC 7489 section 6.6.3): exactly one record starting with v=DMARC1; any policy counts. */
export function checkDmarc(records: readonly string[]): RecordCheck {
  const dmarc = records.filter((r) => /^v=DMARC1\s*(;|$)/i.test(r.trim()))
  if (dmarc.length === 1) return { state: 'verified' }
  if (dmarc.length === 0) return records.length ? { state: 'mismatch', found: [...records], message: 'no record starts with v=DMARC1' } : { state: 'missing' }
  return { state: 'mismatch', found: dmarc, message: 'more than one DMARC record: receivers then ignore them all (RFC 7489 section 6.6.3)' }
}

/** Lower case without the root dot, for comparing host names. */
function hostKey(name: string): string {
  return name.toLowerCase().replace(/\.$/, '')
}

/** The return-path host must be a CNAME to the server's host name. */
export function checkReturnPath(targets: readonly string[], hostname: string): RecordCheck {
  if (targets.length === 0) return { state: 'missing' }
  if (targets.some((t) => hostKey(t) === hostKey(hostname))) return { state: 'verified' }
  return { state: 'mismatch', found: targets.map(hostKey), message: `the CNAME must point to ${hostname}` }
}

/**
 * The domain's status after a check:
 * - `verified` when DKIM, SPF and the return path are all verified;
 * - `failed` when one of them is published with a wrong value (mismatch);
 * - unchanged when a lookup failed (error) and nothing was found wrong: a resolver outage
 *   must neither verify a domain nor stop a verified one from sending;
 * - `pending` otherwise (something is not published yet).
 */
export function nextDomainStatus(previous: DomainStatus, checks: Record<RecordPurpose, RecordCheck>): DomainStatus {
  const required = REQUIRED_PURPOSES.map((p) => checks[p].state)
  if (required.every((s) => s === 'verified')) return 'verified'
  if (required.includes('mismatch')) return 'failed'
  if (required.includes('error')) return previous
  return 'pending'
}
