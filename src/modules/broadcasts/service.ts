import { and, asc, count, desc, eq, inArray, type SQL } from 'drizzle-orm'
import { randomBytes } from 'node:crypto'
import type { Deps } from '../../deps'
import { bulkDeleteByIds, findById, timestampsOf, type BulkDeleteOutcome } from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import type { Db } from '../../db/client'
import {
  broadcastCounts,
  broadcastRecipients,
  broadcasts,
  broadcastVersions,
  type BroadcastRecipientState,
  type BroadcastStatus,
} from '../../db/schema/broadcasts'
import { toIso } from '../../lib/clock'
import { domainOf } from '../../lib/email'
import { AppError, invalidField, notFound, type ErrorDetails } from '../../lib/errors'
import { pageMeta, pageRequest, pageWindow, type PageMeta } from '../../lib/pagination'
import { emit } from '../events/service'
import { mailboxProblem } from '../messages/compose'
import { findSendingDomain } from '../sending-domains/service'
import { countAudience, type AudienceSpec } from './audience'
import { parseJsonColumns } from './render'
import type {
  BroadcastSummary,
  BroadcastView,
  CreateBroadcastInput,
  RecipientView,
  StatsBlock,
  StatsView,
  UpdateBroadcastInput,
  VersionInput,
  VersionView,
} from './model'

export type BroadcastRow = typeof broadcasts.$inferSelect
type VersionRow = typeof broadcastVersions.$inferSelect

/** States in which a broadcast's settings, content and versions may change (issue 15). */
export const EDITABLE_STATUSES: readonly BroadcastStatus[] = ['draft', 'scheduled', 'paused']
/** States the runner may be acting on, or will: cancel applies to these. */
export const LIVE_STATUSES: readonly BroadcastStatus[] = ['scheduled', 'preparing', 'sending', 'paused']
/** States in which the runner is writing the broadcast's rows: no delete until paused or cancelled. */
const RUNNING_STATUSES: readonly BroadcastStatus[] = ['preparing', 'sending']
/** At most this many versions per broadcast: a split test of more cannot reach a verdict on a sample. */
export const MAX_VERSIONS = 10

const statements = preparedFor((db: Db) => ({
  listExists: db.$client.prepare<{ one: number }, [number]>('SELECT 1 AS one FROM lists WHERE id = ?'),
  segmentExists: db.$client.prepare<{ one: number }, [number]>('SELECT 1 AS one FROM segments WHERE id = ?'),
  templateExists: db.$client.prepare<{ one: number }, [number]>('SELECT 1 AS one FROM templates WHERE id = ?'),
  poolExists: db.$client.prepare<{ one: number }, [number]>('SELECT 1 AS one FROM ip_pools WHERE id = ?'),
  customFieldExists: db.$client.prepare<{ one: number }, [string]>('SELECT 1 AS one FROM custom_fields WHERE key = ?'),
  hasRecipients: db.$client.prepare<{ one: number }, [number]>('SELECT 1 AS one FROM broadcast_recipients WHERE broadcast_id = ? LIMIT 1'),
  // GET /api/v2/broadcasts/{id} (polled by the live progress view): drizzle would build and
  // SQLite compile both queries per call (~10 ms of server time under load).
  row: db.$client.prepare<Record<string, unknown>, [number]>('SELECT * FROM broadcasts WHERE id = ?'),
  counts: db.$client.prepare<{ metric: string; n: number }, [number]>('SELECT metric, n FROM broadcast_counts WHERE broadcast_id = ? AND version_id = 0'),
  // The runner writes broadcast.started in the transaction of the last snapshot chunk.
  snapshotWhole: db.$client.prepare<{ one: number }, [number]>("SELECT 1 AS one FROM events WHERE broadcast_id = ? AND kind = 'broadcast.started' LIMIT 1"),
}))

// ---------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------

type Metrics = Map<number, Map<string, number>>

/** broadcast_counts of these broadcasts for one version (0 = all), as id -> metric -> n, in one query. */
function countsOf(deps: Deps, ids: number[], versionId = 0): Metrics {
  const out: Metrics = new Map(ids.map((id) => [id, new Map()]))
  if (!ids.length) return out
  const rows = deps.db
    .select()
    .from(broadcastCounts)
    .where(and(inArray(broadcastCounts.broadcast_id, ids), eq(broadcastCounts.version_id, versionId)))
    .all()
  for (const r of rows) out.get(r.broadcast_id)?.set(r.metric, r.n)
  return out
}

