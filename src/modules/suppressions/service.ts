import { and, count, desc, eq, gte, lt, sql, type SQL } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { bulkDeleteByIds, columnsOf, type BulkDeleteOutcome } from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import { suppressions, type PROGRAM_TYPES, type SUPPRESSION_SCOPES, type SUPPRESSION_TYPES } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { checkEmail, domainOf, normaliseDomain, normaliseEmail } from '../../lib/email'
import { AppError, notFound, type ErrorDetails } from '../../lib/errors'
import { pageMeta, pageRequest } from '../../lib/pagination'
import { MAX_BATCH_ENTRIES, type SuppressionReason, type SuppressionView } from './model'

export type SuppressionScope = (typeof SUPPRESSION_SCOPES)[number]
export type SuppressionType = (typeof SUPPRESSION_TYPES)[number]
export type ProgramType = (typeof PROGRAM_TYPES)[number]

type SuppressionRow = typeof suppressions.$inferSelect

function toView(row: SuppressionRow): SuppressionView {
  return {
    ...columnsOf(row, ['id', 'scope', 'list_id', 'program_type', 'program_id', 'type', 'value']),
    // Every write goes through SUPPRESSION_REASONS, so the stored text is one of them.
    reason: row.reason as SuppressionReason,
    created_at: toIso(row.created_at)!,
  }
}

/** The scope fields of a batch request, as the client sent them. */
export interface ScopeInput {
  /** Absent means global. */
  scope?: SuppressionScope
  list_id?: number | null
  program_type?: ProgramType | null
  program_id?: number | null
}

/** A checked scope: the columns one suppression row stores for it. */
interface ScopeTarget {
  scope: SuppressionScope
  scope_key: string
  list_id: number | null
  program_type: ProgramType | null
  program_id: number | null
}

const listKey = (listId: number) => `list:${listId}`
const programKey = (type: ProgramType, id: number) => `program:${type}:${id}`

/**
 * The reads behind `checkRecipient` and `checkRecipients`, exported so that tests can
 * check their query plans (a scan here would run once per recipient of every send).
 */
export const RECIPIENT_SQL = {
  /**
   * The candidates for one recipient: the address (type email) or its domain (type domain)
   * in the global scope, its list's or its program's. Six point lookups on the unique index
   * (scope_key, type, value); at most six rows. Which one applies is `pickSuppression`'s
   * decision, the same code the many-recipient path uses.
   */
  one: `SELECT id, scope, scope_key, type, value, reason FROM suppressions WHERE scope_key IN ('global', ?3, ?4) AND type = 'email' AND value = ?1
        UNION ALL
        SELECT id, scope, scope_key, type, value, reason FROM suppressions WHERE scope_key IN ('global', ?3, ?4) AND type = 'domain' AND value = ?2`,
  /**
   * The same for a chunk of recipients. Values and scope keys come as JSON arrays, so one
   * prepared statement serves any chunk size. CROSS JOIN makes SQLite loop over the values
   * and look each up in the (value, type) index; left to itself it may walk every global
   * row through the scope_key index instead.
   */
  many: `SELECT s.id, s.scope, s.scope_key, s.type, s.value, s.reason
         FROM json_each(?1) AS j CROSS JOIN suppressions AS s ON s.value = j.value
         WHERE s.scope_key IN (SELECT k.value FROM json_each(?2) AS k)`,
}

/**
 * Every statement on a path that runs per entry or per recipient, prepared once per
 * database. The scope is stored as one `scope_key` text so that "already suppressed here"
 * is the unique index (scope_key, type, value) and the insert can be ON CONFLICT DO NOTHING.
 */
