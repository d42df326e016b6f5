import { CONTACT_STATUSES, type CustomFieldType } from '../../db/schema'
import type { ErrorDetails } from '../../lib/errors'

/**
 * The segment rule compiler: checks a rule tree and turns it into ONE SQL condition over
 * the `contacts` table, with bound parameters, for `SELECT ... FROM contacts WHERE <where>`.
 * Pure (no database): what it must know about the database (custom fields, lists) comes in
 * through a `RuleCatalog`, and the time for relative dates through `now`.
 *
 * Grammar (docs/_drafts/segments.md has the full table):
 *
 *   group     = { "all": [node, ...] } | { "any": [node, ...] }      (1+ nodes each)
 *   node      = group | condition
 *   condition = { "field": <field>, "op": <op>, "value"?: <value> }
 *             | { "in_list": <list id> } | { "not_in_list": <list id> }
 *
 * The root is a group; groups nest at most MAX_DEPTH deep and a tree holds at most
 * MAX_CONDITIONS conditions. Safety: nothing from the request is ever put into the SQL
 * text. Values are bound parameters; column expressions come only from BUILTIN_FIELDS or,
 * for `fields.<key>`, from a key that matches CUSTOM_KEY *and* is a defined custom field.
 */

export const MAX_DEPTH = 5
export const MAX_CONDITIONS = 100
/** Items in an `in` / `not_in` list. */
export const MAX_VALUES = 500
/** Length of a text value (the custom field API allows values up to 2,000 characters). */
export const MAX_TEXT = 2000
/** Largest `days_ago` / `days_from_now`, about a century. */
export const MAX_DAYS = 36_500
/**
 * Indexed segments at most (service.ts). Each one makes every write to contacts test its
 * rules and keep its index (about 1.1x the time of a million inserts for one,
 * docs/benchmarks.md), so an unbounded number would let one API key slow every import and
 * send down.
 */
export const MAX_INDEXED_SEGMENTS = 25

export const DAY_MS = 86_400_000
/** Custom field keys as the custom field API creates them: lower snake case. */
const CUSTOM_KEY = /^[a-z][a-z0-9_]{0,62}$/
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
/** ISO 8601 as clients send it: a date (midnight UTC), or a date and time with a zone (Z or ±hh:mm). */
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2}))?$/