/**
 * The API's counts from broadcast_counts' metrics. The engine keeps one counter per recipient
 * state (pending, queued, sent, skipped, failed, bounced) plus delivered, opened, clicked,
 * complained, unsubscribed; `total` is its own counter when the engine writes one, else the
 * sum of the states. Absent rows are zeros (a draft has none).
 */
function countsView(m: Map<string, number>): BroadcastView['counts'] {
  const n = (k: string) => m.get(k) ?? 0
  const states = ['pending', 'queued', 'sent', 'skipped', 'failed', 'bounced'].reduce((sum, k) => sum + n(k), 0)
  return {
    total: m.has('total') ? n('total') : states,
    pending: n('pending') + n('queued'),
    sent: n('sent'),
    skipped: n('skipped'),
    failed: n('failed'),
    bounced: n('bounced'),
    opened: n('opened'),
    clicked: n('clicked'),
  }
}

const rateOf = (v: string | null): number | null => (v === null ? null : Number(v))

function toView(r: BroadcastRow, metrics: Map<string, number>): BroadcastView {
  const counts = countsView(metrics)
  const progress = r.status === 'sent' ? 1 : counts.total === 0 ? 0 : Math.min(1, (counts.total - counts.pending) / counts.total)
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    status_reason: r.status_reason,
    from: r.from_address,
    reply_to: r.reply_to,
    subject: r.subject,
    html: r.html,
    text: r.text,
    template_id: r.template_id,
    template_version_id: r.template_version_id,
    list_ids: r.list_ids,
    segment_id: r.segment_id,
    exclude_list_ids: r.exclude_list_ids,
    exclude_segment_ids: r.exclude_segment_ids,
    track_opens: r.track_opens,
    track_clicks: r.track_clicks,
    pool_id: r.pool_id,
    tags: r.tags,
    send_rate_per_minute: r.send_rate_per_minute,
    send_window: r.send_window ?? null,
    timezone: r.timezone,
    version_mode: r.version_mode,
    split_test: r.split_test ?? null,
    split_phase: r.split_phase,
    winner_version_id: r.winner_version_id,
    max_bounce_rate: rateOf(r.max_bounce_rate),
    max_complaint_rate: rateOf(r.max_complaint_rate),
    archive: r.archive,
    archive_id: r.archive_id,
    source_broadcast_id: r.source_broadcast_id,
    send_at: toIso(r.send_at),
    started_at: toIso(r.started_at),
    finished_at: toIso(r.finished_at),
    counts,
    progress,
    ...timestampsOf(r),
  }
}

function viewsOf(deps: Deps, rows: BroadcastRow[]): BroadcastView[] {
  const metrics = countsOf(
    deps,
    rows.map((r) => r.id),
  )
  return rows.map((r) => toView(r, metrics.get(r.id)!))
}

/** The broadcast row, or 404. */
export function findBroadcast(deps: Deps, id: number): BroadcastRow {
  return findById(deps.db, broadcasts, id, 'broadcast')
}

/** Boolean columns (drizzle's mode 'boolean'), which a prepared statement returns as 0/1. */
const FLAG_COLUMNS = ['track_opens', 'track_clicks', 'archive'] as const

/** One broadcast as the API shows it, with its counts and progress (prepared reads: the progress view polls it). */
export function getBroadcast(deps: Deps, id: number): BroadcastView {
  const st = statements(deps.db)
  const raw = st.row.get(id)
  if (!raw) throw notFound('broadcast', id)
  for (const k of FLAG_COLUMNS) raw[k] = raw[k] === 1
  const metrics = new Map(st.counts.all(id).map((m) => [m.metric, m.n]))
  return toView(parseJsonColumns(raw), metrics)
}

/** A page of broadcasts, newest first, without bodies; optionally of one status. */
export function listBroadcasts(
  deps: Deps,
  query: { page?: number; per_page?: number; status?: BroadcastStatus },
): { items: BroadcastSummary[]; meta: PageMeta } {
  const req = pageRequest(query)
  const where = query.status ? eq(broadcasts.status, query.status) : undefined
  const total = deps.db.select({ n: count() }).from(broadcasts).where(where).get()!.n
  const rows = deps.db.select().from(broadcasts).where(where).orderBy(desc(broadcasts.id)).limit(req.per_page).offset(req.offset).all()
  const items = viewsOf(deps, rows).map(({ html: _h, text: _t, ...rest }) => rest)
  return { items, meta: pageMeta(req, total) }
}

