import { isPacked, unpackMessage } from '../../lib/stored-message'
import { and, asc, count, desc, eq, exists, gt, gte, inArray, lt, or, sql, type SQL } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { messageRecipients, messages, type RecipientState } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { invalidField, notFound } from '../../lib/errors'
import { pageMeta, pageRequest, type PageMeta } from '../../lib/pagination'
import { headerFields } from '../../lib/header-fields'
import type { MessageHeader, MessageSummary } from './model'
import { headerText } from './raw'
import { summaryState } from './service'

/** Page totals stop counting here: a subject or status search scans, and a page must not wait on a million rows. */
export const SEARCH_COUNT_CAP = 10_000

export interface MessageSearch {
  page?: number
  per_page?: number
  recipient?: string
  subject?: string
  id?: string
  bridge_id?: number
  status?: RecipientState
  tag?: string
  /** ISO 8601 bounds on the acceptance time: at or after / before. */
  created_after?: string
  created_before?: string
}

/** Cursor pagination (Resend's `limit`/`after`/`before`): a message id to page from, newest first. */
export interface MessageCursor {
  limit?: number
  /** The messages older than this one. */
  after?: string
  /** The messages newer than this one. */
  before?: string
}

/** A page read by cursor: `has_more` says whether the list goes on in the direction read. */
export interface CursorPage<T> {
  items: T[]
  has_more: boolean
}

/** `%`, `_` and the escape itself taken literally in a LIKE pattern. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** The search's conditions; id, recipient and bridge use indexes, subject and status filter the rows they reach. */
function conditions(q: MessageSearch): SQL | undefined {
  return and(
    q.id !== undefined ? eq(messages.id, q.id) : undefined,
    q.bridge_id !== undefined ? eq(messages.bridge_id, q.bridge_id) : undefined,
    q.recipient !== undefined
      ? inArray(
          messages.id,
          sql`(SELECT ${messageRecipients.message_id} FROM ${messageRecipients} WHERE lower(${messageRecipients.address}) = lower(${q.recipient.trim()}))`,
        )
      : undefined,
    // SQLite's LIKE ignores ASCII case; PostgreSQL would use ILIKE here.
    q.subject !== undefined ? sql`${messages.subject} LIKE ${`%${likeLiteral(q.subject)}%`} ESCAPE '\\'` : undefined,
    q.status !== undefined
      ? exists(sql`(SELECT 1 FROM ${messageRecipients} WHERE ${messageRecipients.message_id} = ${messages.id} AND ${messageRecipients.state} = ${q.status})`)
      : undefined,
    // Tags are a JSON array; SQLite's json_each (PostgreSQL: jsonb's ? operator).
    q.tag !== undefined ? exists(sql`(SELECT 1 FROM json_each(${messages.tags}) WHERE json_each.value = ${q.tag})`) : undefined,
    q.created_after !== undefined ? gte(messages.created_at, timeOf(q.created_after, 'created_after')) : undefined,
    q.created_before !== undefined ? lt(messages.created_at, timeOf(q.created_before, 'created_before')) : undefined,
  )
}

/** An ISO 8601 query bound in ms; 422 when it is not a time. */
function timeOf(text: string, field: string): number {
  const at = Date.parse(text)
  if (!Number.isFinite(at)) throw invalidField(field, 'must be an ISO 8601 date and time')
  return at
}

const summaryColumns = {
  id: messages.id,
  source: messages.source,
  from: messages.from_address,
  subject: messages.subject,
  bridge_id: messages.bridge_id,
  size: messages.size,
  created_at: messages.created_at,
}
type SummaryRow = { id: string; source: string; from: string; subject: string; bridge_id: number | null; size: number; created_at: number }

/** Rows with their recipients and summary state. */
function summaries(deps: Deps, rows: SummaryRow[]): MessageSummary[] {
  const ids = rows.map((r) => r.id)
  const recipients = ids.length
    ? deps.db
        .select({ message_id: messageRecipients.message_id, address: messageRecipients.address, state: messageRecipients.state })
        .from(messageRecipients)
        .where(inArray(messageRecipients.message_id, ids))
        .orderBy(messageRecipients.id)
        .all()
    : []
  const byMessage = new Map<string, Array<{ address: string; state: RecipientState }>>()
  for (const r of recipients) {
    const list = byMessage.get(r.message_id) ?? []
    list.push({ address: r.address, state: r.state })
    byMessage.set(r.message_id, list)
  }
  return rows.map((r) => {
    const list = byMessage.get(r.id) ?? []
    return { ...r, status: summaryState(list.map((x) => x.state)), recipients: list, created_at: toIso(r.created_at)! }
  })
}