const statements = preparedFor((db) => {
  const c = db.$client
  return {
    listExists: c.prepare<{ id: number }, [number]>('SELECT id FROM lists WHERE id = ?'),
    insert: c.prepare<never, [string, string, number | null, string | null, number | null, string, string, string, number]>(
      `INSERT INTO suppressions (scope, scope_key, list_id, program_type, program_id, type, value, reason, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope_key, type, value) DO NOTHING`,
    ),
    remove: c.prepare<never, [string, string, string]>('DELETE FROM suppressions WHERE scope_key = ? AND type = ? AND value = ?'),
    candidates: c.prepare<MatchRow, [string, string, string | null, string | null]>(RECIPIENT_SQL.one),
    candidatesMany: c.prepare<MatchRow, [string, string]>(RECIPIENT_SQL.many),
  }
})

const has = <T>(v: T | null | undefined): v is T => v !== undefined && v !== null

/**
 * Checks that the scope fields agree with `scope` and that a list exists. All problems are
 * reported at once, each under its field. Program ids are not checked against a table:
 * broadcasts, drips and triggers do not exist yet (a later issue adds them and the check).
 */
function resolveScope(deps: Deps, input: ScopeInput): ScopeTarget {
  const scope = input.scope ?? 'global'
  const details: ErrorDetails = {}
  const refuse = (field: string, message: string) => (details[field] ??= []).push(message)
  if (scope !== 'list' && has(input.list_id)) refuse('list_id', `must not be set when scope is ${scope}; send scope "list" to suppress for one list`)
  if (scope !== 'program') {
    if (has(input.program_type))
      refuse('program_type', `must not be set when scope is ${scope}; send scope "program" to suppress for one broadcast, drip or trigger`)
    if (has(input.program_id))
      refuse('program_id', `must not be set when scope is ${scope}; send scope "program" to suppress for one broadcast, drip or trigger`)
  }
  if (scope === 'list' && !has(input.list_id)) refuse('list_id', 'is required when scope is list')
  if (scope === 'program') {
    if (!has(input.program_type)) refuse('program_type', 'is required when scope is program')
    if (!has(input.program_id)) refuse('program_id', 'is required when scope is program')
  }
  if (scope === 'list' && has(input.list_id) && !statements(deps.db).listExists.get(input.list_id)) refuse('list_id', `No list with id ${input.list_id}.`)
  if (Object.keys(details).length) throw new AppError('validation_failed', 'The request data is invalid.', details)

  if (scope === 'list') return { scope, scope_key: listKey(input.list_id!), list_id: input.list_id!, program_type: null, program_id: null }
  if (scope === 'program')
    return {
      scope,
      scope_key: programKey(input.program_type!, input.program_id!),
      list_id: null,
      program_type: input.program_type!,
      program_id: input.program_id!,
    }
  return { scope, scope_key: 'global', list_id: null, program_type: null, program_id: null }
}

export interface InvalidEntry {
  entry: string
  reason: string
}

type EntryCheck = { ok: true; value: string } | { ok: false; error: string }

/**
 * A domain entry: a host name as in RFC 5321 section 2.3.5, normalised like the domain of
 * an address (lower case, IDNs in their A-label form) so that it compares equal to
 * `domainOf(address)`. It matches that exact domain only, not its subdomains: each name
 * has its own MX records and is a mail domain of its own (RFC 5321 section 5.1).
 */
function checkDomainEntry(entry: string): EntryCheck {
  if (entry.includes('@')) return { ok: false, error: 'is an address, not a domain; send it with type "email"' }
  const domain = normaliseDomain(entry)
  return domain ? { ok: true, value: domain } : { ok: false, error: 'is not a valid domain name' }
}

function checkEntry(type: SuppressionType, entry: string): EntryCheck {
  if (type === 'domain') return checkDomainEntry(entry)
  const r = checkEmail(entry)
  return r.ok ? { ok: true, value: r.email } : { ok: false, error: r.error }
}

/** Normalises a batch: distinct valid values in request order, how many repeated one, and the invalid ones with their reason. */
function normaliseEntries(type: SuppressionType, entries: readonly string[]) {
  const values = new Set<string>()
  const invalid: InvalidEntry[] = []
  let duplicates = 0
  for (const entry of entries) {
    const r = checkEntry(type, entry)
    if (!r.ok) invalid.push({ entry, reason: r.error })
    else if (values.has(r.value)) duplicates++
    else values.add(r.value)
  }
  return { values: [...values], duplicates, invalid }
}