/** Milliseconds of an ISO 8601 time (see ISO_TIMESTAMP), or NaN. A time of day without a zone is refused: it would depend on the server's time zone. */
function parseTimestamp(text: string): number {
  const m = ISO_TIMESTAMP.exec(text)
  if (!m || !isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3]))) return NaN
  const [, y, mo, d, h, mi, s, frac, zone] = m
  if (h === undefined) return Date.UTC(Number(y), Number(mo) - 1, Number(d))
  if (zone === undefined || Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59) return NaN
  return Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s ?? '00'}.${(frac ?? '').padEnd(3, '0').slice(0, 3)}${zone}`)
}

export type SqlValue = string | number

/** What the compiler must know about a custom field. */
export interface CustomFieldInfo {
  key: string
  type: CustomFieldType
  options: readonly string[]
}

/** The database facts the compiler depends on; the service implements it over SQLite. */
export interface RuleCatalog {
  customField(key: string): CustomFieldInfo | undefined
  listExists(id: number): boolean
  /** The share (0 to 1) of all contacts that have one of these statuses; unknown when absent. */
  statusShare?(statuses: readonly string[]): number
}

export interface CompileOptions {
  /** "Now" for relative values (`{"days_ago": 30}`), from the injected clock. */
  now: number
  catalog: RuleCatalog
  /**
   * Check references that can go stale after a segment is saved: that lists exist and
   * that one_of values are among the field's options. On when rules are written or
   * previewed; off when a saved segment is evaluated, because "in a deleted list" and "has
   * a removed option" still have a clear meaning (nobody matches).
   */
  checkReferences: boolean
  /**
   * Compile for a partial index (an indexed segment, service.ts): without the planner hints
   * below (the email condition's list subquery, the status list before a creation time, the
   * unary + from status shares). They never change which contacts match, but a partial
   * index's WHERE may not hold a subquery (https://sqlite.org/partialindex.html), and its
   * text must not depend on counts that change.
   */
  forIndex?: boolean
}

/** A rule tree in its stored form: only the known properties, in the client's order. */
export type RuleNode = Record<string, unknown>

export interface CompiledRules {
  /** A boolean SQL expression with `?` placeholders, for `FROM contacts` (the table not aliased: subqueries refer to `contacts.email`). */
  where: string
  params: SqlValue[]
  /** The canonical tree to store: unknown properties dropped, relative values kept as given. */
  rules: RuleNode
}

/** What a query needs of compiled rules: the condition and its parameters. */
export type Condition = Pick<CompiledRules, 'where' | 'params'>

export type CompileResult = ({ ok: true } & CompiledRules) | { ok: false; errors: ErrorDetails }

/** A compiled node: its SQL, parameters (in placeholder order), stored form and a rough evaluation cost. */
export interface Fragment {
  sql: string
  params: SqlValue[]
  rule: RuleNode
  /** 1: a plain column; 2: an indexed subquery; 3: JSON parsing of `fields`; 4: a status test most contacts pass. Cheaper (or more selective) terms are evaluated first. */
  cost: number
}

/** What a condition kind gets while compiling: the options, and where to record errors. */
export interface CompileContext extends CompileOptions {
  errors: ErrorDetails
  conditions: number
}

function fail(ctx: CompileContext, path: string, message: string): null {
  const list = (ctx.errors[path] ??= [])
  if (!list.includes(message)) list.push(message)
  return null
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

// ---------------------------------------------------------------------------------------
// Fields and operators
// ---------------------------------------------------------------------------------------

/** Value types of fields; each decides the operators and how values are read and compared. */
export const FIELD_TYPES = ['text', 'number', 'date', 'timestamp', 'boolean', 'status', 'list_id', 'one_of'] as const
export type FieldType = (typeof FIELD_TYPES)[number]

export const OPERATORS = [
  'eq',
  'neq',
  'in',
  'not_in',
  'contains',
  'not_contains',
  'starts_with',
  'ends_with',
  'gt',
  'gte',
  'lt',
  'lte',
  'between',
  'is_set',
  'is_not_set',
] as const
export type Operator = (typeof OPERATORS)[number]

/** Operators allowed per field type. */
export const OPS_BY_TYPE: Record<FieldType, readonly Operator[]> = {
  text: ['eq', 'neq', 'in', 'not_in', 'contains', 'not_contains', 'starts_with', 'ends_with', 'is_set', 'is_not_set'],
  number: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between', 'is_set', 'is_not_set'],
  date: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between', 'is_set', 'is_not_set'],
  timestamp: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between', 'is_set', 'is_not_set'],
  boolean: ['eq', 'is_set', 'is_not_set'],
  status: ['eq', 'neq', 'in', 'not_in'],
  list_id: ['eq', 'neq', 'in', 'not_in'],
  one_of: ['eq', 'neq', 'in', 'not_in', 'is_set', 'is_not_set'],
}

/** A field resolved to the SQL expression that reads it. */
interface Operand {
  sql: string
  type: FieldType
  /** The expression can be NULL (a missing first name or custom value). */
  nullable: boolean
  /** Stored lower case (email): values are lower-cased and compared as bytes, so the index applies. */
  lowerCased?: boolean
  /** Allowed values (status, one_of). */
  options?: readonly string[]
  /** Served by the (status, created_at) index once every status is named (see positiveSql). */
  statusIndexed?: boolean
  /** The custom field key, for `fields.<key>`. */
  jsonKey?: string
  cost: number
}

/**
 * The contact columns segments can filter on. Adding a column is adding an entry; the SQL
 * text of a field comes only from here (or from a checked custom field key).
 */
const BUILTIN_FIELDS: Readonly<Record<string, Operand>> = Object.freeze({
  email: { sql: 'contacts.email', type: 'text', nullable: false, lowerCased: true, cost: 1 },
  first_name: { sql: 'contacts.first_name', type: 'text', nullable: true, cost: 1 },
  last_name: { sql: 'contacts.last_name', type: 'text', nullable: true, cost: 1 },
  status: { sql: 'contacts.status', type: 'status', nullable: false, options: CONTACT_STATUSES, cost: 1 },
  list_id: { sql: 'contacts.list_id', type: 'list_id', nullable: false, cost: 1 },
  created_at: { sql: 'contacts.created_at', type: 'timestamp', nullable: false, statusIndexed: true, cost: 1 },
  updated_at: { sql: 'contacts.updated_at', type: 'timestamp', nullable: false, cost: 1 },
})

/** The field names a condition may use, for messages and docs. */
export const BUILTIN_FIELD_NAMES = Object.keys(BUILTIN_FIELDS)

/** One field a condition may name, as a rule builder offers it. */
export interface FieldDescription {
  field: string
  type: FieldType
  operators: Operator[]
  /** The allowed values (status, one_of), or null. */
  options: string[] | null
}

/** Every field a condition may use (the built-in ones, then the custom fields), with its type, operators and allowed values. */
export function describeFields(custom: readonly CustomFieldInfo[]): FieldDescription[] {
  const builtin = Object.entries(BUILTIN_FIELDS).map(([field, o]) => ({
    field,
    type: o.type,
    operators: [...OPS_BY_TYPE[o.type]],
    options: o.options ? [...o.options] : null,
  }))
  const extra = custom
    .filter((c) => CUSTOM_KEY.test(c.key))
    .map((c) => ({ field: `fields.${c.key}`, type: c.type, operators: [...OPS_BY_TYPE[c.type]], options: c.type === 'one_of' ? [...c.options] : null }))
  return [...builtin, ...extra]
}

/**
 * A number field's value read from the stored text without parsing the JSON: the text after
 * `"key":`, as a number (CAST takes the longest numeric prefix, so `12,"plan":...` is 12:
 * https://sqlite.org/lang_expr.html#castexpr), or NULL when the key is absent, like
 * json_extract. It relies on what the one_of test below relies on: `fields` is compact
 * JSON of scalars with lower snake case keys, so `"key":` occurs only where that key's value
 * begins (a quote inside a string value is escaped; the opening quote rules out `max_key`),
 * and a number is stored as a JSON number (a null clears the key; the type never changes).
 * 12 % less time than json_extract for a count over a million contacts (measured, decision 75).
 */
function storedNumberSql(key: string): string {
  const marker = `"${key}":`
  return `CAST(substr(contacts.fields, nullif(instr(contacts.fields, '${marker}'), 0) + ${marker.length}, 32) AS NUMERIC)`
}

function resolveField(name: unknown, path: string, ctx: CompileContext): Operand | null {
  if (typeof name !== 'string' || name === '') return fail(ctx, path, 'must be a field name, e.g. "email", "status" or "fields.<custom field key>"')
  if (Object.hasOwn(BUILTIN_FIELDS, name)) return BUILTIN_FIELDS[name]!
  if (name.startsWith('fields.')) {
    const key = name.slice('fields.'.length)
    const def = CUSTOM_KEY.test(key) ? ctx.catalog.customField(key) : undefined
    // The key goes into the SQL text (so that an expression index on it could be used), hence
    // both checks: it is lower snake case AND it is the key of a defined custom field.
    if (!def || def.key !== key || !CUSTOM_KEY.test(def.key)) return fail(ctx, path, `no custom field with key "${key}"; GET /api/v2/custom-fields lists them`)
    const type: FieldType = def.type
    return {
      sql: type === 'number' ? storedNumberSql(def.key) : `json_extract(contacts.fields, '$.${def.key}')`,
      type,
      nullable: true,
      options: def.type === 'one_of' ? def.options : undefined,
      jsonKey: def.key,
      cost: 3,
    }
  }
  return fail(ctx, path, `unknown field "${name}"; use one of ${BUILTIN_FIELD_NAMES.join(', ')} or fields.<custom field key>`)
}

// ---------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------

type Parsed = { ok: true; param: SqlValue; stored: unknown } | { ok: false; error: string }

function isCalendarDate(y: number, m: number, d: number): boolean {
  const date = new Date(Date.UTC(y, m - 1, d))
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d
}

/** `{"days_ago": n}` or `{"days_from_now": n}` -> signed days from now, or an error. */
function relativeDays(v: Record<string, unknown>): number | string {
  const keys = Object.keys(v)
  if (keys.length !== 1 || (keys[0] !== 'days_ago' && keys[0] !== 'days_from_now')) return 'a relative value is {"days_ago": n} or {"days_from_now": n}'
  const n = v[keys[0]]
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_DAYS) return `${keys[0]} must be a whole number from 0 to ${MAX_DAYS}`
  return keys[0] === 'days_ago' ? -n : n
}

/** Reads one value for a field type; `param` is what is bound, `stored` what the saved tree keeps. */
function parseValue(operand: Operand, v: unknown, ctx: CompileContext): Parsed {
  switch (operand.type) {
    case 'text': {
      if (typeof v !== 'string') return { ok: false, error: 'must be a non-empty string' }
      if (v.length > MAX_TEXT) return { ok: false, error: `must be at most ${MAX_TEXT} characters` }
      const text = operand.lowerCased ? v.trim().toLowerCase() : v
      if (text.length === 0) return { ok: false, error: 'must be a non-empty string' }
      return { ok: true, param: text, stored: text }
    }
    case 'number':
      return typeof v === 'number' && Number.isFinite(v) ? { ok: true, param: v, stored: v } : { ok: false, error: 'must be a number' }
    case 'boolean':
      return typeof v === 'boolean' ? { ok: true, param: v ? 1 : 0, stored: v } : { ok: false, error: 'must be true or false' }
    case 'status':
    case 'one_of': {
      if (typeof v !== 'string') return { ok: false, error: 'must be a string' }
      const checkOptions = operand.type === 'status' || ctx.checkReferences
      if (checkOptions && !operand.options!.includes(v)) return { ok: false, error: `must be one of: ${operand.options!.join(', ')}` }
      return { ok: true, param: v, stored: v }
    }
    case 'list_id': {
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) return { ok: false, error: 'must be a list id (a positive integer)' }
      if (ctx.checkReferences && !ctx.catalog.listExists(v)) return { ok: false, error: `no list with id ${v}` }
      return { ok: true, param: v, stored: v }
    }
    case 'date': {
      if (isObject(v)) {
        const days = relativeDays(v)
        if (typeof days === 'string') return { ok: false, error: days }
        // Dates are calendar dates in UTC, like the stored "YYYY-MM-DD" strings.
        return { ok: true, param: new Date(ctx.now + days * DAY_MS).toISOString().slice(0, 10), stored: v }
      }
      const m = typeof v === 'string' ? DATE.exec(v) : null
      if (!m || !isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3])))
        return { ok: false, error: 'must be a date as YYYY-MM-DD, or {"days_ago": n} / {"days_from_now": n}' }
      return { ok: true, param: v as string, stored: v }
    }
    case 'timestamp': {
      if (isObject(v)) {
        const days = relativeDays(v)
        if (typeof days === 'string') return { ok: false, error: days }
        return { ok: true, param: ctx.now + days * DAY_MS, stored: v }
      }
      const ms = typeof v === 'string' ? parseTimestamp(v) : NaN
      if (!Number.isFinite(ms))
        return { ok: false, error: 'must be an ISO 8601 time with a zone (e.g. 2026-03-01T12:00:00Z), a date (midnight UTC), or {"days_ago": n}' }
      return { ok: true, param: ms, stored: v }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Operators -> SQL
// ---------------------------------------------------------------------------------------

const NEGATION: Partial<Record<Operator, Operator>> = { neq: 'eq', not_in: 'in', not_contains: 'contains', is_not_set: 'is_set' }

/** Escapes LIKE wildcards so that `contains "50%"` means the text "50%". */
function likeEscape(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`)
}