// ---------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------

/** The address of "Name <address>" or of a bare address (already checked by mailboxProblem). */
function addressOf(mailbox: string): string {
  const angle = /<([^<>]+)>\s*$/.exec(mailbox)
  return (angle ? angle[1]! : mailbox).trim()
}

/** Whether `zone` is an IANA time zone this runtime knows (Intl throws RangeError otherwise). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

type Fields = Partial<CreateBroadcastInput>

/**
 * The checks of a broadcast body beyond its schema, as field -> messages: a `from` on a
 * verified sending domain, references that exist, a valid time zone, coherent split-test and
 * window settings. Reads only; any subset of the fields may be given (SemanticCheck).
 */
export function checkBroadcastFields(deps: Deps, body: Fields): ErrorDetails {
  const details: ErrorDetails = {}
  const add = (field: string, message: string) => (details[field] ??= []).push(message)
  const s = statements(deps.db)
  if (typeof body.from === 'string') {
    const problem = mailboxProblem(body.from)
    if (problem) add('from', problem)
    else {
      const domain = domainOf(addressOf(body.from))
      const found = findSendingDomain(deps, domain)
      if (found?.status !== 'verified' && !deps.config.allow_unverified_domains)
        add('from', `${domain} is not a verified sending domain (add it under /api/v2/sending-domains and verify it)`)
    }
  }
  if (typeof body.reply_to === 'string') {
    const problem = mailboxProblem(body.reply_to)
    if (problem) add('reply_to', problem)
  }
  const each = (field: string, ids: unknown, exists: (id: number) => boolean, noun: string) => {
    if (!Array.isArray(ids)) return
    for (const id of ids) if (typeof id === 'number' && !exists(id)) add(field, `no ${noun} with id ${id}`)
  }
  each('list_ids', body.list_ids, (id) => s.listExists.get(id) !== null, 'list')
  each('exclude_list_ids', body.exclude_list_ids, (id) => s.listExists.get(id) !== null, 'list')
  each('exclude_segment_ids', body.exclude_segment_ids, (id) => s.segmentExists.get(id) !== null, 'segment')
  if (typeof body.segment_id === 'number' && !s.segmentExists.get(body.segment_id)) add('segment_id', `no segment with id ${body.segment_id}`)
  if (typeof body.template_id === 'number' && !s.templateExists.get(body.template_id)) add('template_id', `no template with id ${body.template_id}`)
  if (typeof body.pool_id === 'number' && !s.poolExists.get(body.pool_id)) add('pool_id', `no IP pool with id ${body.pool_id}`)
  if (typeof body.timezone === 'string' && !isTimeZone(body.timezone)) add('timezone', `${body.timezone} is not an IANA time zone (such as Europe/Paris)`)
  const w = body.send_window
  if (w && typeof w === 'object') {
    if (w.start_hour === w.end_hour) add('send_window.end_hour', 'must differ from start_hour')
    if (typeof w.timezone === 'string' && !isTimeZone(w.timezone)) add('send_window.timezone', `${w.timezone} is not an IANA time zone`)
    if (typeof w.contact_timezone_field === 'string' && !s.customFieldExists.get(w.contact_timezone_field))
      add('send_window.contact_timezone_field', `no custom field with key ${w.contact_timezone_field}`)
  }
  const st = body.split_test
  if (st && typeof st === 'object' && st.metric === 'link_click_rate' && !st.link_url)
    add('split_test.link_url', 'is required when the metric is link_click_rate')
  return details
}

/**
 * The rules on the merged record (a PATCH may set one half): content is html/text or a
 * template, not both, and at least one; a split test has its settings.
 */
function contentProblems(r: {
  html?: string | null
  text?: string | null
  template_id?: number | null
  version_mode?: string
  split_test?: unknown
}): ErrorDetails {
  const out: ErrorDetails = {}
  const inline = Boolean(r.html) || Boolean(r.text)
  if (inline && r.template_id != null) out.template_id = ['give html/text or template_id, not both']
  if (!inline && r.template_id == null) out.html = ['a broadcast needs html, text or template_id']
  if (r.version_mode === 'split_test' && !r.split_test) out.split_test = ['is required when version_mode is split_test']
  return out
}

function mergeDetails(...all: ErrorDetails[]): ErrorDetails {
  const out: ErrorDetails = {}
  for (const d of all) for (const [k, v] of Object.entries(d)) (out[k] ??= []).push(...v)
  return out
}