export interface BatchInput extends ScopeInput {
  type: SuppressionType
  entries: string[]
}

export interface BatchAddResult {
  /** Entries stored by this request. */
  added: number
  /** Entries already suppressed in that scope, and repeats within the request. */
  skipped: number
  invalid: InvalidEntry[]
}

function checkBatchSize(entries: readonly string[]): void {
  if (entries.length < 1 || entries.length > MAX_BATCH_ENTRIES) {
    throw new AppError('validation_failed', 'The request data is invalid.', { entries: [`must hold from 1 to ${MAX_BATCH_ENTRIES} entries`] })
  }
}

/**
 * Suppresses a batch in one scope. All rows go in one transaction (one commit, so a
 * 10,000-entry batch costs one fsync, not 10,000), and a row already there is left as it
 * is, first reason included. Invalid entries are reported, not fatal; a bad scope is.
 */
export function addSuppressions(deps: Deps, input: BatchInput & { reason: SuppressionReason }): BatchAddResult {
  checkBatchSize(input.entries)
  const { values, duplicates, invalid } = normaliseEntries(input.type, input.entries)
  const st = statements(deps.db)
  const now = deps.clock.now()
  let added = 0
  deps.db.$client
    .transaction(() => {
      // Inside the transaction, so the list cannot vanish between the check and the inserts.
      const target = resolveScope(deps, input)
      for (const value of values) {
        added += st.insert.run(
          target.scope,
          target.scope_key,
          target.list_id,
          target.program_type,
          target.program_id,
          input.type,
          value,
          input.reason,
          now,
        ).changes
      }
    })
    .immediate()
  return { added, skipped: values.length - added + duplicates, invalid }
}

export interface BatchRemoveResult {
  removed: number
  /** Valid entries with no suppression in that scope (a repeat within the request counts here too). */
  not_found: number
  invalid: InvalidEntry[]
}

/** Lifts a batch of suppressions in one scope, in one transaction. */
export function removeSuppressions(deps: Deps, input: BatchInput): BatchRemoveResult {
  checkBatchSize(input.entries)
  const { values, duplicates, invalid } = normaliseEntries(input.type, input.entries)
  const st = statements(deps.db)
  let removed = 0
  deps.db.$client
    .transaction(() => {
      const target = resolveScope(deps, input)
      for (const value of values) removed += st.remove.run(target.scope_key, input.type, value).changes
    })
    .immediate()
  return { removed, not_found: values.length - removed + duplicates, invalid }
}

export interface SuppressionFilter {
  page?: number
  per_page?: number
  scope?: SuppressionScope
  list_id?: number
  program_type?: ProgramType
  program_id?: number
  type?: SuppressionType
  reason?: SuppressionReason
  /** Prefix of the stored value. */
  search?: string
}

/**
 * The stored form a search prefix must take to match anything: values are lower-case
 * ASCII (addresses and A-label domains), so a prefix is lower-cased, and a non-ASCII one
 * can only match when it is a whole domain or address that normalises to its A-label form.
 */
function searchPrefix(search: string): string | null {
  const text = search.trim().toLowerCase()
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(text)) return text
  return normaliseEmail(text) ?? normaliseDomain(text)
}

/**
 * `value >= prefix AND value < successor(prefix)`: a range on the (value, type) index,
 * where LIKE 'x%' would scan (SQLite uses an index for LIKE only when LIKE's case
 * sensitivity matches the column's collation, and here it does not: case-insensitive LIKE on
 * a BINARY column). The prefix is ASCII, so incrementing its last character
 * gives the first string after every string that starts with it, in SQLite's byte order.
 */
function prefixRange(prefix: string): SQL {
  const upper = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)
  return and(gte(suppressions.value, prefix), lt(suppressions.value, upper))!
}

