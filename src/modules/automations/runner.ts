import http from 'node:http'
import https from 'node:https'
import type { Deps } from '../../deps'
import { preparedFor } from '../../db/prepared'
import type { StepGraphStep } from '../../db/schema/automations'
import { AppError } from '../../lib/errors'
import { acceptMessages, prepareMessages, withTextParts, type AcceptContext } from '../messages/service'
import type { SendInput } from '../messages/compose'
import { buildVariables, compileVersion, renderVersion, type CompiledVersion } from '../templates/engine'
import { templateSendInput } from '../templates/service'
import type { Lookup } from '../webhooks/address'
import { postWebhook, signatureHeaders } from '../webhooks/post'
import { signingSecrets } from '../webhooks/service'
import {
  dropWakeup,
  endRun,
  nextAttempt,
  graphOf,
  ingestEvents,
  initialCursor,
  loadAutomations,
  nextAfter,
  readContact,
  readEnrollment,
  recordStep,
  releaseWakeup,
  resumeRun,
  triggerProperties,
  walk,
  type AutomationRow,
  type ContactRow,
  type EnrollmentRow,
  type WalkEnd,
} from './runs'

/**
 * The automation engine's asynchronous half, in the server process: a poller of the one
 * wake-up table (`due_at` index; no scan of runs, no cron) and of the event log after its
 * cursor. Each due run is walked in transactions of the group committer, so a batch of runs
 * shares one fsync; sends go through the accept service (suppressions, tracking, webhooks)
 * with the step's record written in the same transaction as the message.
 */
export interface RunnerParts {
  /** Idle polling interval (ms). */
  pollMs?: number
  /** Wake-ups claimed per turn. */
  batch?: number
  /** DNS for the webhook step (tests point it at loopback). */
  lookup?: Lookup
}

/** Thrown inside a step's transaction when the run moved meanwhile (an event, an exit): the step's writes roll back. */
class RunMoved extends Error {}

const statements = preparedFor((db) => {
  const c = db.$client
  return {
    unclaimAll: c.prepare<never, []>('UPDATE automation_wakeups SET claimed = 0 WHERE claimed = 1'),
    // A batch is walked under one savepoint; only if a run throws is it walked again with one
    // savepoint per run (a savepoint per run costs a page copy for every page a run touches).
    batchSavepoint: c.prepare<never, []>('SAVEPOINT automation_batch'),
    batchRelease: c.prepare<never, []>('RELEASE automation_batch'),
    batchRollback: c.prepare<never, []>('ROLLBACK TO automation_batch'),
    savepoint: c.prepare<never, []>('SAVEPOINT automation_run'),
    release: c.prepare<never, []>('RELEASE automation_run'),
    rollback: c.prepare<never, []>('ROLLBACK TO automation_run'),
    // Walks the due_at index; runs of paused automations stay where they are (held). A plain
    // read: the batch is walked in this same transaction, so only the runs left for the
    // asynchronous send and webhook steps (and failed ones) are then marked as held.
    due: c.prepare<{ enrollment_id: number }, [number, number]>(
      `SELECT w.enrollment_id FROM automation_wakeups w JOIN automations a ON a.id = w.automation_id
       WHERE w.claimed = 0 AND w.due_at <= ?1 AND a.status = 'active' ORDER BY w.due_at LIMIT ?2`,
    ),
    hold: c.prepare<never, [number]>('UPDATE automation_wakeups SET claimed = 1 WHERE enrollment_id = ?'),
    webhook: c.prepare<{ url: string; secret: string; previous_secret: string | null; previous_secret_until: number | null; enabled: number }, [number]>(
      'SELECT url, secret, previous_secret, previous_secret_until, enabled FROM webhooks WHERE id = ?',
    ),
  }
})

/** Inline content of send steps, compiled once per version and step (versions never change). */
const inlineCache = preparedFor(() => new Map<string, CompiledVersion | { error: string }>())

/** Flat template variables of a run: the contact's fields and the triggering event's properties (`event.*`). */
function variablesOf(contact: ContactRow, properties: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = { email: contact.email, first_name: contact.first_name ?? '', last_name: contact.last_name ?? '' }
  for (const [k, v] of Object.entries(JSON.parse(contact.fields) as Record<string, unknown>)) if (v !== null && v !== undefined) out[`fields.${k}`] = String(v)
  const name = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/
  const flatten = (prefix: string, value: unknown, depth: number) => {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      if (depth >= 3) return
      for (const [k, v] of Object.entries(value)) if (name.test(k)) flatten(`${prefix}.${k}`, v, depth + 1)
    } else if (value !== null && value !== undefined) out[prefix] = typeof value === 'string' ? value : JSON.stringify(value)
  }
  flatten('event', properties, 0)
  return out
}