function throwIfAny(details: ErrorDetails): void {
  if (Object.keys(details).length) throw new AppError('validation_failed', 'The request data is invalid.', details)
}

const uniq = (ids: number[] | undefined) => (ids ? [...new Set(ids)] : undefined)
const rateText = (v: number | null | undefined) => (v === undefined ? undefined : v === null ? null : String(v))

/** The columns a create or update body sets (only those it names). */
function columnsFrom(body: Fields): Partial<BroadcastRow> {
  const c: Partial<BroadcastRow> = {}
  if (body.name !== undefined) c.name = body.name.trim()
  if (body.from !== undefined) c.from_address = body.from.trim()
  const copy = [
    'reply_to',
    'subject',
    'html',
    'text',
    'template_id',
    'segment_id',
    'track_opens',
    'track_clicks',
    'pool_id',
    'tags',
    'send_rate_per_minute',
    'send_window',
    'timezone',
    'version_mode',
    'split_test',
    'archive',
  ] as const
  for (const k of copy) if (body[k] !== undefined) (c as Record<string, unknown>)[k] = body[k]
  for (const k of ['list_ids', 'exclude_list_ids', 'exclude_segment_ids'] as const) if (body[k] !== undefined) c[k] = uniq(body[k])!
  if (body.max_bounce_rate !== undefined) c.max_bounce_rate = rateText(body.max_bounce_rate)!
  if (body.max_complaint_rate !== undefined) c.max_complaint_rate = rateText(body.max_complaint_rate)!
  return c
}

/** An unguessable public id for the archive page (128 random bits). */
const newArchiveId = () => randomBytes(16).toString('base64url')

// ---------------------------------------------------------------------------------------
// CRUD
// ---------------------------------------------------------------------------------------

/** Creates a draft broadcast after checking every field; 422 names each failing field. */
export function createBroadcast(deps: Deps, body: CreateBroadcastInput): BroadcastView {
  throwIfAny(mergeDetails(checkBroadcastFields(deps, body), contentProblems(body)))
  const now = deps.clock.now()
  const row = deps.db
    .insert(broadcasts)
    .values({ ...(columnsFrom(body) as BroadcastRow), status: 'draft', archive_id: newArchiveId(), created_at: now, updated_at: now })
    .returning()
    .get()
  return viewsOf(deps, [row])[0]!
}

/** 409 naming the current status unless the broadcast is in one of `allowed`. */
function assertStatus(r: BroadcastRow, allowed: readonly BroadcastStatus[], action: string): void {
  if (!allowed.includes(r.status)) throw new AppError('conflict', `Broadcast ${r.id} is ${r.status}; ${action} only when it is ${allowed.join(', ')}.`)
}

/** Changes a broadcast's settings or content; only in draft, scheduled or paused (else 409). */
export function updateBroadcast(deps: Deps, id: number, body: UpdateBroadcastInput): BroadcastView {
  const current = findBroadcast(deps, id)
  assertStatus(current, EDITABLE_STATUSES, 'it can be edited')
  const merged = {
    html: current.html,
    text: current.text,
    template_id: current.template_id,
    version_mode: current.version_mode,
    split_test: current.split_test,
    ...body,
  }
  throwIfAny(mergeDetails(checkBroadcastFields(deps, body), contentProblems(merged)))
  const changed = deps.db
    .update(broadcasts)
    .set({ ...columnsFrom(body), updated_at: deps.clock.now() })
    .where(and(eq(broadcasts.id, id), inArray(broadcasts.status, [...EDITABLE_STATUSES])))
    .returning()
    .get()
  // The runner moved it on between the read and the write (a scheduled broadcast started).
  if (!changed) assertStatus(findBroadcast(deps, id), EDITABLE_STATUSES, 'it can be edited')
  return getBroadcast(deps, id)
}

/**
 * Deletes broadcasts with their versions, recipient rows and counters (foreign keys cascade).
 * A broadcast the runner is working on (preparing, sending) is refused with 409: pause or
 * cancel it first, so the runner never writes rows of a broadcast that is gone.
 */
export function deleteBroadcasts(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return deps.db.transaction((tx) => {
    const running = tx
      .select({ id: broadcasts.id, status: broadcasts.status })
      .from(broadcasts)
      .where(and(inArray(broadcasts.id, ids), inArray(broadcasts.status, [...RUNNING_STATUSES])))
      .all()
    if (running.length)
      throw new AppError('conflict', `Broadcasts ${running.map((r) => `${r.id} (${r.status})`).join(', ')} are running; pause or cancel them before deleting.`)
    return bulkDeleteByIds(tx, broadcasts, ids)
  })
}