function listWhere(filter: SuppressionFilter): SQL | undefined {
  const search = filter.search === undefined ? '' : searchPrefix(filter.search)
  const conditions: Array<SQL | undefined> = [
    filter.scope ? eq(suppressions.scope, filter.scope) : undefined,
    // list_id is set only on list-scoped rows, whose scope_key is list:<id>: the same rows, through the unique index.
    filter.list_id !== undefined ? eq(suppressions.scope_key, listKey(filter.list_id)) : undefined,
    filter.program_type !== undefined && filter.program_id !== undefined
      ? eq(suppressions.scope_key, programKey(filter.program_type, filter.program_id))
      : filter.program_type !== undefined
        ? eq(suppressions.program_type, filter.program_type)
        : filter.program_id !== undefined
          ? eq(suppressions.program_id, filter.program_id)
          : undefined,
    filter.type ? eq(suppressions.type, filter.type) : undefined,
    filter.reason ? eq(suppressions.reason, filter.reason) : undefined,
    search === null ? sql`0` : search !== '' ? prefixRange(search) : undefined,
  ]
  return and(...conditions)
}

/**
 * The page query, unexecuted, so that tests can check its plan. Newest first; with a
 * search the order is by an expression, so SQLite cannot walk the created_at index
 * backwards through the whole table looking for matches and takes the value range instead.
 */
export function suppressionPageQuery(deps: Deps, filter: SuppressionFilter) {
  const req = pageRequest(filter)
  const searching = filter.search !== undefined && filter.search.trim() !== ''
  const order = searching
    ? [sql`${suppressions.created_at} + 0 DESC`, sql`${suppressions.id} + 0 DESC`]
    : [desc(suppressions.created_at), desc(suppressions.id)]
  return deps.db
    .select()
    .from(suppressions)
    .where(listWhere(filter))
    .orderBy(...order)
    .limit(req.per_page)
    .offset(req.offset)
}

/** A page of suppressions, newest first. */
export function listSuppressions(deps: Deps, filter: SuppressionFilter) {
  const req = pageRequest(filter)
  const total = deps.db.select({ n: count() }).from(suppressions).where(listWhere(filter)).get()!.n
  const rows = suppressionPageQuery(deps, filter).all()
  return { items: rows.map(toView), meta: pageMeta(req, total) }
}

/** One suppression. */
export function getSuppression(deps: Deps, id: number): SuppressionView {
  const row = deps.db.select().from(suppressions).where(eq(suppressions.id, id)).get()
  if (!row) throw notFound('suppression', id)
  return toView(row)
}

/** Lifts one suppression and returns it as it was. */
export function deleteSuppression(deps: Deps, id: number): SuppressionView {
  const row = deps.db.delete(suppressions).where(eq(suppressions.id, id)).returning().get()
  if (!row) throw notFound('suppression', id)
  return toView(row)
}

/** Lifts the suppressions with these ids, whatever their scope; ids not found are reported, not errors. */
export function deleteSuppressionsById(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return bulkDeleteByIds(deps.db, suppressions, ids)
}

/** A recipient of a send: the address, and the list and program the send is for, if any. */
export interface Recipient {
  email: string
  list_id?: number | null
  program?: { type: ProgramType; id: number } | null
}

/** The suppression that blocks a recipient, as senders report it. */
export interface SuppressionMatch {
  id: number
  scope: SuppressionScope
  type: SuppressionType
  value: string
  reason: SuppressionReason
}

export type RecipientDecision = { allowed: true } | { allowed: false; suppression: SuppressionMatch }

type MatchRow = { id: number; scope: SuppressionScope; scope_key: string; type: SuppressionType; value: string; reason: string }

/** A recipient in the terms rows are matched on. */
interface Target {
  email: string
  domain: string
  listKey: string | null
  programKey: string | null
}

