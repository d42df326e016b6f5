import { and, asc, count, desc, eq, gte, inArray, lt, sql, type SQL } from 'drizzle-orm'
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { bulkDeleteByIds, findById, type BulkDeleteOutcome } from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import { contactCounts, contacts, lists, type ContactStatus } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { AppError, invalidField, notFound } from '../../lib/errors'
import { checkEmail, normaliseEmail } from '../../lib/email'
import { pageMeta, pageRequest, pageWindow } from '../../lib/pagination'
import { applyFieldValues } from '../custom-fields/values'
import { fieldDefinitions } from '../custom-fields/service'
import { listExists } from '../lists/service'
import type { ContactView } from './model'
import { checkContact, checkName, checkStatus, type ContactInput } from './check'
import { createContactWriter, emitStatusChange, type RawContact, type WriteResult } from './writer'

type Row = typeof contacts.$inferSelect

/** The wire form of a contact row (drizzle row or raw SQLite row). */
export function contactView(r: Row | RawContact): ContactView {
  return {
    id: r.id,
    email: r.email,
    first_name: r.first_name,
    last_name: r.last_name,
    list_id: r.list_id,
    status: r.status,
    fields: (typeof r.fields === 'string' ? JSON.parse(r.fields) : r.fields) as ContactView['fields'],
    created_at: toIso(r.created_at)!,
    updated_at: toIso(r.updated_at)!,
  }
}

function requireList(deps: Deps, listId: number): void {
  if (!listExists(deps, listId)) throw invalidField('list_id', `No list with id ${listId}.`)
}

function invalid(errors: Record<string, string[]>): AppError {
  return new AppError('validation_failed', 'The request data is invalid.', errors)
}

export function getContact(deps: Deps, id: number): ContactView {
  return contactView(findById(deps.db, contacts, id, 'contact'))
}

/**
 * What is wrong with a new contact, every field at once (issue 13): the list must exist and
 * the contact's own checks pass. Also the route's semantic check, run on the fields the
 * schema accepted when it refused others; so it takes any subset and writes nothing.
 */
export function contactCreateProblems(deps: Deps, input: Partial<ContactInput> & { list_id?: unknown }): Record<string, string[]> {
  const errors: Record<string, string[]> = {}
  if (typeof input.list_id === 'number' && !listExists(deps, input.list_id)) errors.list_id = [`No list with id ${input.list_id}.`]
  const checked = checkContact(input as ContactInput, fieldDefinitions(deps))
  return { ...errors, ...(checked.ok ? checked.contact.newErrors : checked.errors) }
}

/** Creates one contact; an address already on the list is a 409 naming the existing contact. */
export function createContact(deps: Deps, input: ContactInput & { list_id: number }, actorKeyId: number | null): ContactView {
  if (!listExists(deps, input.list_id)) throw invalid(contactCreateProblems(deps, input))
  const writer = createContactWriter(deps, { listId: input.list_id, defs: fieldDefinitions(deps), mode: 'skip', emitEvents: true, actorKeyId })
  const result = deps.db.$client.transaction(() => writer.write(input))()
  if (result.result === 'invalid') throw invalid(result.errors)
  if (result.result === 'skipped') throw new AppError('conflict', `${result.email} is already on list ${input.list_id} as contact ${result.id}.`)
  return getContact(deps, result.id)
}

export interface BatchResult {
  created: number
  updated: number
  skipped: number
  invalid: number
  results: Array<{ index: number; result: WriteResult['result']; id?: number; email: string | null; errors?: Record<string, string[]> }>
}