// ---------------------------------------------------------------------------------------
// Transitions: each is one conditional UPDATE (the runner changes statuses too), then a ring
// of the doorbell so the runner acts at once instead of at its next poll.
// ---------------------------------------------------------------------------------------

/**
 * Moves the broadcast from one of `from` to `patch.status` in one conditional UPDATE, with
 * `also` (an event) in the same transaction; 409 naming the current status when it is not
 * in `from` (also when the runner changed it a moment before).
 */
function transition(
  deps: Deps,
  id: number,
  from: readonly BroadcastStatus[],
  action: string,
  patch: (r: BroadcastRow) => Partial<BroadcastRow>,
  also?: (tx: Parameters<Parameters<Deps['db']['transaction']>[0]>[0], r: BroadcastRow) => void,
): BroadcastView {
  const now = deps.clock.now()
  deps.db.transaction((tx) => {
    const current = findById(tx, broadcasts, id, 'broadcast') as BroadcastRow
    assertStatus(current, from, action)
    const changed = tx
      .update(broadcasts)
      .set({ ...patch(current), updated_at: now })
      .where(and(eq(broadcasts.id, id), eq(broadcasts.status, current.status)))
      .returning({ id: broadcasts.id })
      .get()
    if (!changed) assertStatus(findById(tx, broadcasts, id, 'broadcast') as BroadcastRow, [], action)
    also?.(tx, current)
  })
  deps.doorbell.ring()
  return getBroadcast(deps, id)
}

/** Whether the runner has written recipient rows for this broadcast (it has started). */
function hasRecipients(deps: Deps, id: number): boolean {
  return statements(deps.db).hasRecipients.get(id) !== null
}

/** What scheduling needs on the stored broadcast: an audience, content, and fields still valid. */
function assertReady(deps: Deps, r: BroadcastRow): void {
  const audience: ErrorDetails =
    r.list_ids.length || r.segment_id != null || r.source_broadcast_id != null
      ? {}
      : { list_ids: ['a broadcast needs list_ids or segment_id before it is scheduled'] }
  const fields = checkBroadcastFields(deps, {
    from: r.from_address,
    list_ids: r.list_ids,
    segment_id: r.segment_id,
    exclude_list_ids: r.exclude_list_ids,
    exclude_segment_ids: r.exclude_segment_ids,
    template_id: r.template_id,
    pool_id: r.pool_id,
  })
  const versions = deps.db.select({ n: count() }).from(broadcastVersions).where(eq(broadcastVersions.broadcast_id, r.id)).get()!.n
  const split: ErrorDetails = r.version_mode === 'split_test' && versions < 2 ? { version_mode: ['a split test needs at least two versions'] } : {}
  throwIfAny(mergeDetails(audience, contentProblems(r), fields, split))
}

/**
 * draft (or paused before it started) -> scheduled at `send_at` (ISO 8601; omitted or in the
 * past = now: a past time would look like a missed schedule to the runner, which pauses those).
 */
export function scheduleBroadcast(deps: Deps, id: number, sendAt: string | undefined): BroadcastView {
  const r = findBroadcast(deps, id)
  const notStarted = r.status === 'paused' && r.started_at === null && !hasRecipients(deps, id)
  if (r.status !== 'draft' && !notStarted)
    throw new AppError('conflict', `Broadcast ${id} is ${r.status}; it can be scheduled only as a draft or when paused before it started.`)
  assertReady(deps, r)
  const now = deps.clock.now()
  const at = sendAt === undefined ? now : Math.max(now, Date.parse(sendAt))
  if (Number.isNaN(at)) throw invalidField('send_at', 'must be an ISO 8601 time')
  return transition(deps, id, [r.status], 'it can be scheduled', () => ({ status: 'scheduled', status_reason: null, send_at: at }))
}

/** scheduled | preparing | sending -> paused, with a `broadcast.paused` event saying who paused it. */
export function pauseBroadcast(deps: Deps, id: number, actor: string): BroadcastView {
  const reason = `paused by ${actor}`
  return transition(
    deps,
    id,
    ['scheduled', 'preparing', 'sending'],
    'it can be paused',
    () => ({ status: 'paused', status_reason: reason }),
    (tx, r) => emit(tx, deps.clock.now(), { kind: 'broadcast.paused', broadcast_id: id, data: { broadcast_id: id, reason, from_status: r.status } }),
  )
}

