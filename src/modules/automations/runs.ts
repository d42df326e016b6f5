import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import type {
  AutomationCondition,
  AutomationGoal,
  AutomationKind,
  AutomationStatus,
  EnrollmentState,
  PropertyFilter,
  ReentryPolicy,
  StepGraph,
  StepGraphStep,
} from '../../db/schema/automations'
import type { ContactStatus } from '../../db/schema'
import { emitStatusChange, type RawContact } from '../contacts/writer'
import { applyFieldValues } from '../custom-fields/values'
import { fieldDefinitions } from '../custom-fields/service'
import { compiledSegment, compileInput } from '../segments/service'
import type { SqlValue } from '../segments/rules'
import { matchesFilter, propertyCondition, waitUntil } from './graph'

/**
 * The synchronous half of the engine: everything that happens inside one transaction.
 * Entering runs (re-entry policy), reading the event log for entries, received events, exits
 * and goals, and walking a run through its steps until it parks on a wait, reaches a step
 * with outside I/O (send, webhook: runner.ts does those) or ends. Callers pass the
 * transaction through `deps.commits.run`, so each step's record, its side effect and the
 * run's move to the next step commit together or not at all.
 */

/** The system_state key of the last event the engine has read. */
export const EVENT_CURSOR_KEY = 'automations.event_cursor'
/** Custom events reach the event log as this kind (the contact's timeline). */
export const TRACKED_EVENT_KIND = 'event.tracked'
/** More synchronous steps than this in one go means a bug (graphs with a loop need a wait). */
const MAX_CHAIN = 1000

export interface AutomationRow {
  id: number
  kind: AutomationKind
  status: AutomationStatus
  list_ids: number[]
  event_name: string | null
  event_filter: PropertyFilter | null
  reentry: ReentryPolicy
  exit_conditions: AutomationCondition[]
  goals: AutomationGoal[]
  timezone: string | null
  current_version_id: number | null
}

export interface EnrollmentRow {
  id: number
  automation_id: number
  version_id: number
  contact_id: number
  email: string
  state: EnrollmentState
  step_id: string | null
  trigger_event_id: number | null
  wait_event: string | null
  wait_filter: string | null
  wait_since: number | null
}

/** A contact as the runs read it: the stored row without its timestamps. */
export type ContactRow = Omit<RawContact, 'created_at' | 'updated_at'>

