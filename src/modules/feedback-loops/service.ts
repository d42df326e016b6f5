import { eq } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { assertNameFree as assertUnique, bulkDeleteByIds, pageOfTable, type BulkDeleteOutcome, findById, columnsOf, timestampsOf } from '../../db/crud'
import { feedbackLoopAccounts } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { normaliseEmail, domainOf, normaliseDomain } from '../../lib/email'
import { AppError, type ErrorDetails } from '../../lib/errors'
import { MIN_POLL_SECONDS, type FeedbackLoopInput, type FeedbackLoopView } from './model'

/**
 * Feedback-loop accounts: where mailbox providers send complaint reports (ARF, RFC 5965)
 * and DMARC aggregate reports. Either an address on the inbound listener (kind `address`),
 * or a remote IMAP mailbox polled on a schedule (kind `imap`). Both feed the same parser.
 */

type Row = typeof feedbackLoopAccounts.$inferSelect
export type FeedbackLoopKind = Row['kind']

export const DEFAULT_POLL_SECONDS = 300
/** Local parts the listener reserves: return paths and the DMARC report address. */
export const RESERVED_LOCAL_PARTS = /^(bounces\+|dmarc$)/

function toView(r: Row): FeedbackLoopView {
  return {
    ...columnsOf(r, ['id', 'name', 'kind', 'address']),
    host: r.imap_host,
    port: r.imap_port,
    tls: r.imap_tls,
    username: r.imap_username,
    password_set: !!r.imap_password,
    mailbox: r.imap_mailbox,
    poll_interval_seconds: r.poll_interval_seconds,
    active: r.active,
    last_polled_at: toIso(r.last_polled_at),
    last_error: r.last_error,
    ...timestampsOf(r),
  }
}

/**
 * The host names the inbound listener receives mail for: this server's host name and the
 * return-path host of every sending domain (each is a CNAME to the host name, so its MX or
 * A record leads here).
 */
export function inboundHosts(deps: Pick<Deps, 'db' | 'config'>): Set<string> {
  const rows = deps.db.$client.query<{ host: string }, []>('SELECT DISTINCT lower(return_path_host) AS host FROM sending_domains').all()
  return new Set([deps.config.hostname.toLowerCase(), ...rows.map((r) => r.host)])
}

/** True when `address` is the address of an active feedback-loop account of kind address. */
export function isFeedbackLoopAddress(deps: Pick<Deps, 'db'>, address: string): boolean {
  return !!deps.db.$client
    .query<{ id: number }, [string]>(`SELECT id FROM feedback_loop_accounts WHERE kind = 'address' AND active = 1 AND address = ? LIMIT 1`)
    .get(address.toLowerCase())
}

type Columns = Omit<Row, 'id' | 'created_at' | 'updated_at' | 'last_polled_at' | 'last_error'>

/** Merges a request into the stored columns and checks the result as a whole; all problems at once, each under its field. */
function checked(deps: Deps, current: Columns, input: FeedbackLoopInput): Columns {
  const details: ErrorDetails = {}
  const refuse = (field: string, message: string) => (details[field] ??= []).push(message)
  const next: Columns = { ...current }
  if (input.name !== undefined) next.name = input.name.trim()
  if (input.active !== undefined) next.active = input.active
  if (!next.name) refuse('name', 'must not be empty')
  const imapFields = ['host', 'port', 'tls', 'username', 'password', 'mailbox', 'poll_interval_seconds'] as const
  if (next.kind === 'address') {
    for (const f of imapFields) if (input[f] !== undefined && input[f] !== null) refuse(f, 'only applies to kind imap')
    if (input.address !== undefined) {
      const email = normaliseEmail(input.address)
      if (!email) refuse('address', 'must be an email address')
      else {
        const hosts = inboundHosts(deps)
        if (!hosts.has(domainOf(email))) refuse('address', `must be at this server's host name or a return-path host: ${[...hosts].sort().join(', ')}`)
        else if (RESERVED_LOCAL_PARTS.test(email.slice(0, email.lastIndexOf('@'))))
          refuse('address', 'bounces+... and dmarc@ are reserved by the inbound listener')
        next.address = email
      }
    }
    if (!next.address && !details.address) refuse('address', 'is required for kind address')
  } else {
    if (input.address !== undefined && input.address !== null) refuse('address', 'only applies to kind address')
    if (input.host !== undefined) {
      const host = input.host === null ? null : (normaliseDomain(input.host) ?? (/^[0-9a-f.:]+$/i.test(input.host.trim()) ? input.host.trim() : null))
      if (!host) refuse('host', 'must be a host name or an IP address')
      next.imap_host = host
    }
    if (input.tls !== undefined) next.imap_tls = input.tls ?? true
    next.imap_tls ??= true
    if (input.port !== undefined) next.imap_port = input.port
    // RFC 8314: implicit TLS on 993; 143 for a plain (or STARTTLS) connection.
    next.imap_port ??= next.imap_tls ? 993 : 143
    if (input.username !== undefined) next.imap_username = input.username
    if (input.password !== undefined) next.imap_password = input.password && deps.secrets.seal(input.password)
    if (input.mailbox !== undefined) next.imap_mailbox = input.mailbox
    next.imap_mailbox ||= 'INBOX'
    if (input.poll_interval_seconds !== undefined) next.poll_interval_seconds = input.poll_interval_seconds
    next.poll_interval_seconds ??= DEFAULT_POLL_SECONDS
    if (next.poll_interval_seconds < MIN_POLL_SECONDS) refuse('poll_interval_seconds', `must be at least ${MIN_POLL_SECONDS}`)
    if (!next.imap_host && !details.host) refuse('host', 'is required for kind imap')
    if (!next.imap_username) refuse('username', 'is required for kind imap')
    if (!next.imap_password) refuse('password', 'is required for kind imap')
  }
  if (Object.keys(details).length) throw new AppError('validation_failed', 'The request data is invalid.', details)
  return next
}

