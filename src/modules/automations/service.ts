import { and, desc, eq, count as sqlCount } from 'drizzle-orm'
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { bulkDeleteByIds, timestampsOf, type BulkDeleteOutcome } from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import { automations, automationVersions, type AutomationKind, type AutomationStatus, type EnrollmentState, type StepGraph } from '../../db/schema/automations'
import { toIso } from '../../lib/clock'
import { checkEmail } from '../../lib/email'
import { AppError, notFound, type ErrorDetails } from '../../lib/errors'
import { pageMeta, pageRequest, type PageMeta } from '../../lib/pagination'
import { emitPrepared } from '../events/service'
import { fieldDefinitions } from '../custom-fields/service'
import { createContactWriter } from '../contacts/writer'
import { checkGraph, isTimeZone, type GraphCatalog } from './graph'
import type { AutomationInput, AutomationSummary, AutomationView, RunView, StatsView, TrackedView, TrackInput, VersionView } from './model'
import { endRun, enrollContact, enrollListChunk, loadAutomations, TRACKED_EVENT_KIND } from './runs'

type Row = typeof automations.$inferSelect
type Counts = AutomationView['runs']

/** Largest serialised properties of one custom event. */
export const MAX_PROPERTIES_BYTES = 32 * 1024
/** Contacts enrolled per transaction by an enroll of a whole list. */
const ENROLL_CHUNK = 20_000

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    exists: {
      template: c.prepare<{ one: number }, [number]>('SELECT 1 AS one FROM templates WHERE id = ?'),
      list: c.prepare<{ one: number }, [number]>('SELECT 1 AS one FROM lists WHERE id = ?'),
      segment: c.prepare<{ one: number }, [number]>('SELECT 1 AS one FROM segments WHERE id = ?'),
      webhook: c.prepare<{ one: number }, [number]>('SELECT 1 AS one FROM webhooks WHERE id = ?'),
    },
    templateFrom: c.prepare<{ from_address: string | null }, [number, number | null]>(
      `SELECT v.from_address FROM templates t JOIN template_versions v ON v.template_id = t.id
       WHERE t.id = ?1 AND (v.version = ?2 OR (?2 IS NULL AND v.id = t.active_version_id))`,
    ),
    activeVersion: c.prepare<{ version: number }, [number]>(
      'SELECT v.version FROM templates t JOIN template_versions v ON v.id = t.active_version_id WHERE t.id = ?',
    ),
    version: c.prepare<{ id: number; version: number; graph: string; created_at: number; automation_id: number }, [number]>(
      'SELECT id, version, graph, created_at, automation_id FROM automation_versions WHERE id = ?',
    ),
    versions: c.prepare<{ id: number; version: number; graph: string; created_at: number; automation_id: number }, [number]>(
      'SELECT id, version, graph, created_at, automation_id FROM automation_versions WHERE automation_id = ? ORDER BY version',
    ),
    maxVersion: c.prepare<{ v: number | null }, [number]>('SELECT MAX(version) AS v FROM automation_versions WHERE automation_id = ?'),
    liveSteps: c.prepare<{ step_id: string; n: number }, [number]>(
      "SELECT step_id, COUNT(*) AS n FROM automation_enrollments WHERE automation_id = ? AND state IN ('active', 'waiting') GROUP BY step_id",
    ),
    liveOnVersion: c.prepare<{ version_id: number; n: number }, [number]>(
      "SELECT version_id, COUNT(*) AS n FROM automation_enrollments WHERE automation_id = ? AND state IN ('active', 'waiting') GROUP BY version_id",
    ),
    liveRuns: c.prepare<{ id: number; step_id: string | null }, [number]>(
      "SELECT id, step_id FROM automation_enrollments WHERE automation_id = ? AND state IN ('active', 'waiting')",
    ),
    moveRuns: c.prepare<never, [number, number, number]>(
      "UPDATE automation_enrollments SET version_id = ?1, updated_at = ?2 WHERE automation_id = ?3 AND state IN ('active', 'waiting')",
    ),
    stateCounts: c.prepare<{ automation_id: number; state: EnrollmentState; n: number }, []>(
      'SELECT automation_id, state, COUNT(*) AS n FROM automation_enrollments GROUP BY automation_id, state',
    ),
    stateCountsOf: c.prepare<{ state: EnrollmentState; n: number }, [number]>(
      'SELECT state, COUNT(*) AS n FROM automation_enrollments WHERE automation_id = ? GROUP BY state',
    ),
    stepRunStats: c.prepare<{ step_id: string; entered: number; completed: number; sent: number; opened: number; clicked: number }, [number]>(
      `SELECT r.step_id, COUNT(*) AS entered, COUNT(r.completed_at) AS completed, COUNT(r.message_id) AS sent,
              SUM(CASE WHEN r.message_id IS NOT NULL AND EXISTS (SELECT 1 FROM events e WHERE e.message_id = r.message_id AND e.kind = 'message.opened') THEN 1 ELSE 0 END) AS opened,
              SUM(CASE WHEN r.message_id IS NOT NULL AND EXISTS (SELECT 1 FROM events e WHERE e.message_id = r.message_id AND e.kind = 'message.clicked') THEN 1 ELSE 0 END) AS clicked
       FROM automation_step_runs r WHERE r.automation_id = ? GROUP BY r.step_id`,
    ),
    runsAtSteps: c.prepare<{ step_id: string; state: EnrollmentState; n: number }, [number]>(
      "SELECT step_id, state, COUNT(*) AS n FROM automation_enrollments WHERE automation_id = ? AND state IN ('waiting', 'exited') GROUP BY step_id, state",
    ),
    contact: c.prepare<{ id: number; email: string; status: string; list_id: number }, [number]>(
      'SELECT id, email, status, list_id FROM contacts WHERE id = ?',
    ),
    contactsByEmail: c.prepare<{ id: number; email: string; status: string; list_id: number }, [string]>(
      // One index probe per list (contacts_list_email_unique), as the contacts module looks
      // addresses up. No ORDER BY: its temporary b-tree cost several times the probes (measured
      // per tracked event); the few rows are ordered in preferredContact.
      'SELECT id, email, status, list_id FROM contacts WHERE list_id IN (SELECT id FROM lists) AND email = ?',
    ),
    insertEvent: c.prepare<{ id: number }, [string, number | null, string, string, number, string | null, number | null, number]>(
      `INSERT INTO custom_events (name, contact_id, email, properties, occurred_at, idempotency_key, api_key_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    ),
    eventByKey: c.prepare<{ id: number; name: string; contact_id: number | null; email: string; occurred_at: number }, [number, string]>(
      'SELECT id, name, contact_id, email, occurred_at FROM custom_events WHERE api_key_id = ? AND idempotency_key = ?',
    ),
    wakeAt: c.prepare<{ due_at: number }, [number]>('SELECT due_at FROM automation_wakeups WHERE enrollment_id = ?'),
    runSteps: c.prepare<
      { step_id: string; attempt: number; outcome: string | null; message_id: string | null; detail: string | null; created_at: number },
      [number]
    >('SELECT step_id, attempt, outcome, message_id, detail, created_at FROM automation_step_runs WHERE enrollment_id = ? ORDER BY id'),
  }
})

// ---------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------

const zeroCounts = (): Counts => ({ active: 0, waiting: 0, finished: 0, exited: 0, failed: 0 })

function toView(deps: Deps, r: Row, counts: Counts): AutomationView {
  const v = r.current_version_id ? statements(deps.db).version.get(r.current_version_id) : null
  return {
    id: r.id,
    kind: r.kind,
    name: r.name,
    status: r.status,
    status_reason: r.status_reason ?? null,
    list_ids: r.list_ids,
    event_name: r.event_name,
    event_filter: r.event_filter ?? null,
    reentry: r.reentry,
    exit_conditions: r.exit_conditions,
    goals: r.goals,
    timezone: r.timezone,
    version: v?.version ?? 0,
    version_id: v?.id ?? 0,
    graph: v ? (JSON.parse(v.graph) as AutomationView['graph']) : { steps: [] },
    runs: counts,
    ...timestampsOf(r),
  }
}

function countsOf(deps: Deps, id: number): Counts {
  const out = zeroCounts()
  for (const r of statements(deps.db).stateCountsOf.all(id)) out[r.state] = r.n
  return out
}

const NOUN: Record<AutomationKind, string> = { drip: 'drip', trigger: 'trigger' }

/** The automation row of this kind, or 404 (a trigger's id is not a drip). */
export function findAutomation(deps: Deps, kind: AutomationKind, id: number): Row {
  const row = deps.db.select().from(automations).where(eqId(id)).get()
  if (!row || row.kind !== kind) throw notFound(NOUN[kind], id)
  return row
}

const eqId = (id: number) => eq(automations.id, id)

/** One automation with its current graph and run counts. */
export function getAutomation(deps: Deps, kind: AutomationKind, id: number): AutomationView {
  return toView(deps, findAutomation(deps, kind, id), countsOf(deps, id))
}

/** A page of automations of one kind, newest first, without graphs. */
export function listAutomations(
  deps: Deps,
  kind: AutomationKind,
  query: { page?: number; per_page?: number; status?: AutomationStatus },
): { items: AutomationSummary[]; meta: PageMeta } {
  const req = pageRequest(query)
  const where = and(eq(automations.kind, kind), query.status ? eq(automations.status, query.status) : undefined)
  const total = deps.db.select({ n: sqlCount() }).from(automations).where(where).get()!.n
  const rows = deps.db.select().from(automations).where(where).orderBy(desc(automations.id)).limit(req.per_page).offset(req.offset).all()
  const counts = new Map<number, Counts>()
  if (rows.length)
    for (const c of statements(deps.db).stateCounts.all()) {
      if (!counts.has(c.automation_id)) counts.set(c.automation_id, zeroCounts())
      counts.get(c.automation_id)![c.state] = c.n
    }
  const items = rows.map((r) => {
    const { graph: _g, ...rest } = toView(deps, r, counts.get(r.id) ?? zeroCounts())
    return rest
  })
  return { items, meta: pageMeta(req, total) }
}

// ---------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------

function catalogOf(deps: Deps): GraphCatalog {
  const e = statements(deps.db).exists
  return {
    templateExists: (id) => e.template.get(id) !== null,
    listExists: (id) => e.list.get(id) !== null,
    segmentExists: (id) => e.segment.get(id) !== null,
    webhookExists: (id) => e.webhook.get(id) !== null,
  }
}

const invalid = (details: ErrorDetails) => new AppError('validation_failed', 'The request data is invalid.', details)

/** Checks a graph (422 with errors keyed by step); returns a copy with template versions pinned. */
export function checkedGraph(deps: Deps, graph: unknown): StepGraph {
  const copy = JSON.parse(JSON.stringify(graph ?? null)) as StepGraph
  const errors = checkGraph(copy, catalogOf(deps))
  if (Object.keys(errors).length) throw invalid(errors)
  // A send step without a version sends the version active when the graph was saved: a later
  // edit of the template does not change mail of a running automation.
  for (const step of copy.steps) {
    if (step.kind !== 'send' || typeof step.settings.template_id !== 'number' || typeof step.settings.template_version === 'number') continue
    const active = statements(deps.db).activeVersion.get(step.settings.template_id)
    if (!active) throw invalid({ [`steps.${step.id}.settings.template_id`]: ['the template has no active version'] })
    step.settings.template_version = active.version
  }
  return copy
}

/** The validation endpoint: the same checks as a save, nothing stored. */
export function validateGraph(deps: Deps, graph: unknown): { valid: true; steps: number } {
  return { valid: true, steps: checkedGraph(deps, graph).steps.length }
}

function checkFields(deps: Deps, kind: AutomationKind, input: AutomationInput, graph: StepGraph | null): void {
  const errors: ErrorDetails = {}
  const add = (k: string, m: string) => (errors[k] ??= []).push(m)
  const e = statements(deps.db).exists
  if (kind === 'drip' && (input.event_name !== undefined || input.event_filter !== undefined)) add('event_name', 'is for triggers')
  if (kind === 'trigger' && input.list_ids !== undefined) add('list_ids', 'is for drips (triggers start on a custom event)')
  input.list_ids?.forEach((id, i) => e.list.get(id) === null && add(`list_ids.${i}`, `no list with id ${id}`))
  if (input.timezone && !isTimeZone(input.timezone)) add('timezone', 'must be an IANA time zone')
  const conditions = [
    ...(input.exit_conditions ?? []).map((c, i) => ({ c, key: `exit_conditions.${i}` })),
    ...(input.goals ?? []).map((c, i) => ({ c, key: `goals.${i}` })),
  ]
  for (const { c, key } of conditions) {
    if (!c.event && c.segment_id == null) add(key, 'give event or segment_id')
    if (c.segment_id != null && e.segment.get(c.segment_id) === null) add(`${key}.segment_id`, `no segment with id ${c.segment_id}`)
  }
  ;(input.goals ?? []).forEach((g, i) => {
    if (graph && !graph.steps.some((s) => s.id === g.step_id)) add(`goals.${i}.step_id`, `no step ${g.step_id} in the graph`)
  })
  if (Object.keys(errors).length) throw invalid(errors)
}

// ---------------------------------------------------------------------------------------
// Create, update, versions, delete
// ---------------------------------------------------------------------------------------

function insertVersion(db: Db, automationId: number, graph: StepGraph, now: number): number {
  const next = (statements(db).maxVersion.get(automationId)?.v ?? 0) + 1
  return db
    .insert(automationVersions)
    .values({ automation_id: automationId, version: next, graph, created_at: now })
    .returning({ id: automationVersions.id })
    .get().id
}

/** Creates a drip or trigger with version 1 of its graph. */
export function createAutomation(deps: Deps, kind: AutomationKind, input: AutomationInput & { name: string; graph: unknown }): AutomationView {
  const graph = checkedGraph(deps, input.graph)
  checkFields(deps, kind, input, graph)
  const now = deps.clock.now()
  const id = deps.db.transaction((tx) => {
    const row = tx
      .insert(automations)
      .values({
        kind,
        name: input.name.trim(),
        status: input.status ?? 'draft',
        list_ids: kind === 'drip' ? [...new Set(input.list_ids ?? [])] : [],
        event_name: kind === 'trigger' ? input.event_name! : null,
        event_filter: kind === 'trigger' ? (input.event_filter ?? null) : null,
        reentry: input.reentry ?? 'once',
        exit_conditions: input.exit_conditions ?? [],
        goals: input.goals ?? [],
        timezone: input.timezone ?? null,
        created_at: now,
        updated_at: now,
      })
      .returning({ id: automations.id })
      .get()
    const versionId = insertVersion(deps.db, row.id, graph, now)
    tx.update(automations).set({ current_version_id: versionId }).where(eqId(row.id)).run()
    return row.id
  })
  return getAutomation(deps, kind, id)
}

/**
 * Saves a new version of the graph; new runs start on it. Runs under way stay on theirs,
 * unless `moveRuns`: then every run at a step the new graph lacks refuses the edit (422
 * naming the step), so no run is stranded.
 */
function newVersion(deps: Deps, row: Row, graph: StepGraph, moveRuns: boolean, now: number): number {
  if (moveRuns) {
    const ids = new Set(graph.steps.map((s) => s.id))
    const stranded: ErrorDetails = {}
    for (const s of statements(deps.db).liveSteps.all(row.id))
      if (s.step_id !== null && !ids.has(s.step_id))
        stranded[`steps.${s.step_id}`] = [`${s.n} run(s) are at this step: keep it in the graph, or save without move_runs (runs finish on their version)`]
    if (Object.keys(stranded).length) throw invalid(stranded)
  }
  const id = insertVersion(deps.db, row.id, graph, now)
  deps.db.update(automations).set({ current_version_id: id, updated_at: now }).where(eqId(row.id)).run()
  if (moveRuns) statements(deps.db).moveRuns.run(id, now, row.id)
  return id
}

/** Changes an automation's settings; a graph makes a new version (see newVersion). */
export function updateAutomation(deps: Deps, kind: AutomationKind, id: number, input: AutomationInput): AutomationView {
  const row = findAutomation(deps, kind, id)
  const graph = input.graph !== undefined ? checkedGraph(deps, input.graph) : null
  const current = row.current_version_id ? (JSON.parse(statements(deps.db).version.get(row.current_version_id)!.graph) as StepGraph) : null
  checkFields(deps, kind, { ...input, goals: input.goals ?? (graph ? row.goals : undefined) }, graph ?? current)
  const now = deps.clock.now()
  deps.db.transaction(() => {
    const set: Partial<typeof automations.$inferInsert> = { updated_at: now }
    if (input.name !== undefined) set.name = input.name.trim()
    if (input.status !== undefined) {
      set.status = input.status
      set.status_reason = null
    }
    if (input.reentry !== undefined) set.reentry = input.reentry
    if (input.exit_conditions !== undefined) set.exit_conditions = input.exit_conditions
    if (input.goals !== undefined) set.goals = input.goals
    if (input.timezone !== undefined) set.timezone = input.timezone
    if (kind === 'drip' && input.list_ids !== undefined) set.list_ids = [...new Set(input.list_ids)]
    if (kind === 'trigger' && input.event_name !== undefined) set.event_name = input.event_name
    if (kind === 'trigger' && input.event_filter !== undefined) set.event_filter = input.event_filter
    deps.db.update(automations).set(set).where(eqId(id)).run()
    if (graph) newVersion(deps, row, graph, input.move_runs ?? false, now)
  })
  return getAutomation(deps, kind, id)
}

function versionView(
  deps: Deps,
  row: Row,
  v: { id: number; version: number; graph: string; created_at: number; automation_id: number },
  live: Map<number, number>,
): VersionView {
  return {
    id: v.id,
    automation_id: v.automation_id,
    version: v.version,
    current: row.current_version_id === v.id,
    graph: JSON.parse(v.graph) as VersionView['graph'],
    runs: live.get(v.id) ?? 0,
    created_at: toIso(v.created_at)!,
  }
}

/** Every version, oldest first, with how many runs are under way on each. */
export function listVersions(deps: Deps, kind: AutomationKind, id: number): VersionView[] {
  const row = findAutomation(deps, kind, id)
  const live = new Map(
    statements(deps.db)
      .liveOnVersion.all(id)
      .map((r) => [r.version_id, r.n]),
  )
  return statements(deps.db)
    .versions.all(id)
    .map((v) => versionView(deps, row, v, live))
}

/** POST /versions: a new version of the graph (201). */
export function createVersion(deps: Deps, kind: AutomationKind, id: number, input: { graph: unknown; move_runs?: boolean }): VersionView {
  const row = findAutomation(deps, kind, id)
  const graph = checkedGraph(deps, input.graph)
  const missing = row.goals.filter((g) => !graph.steps.some((s) => s.id === g.step_id))
  if (missing.length)
    throw invalid(Object.fromEntries(missing.map((g) => [`steps.${g.step_id}`, ['a goal jumps to this step: keep it, or change the goal first']])))
  const versionId = deps.db.transaction(() => newVersion(deps, row, graph, input.move_runs ?? false, deps.clock.now()))
  return listVersions(deps, kind, id).find((v) => v.id === versionId)!
}

/** Deletes automations of this kind with their versions, runs and wake-ups; other ids are not_found. */
export function deleteAutomations(deps: Deps, kind: AutomationKind, ids: number[]): BulkDeleteOutcome {
  const unique = [...new Set(ids)]
  const mine = new Set(
    unique.filter((id) => {
      const r = deps.db.select({ kind: automations.kind }).from(automations).where(eqId(id)).get()
      return r?.kind === kind
    }),
  )
  const out = deps.db.transaction(() => {
    // Wake-ups reference runs, which reference the automation: the cascade removes them all.
    return bulkDeleteByIds(deps.db, automations, [...mine])
  })
  return { deleted: out.deleted, not_found: unique.filter((id) => !mine.has(id)).sort((a, b) => a - b) }
}

/** active|draft -> paused: wake-ups are held (events are still recorded and runs still enter); `reason` says why (the guardrails). 409 from paused. */
export function pauseAutomation(deps: Deps, kind: AutomationKind, id: number, reason: string | null = null): AutomationView {
  const row = findAutomation(deps, kind, id)
  if (row.status === 'paused') throw new AppError('conflict', `The ${NOUN[kind]} ${id} is already paused.`)
  deps.db.update(automations).set({ status: 'paused', status_reason: reason, updated_at: deps.clock.now() }).where(eqId(id)).run()
  return getAutomation(deps, kind, id)
}

/**
 * The From addresses an automation's send steps use, as the runner resolves them (the step's
 * from, else its template version's, else default_from), over the version new runs start on
 * and every version a run is still on. The guardrails pause by the domain and pool of these.
 */
export function automationSenders(deps: Deps, row: Pick<Row, 'id' | 'current_version_id'>): string[] {
  const st = statements(deps.db)
  const versionIds = new Set(st.liveOnVersion.all(row.id).map((v) => v.version_id))
  if (row.current_version_id) versionIds.add(row.current_version_id)
  const out = new Set<string>()
  for (const vid of versionIds) {
    const v = st.version.get(vid)
    if (!v) continue
    for (const step of (JSON.parse(v.graph) as StepGraph).steps) {
      if (step.kind !== 'send') continue
      const s = step.settings
      let from = typeof s.from === 'string' && s.from ? s.from : null
      if (!from && typeof s.template_id === 'number')
        from = st.templateFrom.get(s.template_id, typeof s.template_version === 'number' ? s.template_version : null)?.from_address ?? null
      from ??= deps.config.default_from || null
      if (from) out.add(from)
    }
  }
  return [...out]
}

/** paused|draft -> active: held wake-ups that came due run at once. 409 when already active. */
export function resumeAutomation(deps: Deps, kind: AutomationKind, id: number): AutomationView {
  const row = findAutomation(deps, kind, id)
  if (row.status === 'active') throw new AppError('conflict', `The ${NOUN[kind]} ${id} is already active.`)
  deps.db.update(automations).set({ status: 'active', status_reason: null, updated_at: deps.clock.now() }).where(eqId(id)).run()
  return getAutomation(deps, kind, id)
}

/** A copy of an automation as a draft "<name> (copy)", on its current graph (version 1 of the copy); runs are not copied. */
export function duplicateAutomation(deps: Deps, kind: AutomationKind, id: number): AutomationView {
  const v = getAutomation(deps, kind, id)
  return createAutomation(deps, kind, {
    name: `${v.name} (copy)`.slice(0, 200),
    status: 'draft',
    reentry: v.reentry,
    exit_conditions: v.exit_conditions,
    goals: v.goals,
    timezone: v.timezone,
    graph: v.graph,
    ...(kind === 'drip' ? { list_ids: v.list_ids } : { event_name: v.event_name!, event_filter: v.event_filter }),
  })
}

/**
 * Stops an automation: back to draft (nothing enrolls) and every run under way ends exited
 * with reason `stopped`, its wake-up dropped. A run whose send the runner holds at this
 * moment sends nothing: the runner's guard reads the run again inside the send's
 * transaction, finds it ended and rolls back. Idempotent.
 */
export function stopAutomation(deps: Deps, kind: AutomationKind, id: number): AutomationView {
  findAutomation(deps, kind, id)
  const now = deps.clock.now()
  deps.db.transaction(() => {
    deps.db.update(automations).set({ status: 'draft', updated_at: now }).where(eqId(id)).run()
    for (const run of statements(deps.db).liveRuns.all(id)) endRun(deps, run, 'exited', STOPPED_REASON, now)
  })
  return getAutomation(deps, kind, id)
}

/** The reason a run ended by stopAutomation carries. */
export const STOPPED_REASON = 'stopped'

// ---------------------------------------------------------------------------------------
// Enrollment
// ---------------------------------------------------------------------------------------

/**
 * Starts runs of a drip for contacts, or for every subscribed contact of a list (read in
 * chunks by id, one transaction each: never the list in memory). The re-entry policy applies;
 * a draft drip refuses (409). Contacts not subscribed are skipped.
 */
export async function enrollContacts(
  deps: Deps,
  id: number,
  input: { contact_ids?: number[]; list_id?: number },
): Promise<{ enrolled: number; skipped: number; not_found: number[] }> {
  const row = findAutomation(deps, 'drip', id)
  if (row.status === 'draft') throw new AppError('conflict', `The drip ${id} is a draft: resume (activate) it first.`)
  if (!input.contact_ids && input.list_id === undefined) throw invalid({ contact_ids: ['give contact_ids or list_id'] })
  if (input.list_id !== undefined && statements(deps.db).exists.list.get(input.list_id) === null)
    throw invalid({ list_id: [`no list with id ${input.list_id}`] })
  const st = statements(deps.db)
  const result = { enrolled: 0, skipped: 0, not_found: [] as number[] }
  const enrollBatch = (contacts: Array<{ id: number; email: string }>) =>
    deps.commits.run(() => {
      const a = loadAutomations(deps.db).get(id)
      if (!a) throw notFound('drip', id)
      const now = deps.clock.now()
      let n = 0
      for (const c of contacts) if (enrollContact(deps, a, c, now) !== null) n++
      return n
    })
  if (input.contact_ids) {
    const found: Array<{ id: number; email: string }> = []
    for (const cid of [...new Set(input.contact_ids)]) {
      const c = st.contact.get(cid)
      if (!c) result.not_found.push(cid)
      else if (c.status !== 'subscribed') result.skipped++
      else found.push(c)
    }
    const n = await enrollBatch(found)
    result.enrolled += n
    result.skipped += found.length - n
  }
  if (input.list_id !== undefined) {
    const listId = input.list_id
    for (let after = 0; ;) {
      const chunk = await deps.commits.run(() => {
        const a = loadAutomations(deps.db).get(id)
        if (!a) throw notFound('drip', id)
        return enrollListChunk(deps, a, listId, after, ENROLL_CHUNK, deps.clock.now())
      })
      if (!chunk.scanned) break
      result.enrolled += chunk.enrolled
      result.skipped += chunk.scanned - chunk.enrolled
      after = chunk.last
    }
  }
  return result
}

// ---------------------------------------------------------------------------------------
// Statistics and runs
// ---------------------------------------------------------------------------------------

/** Per-step statistics of an automation (all versions together, keyed by step id). */
export function automationStats(deps: Deps, kind: AutomationKind, id: number): StatsView {
  const row = findAutomation(deps, kind, id)
  const st = statements(deps.db)
  const graph = row.current_version_id ? (JSON.parse(st.version.get(row.current_version_id)!.graph) as StepGraph) : { steps: [] }
  const kinds = new Map(graph.steps.map((s) => [s.id, s.kind]))
  const runs = new Map(st.stepRunStats.all(id).map((r) => [r.step_id, r]))
  const at = new Map<string, { waiting: number; exited: number }>()
  for (const r of st.runsAtSteps.all(id)) {
    if (!r.step_id) continue
    const e = at.get(r.step_id) ?? { waiting: 0, exited: 0 }
    e[r.state as 'waiting' | 'exited'] = r.n
    at.set(r.step_id, e)
  }
  const order = [...graph.steps.map((s) => s.id), ...[...runs.keys()].filter((k) => !kinds.has(k))]
  return {
    automation_id: id,
    runs: countsOf(deps, id),
    steps: order.map((stepId) => {
      const r = runs.get(stepId)
      return {
        step_id: stepId,
        kind: kinds.get(stepId) ?? 'removed',
        entered: r?.entered ?? 0,
        completed: r?.completed ?? 0,
        waiting: at.get(stepId)?.waiting ?? 0,
        sent: r?.sent ?? 0,
        opened: r?.opened ?? 0,
        clicked: r?.clicked ?? 0,
        exited: at.get(stepId)?.exited ?? 0,
      }
    }),
  }
}

type EnrollmentRecord = {
  id: number
  automation_id: number
  version: number
  kind: string
  name: string
  contact_id: number
  email: string
  state: EnrollmentState
  step_id: string | null
  reason: string | null
  started_at: number
  finished_at: number | null
}

function runView(deps: Deps, r: EnrollmentRecord): RunView {
  const st = statements(deps.db)
  return {
    id: r.id,
    automation_id: r.automation_id,
    automation_kind: r.kind,
    automation_name: r.name,
    version: r.version,
    contact_id: r.contact_id,
    email: r.email,
    state: r.state,
    step_id: r.step_id,
    reason: r.reason,
    next_wake_at: r.state === 'waiting' ? toIso(st.wakeAt.get(r.id)?.due_at) : null,
    started_at: toIso(r.started_at)!,
    finished_at: toIso(r.finished_at),
    steps: st.runSteps.all(r.id).map((s) => ({
      step_id: s.step_id,
      attempt: s.attempt,
      outcome: s.outcome,
      message_id: s.message_id,
      detail: s.detail,
      at: toIso(s.created_at)!,
    })),
  }
}

const RUN_SELECT = `SELECT e.id, e.automation_id, v.version, a.kind, a.name, e.contact_id, e.email, e.state, e.step_id, e.reason, e.started_at, e.finished_at
  FROM automation_enrollments e JOIN automations a ON a.id = e.automation_id JOIN automation_versions v ON v.id = e.version_id`

function pageOfRuns(deps: Deps, where: string, params: Array<string | number>, query: { page?: number; per_page?: number }) {
  const req = pageRequest(query)
  const c = deps.db.$client
  const total = c.prepare<{ n: number }, Array<string | number>>(`SELECT COUNT(*) AS n FROM automation_enrollments e WHERE ${where}`).get(...params)!.n
  const rows = c
    .prepare<EnrollmentRecord, Array<string | number>>(`${RUN_SELECT} WHERE ${where} ORDER BY e.id DESC LIMIT ? OFFSET ?`)
    .all(...params, req.per_page, req.offset)
  return { items: rows.map((r) => runView(deps, r)), meta: pageMeta(req, total) }
}

/** The runs of an automation, newest first, with their executed steps. */
export function listRuns(deps: Deps, kind: AutomationKind, id: number, query: { page?: number; per_page?: number; state?: EnrollmentState }) {
  findAutomation(deps, kind, id)
  return query.state ? pageOfRuns(deps, 'e.automation_id = ? AND e.state = ?', [id, query.state], query) : pageOfRuns(deps, 'e.automation_id = ?', [id], query)
}

/** One run of an automation with its executed steps; 404 when the run is not this automation's. */
export function getRun(deps: Deps, kind: AutomationKind, id: number, runId: number): RunView {
  findAutomation(deps, kind, id)
  const run = pageOfRuns(deps, 'e.id = ? AND e.automation_id = ?', [runId, id], { per_page: 1 }).items[0]
  if (!run) throw notFound('run', runId)
  return run
}

/** A contact's run history across every automation, newest first (404 for an unknown contact). */
export function contactRuns(deps: Deps, contactId: number, query: { page?: number; per_page?: number }) {
  if (!statements(deps.db).contact.get(contactId)) throw notFound('contact', contactId)
  return pageOfRuns(deps, 'e.contact_id = ?', [contactId], query)
}

// ---------------------------------------------------------------------------------------
// Custom events
// ---------------------------------------------------------------------------------------

/** The contact an address means: its subscribed one first, then the oldest (lowest id). */
function preferredContact<T extends { id: number; status: string }>(rows: T[]): T | null {
  let best: T | null = null
  for (const r of rows) {
    const better =
      best === null ||
      (r.status === 'subscribed') > (best.status === 'subscribed') ||
      ((r.status === 'subscribed') === (best.status === 'subscribed') && r.id < best.id)
    if (better) best = r
  }
  return best
}

interface CheckedEvent {
  input: TrackInput
  occurredAt: number
  properties: string
  email: string | null
}

/** Checks one event's fields without the database; errors keyed by field (prefixed in a batch). */
function checkEvent(input: TrackInput, prefix: string, errors: ErrorDetails, now: number): CheckedEvent {
  const add = (k: string, m: string) => (errors[`${prefix}${k}`] ??= []).push(m)
  let email: string | null = null
  if (input.email === undefined && input.contact_id === undefined) add('email', 'give email or contact_id')
  if (input.email !== undefined) {
    const checked = checkEmail(input.email)
    if (checked.ok) email = checked.email
    else add('email', checked.error)
  }
  if (input.create_contact && input.list_id === undefined) add('list_id', 'is required with create_contact')
  const properties = JSON.stringify(input.properties ?? {})
  if (properties.length > MAX_PROPERTIES_BYTES) add('properties', `must be at most ${MAX_PROPERTIES_BYTES} bytes as JSON`)
  const occurredAt = input.occurred_at ? Date.parse(input.occurred_at) : now
  if (Number.isNaN(occurredAt)) add('occurred_at', 'must be an ISO 8601 date-time')
  return { input, occurredAt, properties, email }
}

/**
 * Records custom events (POST /api/v2/track and /track/batch): each is stored, resolved to a
 * contact (by id, or by address: the subscribed contact first, then the oldest; created on
 * `list_id` when `create_contact`), and appended to the event log as event.tracked (the
 * contact's timeline), all in one transaction; the engine reads the log after it. With an
 * Idempotency-Key a retry stores nothing and answers the first event (duplicate: true).
 * All or nothing: any invalid event refuses the whole batch with 422.
 */
export async function trackEvents(deps: Deps, apiKeyId: number | null, inputs: TrackInput[], idempotencyKey: string | null): Promise<TrackedView[]> {
  const now = deps.clock.now()
  const errors: ErrorDetails = {}
  const checked = inputs.map((input, i) => checkEvent(input, inputs.length > 1 ? `events.${i}.` : '', errors, now))
  if (Object.keys(errors).length) throw invalid(errors)
  const st = statements(deps.db)
  const keyOf = (i: number) => (idempotencyKey === null ? null : inputs.length > 1 ? `${idempotencyKey}#${i}` : idempotencyKey)
  return deps.commits.run(() => {
    const at = deps.clock.now()
    const missing: ErrorDetails = {}
    const writers = new Map<number, ReturnType<typeof createContactWriter>>()
    const out = checked.map((e, i): TrackedView => {
      const key = keyOf(i)
      if (key !== null && apiKeyId !== null) {
        const seen = st.eventByKey.get(apiKeyId, key)
        if (seen)
          return { id: seen.id, event: seen.name, contact_id: seen.contact_id, email: seen.email, occurred_at: toIso(seen.occurred_at)!, duplicate: true }
      }
      const prefix = inputs.length > 1 ? `events.${i}.` : ''
      let contact = e.input.contact_id !== undefined ? st.contact.get(e.input.contact_id) : e.email ? preferredContact(st.contactsByEmail.all(e.email)) : null
      if (!contact && e.input.contact_id !== undefined) {
        missing[`${prefix}contact_id`] = [`no contact with id ${e.input.contact_id}`]
        return null as never
      }
      if (!contact && e.input.create_contact) {
        if (st.exists.list.get(e.input.list_id!) === null) {
          missing[`${prefix}list_id`] = [`no list with id ${e.input.list_id}`]
          return null as never
        }
        let writer = writers.get(e.input.list_id!)
        if (!writer) {
          writer = createContactWriter(deps, { listId: e.input.list_id!, defs: fieldDefinitions(deps), mode: 'skip', emitEvents: true, actorKeyId: apiKeyId })
          writers.set(e.input.list_id!, writer)
        }
        const written = writer.write({ email: e.email })
        if (written.result !== 'invalid') contact = st.contact.get(written.id)
      }
      if (!contact) {
        missing[`${prefix}email`] = ['no contact has this address: pass create_contact: true and list_id to create one']
        return null as never
      }
      const id = st.insertEvent.get(e.input.event, contact.id, contact.email, e.properties, e.occurredAt, key, apiKeyId, at)!.id
      emitPrepared(deps.db, at, {
        kind: TRACKED_EVENT_KIND,
        contact_id: contact.id,
        list_id: contact.list_id,
        recipient: contact.email,
        data: { event: e.input.event, properties: JSON.parse(e.properties), custom_event_id: id, email: contact.email, occurred_at: toIso(e.occurredAt) },
      })
      return { id, event: e.input.event, contact_id: contact.id, email: contact.email, occurred_at: toIso(e.occurredAt)!, duplicate: false }
    })
    // Thrown inside the commit: the savepoint takes back anything written for the batch.
    if (Object.keys(missing).length) throw invalid(missing)
    return out
  })
}