/** Every status as SQL literals (constants of the schema, never request data). */
const ALL_STATUSES_SQL = CONTACT_STATUSES.map((s) => `'${s}'`).join(', ')

function placeholders(n: number): string {
  return Array.from({ length: n }, () => '?').join(', ')
}

/**
 * SQL for a positive operator. Text is compared without regard to ASCII case (SQLite's
 * NOCASE, and LIKE, which ignores ASCII case by default), except email, which is stored
 * lower case and compared as bytes so that the (list_id, email) index applies.
 */
function positiveSql(o: Operand, op: Operator, params: SqlValue[], hints: boolean): { sql: string; params: SqlValue[] } {
  const r = positiveSqlOf(o, op, params)
  if (!hints) return r
  // Email has no index of its own: the unique (list_id, email) index serves it, one probe
  // per list, once the list is in the condition. Every contact's list exists, so the added
  // test never changes which contacts match (negations included).
  if (o.lowerCased && (op === 'eq' || op === 'in' || op === 'starts_with'))
    return { sql: `(contacts.list_id IN (SELECT id FROM lists) AND ${r.sql})`, params: r.params }
  // Creation time has no index of its own either (one index less for every imported row:
  // 10 % of insert time, measured): naming every status lets the (status, created_at)
  // index serve it as one range per status. Every contact has one of these statuses, so
  // the added test never changes which contacts match.
  // A one_of value is looked for as text: `fields` is always stored as compact JSON
  // (JSON.stringify, or SQLite's own JSON functions) of scalar values, with keys that are
  // lower snake case, so "plan" being "pro" is exactly the text containing `"plan":"pro"`
  // (inside a string value every quote is escaped, so it cannot occur there; the closing
  // quote rules out "profile"). instr() is a substring search, several times cheaper than
  // parsing the JSON per contact (measured on a million contacts). Matching only, never
  // updating: the text form is decided by the writers, which all serialise the same way.
  if (o.jsonKey && o.type === 'one_of' && op === 'eq')
    return { sql: 'instr(contacts.fields, ?) > 0', params: [`${JSON.stringify(o.jsonKey)}:${JSON.stringify(params[0])}`] }
  if (o.statusIndexed && op !== 'is_set') return { sql: `(contacts.status IN (${ALL_STATUSES_SQL}) AND ${r.sql})`, params: r.params }
  return r
}