function targetOf(recipient: Recipient, field: string): Target {
  const r = checkEmail(recipient.email)
  if (!r.ok) throw new AppError('validation_failed', 'The recipient address is invalid.', { [field]: [r.error] })
  return {
    email: r.email,
    domain: domainOf(r.email),
    listKey: has(recipient.list_id) ? listKey(recipient.list_id) : null,
    programKey: has(recipient.program) ? programKey(recipient.program.type, recipient.program.id) : null,
  }
}

const SCOPE_RANK: Record<SuppressionScope, number> = { global: 0, list: 1, program: 2 }
const TYPE_RANK: Record<SuppressionType, number> = { email: 0, domain: 1 }

/**
 * The one place that decides which suppression applies. A row applies when it names the
 * address (type email) or its domain (type domain) and its scope is global, the
 * recipient's list or the recipient's program. When several apply, the most general is
 * reported: global before list before program, and within a scope the address before the
 * domain, so that the reason shown is the one that would still block after narrower
 * suppressions are lifted.
 */
function pickSuppression(rows: Iterable<MatchRow>, target: Target): RecipientDecision {
  let best: MatchRow | null = null
  for (const row of rows) {
    const valueMatches = row.type === 'email' ? row.value === target.email : row.value === target.domain
    const scopeMatches = row.scope_key === 'global' || row.scope_key === target.listKey || row.scope_key === target.programKey
    if (!valueMatches || !scopeMatches) continue
    if (!best || SCOPE_RANK[row.scope] < SCOPE_RANK[best.scope] || (row.scope === best.scope && TYPE_RANK[row.type] < TYPE_RANK[best.type])) best = row
  }
  if (!best) return { allowed: true }
  return { allowed: false, suppression: { id: best.id, scope: best.scope, type: best.type, value: best.value, reason: best.reason as SuppressionReason } }
}

/**
 * May this recipient be sent to? Every sending path calls this (or `checkRecipients`)
 * before it queues a message; spec "Suppression": suppressions are honoured across all
 * sending. One prepared statement, no query building. The address must be valid (callers
 * validate first); an invalid one throws validation_failed rather than guessing.
 */
export function checkRecipient(deps: Pick<Deps, 'db'>, recipient: Recipient): RecipientDecision {
  const target = targetOf(recipient, 'email')
  const rows = statements(deps.db).candidates.all(target.email, target.domain, target.listKey, target.programKey)
  return pickSuppression(rows, target)
}

/** Recipients looked up per query by `checkRecipients`; bounds the JSON parameters and the rows held at once. */
export const RECIPIENT_CHUNK = 500

/**
 * `checkRecipient` for many recipients (a broadcast batch): one query per chunk of 500
 * instead of one per recipient, with the same decision function. Decisions come back in
 * input order. Any invalid address throws validation_failed naming its index.
 */
export function checkRecipients(deps: Pick<Deps, 'db'>, recipients: readonly Recipient[]): RecipientDecision[] {
  const targets = recipients.map((r, i) => targetOf(r, `recipients.${i}.email`))
  const st = statements(deps.db)
  const decisions: RecipientDecision[] = []
  for (let start = 0; start < targets.length; start += RECIPIENT_CHUNK) {
    const chunk = targets.slice(start, start + RECIPIENT_CHUNK)
    const values = new Set<string>()
    const scopeKeys = new Set<string>(['global'])
    for (const t of chunk) {
      values.add(t.email).add(t.domain)
      if (t.listKey) scopeKeys.add(t.listKey)
      if (t.programKey) scopeKeys.add(t.programKey)
    }
    const byValue = new Map<string, MatchRow[]>()
    for (const row of st.candidatesMany.all(JSON.stringify([...values]), JSON.stringify([...scopeKeys]))) {
      const bucket = byValue.get(row.value)
      if (bucket) bucket.push(row)
      else byValue.set(row.value, [row])
    }
    for (const t of chunk) decisions.push(pickSuppression([...(byValue.get(t.email) ?? []), ...(byValue.get(t.domain) ?? [])], t))
  }
  return decisions
}