/**
 * Messages by cursor, newest first (Resend's list, and /api/v2/messages with after/before):
 * keyset on (created_at, id), so a page costs the same at any depth and rows added meanwhile
 * do not shift it. A cursor naming no message is 404, as Resend answers.
 */
export function listMessagesByCursor(deps: Deps, q: MessageSearch & MessageCursor): CursorPage<MessageSummary> {
  if (q.after !== undefined && q.before !== undefined) throw invalidField('before', 'cannot be combined with after')
  const limit = q.limit ?? 20
  const cursorId = q.after ?? q.before
  let keyset: SQL | undefined
  if (cursorId !== undefined) {
    const c = deps.db.select({ created_at: messages.created_at }).from(messages).where(eq(messages.id, cursorId)).get()
    if (!c) throw notFound('message', cursorId)
    const cmp = q.after !== undefined ? lt : gt
    keyset = or(cmp(messages.created_at, c.created_at), and(eq(messages.created_at, c.created_at), cmp(messages.id, cursorId)))
  }
  const newer = q.before !== undefined
  const order = newer ? [asc(messages.created_at), asc(messages.id)] : [desc(messages.created_at), desc(messages.id)]
  const rows = deps.db
    .select(summaryColumns)
    .from(messages)
    .where(and(conditions(q), keyset))
    .orderBy(...order)
    .limit(limit + 1)
    .all()
  const has_more = rows.length > limit
  const page = rows.slice(0, limit)
  if (newer) page.reverse()
  return { items: summaries(deps, page), has_more }
}

/**
 * A page of messages, newest first (the console's Messages page). The total counts up to
 * SEARCH_COUNT_CAP matches: past that the search should be narrowed, and counting further
 * would scan the table on every page.
 */
export function searchMessages(deps: Deps, q: MessageSearch): { items: MessageSummary[]; meta: PageMeta } {
  const req = pageRequest(q)
  const where = conditions(q)
  const capped = deps.db
    .select({ one: sql`1` })
    .from(messages)
    .where(where)
    .limit(SEARCH_COUNT_CAP)
    .as('capped')
  const total = deps.db.select({ n: count() }).from(capped).get()!.n
  const rows = deps.db
    .select(summaryColumns)
    .from(messages)
    .where(where)
    .orderBy(desc(messages.created_at), desc(messages.id))
    .limit(req.per_page)
    .offset(req.offset)
    .all()
  return {
    items: summaries(deps, rows),
    meta: pageMeta(req, total),
  }
}

/** The message as stored: the RFC 5322 bytes accepted (before DKIM signing, which happens at delivery). */
export function rawMessage(deps: Deps, id: string): Uint8Array<ArrayBuffer> {
  const row = deps.db.select({ raw: messages.raw }).from(messages).where(eq(messages.id, id)).get()
  if (!row) throw notFound('message', id)
  const raw = unpackMessage(row.raw)
  return new Uint8Array(raw.buffer as ArrayBuffer, raw.byteOffset, raw.byteLength)
}

/**
 * The header fields of the message as accepted, in order, for reading: names as written,
 * values unfolded (RFC 5322 section 2.2.3) with encoded words decoded (RFC 2047). The
 * DKIM-Signature, Received and Return-Path added at delivery are not part of it.
 */
export function messageHeaders(deps: Deps, id: string): MessageHeader[] {
  // The header block is read from the first bytes: a list of messages must not load every
  // attachment. A block longer than that (it cannot end past the prefix), or a compressed
  // message (lib/stored-message.ts), reads the whole.
  const prefix = deps.db
    .select({ head: sql<Uint8Array | null>`substr(${messages.raw}, 1, ${HEADER_PREFIX_BYTES})` })
    .from(messages)
    .where(eq(messages.id, id))
    .get()
  if (!prefix) throw notFound('message', id)
  let raw = Buffer.from(prefix.head ?? new Uint8Array()).toString('latin1')
  if (raw.indexOf('\r\n\r\n') < 0 && (raw.length >= HEADER_PREFIX_BYTES || isPacked(prefix.head))) raw = Buffer.from(rawMessage(deps, id)).toString('latin1')
  const end = raw.indexOf('\r\n\r\n')
  const head = end < 0 ? raw : raw.slice(0, end + 2)
  return headerFields(head)
    .filter((f) => f.name !== '')
    .map((f) => ({ name: f.raw.slice(0, f.raw.indexOf(':')).trim(), value: headerText(f.value) }))
}

/** Enough for any header block Mailroom writes (50 recipients and 50 headers of up to 998 octets each). */
const HEADER_PREFIX_BYTES = 256 * 1024