function positiveSqlOf(o: Operand, op: Operator, params: SqlValue[]): { sql: string; params: SqlValue[] } {
  const e = o.type === 'text' && !o.lowerCased ? `${o.sql} COLLATE NOCASE` : o.sql
  switch (op) {
    case 'eq':
      return { sql: `${e} = ?`, params }
    case 'in':
      return { sql: `${e} IN (${placeholders(params.length)})`, params }
    case 'contains':
      return { sql: `${o.sql} LIKE ? ESCAPE '\\'`, params: [`%${likeEscape(String(params[0]))}%`] }
    case 'starts_with':
      // Email is stored lower case, so a prefix is a range on the (list_id, email) index (what SQLite's
      // LIKE optimisation would do, which needs a NOCASE index). U+10FFFF sorts after every
      // other character in UTF-8.
      if (o.lowerCased) return { sql: `(${o.sql} >= ? AND ${o.sql} < ?)`, params: [params[0]!, `${params[0]}\u{10FFFF}`] }
      return { sql: `${o.sql} LIKE ? ESCAPE '\\'`, params: [`${likeEscape(String(params[0]))}%`] }
    case 'ends_with':
      return { sql: `${o.sql} LIKE ? ESCAPE '\\'`, params: [`%${likeEscape(String(params[0]))}`] }
    case 'gt':
      return { sql: `${o.sql} > ?`, params }
    case 'gte':
      return { sql: `${o.sql} >= ?`, params }
    case 'lt':
      return { sql: `${o.sql} < ?`, params }
    case 'lte':
      return { sql: `${o.sql} <= ?`, params }
    case 'between':
      return { sql: `${o.sql} BETWEEN ? AND ?`, params }
    case 'is_set':
      // An empty string is "not set" for text, as a form leaving a field blank would store it.
      return { sql: o.type === 'text' ? `coalesce(${o.sql}, '') <> ''` : `${o.sql} IS NOT NULL`, params: [] }
    default:
      throw new Error(`not a positive operator: ${op}`)
  }
}