/** Adds up to 1,000 contacts to one list in one transaction, answering per entry. */
export function batchAddContacts(
  deps: Deps,
  input: { list_id: number; mode?: 'skip' | 'update'; contacts: ContactInput[] },
  actorKeyId: number | null,
): BatchResult {
  requireList(deps, input.list_id)
  const writer = createContactWriter(deps, { listId: input.list_id, defs: fieldDefinitions(deps), mode: input.mode ?? 'skip', emitEvents: true, actorKeyId })
  const out: BatchResult = { created: 0, updated: 0, skipped: 0, invalid: 0, results: [] }
  deps.db.$client.transaction(() => {
    input.contacts.forEach((c, index) => {
      const r = writer.write(c)
      out[r.result]++
      out.results.push(
        r.result === 'invalid' ? { index, result: r.result, email: r.email, errors: r.errors } : { index, result: r.result, id: r.id, email: r.email },
      )
    })
  })()
  return out
}

/** Changes a contact. Moving it to another list or address must not collide with one there. */
export function updateContact(
  deps: Deps,
  id: number,
  input: { email?: unknown; first_name?: string | null; last_name?: string | null; status?: unknown; list_id?: number; fields?: Record<string, unknown> },
  actorKeyId: number | null,
): ContactView {
  const current = deps.db.select().from(contacts).where(eq(contacts.id, id)).get()
  if (!current) throw notFound('contact', id)
  const errors: Record<string, string[]> = {}
  let email = current.email
  if (input.email !== undefined) {
    const checked = checkEmail(input.email)
    if (checked.ok) email = checked.email
    else errors.email = [checked.error]
  }
  const status = checkStatus(input.status, errors) ?? current.status
  const listId = input.list_id ?? current.list_id
  if (input.list_id !== undefined && !listExists(deps, input.list_id)) errors.list_id = [`No list with id ${input.list_id}.`]
  const fields = applyFieldValues(fieldDefinitions(deps), input.fields, current.fields)
  Object.assign(errors, fields.errors)
  const first = checkName(input.first_name, 'first_name', errors)
  const last = checkName(input.last_name, 'last_name', errors)
  if (Object.keys(errors).length) throw invalid(errors)
  if (email !== current.email || listId !== current.list_id) {
    const clash = deps.db
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.list_id, listId), eq(contacts.email, email)))
      .get()
    if (clash && clash.id !== id) throw new AppError('conflict', `${email} is already on list ${listId} as contact ${clash.id}.`)
  }
  const now = deps.clock.now()
  deps.db.transaction((tx) => {
    tx.update(contacts)
      .set({
        email,
        list_id: listId,
        status,
        fields: fields.values,
        ...(first !== undefined && { first_name: first }),
        ...(last !== undefined && { last_name: last }),
        updated_at: now,
      })
      .where(eq(contacts.id, id))
      .run()
    emitStatusChange(tx, now, { id, email, listId, from: current.status, to: status, actorKeyId })
  })
  return getContact(deps, id)
}

/** Deletes contacts by id, answering which were found. */
export function deleteContacts(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return bulkDeleteByIds(deps.db, contacts, ids)
}

export interface ContactFilter {
  page?: number
  per_page?: number
  list_id?: number
  status?: ContactStatus
  /** Exact address (normalised before matching). */
  email?: string
  /** Addresses starting with this text. */
  search?: string
  /** A custom field key with `field_value`: contacts whose value equals it. */
  field?: string
  field_value?: string
}

/**
 * The statements of a listing filtered by at most a list and a status, one set per shape
 * (which of the two are given), prepared on first use: built per call, drizzle and SQLite's
 * compile took about 50 µs of each query (docs/benchmarks.md, "Issue 18, eleventh round").
 */
