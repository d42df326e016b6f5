import { lookup as dnsLookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * Endpoint address rules (server-side request forgery): a webhook URL must not make this
 * server talk to itself or to the network behind it. Only global unicast addresses are
 * allowed; private (RFC 1918), loopback, link-local (RFC 3927, RFC 4291), unique-local
 * (RFC 4193), carrier-grade NAT (RFC 6598), multicast, unspecified, broadcast, reserved and
 * documentation ranges are refused, and IPv4-mapped IPv6 (RFC 4291 2.5.5.2) is judged as
 * the IPv4 address it carries. Translation prefixes that embed an IPv4 address (NAT64
 * RFC 6052, 6to4, Teredo) are refused too, since the embedded address may be anything.
 */

export type Lookup = (host: string) => Promise<Array<{ address: string; family: number }>>

/** The system resolver (getaddrinfo), every address. */
export const systemLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true })

/** True when `address` (a literal IPv4 or IPv6 address) is a global unicast address. */
export function isPublicAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address
  if (!ipaddr.isValid(bare)) return false
  return ipaddr.process(bare).range() === 'unicast'
}

/** The host of a URL as a resolver or isIP expects it (brackets of an IPv6 literal removed). */
export function hostOf(url: URL): string {
  const h = url.hostname
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h
}

/**
 * Checks the URL's shape (http or https, no credentials) and returns a message for the
 * `url` field, or null when it is acceptable.
 */
export function urlProblem(text: string): string | null {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'must be an absolute http or https URL'
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http or https URL'
  if (url.username || url.password) return 'must not carry credentials'
  if (!url.hostname) return 'must name a host'
  return null
}

export type Resolved = { ok: true; address: string; family: 4 | 6 } | { ok: false; error: string }

/**
 * Resolves the URL's host and picks the address to connect to. Unless private addresses are
 * allowed, every address the name resolves to must be public (one private answer among
 * public ones is refused: an attacker controls which one a client would pick). The caller
 * connects to the returned address and never resolves the name again, so a DNS answer that
 * changes between this check and the connection (rebinding) cannot slip through.
 */
export async function resolveEndpoint(url: URL, allowPrivate: boolean, lookup: Lookup = systemLookup): Promise<Resolved> {
  const host = hostOf(url)
  const literal = isIP(host)
  let addresses: Array<{ address: string; family: number }>
  if (literal) addresses = [{ address: host, family: literal }]
  else {
    try {
      addresses = await lookup(host)
    } catch (e) {
      return { ok: false, error: `cannot resolve ${host}: ${(e as { code?: string }).code ?? (e as Error).message}` }
    }
  }
  if (addresses.length === 0) return { ok: false, error: `${host} has no address` }
  if (!allowPrivate) {
    const bad = addresses.find((a) => !isPublicAddress(a.address))
    if (bad) return { ok: false, error: `${host} resolves to ${bad.address}, a private, loopback, link-local or reserved address` }
  }
  const first = addresses[0]!
  return { ok: true, address: first.address, family: first.family === 6 ? 6 : 4 }
}
