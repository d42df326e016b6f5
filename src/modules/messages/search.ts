import { and, count, desc, eq, exists, inArray, sql, type SQL } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { messageRecipients, messages, type RecipientState } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { notFound } from '../../lib/errors'
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
  )
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
    .select({
      id: messages.id,
      source: messages.source,
      from: messages.from_address,
      subject: messages.subject,
      bridge_id: messages.bridge_id,
      size: messages.size,
      created_at: messages.created_at,
    })
    .from(messages)
    .where(where)
    .orderBy(desc(messages.created_at), desc(messages.id))
    .limit(req.per_page)
    .offset(req.offset)
    .all()
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
  return {
    items: rows.map((r) => {
      const list = byMessage.get(r.id) ?? []
      return { ...r, status: summaryState(list.map((x) => x.state)), recipients: list, created_at: toIso(r.created_at)! }
    }),
    meta: pageMeta(req, total),
  }
}

/** The message as stored: the RFC 5322 bytes accepted (before DKIM signing, which happens at delivery). */
export function rawMessage(deps: Deps, id: string): Uint8Array<ArrayBuffer> {
  const row = deps.db.select({ raw: messages.raw }).from(messages).where(eq(messages.id, id)).get()
  if (!row) throw notFound('message', id)
  return new Uint8Array(row.raw.buffer as ArrayBuffer, row.raw.byteOffset, row.raw.byteLength)
}

/**
 * The header fields of the message as accepted, in order, for reading: names as written,
 * values unfolded (RFC 5322 section 2.2.3) with encoded words decoded (RFC 2047). The
 * DKIM-Signature, Received and Return-Path added at delivery are not part of it.
 */
export function messageHeaders(deps: Deps, id: string): MessageHeader[] {
  const raw = Buffer.from(rawMessage(deps, id)).toString('latin1')
  const end = raw.indexOf('\r\n\r\n')
  const head = end < 0 ? raw : raw.slice(0, end + 2)
  return headerFields(head)
    .filter((f) => f.name !== '')
    .map((f) => ({ name: f.raw.slice(0, f.raw.indexOf(':')).trim(), value: headerText(f.value) }))
}