/**
 * paused -> the state it left: sending when its snapshot is whole (the runner continues from
 * the committed rows), preparing when it was paused mid-snapshot with rows already (sending
 * then would finish it with part of its audience), else scheduled with send_at now.
 */
export function resumeBroadcast(deps: Deps, id: number): BroadcastView {
  const started = hasRecipients(deps, id)
  const whole = started && statements(deps.db).snapshotWhole.get(id) !== null
  const now = deps.clock.now()
  return transition(deps, id, ['paused'], 'it can be resumed', () =>
    whole
      ? { status: 'sending', status_reason: null }
      : started
        ? { status: 'preparing', status_reason: null }
        : { status: 'scheduled', status_reason: null, send_at: now },
  )
}

/** Any live state -> cancelled. Pending rows stay pending (the record of who was not sent); the runner stops. */
export function cancelBroadcast(deps: Deps, id: number, actor: string): BroadcastView {
  const now = deps.clock.now()
  return transition(deps, id, LIVE_STATUSES, 'it can be cancelled', () => ({ status: 'cancelled', status_reason: `cancelled by ${actor}`, finished_at: now }))
}

/** A new draft with this broadcast's settings, content and versions (not its recipients or counters). */
function copyBroadcast(deps: Deps, id: number, name: string, extra: Partial<BroadcastRow>): BroadcastView {
  const src = findBroadcast(deps, id)
  const now = deps.clock.now()
  const newId = deps.db.transaction((tx) => {
    const { id: _id, created_at: _c, updated_at: _u, ...settings } = src
    const row = tx
      .insert(broadcasts)
      .values({
        ...settings,
        name: name.slice(0, 200),
        status: 'draft',
        status_reason: null,
        template_version_id: null,
        split_phase: null,
        winner_version_id: null,
        archive_id: newArchiveId(),
        source_broadcast_id: null,
        send_at: null,
        started_at: null,
        finished_at: null,
        prepare_cursor: null,
        ...extra,
        created_at: now,
        updated_at: now,
      })
      .returning({ id: broadcasts.id })
      .get()
    const versions = tx.select().from(broadcastVersions).where(eq(broadcastVersions.broadcast_id, id)).orderBy(asc(broadcastVersions.id)).all()
    if (versions.length)
      tx.insert(broadcastVersions)
        .values(versions.map(({ id: _v, ...v }) => ({ ...v, broadcast_id: row.id, template_version_id: null, created_at: now, updated_at: now })))
        .run()
    return row.id
  })
  return getBroadcast(deps, newId)
}

/** POST /duplicate: a draft copy named "<name> (copy)". */
export function duplicateBroadcast(deps: Deps, id: number): BroadcastView {
  return copyBroadcast(deps, id, `${findBroadcast(deps, id).name} (copy)`, {})
}

/**
 * POST /resend-to-non-openers (only for a sent broadcast): a draft whose audience is the
 * original's recipients without an open (`source_broadcast_id`; its own list and segment
 * are cleared, the exclusions kept), same content, named "<name> (non-openers)".
 */
export function resendToNonOpeners(deps: Deps, id: number): BroadcastView {
  const src = findBroadcast(deps, id)
  assertStatus(src, ['sent'], 'a resend to non-openers can be made')
  return copyBroadcast(deps, id, `${src.name} (non-openers)`, { source_broadcast_id: id, list_ids: [], segment_id: null })
}

/** POST /audience-count: distinct subscribed addresses of an audience, over the query the engine copies with. */
export function audienceCount(deps: Deps, body: Partial<AudienceSpec>): { total: number } {
  const spec: AudienceSpec = {
    list_ids: uniq(body.list_ids) ?? [],
    segment_id: body.segment_id ?? null,
    exclude_list_ids: uniq(body.exclude_list_ids) ?? [],
    exclude_segment_ids: uniq(body.exclude_segment_ids) ?? [],
  }
  throwIfAny(checkBroadcastFields(deps, spec))
  return { total: countAudience(deps, spec) }
}

// ---------------------------------------------------------------------------------------
// Versions
// ---------------------------------------------------------------------------------------

function versionView(v: VersionRow): VersionView {
  const { created_at: _c, updated_at: _u, send_at, ...rest } = v
  return { ...rest, send_at: toIso(send_at), ...timestampsOf(v) }
}

