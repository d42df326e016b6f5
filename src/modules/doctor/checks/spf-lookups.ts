/**
 * RFC 7208 section 4.6.4: evaluating an SPF record may cause at most 10 DNS-querying terms
 * ("include", "a", "mx", "ptr", "exists" and the "redirect" modifier), counted through every
 * include and redirect; past that, receivers return permerror and SPF fails for all mail.
 * "all", "ip4" and "ip6" cost nothing.
 */

export const SPF_LOOKUP_LIMIT = 10

export interface SpfLookupCount {
  /** Terms that cost a lookup, counted recursively (stops counting a little past the limit). */
  count: number
  /** Each costly term, as `domain: term`, in evaluation order. */
  terms: string[]
  /** Includes or redirects that could not be followed (no SPF record, a lookup error, a macro). */
  problems: string[]
}

const COSTLY = /^[+\-~?]?(include|a|mx|ptr|exists)(?=$|[:/])/i

/** Counts the lookups of the SPF record of `domain`; `txt` answers a name's TXT records (throws when there are none). */
export async function countSpfLookups(domain: string, txt: (name: string) => Promise<string[]>): Promise<SpfLookupCount> {
  const out: SpfLookupCount = { count: 0, terms: [], problems: [] }
  const visit = async (name: string, depth: number): Promise<void> => {
    let records: string[]
    try {
      records = (await txt(name)).filter((r) => /^v=spf1( |$)/i.test(r))
    } catch (err) {
      out.problems.push(`${name}: ${(err as { code?: string }).code ?? 'lookup failed'}`)
      return
    }
    if (records.length !== 1) {
      out.problems.push(`${name}: ${records.length === 0 ? 'no SPF record' : 'more than one SPF record'}`)
      return
    }
    const terms = records[0]!.split(/\s+/).slice(1).filter(Boolean)
    let redirect: string | null = null
    for (const term of terms) {
      if (out.count > SPF_LOOKUP_LIMIT + 5) return
      const mechanism = COSTLY.exec(term)
      if (mechanism) {
        out.count++
        out.terms.push(`${name}: ${term}`)
        if (mechanism[1]!.toLowerCase() === 'include') {
          const target = term.slice(term.indexOf(':') + 1)
          // A macro (RFC 7208 section 7) depends on the sender: it cannot be followed here.
          if (target.includes('%')) out.problems.push(`${name}: ${term} uses a macro and was not followed`)
          else if (depth < SPF_LOOKUP_LIMIT) await visit(target, depth + 1)
        }
      } else if (/^redirect=/i.test(term)) redirect = term.slice('redirect='.length)
    }
    // RFC 7208 section 6.1: redirect is used only when no "all" mechanism is present.
    if (redirect && !terms.some((t) => /^[+\-~?]?all$/i.test(t))) {
      out.count++
      out.terms.push(`${name}: redirect=${redirect}`)
      if (redirect.includes('%')) out.problems.push(`${name}: redirect=${redirect} uses a macro and was not followed`)
      else if (depth < SPF_LOOKUP_LIMIT) await visit(redirect, depth + 1)
    }
  }
  await visit(domain, 0)
  return out
}