/**
 * SQL for any operator. A negative operator matches exactly the contacts its positive
 * counterpart does not, including those where the field is not set (`first_name neq "Ann"`
 * matches contacts without a first name), so a segment and its negation always add up to
 * the whole audience. On NOT NULL columns a plain NOT does that; status, having a closed
 * set of values, turns `neq`/`not_in` into `IN (the other statuses)`, which the
 * status indexes serve.
 */
function operatorSql(o: Operand, op: Operator, params: SqlValue[], hints: boolean): { sql: string; params: SqlValue[] } {
  const positive = NEGATION[op]
  if (!positive) return positiveSql(o, op, params, hints)
  if (o.type === 'status') {
    const rest = o.options!.filter((s) => !params.includes(s))
    return rest.length ? { sql: `${o.sql} IN (${placeholders(rest.length)})`, params: rest } : { sql: '0', params: [] }
  }
  if (op === 'is_not_set') return { sql: o.type === 'text' ? `coalesce(${o.sql}, '') = ''` : `${o.sql} IS NULL`, params: [] }
  const p = positiveSql(o, positive, params, hints)
  return { sql: o.nullable ? `NOT coalesce(${p.sql}, 0)` : `NOT (${p.sql})`, params: p.params }
}

// ---------------------------------------------------------------------------------------
// Condition kinds: the registry
// ---------------------------------------------------------------------------------------

