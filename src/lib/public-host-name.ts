/**
 * Whether the server's `hostname` setting can be the public name others reach it by. The
 * sending domains' DNS records (SPF `a:`, the return-path CNAME) and the bridges' SMTP host
 * are built from it, so a machine's short name ("vm", the default when nothing is set) or a
 * name that resolves only inside a local network gives records nobody can publish and a
 * host nobody can reach. Pure: the start-up warning and the API use the same rule.
 */

/**
 * Suffixes that resolve only inside a network: localhost (RFC 6761 section 6.3), .local
 * (mDNS, RFC 6762), home.arpa (RFC 8375), .internal (reserved for private use by ICANN in
 * 2024), and the .lan and .localdomain of home routers and Linux distributions.
 */
const PRIVATE_SUFFIXES = ['localhost', 'local', 'localdomain', 'internal', 'lan', 'home.arpa']

/** What the API shows instead of a value built from a host name that is not public. */
export const PUBLIC_HOST_NAME_PLACEHOLDER = '<public-host-name>'

/** Why `name` cannot be this server's public host name, or null when it is a fully qualified name others can resolve. */
export function publicHostNameProblem(name: string): string | null {
  const n = name.trim().toLowerCase().replace(/\.$/, '')
  if (n.includes(':') || /^[0-9.]+$/.test(n)) return `"${name}" is an IP address, not a host name`
  if (!n.includes('.')) return `"${name}" is a short name, not a fully qualified domain name`
  const suffix = PRIVATE_SUFFIXES.find((s) => n === s || n.endsWith(`.${s}`))
  if (suffix) return `"${name}" is under .${suffix}, which resolves only inside a local network`
  return null
}

/** The warning the server logs at start and the API shows next to the values it cannot build, or null when the host name is public. */
export function publicHostNameWarning(name: string): string | null {
  const problem = publicHostNameProblem(name)
  if (!problem) return null
  return (
    `The server's host name ${problem}: sending-domain DNS records (SPF, return-path CNAME) and bridge SMTP hosts need the public one. ` +
    `Set hostname (MAILROOM_HOSTNAME, --hostname) to this server's fully qualified name, such as mail.example.com; ` +
    `until then those values are shown as ${PUBLIC_HOST_NAME_PLACEHOLDER}.`
  )
}
