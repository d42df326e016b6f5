import net from 'node:net'
import { DnsQueryError, isQueryType, queryRecords, type RecordData } from './dns-query'

/**
 * The lookups the server makes, in node:dns's shapes (so mailauth and the doctor take it as
 * they took a `dns.promises.Resolver`), answered by our own client (dns-query.ts says why).
 */
export interface DnsResolver {
  /** Records of `type`: A/AAAA addresses, MX `{ exchange, priority }`, TXT one string array per record, CNAME/PTR/NS names. */
  resolve(name: string, type: string): Promise<unknown>
  resolve4(name: string): Promise<string[]>
  resolve4(name: string, options: { ttl: true }): Promise<Array<{ address: string; ttl: number }>>
  resolve6(name: string): Promise<string[]>
  resolve6(name: string, options: { ttl: true }): Promise<Array<{ address: string; ttl: number }>>
  resolveMx(name: string): Promise<Array<RecordData['MX']>>
  /** PTR names of an address (RFC 1035 3.5, RFC 3596 2.5). */
  reverse(address: string): Promise<string[]>
}

/**
 * The resolver every DNS lookup of the server uses (MX delivery, domain verification, the
 * doctor), built from the `dns_servers` setting; an empty list keeps the system's resolvers.
 * Timeouts and tries are kept short: a slow resolver defers a delivery, it must not hold a
 * worker.
 */
export function createResolver(servers: readonly string[]): DnsResolver {
  const options = { timeout: 3000, tries: 2 }
  const ask = async (name: string, type: string): Promise<unknown[]> => {
    if (!isQueryType(type)) throw new DnsQueryError('ENOTIMP', name, `query${type} ENOTIMP ${name}: record type not supported`)
    return (await queryRecords(servers, name, type, options)).map((r) => r.data)
  }
  const addresses = (type: 'A' | 'AAAA') =>
    (async (name: string, opts?: { ttl?: boolean }) => {
      const records = await queryRecords(servers, name, type, options)
      return opts?.ttl ? records.map((r) => ({ address: r.data, ttl: r.ttl })) : records.map((r) => r.data)
    }) as DnsResolver['resolve4']
  return {
    resolve: ask,
    resolve4: addresses('A'),
    resolve6: addresses('AAAA'),
    resolveMx: async (name) => (await queryRecords(servers, name, 'MX', options)).map((r) => r.data),
    reverse: async (address) => {
      if (!net.isIP(address)) throw new DnsQueryError('EINVAL', address, `getHostByAddr EINVAL ${address}`)
      return (await queryRecords(servers, reverseName(address), 'PTR', options)).map((r) => r.data)
    },
  }
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