function assertNameFree(deps: Deps, name: string, exceptId?: number): void {
  assertUnique(deps.db, feedbackLoopAccounts, feedbackLoopAccounts.name, name, { exceptId, message: `A feedback-loop account named "${name}" already exists.` })
}

function getRow(deps: Deps, id: number): Row {
  return findById(deps.db, feedbackLoopAccounts, id, 'feedback-loop account')
}

/** One account as the API shows it (never the password). */
export function getFeedbackLoop(deps: Deps, id: number): FeedbackLoopView {
  return toView(getRow(deps, id))
}

/** Accounts in creation order, paginated. */
export function listFeedbackLoops(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, feedbackLoopAccounts, query, (rows: Row[]) => rows.map(toView))
}

/** Creates an account after checking its fields as a whole (422) and its name (409). */
export function createFeedbackLoop(deps: Deps, input: FeedbackLoopInput & { name: string; kind: FeedbackLoopKind }): FeedbackLoopView {
  const empty: Columns = {
    name: '',
    kind: input.kind,
    address: null,
    imap_host: null,
    imap_port: null,
    imap_tls: null,
    imap_username: null,
    imap_password: null,
    imap_mailbox: null,
    poll_interval_seconds: null,
    active: true,
  }
  const values = checked(deps, empty, input)
  assertNameFree(deps, values.name)
  const now = deps.clock.now()
  const row = deps.db
    .insert(feedbackLoopAccounts)
    .values({ ...values, created_at: now, updated_at: now })
    .returning()
    .get()
  return toView(row)
}

/** Changes the fields sent; the kind is fixed at creation. */
export function updateFeedbackLoop(deps: Deps, id: number, input: FeedbackLoopInput): FeedbackLoopView {
  const row = getRow(deps, id)
  if (input.kind !== undefined && input.kind !== row.kind) {
    throw new AppError('validation_failed', 'The request data is invalid.', { kind: ['cannot be changed; create a new account instead'] })
  }
  const { id: _id, created_at: _c, updated_at: _u, last_polled_at: _p, last_error: _e, ...current } = row
  const values = checked(deps, current, input)
  assertNameFree(deps, values.name, id)
  // New connection settings deserve a fresh attempt: clear the last error and poll soon.
  const connectionChanged = ['host', 'port', 'tls', 'username', 'password', 'mailbox'].some((f) => input[f as keyof FeedbackLoopInput] !== undefined)
  deps.db
    .update(feedbackLoopAccounts)
    .set({ ...values, updated_at: deps.clock.now(), ...(connectionChanged && { last_error: null, last_polled_at: null }) })
    .where(eq(feedbackLoopAccounts.id, id))
    .run()
  return getFeedbackLoop(deps, id)
}

/** Deletes accounts in one statement. */
export function deleteFeedbackLoops(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return bulkDeleteByIds(deps.db, feedbackLoopAccounts, ids)
}

/** What the poller needs of an IMAP account. */
export interface ImapAccount {
  id: number
  host: string
  port: number
  tls: boolean
  username: string
  password: string
  mailbox: string
}

/** Active IMAP accounts whose poll is due at `now` (never polled, or the interval has passed since the last poll). */
export function dueImapAccounts(deps: Pick<Deps, 'db' | 'secrets'>, now: number): ImapAccount[] {
  return deps.db.$client
    .query<Omit<ImapAccount, 'tls'> & { tls: number }, [number]>(
      `SELECT id, imap_host AS host, imap_port AS port, imap_tls AS tls, imap_username AS username, imap_password AS password, imap_mailbox AS mailbox
       FROM feedback_loop_accounts
       WHERE kind = 'imap' AND active = 1 AND (last_polled_at IS NULL OR last_polled_at + poll_interval_seconds * 1000 <= ?)
       ORDER BY id`,
    )
    .all(now)
    .map((a) => ({ ...a, password: deps.secrets.open(a.password), tls: !!a.tls, mailbox: a.mailbox || 'INBOX' }))
}

/** Records a finished poll: when, and the error (null after a clean poll). */
export function recordPoll(deps: Pick<Deps, 'db'>, id: number, at: number, error: string | null): void {
  deps.db.$client.run('UPDATE feedback_loop_accounts SET last_polled_at = ?, last_error = ? WHERE id = ?', [
    at,
    error === null ? null : error.slice(0, 1000),
    id,
  ])
}