/**
 * One kind of condition. A rule node is of the kind whose `key` property it has.
 *
 * To add a condition kind, add an entry to CONDITION_KINDS. The engagement conditions of
 * the later issues (opened, clicked, bounced, read from the `events` table) go there, each
 * compiling to an `EXISTS (SELECT 1 FROM events e WHERE e.kind = ? AND e.contact_id =
 * contacts.id ...)` with bound parameters, like `in_list` below. Mind the indexes: events
 * is indexed on (kind, created_at) and created_at; a per-contact lookup wants an index on
 * (contact_id, kind) first (a schema change for that issue).
 */
export interface ConditionKind {
  /** The property that marks a node as this kind, e.g. "field" or "in_list". */
  key: string
  /** Checks the node; returns its SQL, or records errors under `path` and returns null. */
  compile(node: Record<string, unknown>, path: string, ctx: CompileContext): Fragment | null
}

const fieldCondition: ConditionKind = {
  key: 'field',
  compile(node, path, ctx) {
    const operand = resolveField(node.field, `${path}.field`, ctx)
    const op = node.op
    if (!operand) {
      if (typeof op !== 'string' || !(OPERATORS as readonly string[]).includes(op)) fail(ctx, `${path}.op`, `must be one of: ${OPERATORS.join(', ')}`)
      return null
    }
    const allowed = OPS_BY_TYPE[operand.type]
    if (typeof op !== 'string' || !allowed.includes(op as Operator)) {
      return fail(ctx, `${path}.op`, `must be one of ${allowed.join(', ')} for ${String(node.field)} (${operand.type})`)
    }
    const operator = op as Operator
    const rule: RuleNode = { field: node.field, op: operator }
    const valuePath = `${path}.value`
    const value = node.value
    let params: SqlValue[]

    if (operator === 'is_set' || operator === 'is_not_set') {
      params = []
    } else if (operator === 'in' || operator === 'not_in' || operator === 'between') {
      const exact = operator === 'between' ? 2 : undefined
      if (!Array.isArray(value) || value.length === 0 || (exact !== undefined && value.length !== exact) || value.length > MAX_VALUES) {
        return fail(ctx, valuePath, exact ? 'must be an array of two values: [from, to] (both included)' : `must be an array of 1 to ${MAX_VALUES} values`)
      }
      params = []
      const stored: unknown[] = []
      let bad = false
      value.forEach((item, i) => {
        const parsed = parseValue(operand, item, ctx)
        if (!parsed.ok) {
          bad = true
          fail(ctx, `${valuePath}.${i}`, parsed.error)
        } else {
          params.push(parsed.param)
          stored.push(parsed.stored)
        }
      })
      if (bad) return null
      if (operator === 'between' && (params[0] as number | string) > (params[1] as number | string))
        return fail(ctx, valuePath, 'the first value must not be after the second')
      if (operator !== 'between') params = [...new Set(params)]
      rule.value = stored
    } else {
      if (value === undefined) return fail(ctx, valuePath, 'is required')
      const parsed = parseValue(operand, value, ctx)
      if (!parsed.ok) return fail(ctx, valuePath, parsed.error)
      params = [parsed.param]
      rule.value = parsed.stored
    }
    // A status test that most contacts pass is cheaper on the rows the other conditions
    // read anyway than through the status index (a million index entries, then a row
    // lookup for each): the unary + (a no-op on the value) keeps SQLite off that index.
    // The shares come from the exact per-status counts in contact_counts.
    let target = operand
    if (operand.type === 'status' && ctx.catalog.statusShare && !ctx.forIndex) {
      const matched = NEGATION[operator] ? operand.options!.filter((s) => !params.includes(s)) : (params as string[])
      if (ctx.catalog.statusShare(matched) > 0.5) target = { ...operand, sql: `+${operand.sql}` }
    }
    const out = operatorSql(target, operator, params, !ctx.forIndex)
    // ...and, ruling out few contacts, it is evaluated after the other conditions of its group.
    return { sql: out.sql, params: out.params, rule, cost: target === operand ? operand.cost : 4 }
  },
}

