import { promises as dns } from 'node:dns'

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