function findVersion(deps: Deps, id: number, vid: number): VersionRow {
  const v = deps.db
    .select()
    .from(broadcastVersions)
    .where(and(eq(broadcastVersions.id, vid), eq(broadcastVersions.broadcast_id, id)))
    .get()
  if (!v) throw new AppError('not_found', `Broadcast ${id} has no version with id ${vid}.`)
  return v
}

function versionColumns(deps: Deps, body: VersionInput): Partial<VersionRow> {
  const details: ErrorDetails = {}
  if (typeof body.template_id === 'number' && !statements(deps.db).templateExists.get(body.template_id))
    details.template_id = [`no template with id ${body.template_id}`]
  throwIfAny(details)
  const c: Partial<VersionRow> = {}
  for (const k of ['subject', 'from_name', 'html', 'text', 'template_id', 'weight'] as const)
    if (body[k] !== undefined) (c as Record<string, unknown>)[k] = body[k]
  if (body.name !== undefined) c.name = body.name.trim()
  if (body.send_at !== undefined) c.send_at = body.send_at === null ? null : Date.parse(body.send_at)
  return c
}

/** The versions of a broadcast, oldest first (a broadcast has at most MAX_VERSIONS). */
export function listVersions(deps: Deps, id: number): VersionView[] {
  findBroadcast(deps, id)
  return deps.db.select().from(broadcastVersions).where(eq(broadcastVersions.broadcast_id, id)).orderBy(asc(broadcastVersions.id)).all().map(versionView)
}

/** Adds a version while the broadcast is editable. */
export function createVersion(deps: Deps, id: number, body: VersionInput): VersionView {
  assertStatus(findBroadcast(deps, id), EDITABLE_STATUSES, 'its versions can change')
  const columns = versionColumns(deps, body)
  const existing = deps.db.select({ n: count() }).from(broadcastVersions).where(eq(broadcastVersions.broadcast_id, id)).get()!.n
  if (existing >= MAX_VERSIONS) throw new AppError('conflict', `Broadcast ${id} already has ${MAX_VERSIONS} versions, the most it may have.`)
  const now = deps.clock.now()
  const row = deps.db
    .insert(broadcastVersions)
    .values({ name: `Version ${existing + 1}`, ...columns, broadcast_id: id, created_at: now, updated_at: now })
    .returning()
    .get()
  return versionView(row)
}

/** Changes a version while the broadcast is editable. */
export function updateVersion(deps: Deps, id: number, vid: number, body: VersionInput): VersionView {
  assertStatus(findBroadcast(deps, id), EDITABLE_STATUSES, 'its versions can change')
  findVersion(deps, id, vid)
  const columns = versionColumns(deps, body)
  deps.db
    .update(broadcastVersions)
    .set({ ...columns, updated_at: deps.clock.now() })
    .where(eq(broadcastVersions.id, vid))
    .run()
  return versionView(findVersion(deps, id, vid))
}

/** Deletes a version while the broadcast is editable; answers it as it was. */
export function deleteVersion(deps: Deps, id: number, vid: number): VersionView {
  assertStatus(findBroadcast(deps, id), EDITABLE_STATUSES, 'its versions can change')
  const v = findVersion(deps, id, vid)
  deps.db.delete(broadcastVersions).where(eq(broadcastVersions.id, vid)).run()
  return versionView(v)
}

// ---------------------------------------------------------------------------------------
// Recipients and statistics
// ---------------------------------------------------------------------------------------

/** A page of a broadcast's recipient rows in id order, filtered by state and version. */
export function listRecipients(
  deps: Deps,
  id: number,
  query: { page?: number; per_page?: number; state?: BroadcastRecipientState; version_id?: number },
): { items: RecipientView[]; meta: PageMeta } {
  findBroadcast(deps, id)
  const req = pageRequest(query)
  const conditions: SQL[] = [eq(broadcastRecipients.broadcast_id, id)]
  if (query.state) conditions.push(eq(broadcastRecipients.state, query.state))
  if (query.version_id !== undefined) conditions.push(eq(broadcastRecipients.version_id, query.version_id))
  const where = and(...conditions)
  return deps.db.transaction((tx) => {
    const total = tx.select({ n: count() }).from(broadcastRecipients).where(where).get()!.n
    // A million-row broadcast: deep pages are read from the far end (pageWindow), in the count's snapshot.
    const window = pageWindow(req, total)
    const rows = window
      ? tx
          .select()
          .from(broadcastRecipients)
          .where(where)
          .orderBy(window.descending ? desc(broadcastRecipients.id) : asc(broadcastRecipients.id))
          .limit(window.limit)
          .offset(window.offset)
          .all()
      : []
    if (window?.descending) rows.reverse()
    const items = rows.map((r) => ({
      id: r.id,
      contact_id: r.contact_id,
      list_id: r.list_id,
      email: r.email,
      version_id: r.version_id,
      state: r.state,
      reason: r.reason,
      message_id: r.message_id,
      opened_at: toIso(r.opened_at),
      clicked_at: toIso(r.clicked_at),
      updated_at: toIso(r.updated_at)!,
    }))
    return { items, meta: pageMeta(req, total) }
  })
}