/** The message of a send step for one run: a pinned template version, or the step's inline content. */
export function sendInputFor(deps: Deps, run: EnrollmentRow, step: StepGraphStep, contact: ContactRow): SendInput {
  const s = step.settings
  const variables = variablesOf(contact, triggerProperties(deps.db, run))
  const common = {
    track_opens: typeof s.track_opens === 'boolean' ? s.track_opens : undefined,
    track_clicks: typeof s.track_clicks === 'boolean' ? s.track_clicks : undefined,
  }
  if (typeof s.template_id === 'number') {
    const input = templateSendInput(deps, {
      templateId: s.template_id,
      version: typeof s.template_version === 'number' ? s.template_version : undefined,
      variables,
      to: contact.email,
      from: typeof s.from === 'string' ? s.from : undefined,
    })
    return { ...input, ...common }
  }
  const key = `${run.version_id}:${step.id}`
  const cache = inlineCache(deps.db)
  let compiled = cache.get(key)
  if (!compiled) {
    const result = compileVersion({
      subject: String(s.subject ?? ''),
      html: typeof s.html === 'string' ? s.html : null,
      text: typeof s.text === 'string' ? s.text : null,
    })
    compiled = result.ok
      ? result.compiled
      : {
          error: Object.entries(result.errors)
            .map(([k, v]) => `${k}: ${v.join('; ')}`)
            .join(', '),
        }
    cache.set(key, compiled)
  }
  if ('error' in compiled) throw new AppError('validation_failed', `The content of step ${step.id} does not compile: ${compiled.error}`)
  const built = buildVariables(variables)
  const vars = built.ok ? built.variables : (buildVariables({ email: contact.email }) as { ok: true; variables: never }).variables
  const rendered = renderVersion(compiled, { to: contact.email, versionId: 0, variables: vars, spinTags: new Map() })
  const from = typeof s.from === 'string' ? s.from : deps.config.default_from
  if (!from) throw new AppError('validation_failed', `Step ${step.id} has no from, and the server has no default_from.`)
  return {
    from,
    to: [contact.email],
    reply_to: typeof s.reply_to === 'string' ? [s.reply_to] : undefined,
    subject: rendered.subject,
    html: rendered.html,
    text: rendered.text,
    ...common,
  }
}

export type AutomationRunner = ReturnType<typeof createAutomationRunner>

