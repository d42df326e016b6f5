import { promises as dns } from 'node:dns'
import net from 'node:net'

export type DnsResolver = InstanceType<typeof dns.Resolver>

/**
 * The resolver every DNS lookup of the server uses (MX delivery, domain verification), built
 * from the `dns_servers` setting; an empty list keeps the system's resolvers. Timeouts and
 * tries are kept short: a slow resolver defers a delivery, it must not hold a worker.
 */
export function createResolver(servers: readonly string[]): DnsResolver {
  const resolver = new dns.Resolver({ timeout: 3000, tries: 2 })
  if (servers.length > 0) resolver.setServers([...servers])
  return resolver
}

/** The PTR name of an address (RFC 1035 3.5 in-addr.arpa; RFC 3596 2.5 ip6.arpa nibbles), the same form DNSBL names take (RFC 5782 2.1, 2.4). */
export function reverseName(address: string, zone?: string): string {
  let labels: string
  if (net.isIPv4(address)) labels = address.split('.').reverse().join('.')
  else {
    const groups = address.split('::')
    const head = groups[0] ? groups[0].split(':') : []
    const tail = groups.length > 1 && groups[1] ? groups[1].split(':') : []
    const full = [...head, ...Array(8 - head.length - tail.length).fill('0'), ...tail].map((g) => g.padStart(4, '0')).join('')
    labels = full.split('').reverse().join('.')
  }
  return `${labels}.${zone ?? (net.isIPv4(address) ? 'in-addr.arpa' : 'ip6.arpa')}`
}