/**
 * `in_list` / `not_in_list`: the same address is (not) a contact of that list, whatever its
 * status there. An EXISTS on the unique (list_id, email) index: one index probe per contact.
 */
function listCondition(key: 'in_list' | 'not_in_list'): ConditionKind {
  return {
    key,
    compile(node, path, ctx) {
      const id = node[key]
      const p = `${path}.${key}`
      if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) return fail(ctx, p, 'must be a list id (a positive integer)')
      if (ctx.checkReferences && !ctx.catalog.listExists(id)) return fail(ctx, p, `no list with id ${id}`)
      const exists = 'EXISTS (SELECT 1 FROM contacts AS other WHERE other.list_id = ? AND other.email = contacts.email)'
      return { sql: key === 'in_list' ? exists : `NOT ${exists}`, params: [id], rule: { [key]: id }, cost: 2 }
    },
  }
}

/** Every condition kind. Engagement conditions (opened, clicked, bounced) are added here. */
export const CONDITION_KINDS: readonly ConditionKind[] = [fieldCondition, listCondition('in_list'), listCondition('not_in_list')]

const GROUP_KEYS = ['all', 'any'] as const
const NODE_KEYS = [...GROUP_KEYS, ...CONDITION_KINDS.map((k) => k.key)]
const NODE_HELP = 'must be a group {"all": [...]} or {"any": [...]}, or a condition {"field", "op", "value"}, {"in_list": id} or {"not_in_list": id}'

// ---------------------------------------------------------------------------------------
// Tree walk
// ---------------------------------------------------------------------------------------

