import { reverseName } from '../../../lib/dns'
import type { CheckResult } from '../model'
import { isNoRecord, lookupError, type DoctorDns } from './dns'
import { DNS_OUTAGE_FIX, result } from './result'

/**
 * DNS blocklists (RFC 5782): the address reversed (or the domain) under the list's zone; an A
 * answer in 127.0.0.0/8 means listed, and the code says why. NXDOMAIN means not listed.
 */

interface ZoneInfo {
  /** Return codes to their meaning; codes absent here read as "listed". */
  codes: Record<string, string>
  /** Where to ask for removal, once the cause is gone. */
  removal: string
}

/**
 * Answers that are not listings but refused queries (Spamhaus: "Using our public mirrors",
 * https://docs.spamhaus.com/datasets/docs/source/40-real-world-usage/PublicMirrors/MTAs/020-Postfix.html):
 * the result says nothing about the address, so the check warns instead of failing.
 */
const REFUSALS: Record<string, string> = {
  '127.255.255.252': 'typing error in the blocklist zone name',
  '127.255.255.254': 'query via a public or open resolver refused: ask through your own resolver (or a Spamhaus DQS key)',
  '127.255.255.255': 'too many queries from this resolver: the list refused to answer',
  '127.0.1.255': 'IP queries are not allowed on a domain blocklist',
}

const SPAMHAUS_REMOVAL = 'https://check.spamhaus.org/'

const ZONES: Record<string, ZoneInfo> = {
  'zen.spamhaus.org': {
    codes: {
      '127.0.0.2': 'SBL: Spamhaus Block List (a known spam source)',
      '127.0.0.3': 'SBL CSS: snowshoe spam seen from this address',
      '127.0.0.4': 'XBL: exploited or infected host (CBL)',
      '127.0.0.5': 'XBL: exploited or infected host',
      '127.0.0.6': 'XBL: exploited or infected host',
      '127.0.0.7': 'XBL: exploited or infected host',
      '127.0.0.9': 'SBL DROP: hijacked or leased to spammers',
      '127.0.0.10': 'PBL: an end-user address range that its ISP says should not send mail directly',
      '127.0.0.11': 'PBL: a range Spamhaus found should not send mail directly',
    },
    removal: SPAMHAUS_REMOVAL,
  },
  'sbl.spamhaus.org': { codes: { '127.0.0.2': 'SBL: Spamhaus Block List', '127.0.0.3': 'SBL CSS', '127.0.0.9': 'SBL DROP' }, removal: SPAMHAUS_REMOVAL },
  'xbl.spamhaus.org': { codes: { '127.0.0.4': 'XBL: exploited or infected host' }, removal: SPAMHAUS_REMOVAL },
  'pbl.spamhaus.org': { codes: { '127.0.0.10': 'PBL (ISP maintained)', '127.0.0.11': 'PBL (Spamhaus maintained)' }, removal: SPAMHAUS_REMOVAL },
  'dbl.spamhaus.org': {
    codes: {
      '127.0.1.2': 'spam domain',
      '127.0.1.4': 'phishing domain',
      '127.0.1.5': 'malware domain',
      '127.0.1.6': 'botnet command-and-control domain',
      '127.0.1.102': 'abused legitimate domain (spam)',
      '127.0.1.103': 'abused legitimate spammed redirector',
      '127.0.1.104': 'abused legitimate domain (phishing)',
      '127.0.1.105': 'abused legitimate domain (malware)',
      '127.0.1.106': 'abused legitimate domain (botnet C&C)',
    },
    removal: SPAMHAUS_REMOVAL,
  },
  'bl.spamcop.net': {
    codes: { '127.0.0.2': 'SpamCop: spam reported from this address' },
    removal: 'https://www.spamcop.net/bl.shtml (entries expire 24 h after the last report)',
  },
  'b.barracudacentral.org': { codes: { '127.0.0.2': 'Barracuda Reputation Block List' }, removal: 'https://www.barracudacentral.org/rbl/removal-request' },
  'multi.surbl.org': { codes: {}, removal: 'https://www.surbl.org/surbl-analysis' },
  'multi.uribl.com': { codes: { '127.0.0.1': 'query refused (public resolver or too many queries)' }, removal: 'https://admin.uribl.com/' },
}

/** What a return code of a zone means: a listing with its reason, or a refused query. */
export function blocklistCode(zone: string, code: string): { listed: boolean; meaning: string } {
  if (REFUSALS[code]) return { listed: false, meaning: REFUSALS[code]! }
  const info = ZONES[zone]
  if (zone === 'multi.uribl.com' && code === '127.0.0.1') return { listed: false, meaning: info!.codes[code]! }
  return { listed: true, meaning: info?.codes[code] ?? `listed (return code ${code})` }
}

/** Looks one IP address or domain up in one zone. */
export async function checkBlocklist(dns: DoctorDns, kind: 'ip' | 'domain', subject: string, zone: string): Promise<CheckResult> {
  const name = kind === 'ip' ? reverseName(subject, zone) : `${subject}.${zone}`
  const check = `blocklist.${zone}`
  const title = `Not listed on ${zone}`
  let codes: string[]
  try {
    codes = (await dns.resolve(name, 'A')) as string[]
  } catch (err) {
    if (isNoRecord(err)) return result('blocklist', check, subject, title, 'pass', `${subject} is not listed on ${zone}.`)
    return result('blocklist', check, subject, title, 'warn', `The lookup of ${name} failed: ${lookupError(err)}.`, DNS_OUTAGE_FIX)
  }
  const meanings = codes.map((code) => ({ code, ...blocklistCode(zone, code) }))
  const listed = meanings.filter((m) => m.listed)
  if (listed.length === 0) {
    const why = meanings.map((m) => `${m.code}: ${m.meaning}`).join('; ')
    return result(
      'blocklist',
      check,
      subject,
      title,
      'warn',
      `${zone} did not answer for ${subject} (${why}).`,
      `Query ${zone} through a resolver of your own rather than a public one (set dns_servers to it), then run the doctor again.`,
    )
  }
  const removal = ZONES[zone]?.removal ?? `the removal page of ${zone}`
  return result(
    'blocklist',
    check,
    subject,
    title,
    'fail',
    `${subject} is listed on ${zone}: ${listed.map((m) => `${m.code} ${m.meaning}`).join('; ')}.`,
    `Find and stop the cause (a compromised account, a bought list, mail to old addresses), then ask for removal at ${removal}.`,
  )
}
