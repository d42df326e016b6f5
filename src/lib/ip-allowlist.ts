import ipaddr from 'ipaddr.js'

/**
 * IP allowlists for API keys (spec "Authentication" 4): single addresses, ranges
 * (`a-b`) and CIDR blocks, IPv4 and IPv6. Every rule becomes an inclusive numeric
 * interval, so the three notations share one comparison.
 *
 * IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, RFC 4291 section 2.5.5.2) are what a
 * dual-stack socket reports for an IPv4 client; they are turned into plain IPv4 on
 * both sides, so an IPv4 rule matches them.
 */
export interface IpRule {
  family: 4 | 6
  start: bigint
  end: bigint
}

type ParseResult = { ok: true; rule: IpRule } | { ok: false; error: string }

function toBigInt(addr: ipaddr.IPv4 | ipaddr.IPv6): bigint {
  let n = 0n
  for (const byte of addr.toByteArray()) n = (n << 8n) | BigInt(byte)
  return n
}

/** Parses an address, unwrapping IPv4-mapped IPv6; null when it is not an address. */
export function parseAddress(text: string): { family: 4 | 6; value: bigint } | null {
  const trimmed = text.trim()
  if (!ipaddr.isValid(trimmed)) return null
  // ipaddr.isValid accepts legacy forms such as "10.1" or "0x0a.0.0.1"; only the
  // four-part dotted decimal form is an address an operator means (RFC 6943 section 3.1.1).
  if (!trimmed.includes(':') && !ipaddr.IPv4.isValidFourPartDecimal(trimmed)) return null
  const addr = ipaddr.process(trimmed)
  return { family: addr.kind() === 'ipv4' ? 4 : 6, value: toBigInt(addr) }
}

/** Parses one allowlist entry; the error says what is wrong in words an operator understands. */
export function parseIpRule(entry: string): ParseResult {
  const text = entry.trim()
  if (text === '') return { ok: false, error: 'is empty' }

  if (text.includes('/')) {
    const [base, bitsText] = text.split('/', 2) as [string, string]
    const addr = parseAddress(base)
    if (!addr) return { ok: false, error: `"${text}" is not a valid CIDR block: "${base}" is not an IP address` }
    if (!/^\d{1,3}$/.test(bitsText)) return { ok: false, error: `"${text}" is not a valid CIDR block: prefix length must be a number` }
    // A mapped address written with an IPv6 prefix length keeps the meaning of its low 32 bits.
    const written6 = base.includes(':')
    let bits = Number(bitsText)
    if (addr.family === 4 && written6) bits -= 96
    const width = addr.family === 4 ? 32 : 128
    if (bits < 0 || bits > width) return { ok: false, error: `"${text}" is not a valid CIDR block: prefix length must be 0-${width}` }
    const hostBits = BigInt(width - bits)
    const mask = (1n << hostBits) - 1n
    const start = addr.value & ~mask
    return { ok: true, rule: { family: addr.family, start, end: start | mask } }
  }

  if (text.includes('-')) {
    const [fromText, toText] = text.split('-', 2).map((s) => s.trim()) as [string, string]
    const from = parseAddress(fromText)
    const to = parseAddress(toText)
    if (!from || !to) return { ok: false, error: `"${text}" is not a valid range: expected "first-last" with two IP addresses` }
    if (from.family !== to.family) return { ok: false, error: `"${text}" is not a valid range: both ends must be IPv4 or both IPv6` }
    if (from.value > to.value) return { ok: false, error: `"${text}" is not a valid range: the first address is after the last` }
    return { ok: true, rule: { family: from.family, start: from.value, end: to.value } }
  }

  const addr = parseAddress(text)
  if (!addr) return { ok: false, error: `"${text}" is not a valid IP address, range or CIDR block` }
  return { ok: true, rule: { family: addr.family, start: addr.value, end: addr.value } }
}

/** Validates a whole allowlist; returns the compiled rules or one message per bad entry. */
export function compileAllowlist(entries: readonly string[]): { rules: IpRule[]; errors: string[] } {
  const rules: IpRule[] = []
  const errors: string[] = []
  for (const entry of entries) {
    const result = parseIpRule(entry)
    if (result.ok) rules.push(result.rule)
    else errors.push(result.error)
  }
  return { rules, errors }
}

/** True when the client address falls inside any rule. An unknown or unparsable address never matches. */
export function isAllowed(rules: readonly IpRule[], clientAddress: string | null | undefined): boolean {
  if (!clientAddress) return false
  const addr = parseAddress(clientAddress.replace(/%.*$/, ''))
  if (!addr) return false
  return rules.some((r) => r.family === addr.family && addr.value >= r.start && addr.value <= r.end)
}
