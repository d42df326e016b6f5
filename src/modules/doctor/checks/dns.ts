import { createResolver } from '../../../lib/dns'

/**
 * The lookups of one doctor run, through the configured resolvers (`dns_servers`, as delivery
 * and domain verification use), each question asked once per run.
 */
export interface DoctorDns {
  /** A, AAAA, MX, TXT, CNAME, PTR or NS records in node:dns's shapes; TXT answers are one array of strings per record. */
  resolve(name: string, type: string): Promise<unknown>
  /** TXT records, each record's strings joined. */
  txt(name: string): Promise<string[]>
  /** A and AAAA addresses (empty when there are none or the lookup failed). */
  addresses(name: string): Promise<string[]>
  /** PTR names of an address. */
  reverse(address: string): Promise<string[]>
}

/** A lookup that failed because the name or the record does not exist, as opposed to an outage. */
export function isNoRecord(err: unknown): boolean {
  const code = (err as { code?: string }).code
  return code === 'ENOTFOUND' || code === 'ENODATA'
}

/** A failed lookup in words, for a check's detail. */
export function lookupError(err: unknown): string {
  return (err as Error).message || String((err as { code?: string }).code)
}

/** The lookups of one run over `servers` (empty: the system's resolvers). */
export function createDoctorDns(servers: readonly string[]): DoctorDns {
  const resolver = createResolver(servers)
  const cache = new Map<string, Promise<unknown>>()
  const resolve = (name: string, type: string) => {
    const key = `${type} ${name.toLowerCase()}`
    let answer = cache.get(key)
    if (!answer) {
      answer = resolver.resolve(name, type)
      answer.catch(() => {})
      cache.set(key, answer)
    }
    return answer
  }
  return {
    resolve,
    txt: async (name) => ((await resolve(name, 'TXT')) as string[][]).map((strings) => strings.join('')),
    addresses: async (name) => {
      const found = await Promise.allSettled([resolve(name, 'A'), resolve(name, 'AAAA')])
      return found.flatMap((r) => (r.status === 'fulfilled' ? (r.value as string[]) : []))
    },
    reverse: async (address) => {
      const key = `reverse ${address}`
      let answer = cache.get(key) as Promise<string[]> | undefined
      if (!answer) {
        answer = resolver.reverse(address)
        answer.catch(() => {})
        cache.set(key, answer)
      }
      return answer
    },
  }
}