/** Statistics of one counter set (a broadcast's, or one version's); every rate is over `sent`. */
function statsBlock(m: Map<string, number>): StatsBlock {
  const n = (k: string) => m.get(k) ?? 0
  const counts = countsView(m)
  // A bounced recipient was sent first: it left this server and the receiving one refused it later.
  const sent = n('sent') + n('bounced')
  const rate = (x: number) => (sent === 0 ? null : x / sent)
  return {
    recipients: counts.total,
    sent,
    delivered: n('delivered'),
    bounced: n('bounced'),
    complained: n('complained'),
    unsubscribed: n('unsubscribed'),
    unique_opens: n('opened'),
    unique_clicks: n('clicked'),
    open_rate: rate(n('opened')),
    click_rate: rate(n('clicked')),
    bounce_rate: rate(n('bounced')),
    complaint_rate: rate(n('complained')),
    unsubscribe_rate: rate(n('unsubscribed')),
  }
}

const linkStatements = preparedFor((db: Db) => ({
  // One click kind only: the engine may record a click as both message.clicked and
  // broadcast.clicked, and counting both would double it. Unique = distinct messages.
  clicks: db.$client.prepare<LinkClicks, [number, string, number, number]>(
    `SELECT json_extract(data, '$.url') AS url, COUNT(*) AS clicks, COUNT(DISTINCT coalesce(message_id, recipient)) AS unique_clicks
       FROM events WHERE broadcast_id = ? AND kind = ? AND json_extract(data, '$.url') IS NOT NULL
       GROUP BY url ORDER BY clicks DESC, url LIMIT ? OFFSET ?`,
  ),
  hasKind: db.$client.prepare<{ one: number }, [number, string]>('SELECT 1 AS one FROM events WHERE broadcast_id = ? AND kind = ? LIMIT 1'),
}))

/** Clicks per link of a broadcast's messages. */
export type LinkClicks = { url: string; clicks: number; unique_clicks: number }

/**
 * Clicks per link of a broadcast, most clicked first (then by URL), `limit` rows from
 * `offset`: the stats' top links and the Resend surface's clickedLinks pages.
 */
export function broadcastLinkClicks(deps: Pick<Deps, 'db'>, id: number, limit: number, offset = 0): LinkClicks[] {
  const s = linkStatements(deps.db)
  const kind = s.hasKind.get(id, 'broadcast.clicked') ? 'broadcast.clicked' : 'message.clicked'
  return s.clicks.all(id, kind, limit, offset)
}

/** GET /stats: totals and per-version figures from broadcast_counts, per-link clicks from events, the split test's outcome. */
export function broadcastStats(deps: Deps, id: number): StatsView {
  const r = findBroadcast(deps, id)
  const versions = deps.db.select().from(broadcastVersions).where(eq(broadcastVersions.broadcast_id, id)).orderBy(asc(broadcastVersions.id)).all()
  const all = deps.db.select().from(broadcastCounts).where(eq(broadcastCounts.broadcast_id, id)).all()
  const byVersion = new Map<number, Map<string, number>>()
  for (const c of all) {
    let m = byVersion.get(c.version_id)
    if (!m) byVersion.set(c.version_id, (m = new Map()))
    m.set(c.metric, c.n)
  }
  return {
    broadcast_id: id,
    totals: statsBlock(byVersion.get(0) ?? new Map()),
    versions: versions.map((v) => ({ version_id: v.id, name: v.name, ...statsBlock(byVersion.get(v.id) ?? new Map()) })),
    links: broadcastLinkClicks(deps, id, 100),
    split_test:
      r.version_mode === 'split_test' && r.split_test ? { metric: r.split_test.metric, phase: r.split_phase, winner_version_id: r.winner_version_id } : null,
  }
}