const listingStatements = preparedFor((db: Db) => {
  const shapes = new Map<string, ReturnType<typeof prepareShape>>()
  const prepareShape = (byList: boolean, byStatus: boolean) => {
    const list = sql.placeholder('list_id')
    const status = sql.placeholder('status')
    const where = and(byList ? eq(contacts.list_id, list) : undefined, byStatus ? eq(contacts.status, status) : undefined)
    const page = (order: SQL) =>
      db.select().from(contacts).where(where).orderBy(order).limit(sql.placeholder('limit')).offset(sql.placeholder('offset')).prepare()
    return {
      total: db
        .select({ n: sql<number>`coalesce(sum(${contactCounts.n}), 0)` })
        .from(contactCounts)
        .where(and(byList ? eq(contactCounts.list_id, list) : undefined, byStatus ? eq(contactCounts.status, status) : undefined))
        .prepare(),
      page: page(asc(contacts.id)),
      pageDescending: page(desc(contacts.id)),
    }
  }
  return (byList: boolean, byStatus: boolean) => {
    const key = `${byList} ${byStatus}`
    let shape = shapes.get(key)
    if (!shape) shapes.set(key, (shape = prepareShape(byList, byStatus)))
    return shape
  }
})

/**
 * A page of contacts, oldest first. Every filter maps to an index: list_id and status to
 * (list_id, status), search to a range on the email index (a prefix, not LIKE '%x%', so a
 * million contacts are not scanned), a custom field to json_extract over the rows the other
 * filters leave.
 */
export function listContacts(deps: Deps, filter: ContactFilter) {
  const req = pageRequest(filter)
  const conditions: Array<SQL | undefined> = [
    filter.list_id !== undefined ? eq(contacts.list_id, filter.list_id) : undefined,
    filter.status ? eq(contacts.status, filter.status) : undefined,
  ]
  if (filter.email !== undefined || filter.search) {
    // Addresses are found through the unique (list_id, email) index, list by list, when no
    // list is named (there is no separate email index; see the schema).
    if (filter.list_id === undefined) conditions.push(inArray(contacts.list_id, deps.db.select({ id: lists.id }).from(lists)))
    if (filter.email !== undefined) conditions.push(eq(contacts.email, normaliseEmail(filter.email) ?? filter.email.trim().toLowerCase()))
    if (filter.search) {
      const prefix = filter.search.trim().toLowerCase()
      conditions.push(gte(contacts.email, prefix), lt(contacts.email, prefix + '\uffff'))
    }
  }
  if (filter.field !== undefined || filter.field_value !== undefined) {
    if (filter.field === undefined || filter.field_value === undefined) throw invalidField('field', 'field and field_value go together')
    const def = fieldDefinitions(deps).get(filter.field)
    if (!def) throw invalidField('field', `"${filter.field}" is not a custom field`)
    const checked = applyFieldValues(new Map([[def.key, { ...def, required: false }]]), { [def.key]: filter.field_value }, {}, true)
    if (Object.keys(checked.errors).length) throw invalidField('field_value', Object.values(checked.errors)[0]![0]!)
    conditions.push(sql`json_extract(${contacts.fields}, ${'$.' + def.key}) = ${checked.values[def.key]}`)
  }
  // With at most a list and a status (the usual listing), the total is a sum over the
  // trigger-kept counts instead of a count over up to a million index entries, and both
  // statements are prepared once.
  const countsOnly = filter.email === undefined && !filter.search && filter.field === undefined
  const shape = countsOnly ? listingStatements(deps.db)(filter.list_id !== undefined, Boolean(filter.status)) : null
  const params = { list_id: filter.list_id ?? 0, status: filter.status ?? '' }
  const where = and(...conditions)
  const total = shape ? Number(shape.total.get(params)!.n) : deps.db.select({ n: count() }).from(contacts).where(where).get()!.n
  const window = pageWindow(req, total)
  if (!window) return { items: [], meta: pageMeta(req, total) }
  const rows = shape
    ? (window.descending ? shape.pageDescending : shape.page).all({ ...params, limit: window.limit, offset: window.offset })
    : deps.db
        .select()
        .from(contacts)
        .where(where)
        .orderBy(window.descending ? desc(contacts.id) : asc(contacts.id))
        .limit(window.limit)
        .offset(window.offset)
        .all()
  if (window.descending) rows.reverse()
  return { items: rows.map(contactView), meta: pageMeta(req, total) }
}
