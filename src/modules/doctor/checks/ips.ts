import type { CheckResult } from '../model'
import { isNoRecord, lookupError, type DoctorDns } from './dns'
import { DNS_OUTAGE_FIX, result } from './result'

/** A sending address and the name it greets with (the `ips` table, or the host's own address). */
export interface SendingIp {
  address: string
  helo: string
}

const key = (name: string) => name.toLowerCase().replace(/\.$/, '')

/**
 * Forward-confirmed reverse DNS (FCrDNS): the address has a PTR name, and that name resolves
 * back to the address. Large receivers refuse or junk mail from addresses without it (Gmail's
 * sender guidelines; RFC 1912 section 2.1 asks for matching PTR and A records); the name
 * should also be the one the server greets with (RFC 5321 section 4.1.4 EHLO).
 */
export async function checkPtr(dns: DoctorDns, ip: SendingIp): Promise<CheckResult> {
  const title = 'Reverse DNS (PTR) exists and forward-confirms'
  const fix = `Ask the owner of ${ip.address} (your hosting provider) to set its PTR record to ${ip.helo}, and publish A${ip.address.includes(':') ? 'AAAA' : ''} ${ip.helo} -> ${ip.address}.`
  let names: string[]
  try {
    names = await dns.reverse(ip.address)
  } catch (err) {
    if (isNoRecord(err)) return result('ip', 'ip.ptr', ip.address, title, 'fail', `${ip.address} has no PTR record.`, fix)
    return result('ip', 'ip.ptr', ip.address, title, 'warn', `The PTR lookup of ${ip.address} failed: ${lookupError(err)}.`, DNS_OUTAGE_FIX)
  }
  if (names.length === 0) return result('ip', 'ip.ptr', ip.address, title, 'fail', `${ip.address} has no PTR record.`, fix)
  const confirmed: string[] = []
  for (const name of names) if ((await dns.addresses(name)).includes(ip.address)) confirmed.push(key(name))
  if (confirmed.length === 0)
    return result(
      'ip',
      'ip.ptr',
      ip.address,
      title,
      'fail',
      `${ip.address} points to ${names.map(key).join(', ')}, which does not resolve back to ${ip.address}.`,
      fix,
    )
  if (!confirmed.includes(key(ip.helo)))
    return result(
      'ip',
      'ip.ptr',
      ip.address,
      title,
      'warn',
      `${ip.address} forward-confirms as ${confirmed.join(', ')}, but it greets as ${ip.helo}.`,
      `Make the names agree: set the IP's host name (Sending > IPs) to ${confirmed[0]}, or set the PTR of ${ip.address} to ${ip.helo}.`,
    )
  return result('ip', 'ip.ptr', ip.address, title, 'pass', `${ip.address} -> ${ip.helo} -> ${ip.address}.`)
}

/** The EHLO name must resolve to the address it is used from (RFC 5321 section 4.1.4; receivers check it as an anti-spoofing test). */
export async function checkHelo(dns: DoctorDns, ip: SendingIp): Promise<CheckResult> {
  const title = 'The HELO name resolves to the IP'
  const addresses = await dns.addresses(ip.helo)
  const record = ip.address.includes(':') ? 'AAAA' : 'A'
  const fix = `Publish ${record} ${ip.helo} -> ${ip.address} (or change the IP's host name in Sending > IPs to a name that resolves to it).`
  if (addresses.length === 0) return result('ip', 'ip.helo', ip.address, title, 'fail', `${ip.helo} does not resolve.`, fix)
  if (!addresses.includes(ip.address))
    return result('ip', 'ip.helo', ip.address, title, 'fail', `${ip.helo} resolves to ${addresses.join(', ')}, not ${ip.address}.`, fix)
  return result('ip', 'ip.helo', ip.address, title, 'pass', `${ip.helo} resolves to ${ip.address}.`)
}
