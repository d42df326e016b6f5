import type { Deps } from '../../deps'
import type { SqlValue } from '../segments/rules'
import { segmentSource } from '../segments/service'

/** Who a broadcast goes to, as stored on the broadcast (and sent to POST /audience-count). */
export interface AudienceSpec {
  list_ids: number[]
  segment_id: number | null
  exclude_list_ids: number[]
  exclude_segment_ids: number[]
}

/** One boolean SQL condition over `FROM <from>` (`contacts`, not aliased), with its bound parameters. */
export interface AudienceSql {
  /** `contacts`, or `contacts INDEXED BY` the member index of the broadcast's indexed segment. */
  from: string
  where: string
  params: SqlValue[]
}

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ')

/**
 * THE audience query of a broadcast: the condition over `contacts` that selects its
 * recipients. The audience count (POST /api/v2/broadcasts/audience-count) and bc-engine's
 * chunked `INSERT ... SELECT` into broadcast_recipients must both use this builder, so the
 * preview the editor shows is the audience the engine copies; a change here changes both.
 *
 * Rules (docs/api.md "Broadcasts"):
 * - only `subscribed` contacts;
 * - `list_ids` and `segment_id` together: contacts on those lists that also match the segment
 *   (the segment narrows the lists); either alone: that set;
 * - minus every address that appears, in any status, on an exclusion list (an exclusion list
 *   is a "do not mail" list: an unsubscribed row there still excludes the address) or on a
 *   contact row matching an exclusion segment;
 * - one message per address: the same address on two lists is counted once (COUNT DISTINCT
 *   here; the engine's INSERT OR IGNORE on broadcast_recipients' unique (broadcast, email)).
 *
 * The segment where clauses refer to `contacts.<column>` unaliased; inside the NOT IN
 * subqueries the innermost `contacts` is the subquery's own, which is what they mean.
 * Throws 404 for a missing segment and 409 for a segment whose rules no longer compile.
 *
 * The engine's snapshot is meant to be chunks of
 *   INSERT OR IGNORE INTO broadcast_recipients (broadcast_id, contact_id, list_id, email, ...)
 *   SELECT ?, contacts.id, contacts.list_id, contacts.email, ... FROM <from>
 *   WHERE <where> AND contacts.id > <prepare_cursor> ORDER BY contacts.id LIMIT <chunk>
 * with the same `from`, `where` and `params`: then it writes exactly the rows this counts.
 */
export function audienceSql(deps: Deps, spec: AudienceSpec): AudienceSql {
  const terms: string[] = ["contacts.status = 'subscribed'"]
  const params: SqlValue[] = []
  if (spec.list_ids.length) {
    terms.push(`contacts.list_id IN (${placeholders(spec.list_ids.length)})`)
    params.push(...spec.list_ids)
  }
  let from = 'contacts'
  if (spec.segment_id != null) {
    const seg = segmentSource(deps, spec.segment_id)
    terms.push(`(${seg.where})`)
    params.push(...seg.params)
    // An indexed segment alone: its member index is the audience (segments/service.ts). With
    // lists too, a small list's index may be the shorter way, so SQLite chooses.
    if (spec.list_ids.length === 0) from = seg.from
  }
  if (spec.list_ids.length === 0 && spec.segment_id == null) terms.push('0')
  if (spec.exclude_list_ids.length) {
    terms.push(`contacts.email NOT IN (SELECT email FROM contacts WHERE list_id IN (${placeholders(spec.exclude_list_ids.length)}))`)
    params.push(...spec.exclude_list_ids)
  }
  for (const id of spec.exclude_segment_ids) {
    // An indexed exclusion segment's addresses are read through its member index.
    const seg = segmentSource(deps, id)
    terms.push(`contacts.email NOT IN (SELECT email FROM ${seg.from} WHERE ${seg.where})`)
    params.push(...seg.params)
  }
  return { from, where: terms.join(' AND '), params }
}

/** How many distinct addresses an audience reaches now: one COUNT over `audienceSql`, nothing loaded. */
export function countAudience(deps: Deps, spec: AudienceSpec): number {
  const { from, where, params } = audienceSql(deps, spec)
  // On one list an address is there once (contacts_list_email_unique): a plain COUNT, no sort of the addresses.
  const what = spec.list_ids.length === 1 ? 'COUNT(*)' : 'COUNT(DISTINCT contacts.email)'
  const stmt = deps.db.$client.prepare<{ n: number }, SqlValue[]>(`SELECT ${what} AS n FROM ${from} WHERE ${where}`)
  try {
    return stmt.get(...params)!.n
  } finally {
    stmt.finalize()
  }
}