/** The engine; `start()` polls in the background, `tick()` does one turn (tests drive it by hand). */
export function createAutomationRunner(deps: Deps, parts: RunnerParts = {}) {
  const st = statements(deps.db)
  const pollMs = parts.pollMs ?? 250
  const batch = parts.batch ?? 1000
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }
  const ctx: AcceptContext = { source: 'automation', apiKeyId: null }
  let timer: ReturnType<typeof setTimeout> | null = null
  let running = false
  let turn: Promise<unknown> | null = null

  /** The run must still be where this step began, else the step's transaction rolls back. */
  const guard = (id: number, step: StepGraphStep): EnrollmentRow => {
    const run = readEnrollment(deps.db, id)
    if (!run || run.state !== 'active' || run.step_id !== step.id) throw new RunMoved()
    return run
  }

  /** After a send or webhook committed, the rest of the walk, in that same transaction. */
  const onward = (a: AutomationRow, run: EnrollmentRow, step: StepGraphStep, now: number): WalkEnd => walk(deps, a, run, nextAfter(step), now)

  async function sendStep(a: AutomationRow, run: EnrollmentRow, step: StepGraphStep): Promise<WalkEnd> {
    const contact = readContact(deps.db, run.contact_id)
    if (!contact || contact.status !== 'subscribed') {
      // Drip mail goes only to subscribed contacts; the step is recorded as skipped and the run goes on.
      return deps.commits.run(() => {
        const now = deps.clock.now()
        const r = guard(run.id, step)
        recordStep(deps, r, step.id, 'next', now, { detail: `skipped: the contact is ${contact?.status ?? 'gone'}` })
        return onward(a, r, step, now)
      })
    }
    let end: WalkEnd = { kind: 'parked' }
    try {
      await acceptMessages(deps, {
        ctx,
        prepare: async () => prepareMessages(deps, await withTextParts(deps, [sendInputFor(deps, run, step, contact)]), ctx),
        respond: (accepted) => {
          const now = deps.clock.now()
          const r = guard(run.id, step)
          recordStep(deps, r, step.id, 'next', now, {
            messageId: accepted[0]!.id,
            detail: accepted[0]!.queued === 0 ? 'suppressed' : null,
          })
          end = onward(a, r, step, now)
          return { status: 202, body: { id: accepted[0]!.id } }
        },
      })
      return end
    } catch (e) {
      if (e instanceof RunMoved) throw e
      if (!(e instanceof AppError)) throw e
      // The message cannot be built (a template gone, a sender not allowed): the run fails here, saying why.
      const reason = e.details ? `${e.message} ${JSON.stringify(e.details)}` : e.message
      return deps.commits.run(() => {
        const now = deps.clock.now()
        const r = guard(run.id, step)
        recordStep(deps, r, step.id, 'failed', now, { detail: reason })
        endRun(deps, r, 'failed', `step ${step.id}: ${reason}`, now)
        return { kind: 'parked' } as WalkEnd
      })
    }
  }

  async function webhookStep(a: AutomationRow, run: EnrollmentRow, step: StepGraphStep): Promise<WalkEnd> {
    const hook = st.webhook.get(step.settings.webhook_id as number)
    let detail: string
    if (!hook || !hook.enabled) detail = 'skipped: the webhook is deleted or disabled'
    else {
      const now = deps.clock.now()
      const contact = readContact(deps.db, run.contact_id)
      const attempt = nextAttempt(deps.db, run.id, step.id)
      const id = `auto_${run.id}_${step.id}_${attempt}`
      const body = JSON.stringify({
        type: 'automation.step',
        timestamp: new Date(now).toISOString(),
        data: {
          automation_id: run.automation_id,
          enrollment_id: run.id,
          step_id: step.id,
          contact: contact
            ? {
                id: contact.id,
                list_id: contact.list_id,
                email: contact.email,
                first_name: contact.first_name,
                last_name: contact.last_name,
                fields: JSON.parse(contact.fields),
              }
            : null,
          event_properties: triggerProperties(deps.db, run),
        },
      })
      const headers = signatureHeaders(signingSecrets(hook, now).map(deps.secrets.open), id, Math.floor(now / 1000), body)
      // Outside any transaction: the call may take seconds. A crash before the record commits
      // repeats the call after a restart, with the same webhook-id, so receivers deduplicate.
      const result = await postWebhook({
        url: hook.url,
        headers,
        body,
        timeoutMs: deps.config.webhook_timeout_ms,
        allowPrivate: deps.config.webhooks_allow_private,
        lookup: parts.lookup,
        now,
        agents,
      })
      detail = result.ok ? `HTTP ${result.status}` : `failed: ${result.error}`
    }
    return deps.commits.run(() => {
      const now = deps.clock.now()
      const r = guard(run.id, step)
      recordStep(deps, r, step.id, 'next', now, { detail })
      return onward(a, r, step, now)
    })
  }

  /** Moves a claimed run on from where it is, inside the caller's transaction. */
  const resumeOne = (id: number, automations: Map<number, AutomationRow>): WalkEnd => {
    const run = readEnrollment(deps.db, id)
    if (!run) return { kind: 'parked' }
    if (run.state !== 'active' && run.state !== 'waiting') {
      dropWakeup(deps.db, id)
      return { kind: 'parked' }
    }
    const a = automations.get(run.automation_id)
    if (!a || a.status !== 'active') {
      releaseWakeup(deps.db, id)
      return { kind: 'parked' }
    }
    return resumeRun(deps, a, run, deps.clock.now())
  }

  /** Takes a run that stopped at a send or webhook step through it and on, until it parks. */
  async function continueIo(id: number, first: WalkEnd, automations: Map<number, AutomationRow>): Promise<void> {
    const resume = () => deps.commits.run(() => resumeOne(id, automations))
    let end = first
    for (let i = 0; end.kind === 'io' && i < 100; i++) {
      const run = readEnrollment(deps.db, id)
      const a = run && automations.get(run.automation_id)
      if (!run || !a || run.state !== 'active' || run.step_id !== end.step.id) {
        end = await resume()
        continue
      }
      try {
        end = end.step.kind === 'send' ? await sendStep(a, run, end.step) : await webhookStep(a, run, end.step)
      } catch (e) {
        if (!(e instanceof RunMoved)) throw e
        end = await resume()
      }
    }
    if (end.kind === 'io') await deps.commits.run(() => releaseWakeup(deps.db, id))
  }

  /**
   * One turn: reads new events, then takes due runs `batch` at a time and walks them in one
   * transaction. If a run throws, the batch is rolled back and walked again one savepoint per
   * run, so the failing run alone is rolled back and stays held (claimed) until the next start
   * instead of being spun on. Runs that reach a send or webhook step are held and go on
   * asynchronously, their commits grouped. Returns the counts.
   */
  type Walked = { id: number; end: WalkEnd; error: unknown }

  /** Walks due runs inside the caller's transaction: all under one savepoint, or one by one if any throws. */
  const walkBatch = (ids: number[], automations: Map<number, AutomationRow>): Walked[] => {
    st.batchSavepoint.run()
    try {
      const out = ids.map((id): Walked => ({ id, end: resumeOne(id, automations), error: null }))
      st.batchRelease.run()
      return out
    } catch {
      st.batchRollback.run()
      st.batchRelease.run()
    }
    return ids.map((id): Walked => {
      st.savepoint.run()
      try {
        const end = resumeOne(id, automations)
        st.release.run()
        return { id, end, error: null }
      } catch (error) {
        st.rollback.run()
        st.release.run()
        return { id, end: { kind: 'parked' }, error }
      }
    })
  }

  async function tick(): Promise<{ events: number; runs: number }> {
    let events = 0
    for (;;) {
      const n = await deps.commits.run(() => ingestEvents(deps, 1000))
      events += n
      if (n < 1000) break
    }
    let runs = 0
    for (;;) {
      const automations = loadAutomations(deps.db)
      const walked = await deps.commits.run(() => {
        const ids = st.due.all(deps.clock.now(), batch).map((r) => r.enrollment_id)
        const out = walkBatch(ids, automations)
        for (const w of out) if (w.error || w.end.kind === 'io') st.hold.run(w.id)
        return out
      })
      const io = walked.filter((w) => w.end.kind === 'io')
      const results = await Promise.allSettled(io.map((w) => continueIo(w.id, w.end, automations)))
      const failures = [
        ...walked.filter((w) => w.error).map((w) => ({ id: w.id, error: w.error })),
        ...results.flatMap((r, i) => (r.status === 'rejected' ? [{ id: io[i]!.id, error: r.reason as unknown }] : [])),
      ]
      // A bug or a disk error: logged; the run stays claimed until the next start, never spun on.
      for (const f of failures) deps.log.error('automation run failed', { enrollment_id: f.id, error: (f.error as Error)?.message })
      runs += walked.length
      if (walked.length < batch) break
    }
    return { events, runs }
  }

  const loop = () => {
    timer = null
    if (!running) return
    turn = tick()
      .catch((e) => deps.log.error('automation runner turn failed', { error: (e as Error).message }))
      .finally(() => {
        turn = null
        if (running) timer = setTimeout(loop, pollMs)
      })
  }

  return {
    tick,
    /** Turns until nothing is due and no event is unread. */
    async drain(): Promise<void> {
      for (let i = 0; i < 10_000; i++) {
        const { events, runs } = await tick()
        if (!events && !runs) return
      }
    },
    /** Clears the claims a stopped process left (its runs are due again), then polls. */
    start(): void {
      if (running) return
      st.unclaimAll.run()
      initialCursor(deps.db, deps.clock.now())
      running = true
      loop()
    },
    /** A run or event came in: poll now instead of at the next interval. */
    wake(): void {
      if (running && timer) {
        clearTimeout(timer)
        loop()
      }
    },
    async stop(): Promise<void> {
      running = false
      if (timer) clearTimeout(timer)
      timer = null
      await turn
      agents.http.destroy()
      agents.https.destroy()
    },
    /** For tests: clear a crashed runner's claims and set the event cursor as start() does, without polling. */
    prepare(): void {
      st.unclaimAll.run()
      initialCursor(deps.db, deps.clock.now())
    },
    graphOf: (versionId: number) => graphOf(deps.db, versionId),
  }
}