function compileGroup(node: Record<string, unknown>, key: 'all' | 'any', path: string, depth: number, ctx: CompileContext): Fragment | null {
  const items = node[key]
  const p = `${path}.${key}`
  if (depth > MAX_DEPTH) return fail(ctx, path, `groups can be nested at most ${MAX_DEPTH} deep`)
  if (!Array.isArray(items) || items.length === 0) return fail(ctx, p, 'must be a non-empty array of conditions and groups')
  const parts: Fragment[] = []
  let bad = false
  for (let i = 0; i < items.length; i++) {
    if (ctx.conditions > MAX_CONDITIONS) return null
    const child = compileNode(items[i], `${p}.${i}`, depth, ctx)
    if (child) parts.push(child)
    else bad = true
  }
  if (bad) return null
  const rule: RuleNode = { [key]: parts.map((f) => f.rule) }
  if (parts.length === 1) return { ...parts[0]!, rule }
  // Cheap terms first: SQLite evaluates AND/OR left to right and stops early, so a JSON
  // parse of `fields` only happens for contacts that passed the column tests. The order of
  // terms never changes the result. Stable sort: equal costs keep the client's order.
  const ordered = [...parts].sort((a, b) => a.cost - b.cost)
  return {
    sql: `(${ordered.map((f) => f.sql).join(key === 'all' ? ' AND ' : ' OR ')})`,
    params: ordered.flatMap((f) => f.params),
    rule,
    cost: Math.max(...parts.map((f) => f.cost)),
  }
}

function compileNode(node: unknown, path: string, depth: number, ctx: CompileContext): Fragment | null {
  if (!isObject(node)) return fail(ctx, path, NODE_HELP)
  const present = NODE_KEYS.filter((k) => Object.hasOwn(node, k))
  if (present.length === 0) return fail(ctx, path, NODE_HELP)
  if (present.length > 1) return fail(ctx, path, `must have only one of ${present.join(', ')}`)
  const key = present[0]!
  if (key === 'all' || key === 'any') return compileGroup(node, key, path, depth + 1, ctx)
  ctx.conditions++
  if (ctx.conditions > MAX_CONDITIONS) return fail(ctx, 'rules', `must have at most ${MAX_CONDITIONS} conditions`)
  return CONDITION_KINDS.find((k) => k.key === key)!.compile(node, path, ctx)
}

/**
 * Checks a rule tree and compiles it to one SQL condition over `contacts`. Errors are keyed
 * by their path in the request body, e.g. `rules.all.1.value`.
 */
export function compileRules(rules: unknown, opts: CompileOptions): CompileResult {
  const ctx: CompileContext = { ...opts, errors: {}, conditions: 0 }
  let out: Fragment | null = null
  if (!isObject(rules) || !GROUP_KEYS.some((k) => Object.hasOwn(rules, k))) {
    fail(ctx, 'rules', 'must be a group: {"all": [...]} or {"any": [...]}')
  } else {
    out = compileNode(rules, 'rules', 0, ctx)
  }
  if (!out || Object.keys(ctx.errors).length) return { ok: false, errors: ctx.errors }
  return { ok: true, where: out.sql, params: out.params, rules: out.rule }
}

/**
 * A compiled condition with its parameters written into the text as SQL literals, for the
 * WHERE of a partial index and the queries that must match it term by term: SQLite uses a
 * partial index only when it can see that the query's WHERE implies the index's, and a
 * bound `?` is unknown when the statement is prepared (https://sqlite.org/partialindex.html,
 * "Queries Using Partial Indexes"). Strings are quoted as SQL does (a quote doubled); a
 * string holding NUL cannot be written into SQL text (SQLite stops reading there): null.
 * The compiler's own SQL has no `?` inside its quoted literals (custom field keys are lower
 * snake case), and the scan skips quoted text anyway.
 */
export function inlineParams(where: string, params: readonly SqlValue[]): string | null {
  let out = ''
  let next = 0
  let quoted = false
  for (const c of where) {
    if (c === "'") quoted = !quoted
    if (c !== '?' || quoted) {
      out += c
      continue
    }
    if (next === params.length) throw new Error(`inlineParams: ${params.length} parameters for more placeholders`)
    const value = params[next++]
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return null
      out += String(value)
    } else if (typeof value === 'string' && !value.includes('\u0000')) {
      out += `'${value.replaceAll("'", "''")}'`
    } else {
      return null
    }
  }
  if (next !== params.length) throw new Error(`inlineParams: ${params.length} parameters for ${next} placeholders`)
  return out
}