type RawAutomation = Omit<AutomationRow, 'list_ids' | 'event_filter' | 'exit_conditions' | 'goals'> & {
  list_ids: string
  event_filter: string | null
  exit_conditions: string
  goals: string
}

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    automations: c.prepare<RawAutomation, []>(
      'SELECT id, kind, status, list_ids, event_name, event_filter, reentry, exit_conditions, goals, timezone, current_version_id FROM automations',
    ),
    graph: c.prepare<{ graph: string }, [number]>('SELECT graph FROM automation_versions WHERE id = ?'),
    enrollment: c.prepare<EnrollmentRow, [number]>(
      'SELECT id, automation_id, version_id, contact_id, email, state, step_id, trigger_event_id, wait_event, wait_filter, wait_since FROM automation_enrollments WHERE id = ?',
    ),
    liveByEmail: c.prepare<EnrollmentRow, [string]>(
      `SELECT id, automation_id, version_id, contact_id, email, state, step_id, trigger_event_id, wait_event, wait_filter, wait_since
       FROM automation_enrollments WHERE email = ? AND state IN ('active', 'waiting')`,
    ),
    anyRun: c.prepare<{ one: number }, [number, string]>('SELECT 1 AS one FROM automation_enrollments WHERE automation_id = ? AND email = ? LIMIT 1'),
    liveRun: c.prepare<{ one: number }, [number, string]>(
      "SELECT 1 AS one FROM automation_enrollments WHERE automation_id = ? AND email = ? AND state IN ('active', 'waiting') LIMIT 1",
    ),
    insertEnrollment: c.prepare<{ id: number }, [number, number, number, string, string, number | null, number, number]>(
      `INSERT INTO automation_enrollments (automation_id, version_id, contact_id, email, state, step_id, trigger_event_id, started_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, 'active', ?5, ?6, ?7, ?8) RETURNING id`,
    ),
    setWakeup: c.prepare<never, [number, number, number]>(
      'INSERT INTO automation_wakeups (enrollment_id, automation_id, due_at, claimed) VALUES (?1, ?2, ?3, 0) ON CONFLICT (enrollment_id) DO UPDATE SET due_at = ?3, claimed = 0',
    ),
    /** A received event or a goal makes a run due now without taking it from a runner that holds it. */
    dueNow: c.prepare<never, [number, number, number]>(
      'INSERT INTO automation_wakeups (enrollment_id, automation_id, due_at, claimed) VALUES (?1, ?2, ?3, 0) ON CONFLICT (enrollment_id) DO UPDATE SET due_at = ?3',
    ),
    wakeup: c.prepare<{ due_at: number }, [number]>('SELECT due_at FROM automation_wakeups WHERE enrollment_id = ?'),
    deleteWakeup: c.prepare<never, [number]>('DELETE FROM automation_wakeups WHERE enrollment_id = ?'),
    release: c.prepare<never, [number]>('UPDATE automation_wakeups SET claimed = 0 WHERE enrollment_id = ?'),
    moveTo: c.prepare<never, [string | null, number, number]>(
      "UPDATE automation_enrollments SET state = 'active', step_id = ?1, wait_event = NULL, wait_filter = NULL, wait_since = NULL, updated_at = ?2 WHERE id = ?3",
    ),
    park: c.prepare<never, [string, string | null, string | null, number, number]>(
      "UPDATE automation_enrollments SET state = 'waiting', step_id = ?1, wait_event = ?2, wait_filter = ?3, wait_since = ?4, updated_at = ?4 WHERE id = ?5",
    ),
    end: c.prepare<never, [EnrollmentState, string | null, string | null, number, number]>(
      'UPDATE automation_enrollments SET state = ?1, step_id = ?2, reason = ?3, wait_event = NULL, wait_filter = NULL, wait_since = NULL, finished_at = ?4, updated_at = ?4 WHERE id = ?5',
    ),
    attempts: c.prepare<{ n: number }, [number, string]>('SELECT COUNT(*) AS n FROM automation_step_runs WHERE enrollment_id = ? AND step_id = ?'),
    insertRun: c.prepare<never, [number, number, string, number, string | null, string | null, string | null, number, number | null]>(
      `INSERT INTO automation_step_runs (enrollment_id, automation_id, step_id, attempt, outcome, message_id, detail, created_at, completed_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    completeOpenRun: c.prepare<never, [string, number, number, string]>(
      'UPDATE automation_step_runs SET outcome = ?1, completed_at = ?2 WHERE enrollment_id = ?3 AND step_id = ?4 AND completed_at IS NULL',
    ),
    contact: c.prepare<ContactRow, [number]>('SELECT id, list_id, email, first_name, last_name, status, fields FROM contacts WHERE id = ?'),
    contactOnList: c.prepare<ContactRow, [number, string]>(
      'SELECT id, list_id, email, first_name, last_name, status, fields FROM contacts WHERE list_id = ? AND email = ?',
    ),
    insertContact: c.prepare<{ id: number }, [number, string, string | null, string | null, string, number]>(
      "INSERT INTO contacts (list_id, email, first_name, last_name, status, fields, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, 'subscribed', ?5, ?6, ?6) RETURNING id",
    ),
    countContact: c.prepare<never, [number]>(
      "INSERT INTO contact_counts (list_id, status, n) VALUES (?, 'subscribed', 1) ON CONFLICT (list_id, status) DO UPDATE SET n = n + 1",
    ),
    updateContact: c.prepare<never, [string | null, string | null, string, string, number, number]>(
      'UPDATE contacts SET first_name = ?, last_name = ?, status = ?, fields = ?, updated_at = ? WHERE id = ?',
    ),
    customEvent: c.prepare<{ name: string; properties: string }, [number]>('SELECT name, properties FROM custom_events WHERE id = ?'),
    sentMessage: c.prepare<{ message_id: string }, [number, string]>(
      'SELECT message_id FROM automation_step_runs WHERE enrollment_id = ? AND step_id = ? AND message_id IS NOT NULL ORDER BY attempt DESC LIMIT 1',
    ),
    engaged: c.prepare<{ one: number }, [string, string]>('SELECT 1 AS one FROM events WHERE message_id = ? AND kind = ? LIMIT 1'),
    cursor: c.prepare<{ value: string }, [string]>('SELECT value FROM system_state WHERE key = ?'),
    setCursor: c.prepare<never, [string, string, number]>(
      'INSERT INTO system_state (key, value, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT (key) DO UPDATE SET value = ?2, updated_at = ?3',
    ),
    eventsAfter: c.prepare<
      { id: number; kind: string; contact_id: number | null; list_id: number | null; recipient: string | null; data: string; created_at: number },
      [number, number]
    >(
      // By id range, with the kind index kept out ("+kind"): through it SQLite would read every
      // event of these kinds ever recorded for each batch (quadratic in a million tracked events).
      `SELECT id, kind, contact_id, list_id, recipient, data, created_at FROM events
       WHERE id > ?1 AND id <= ?2 AND +kind IN ('contact.subscribed', 'contact.confirmed', '${TRACKED_EVENT_KIND}') ORDER BY id`,
    ),
    batchEnd: c.prepare<{ hi: number | null; n: number }, [number, number]>(
      'SELECT max(id) AS hi, count(*) AS n FROM (SELECT id FROM events WHERE id > ?1 ORDER BY id LIMIT ?2)',
    ),
    lastEventId: c.prepare<{ id: number | null }, []>('SELECT MAX(id) AS id FROM events'),
  }
})

/** Every automation, parsed (a handful of rows: read per batch instead of cached). */
export function loadAutomations(db: Db): Map<number, AutomationRow> {
  return new Map(
    statements(db)
      .automations.all()
      .map((r) => [
        r.id,
        {
          ...r,
          list_ids: JSON.parse(r.list_ids) as number[],
          event_filter: r.event_filter ? (JSON.parse(r.event_filter) as PropertyFilter | null) : null,
          exit_conditions: JSON.parse(r.exit_conditions) as AutomationCondition[],
          goals: JSON.parse(r.goals) as AutomationGoal[],
        },
      ]),
  )
}

/** Versions never change once written, so their parsed graphs are kept per database handle. */
const graphCache = preparedFor((_db: Db) => new Map<number, { graph: StepGraph; byId: Map<string, StepGraphStep> }>())

/** A version's graph and its steps by id. */
export function graphOf(db: Db, versionId: number): { graph: StepGraph; byId: Map<string, StepGraphStep> } {
  const cache = graphCache(db)
  let g = cache.get(versionId)
  if (!g) {
    const row = statements(db).graph.get(versionId)
    const graph = row ? (JSON.parse(row.graph) as StepGraph) : { steps: [] }
    g = { graph, byId: new Map(graph.steps.map((s) => [s.id, s])) }
    cache.set(versionId, g)
  }
  return g
}

/** Reads one enrollment (inside the caller's transaction, so what it sees is what it changes). */
export function readEnrollment(db: Db, id: number): EnrollmentRow | null {
  return statements(db).enrollment.get(id)
}

/** Reads one contact. */
export function readContact(db: Db, id: number): ContactRow | null {
  return statements(db).contact.get(id)
}

/** The properties of the custom event that started a run, or {}. */
export function triggerProperties(db: Db, e: Pick<EnrollmentRow, 'trigger_event_id'>): Record<string, unknown> {
  if (e.trigger_event_id === null) return {}
  const row = statements(db).customEvent.get(e.trigger_event_id)
  return row ? (JSON.parse(row.properties) as Record<string, unknown>) : {}
}

/**
 * Starts a run of `automation` for a contact, unless the re-entry policy says no (once: any
 * earlier run of this address; after_finish: a run still under way). The run is due at once:
 * the runner takes it from the wake-up table. Returns the enrollment id, or null.
 */
export function enrollContact(
  deps: Deps,
  automation: AutomationRow,
  contact: { id: number; email: string },
  now: number,
  triggerEventId: number | null = null,
): number | null {
  if (automation.status === 'draft' || automation.current_version_id === null) return null
  const st = statements(deps.db)
  if (automation.reentry === 'once' && st.anyRun.get(automation.id, contact.email)) return null
  if (automation.reentry === 'after_finish' && st.liveRun.get(automation.id, contact.email)) return null
  const first = graphOf(deps.db, automation.current_version_id).graph.steps[0]
  if (!first) return null
  const row = st.insertEnrollment.get(automation.id, automation.current_version_id, contact.id, contact.email, first.id, triggerEventId, now, now)!
  st.setWakeup.run(row.id, automation.id, now)
  return row.id
}

/** Which contacts of a list a set-wise enrollment takes: an id range (after, upTo], or the ids given. */
export type ContactSelection = { after: number; upTo: number } | { ids: number[] }

const bulkStatements = preparedFor((db: Db) => {
  const c = db.$client
  // The re-entry policy is a NOT EXISTS in the INSERT ... SELECT itself: nothing is read into memory.
  const policies: Record<ReentryPolicy, string> = {
    once: 'AND NOT EXISTS (SELECT 1 FROM automation_enrollments e WHERE e.automation_id = ?1 AND e.email = c.email)',
    after_finish:
      "AND NOT EXISTS (SELECT 1 FROM automation_enrollments e WHERE e.automation_id = ?1 AND e.email = c.email AND e.state IN ('active', 'waiting'))",
    always: '',
  }
  const insert = <P extends SqlValue[]>(selection: string) => {
    const forPolicy = (policy: ReentryPolicy) =>
      c.prepare<never, P>(
        `INSERT INTO automation_enrollments (automation_id, version_id, contact_id, email, state, step_id, trigger_event_id, started_at, updated_at)
         SELECT ?1, ?2, c.id, c.email, 'active', ?3, NULL, ?4, ?4 FROM contacts c
         WHERE c.list_id = ?5 AND c.status = 'subscribed' AND ${selection} ${policies[policy]}`,
      )
    return { once: forPolicy('once'), after_finish: forPolicy('after_finish'), always: forPolicy('always') } satisfies Record<ReentryPolicy, unknown>
  }
  return {
    range: c.prepare<{ n: number; hi: number | null }, [number, number, number]>(
      "SELECT COUNT(*) AS n, MAX(id) AS hi FROM (SELECT id FROM contacts WHERE list_id = ? AND status = 'subscribed' AND id > ? ORDER BY id LIMIT ?)",
    ),
    lastRun: c.prepare<{ id: number | null }, []>('SELECT MAX(id) AS id FROM automation_enrollments'),
    inRange: insert<[number, number, string, number, number, number, number]>('c.id > ?6 AND c.id <= ?7'),
    // SQLite's json_each takes the ids as one parameter (PostgreSQL: jsonb_array_elements_text).
    inIds: insert<[number, number, string, number, number, string]>('c.id IN (SELECT j.value FROM json_each(?6) AS j)'),
    wakeups: c.prepare<never, [number, number, number]>(
      'INSERT INTO automation_wakeups (enrollment_id, automation_id, due_at, claimed) SELECT id, automation_id, ?3, 0 FROM automation_enrollments WHERE id > ?1 AND automation_id = ?2',
    ),
  }
})

/**
 * Starts runs of a drip for the subscribed contacts of a list that `selection` names, as two
 * INSERT ... SELECT statements (runs, then their wake-ups, due at once): the re-entry policy
 * is a NOT EXISTS in the same statement, nothing is read into memory. A draft enrolls no one.
 * Inside a transaction. Returns how many runs it started.
 */
export function enrollSelected(deps: Deps, automation: AutomationRow, listId: number, selection: ContactSelection, now: number): number {
  if (automation.status === 'draft' || automation.current_version_id === null) return 0
  const first = graphOf(deps.db, automation.current_version_id).graph.steps[0]
  if (!first) return 0
  const st = bulkStatements(deps.db)
  const before = st.lastRun.get()?.id ?? 0
  const version = automation.current_version_id
  let inserted: number
  if ('ids' in selection) {
    if (!selection.ids.length) return 0
    inserted = st.inIds[automation.reentry].run(automation.id, version, first.id, now, listId, JSON.stringify(selection.ids)).changes
  } else inserted = st.inRange[automation.reentry].run(automation.id, version, first.id, now, listId, selection.after, selection.upTo).changes
  if (inserted) st.wakeups.run(before, automation.id, now)
  return inserted
}

/**
 * Enrolls the next `limit` subscribed contacts of a list after contact id `after` (see
 * enrollSelected). Inside a transaction. Returns how many contacts the chunk covered, how
 * many runs it started, and its last contact id.
 */
export function enrollListChunk(
  deps: Deps,
  automation: AutomationRow,
  listId: number,
  after: number,
  limit: number,
  now: number,
): { scanned: number; enrolled: number; last: number } {
  const range = bulkStatements(deps.db).range.get(listId, after, limit)!
  if (range.n === 0 || range.hi === null) return { scanned: 0, enrolled: 0, last: after }
  return { scanned: range.n, enrolled: enrollSelected(deps, automation, listId, { after, upTo: range.hi }, now), last: range.hi }
}

/** The list-join entry: drips that a contact joining `listId` enters (drafts are refused by the enrolling functions). */
function entersOnJoin(a: AutomationRow, listId: number): boolean {
  return a.kind === 'drip' && a.list_ids.includes(listId)
}

/**
 * The list-join entry for contacts a bulk import subscribed (it emits no contact.subscribed
 * per row): every drip of the list, set-wise, in the import batch's transaction, so the runs
 * commit with the rows and a resumed import neither misses nor repeats them. Returns how many
 * runs started.
 */
export function enrollListJoins(deps: Deps, listId: number, contactIds: number[], now: number): number {
  if (!contactIds.length) return 0
  let n = 0
  for (const a of loadAutomations(deps.db).values()) if (entersOnJoin(a, listId)) n += enrollSelected(deps, a, listId, { ids: contactIds }, now)
  return n
}

// ---------------------------------------------------------------------------------------
// The event log: entries, received events, exits and goals
// ---------------------------------------------------------------------------------------

/** The cursor for a fresh engine: the end of the log, so a new install does not replay old subscriptions. */
export function initialCursor(db: Db, now: number): void {
  const st = statements(db)
  if (!st.cursor.get(EVENT_CURSOR_KEY)) st.setCursor.run(EVENT_CURSOR_KEY, String(st.lastEventId.get()?.id ?? 0), now)
}

/**
 * Reads the next `limit` events of the log after the engine's cursor (every kind, by id: the
 * count read is returned) and acts on those of its kinds; the cursor moves in
 * the same transaction as the runs it started or moved, so an event is acted on exactly once.
 * contact.subscribed enrolls into drips on that list; contact.confirmed into a web form's
 * welcome drip; event.tracked enrolls into triggers,
 * satisfies waits for it, ends runs by exit conditions and jumps runs to goals.
 */
export function ingestEvents(deps: Deps, limit: number): number {
  const st = statements(deps.db)
  const after = Number(st.cursor.get(EVENT_CURSOR_KEY)?.value ?? 0)
  const { hi, n } = st.batchEnd.get(after, limit) ?? { hi: null, n: 0 }
  if (hi === null) return 0
  const rows = st.eventsAfter.all(after, hi)
  const now = deps.clock.now()
  if (!rows.length) {
    st.setCursor.run(EVENT_CURSOR_KEY, String(hi), now)
    return n
  }
  const index = automationIndex(loadAutomations(deps.db))
  const automations = index.all
  for (const ev of rows) {
    if (ev.contact_id === null) continue
    if (ev.kind === 'contact.subscribed') {
      const email = ev.recipient ?? readContact(deps.db, ev.contact_id)?.email
      if (!email) continue
      for (const a of automations) if (ev.list_id !== null && entersOnJoin(a, ev.list_id)) enrollContact(deps, a, { id: ev.contact_id, email }, now)
      continue
    }
    if (ev.kind === 'contact.confirmed') {
      // A web form's welcome drip (issue 16): started for the confirmed contact unless the
      // drip already enters everyone who joins that list (contact.subscribed did it).
      const { welcome_drip_id: dripId, email } = JSON.parse(ev.data) as { welcome_drip_id?: number | null; email?: string }
      const drip = dripId ? automations.find((a) => a.id === dripId && a.kind === 'drip') : undefined
      if (drip && email && !(ev.list_id !== null && drip.list_ids.includes(ev.list_id))) enrollContact(deps, drip, { id: ev.contact_id, email }, now)
      continue
    }
    const data = JSON.parse(ev.data) as { event: string; properties: Record<string, unknown>; custom_event_id: number; email: string }
    applyTrackedEvent(deps, index, { ...data, contact_id: ev.contact_id, at: ev.created_at }, now)
  }
  st.setCursor.run(EVENT_CURSOR_KEY, String(hi), now)
  return n
}

interface TrackedEvent {
  event: string
  properties: Record<string, unknown>
  custom_event_id: number
  email: string
  contact_id: number
  /** When it was recorded: a wait that began later does not take it. */
  at: number
}

const conditionMatches = (c: AutomationCondition, ev: TrackedEvent) => !!c.event && c.event === ev.event && matchesFilter(c.filter, ev.properties)

/**
 * The automations of one ingest batch, indexed: by id, and the triggers by event name, so a
 * tracked event looks up its triggers instead of scanning every automation. Built from the
 * table at the start of each batch, so a change to an automation counts from the next batch.
 */
interface AutomationIndex {
  all: AutomationRow[]
  byId: Map<number, AutomationRow>
  triggers: Map<string, AutomationRow[]>
}

function automationIndex(rows: Map<number, AutomationRow>): AutomationIndex {
  const triggers = new Map<string, AutomationRow[]>()
  for (const a of rows.values()) {
    if (a.kind !== 'trigger' || a.event_name === null) continue
    const list = triggers.get(a.event_name)
    if (list) list.push(a)
    else triggers.set(a.event_name, [a])
  }
  return { all: [...rows.values()], byId: rows, triggers }
}

function applyTrackedEvent(deps: Deps, index: AutomationIndex, ev: TrackedEvent, now: number): void {
  const st = statements(deps.db)
  const byId = index.byId
  // Runs under way first, so a trigger's new run is not ended by the event that started it.
  for (const run of st.liveByEmail.all(ev.email)) {
    const a = byId.get(run.automation_id)
    if (!a) continue
    if (a.exit_conditions.some((c) => conditionMatches(c, ev))) {
      endRun(deps, run, 'exited', `exit condition: event ${ev.event}`, now)
      continue
    }
    const goal = a.goals.find((g) => conditionMatches(g, ev))
    if (goal && goal.step_id !== run.step_id && graphOf(deps.db, run.version_id).byId.has(goal.step_id)) {
      if (run.state === 'waiting' && run.step_id) st.completeOpenRun.run('goal', now, run.id, run.step_id)
      st.moveTo.run(goal.step_id, now, run.id)
      st.dueNow.run(run.id, run.automation_id, now)
      continue
    }
    if (run.state === 'waiting' && run.wait_event === ev.event && run.wait_since !== null && ev.at >= run.wait_since) {
      const filter = run.wait_filter ? (JSON.parse(run.wait_filter) as PropertyFilter) : null
      if (!matchesFilter(filter, ev.properties)) continue
      const step = graphOf(deps.db, run.version_id).byId.get(run.step_id!)
      st.completeOpenRun.run('event_received', now, run.id, run.step_id!)
      const next = step?.edges?.event_received ?? null
      if (next === null) endRun(deps, run, 'finished', null, now)
      else {
        st.moveTo.run(next, now, run.id)
        st.dueNow.run(run.id, run.automation_id, now)
      }
    }
  }
  for (const a of index.triggers.get(ev.event) ?? []) {
    if (!matchesFilter(a.event_filter, ev.properties)) continue
    enrollContact(deps, a, { id: ev.contact_id, email: ev.email }, now, ev.custom_event_id)
  }
}

/** Ends a run (finished, exited or failed) and drops its wake-up. */
export function endRun(
  deps: Deps,
  run: Pick<EnrollmentRow, 'id' | 'step_id'>,
  state: 'finished' | 'exited' | 'failed',
  reason: string | null,
  now: number,
): void {
  const st = statements(deps.db)
  st.end.run(state, run.step_id, reason, now, run.id)
  st.deleteWakeup.run(run.id)
}

// ---------------------------------------------------------------------------------------
// Walking a run
// ---------------------------------------------------------------------------------------

/** Where a walk stopped: parked (a wait, or the run ended), or at a step that needs outside I/O. */
export type WalkEnd = { kind: 'parked' } | { kind: 'io'; step: StepGraphStep }

/** Records one executed step: the unique (enrollment, step, attempt) row. */
export function recordStep(
  deps: Deps,
  run: Pick<EnrollmentRow, 'id' | 'automation_id'>,
  stepId: string,
  outcome: string | null,
  now: number,
  extra: { messageId?: string | null; detail?: string | null } = {},
): void {
  const st = statements(deps.db)
  const attempt = st.attempts.get(run.id, stepId)!.n + 1
  st.insertRun.run(run.id, run.automation_id, stepId, attempt, outcome, extra.messageId ?? null, extra.detail ?? null, now, outcome === null ? null : now)
}

/** Whether a contact matches a saved segment now (compiled to SQL, evaluated on its row only). */
function inSegment(deps: Deps, contactId: number, compiled: { where: string; params: SqlValue[] }): boolean {
  const stmt = deps.db.$client.prepare<{ one: number }, SqlValue[]>(`SELECT 1 AS one FROM contacts WHERE id = ? AND (${compiled.where})`)
  try {
    return stmt.get(contactId, ...compiled.params) !== null
  } finally {
    stmt.finalize()
  }
}

function segmentMatch(deps: Deps, contactId: number, segmentId: number): boolean {
  try {
    return inSegment(deps, contactId, compiledSegment(deps, segmentId))
  } catch {
    // A deleted segment (or one whose rules no longer compile) matches no one.
    return false
  }
}

/**
 * Moves a run from where it is: a due wake-up of a waiting run completes its wait (timeout
 * for a wait for event), then the run walks on. Inside a transaction. Returns where it stopped.
 */
export function resumeRun(deps: Deps, automation: AutomationRow, run: EnrollmentRow, now: number): WalkEnd {
  const st = statements(deps.db)
  if (run.state === 'waiting') {
    const due = st.wakeup.get(run.id)
    // Parked again by another walk (or moved by an event) since this wake-up was claimed.
    if (!due || due.due_at > now) return { kind: 'parked' }
    const step = graphOf(deps.db, run.version_id).byId.get(run.step_id!)
    const outcome = step?.kind === 'wait_for_event' ? 'timeout' : 'next'
    st.completeOpenRun.run(outcome, now, run.id, run.step_id!)
    const next = step?.edges?.[outcome] ?? null
    return walk(deps, automation, run, next, now)
  }
  return walk(deps, automation, run, run.step_id, now)
}

/**
 * Walks a run through synchronous steps from `stepId`, recording each, until it parks on a
 * wait, ends, or reaches a send or webhook step (left as the run's current step for the
 * runner). Exit conditions and goals on segments are checked before every step.
 */
export function walk(deps: Deps, automation: AutomationRow, run: EnrollmentRow, stepId: string | null, now: number): WalkEnd {
  const st = statements(deps.db)
  const { byId } = graphOf(deps.db, run.version_id)
  let current = stepId
  for (let i = 0; i < MAX_CHAIN; i++) {
    if (current === null) {
      endRun(deps, { id: run.id, step_id: run.step_id }, 'finished', null, now)
      return { kind: 'parked' }
    }
    const step = byId.get(current)
    if (!step) {
      endRun(deps, { id: run.id, step_id: current }, 'failed', `the step ${current} is not in version ${run.version_id}`, now)
      return { kind: 'parked' }
    }
    run.step_id = current
    const exit = automation.exit_conditions.find((c) => c.segment_id != null && segmentMatch(deps, run.contact_id, c.segment_id))
    if (exit) {
      endRun(deps, { id: run.id, step_id: current }, 'exited', `exit condition: segment ${exit.segment_id}`, now)
      return { kind: 'parked' }
    }
    const goal = automation.goals.find(
      (g) => g.segment_id != null && g.step_id !== current && byId.has(g.step_id) && segmentMatch(deps, run.contact_id, g.segment_id),
    )
    if (goal) current = goal.step_id
    const s = byId.get(current)!
    run.step_id = current
    const settings = s.settings
    const next = (label: string) => s.edges?.[label] ?? null
    switch (s.kind) {
      case 'send':
      case 'webhook':
        st.moveTo.run(current, now, run.id)
        return { kind: 'io', step: s }
      case 'wait': {
        // Only a time-of-day wait needs the contact's zone: a duration or a date reads no row.
        const zone = waitNeedsZone(settings) ? contactZone(deps, run.contact_id, settings) : null
        const until = waitUntil(settings, now, typeof zone === 'string' ? zone : null, automation.timezone)
        recordStep(deps, run, current, null, now)
        st.park.run(current, null, null, now, run.id)
        st.setWakeup.run(run.id, run.automation_id, until)
        return { kind: 'parked' }
      }
      case 'wait_for_event': {
        recordStep(deps, run, current, null, now)
        st.park.run(current, settings.event as string, settings.filter ? JSON.stringify(settings.filter) : null, now, run.id)
        st.setWakeup.run(run.id, run.automation_id, now + (settings.timeout_seconds as number) * 1000)
        return { kind: 'parked' }
      }
      case 'condition': {
        const yes = evaluateCondition(deps, run, settings)
        recordStep(deps, run, current, yes ? 'yes' : 'no', now)
        current = next(yes ? 'yes' : 'no')
        break
      }
      case 'update_contact': {
        const detail = updateContactStep(deps, run.contact_id, settings, now)
        recordStep(deps, run, current, 'next', now, { detail })
        current = next('next')
        break
      }
      case 'add_to_list':
      case 'remove_from_list': {
        const detail = listStep(deps, run.contact_id, s.kind, settings.list_id as number, now)
        recordStep(deps, run, current, 'next', now, { detail })
        current = next('next')
        break
      }
      case 'exit':
        recordStep(deps, run, current, 'exit', now)
        endRun(deps, { id: run.id, step_id: current }, 'exited', 'exit step', now)
        return { kind: 'parked' }
      default:
        endRun(deps, { id: run.id, step_id: current }, 'failed', `unknown step kind ${s.kind}`, now)
        return { kind: 'parked' }
    }
  }
  endRun(deps, run, 'failed', `more than ${MAX_CHAIN} steps without a wait`, now)
  return { kind: 'parked' }
}

/** Whether a wait step's end depends on the contact's time zone (neither a duration nor a date). */
function waitNeedsZone(settings: Record<string, unknown>): boolean {
  return typeof settings.duration_seconds !== 'number' && typeof settings.until !== 'string'
}

/** The contact's time zone from its custom field (`timezone_field`, default `timezone`), or null. */
function contactZone(deps: Deps, contactId: number, settings: Record<string, unknown>): unknown {
  const contact = readContact(deps.db, contactId)
  const zoneField = typeof settings.timezone_field === 'string' ? settings.timezone_field : 'timezone'
  return contact ? (((JSON.parse(contact.fields) as Record<string, unknown>)[zoneField] as string | undefined) ?? null) : null
}

/** A condition step: segment rules on the contact, a property of the triggering event, or engagement with an earlier send. */
function evaluateCondition(deps: Deps, run: EnrollmentRow, settings: Record<string, unknown>): boolean {
  if (settings.type === 'segment') {
    if (typeof settings.segment_id === 'number') return segmentMatch(deps, run.contact_id, settings.segment_id)
    try {
      return inSegment(deps, run.contact_id, compileInput(deps, settings.rules))
    } catch {
      return false
    }
  }
  if (settings.type === 'event') return propertyCondition(triggerProperties(deps.db, run), settings.property as string, settings.op as string, settings.value)
  const sent = statements(deps.db).sentMessage.get(run.id, settings.step_id as string)
  if (!sent) return false
  return statements(deps.db).engaged.get(sent.message_id, settings.activity === 'clicked' ? 'message.clicked' : 'message.opened') !== null
}

/** The update contact step: names, custom fields (checked as the API checks them; bad values are skipped) and status. */
function updateContactStep(deps: Deps, contactId: number, settings: Record<string, unknown>, now: number): string | null {
  const st = statements(deps.db)
  const c = readContact(deps.db, contactId)
  if (!c) return 'the contact no longer exists'
  const merged = applyFieldValues(
    fieldDefinitions(deps),
    settings.fields as Record<string, unknown> | undefined,
    JSON.parse(c.fields) as Record<string, unknown>,
  )
  const status = (settings.status as ContactStatus | undefined) ?? c.status
  const text = (v: unknown, old: string | null) => (v === undefined ? old : v === null || v === '' ? null : String(v).slice(0, 200))
  st.updateContact.run(text(settings.first_name, c.first_name), text(settings.last_name, c.last_name), status, JSON.stringify(merged.values), now, c.id)
  emitStatusChange(deps.db, now, { id: c.id, email: c.email, listId: c.list_id, from: c.status, to: status, actorKeyId: null })
  const problems = Object.entries(merged.errors).map(([k, v]) => `${k}: ${v.join('; ')}`)
  return problems.length ? `fields not changed: ${problems.join(', ')}` : null
}

/**
 * Add to list: the address joins the list subscribed (with the contact's names and fields)
 * unless it is there already, whatever its status there (never re-subscribes someone who left).
 * Remove from list: its contact there becomes unsubscribed (the row and its history stay).
 */
function listStep(deps: Deps, contactId: number, kind: 'add_to_list' | 'remove_from_list', listId: number, now: number): string | null {
  const st = statements(deps.db)
  const c = readContact(deps.db, contactId)
  if (!c) return 'the contact no longer exists'
  const there = st.contactOnList.get(listId, c.email)
  if (kind === 'add_to_list') {
    if (there) return `already on list ${listId} (${there.status})`
    let row: { id: number } | null
    try {
      row = st.insertContact.get(listId, c.email, c.first_name, c.last_name, c.fields, now)
    } catch {
      // The list was deleted since the version was saved (its foreign key refuses the row).
      return `list ${listId} no longer exists`
    }
    if (!row) return `list ${listId} no longer exists`
    st.countContact.run(listId)
    emitStatusChange(deps.db, now, { id: row.id, email: c.email, listId, from: null, to: 'subscribed', actorKeyId: null })
    return null
  }
  if (!there) return `not on list ${listId}`
  if (there.status === 'unsubscribed') return null
  st.updateContact.run(there.first_name, there.last_name, 'unsubscribed', there.fields, now, there.id)
  emitStatusChange(deps.db, now, { id: there.id, email: there.email, listId, from: there.status, to: 'unsubscribed', actorKeyId: null })
  return null
}

/** After a send or webhook step committed its record: the run's next step (null = the end). */
export function nextAfter(step: StepGraphStep): string | null {
  return step.edges?.next ?? null
}

/** The attempt number the next execution of a step in a run gets (1 on the first visit). */
export function nextAttempt(db: Db, enrollmentId: number, stepId: string): number {
  return statements(db).attempts.get(enrollmentId, stepId)!.n + 1
}

/** Drops a run's wake-up (a run that ended while a runner held it). */
export function dropWakeup(db: Db, enrollmentId: number): void {
  statements(db).deleteWakeup.run(enrollmentId)
}

/** Marks a run's wake-up as no longer held (paused automation, or a walk that stopped early). */
export function releaseWakeup(db: Db, enrollmentId: number): void {
  statements(db).release.run(enrollmentId)
}
