import { and, eq, inArray, isNull, ne, or, type SQL } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { automations, enrollments } from '../../db/schema'
import type { StepGraph, StepGraphStep } from '../../db/schema/automations'
import type { Deps } from '../../deps'
import { requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import type { AutomationView, RunView } from '../automations/model'
import {
  createAutomation,
  deleteAutomations,
  duplicateAutomation,
  getAutomation,
  getRun,
  listVersions,
  STOPPED_REASON,
  stopAutomation,
  updateAutomation,
} from '../automations/service'
import { cursorPage, decodeId, encodeId, ListOf, PaginationQuery, tryDecodeId } from './ids'
import { deleted, refuse } from './shapes'

/**
 * resend.automations onto Mailroom's triggers (issue 16): a Resend automation starts with a
 * trigger step naming a custom event, which is exactly a native trigger (`event_name`); its
 * other steps and connections become the native step graph (the step a trigger connects to
 * is the graph's first). Every call is one of the native service's operations. A step that
 * has no native counterpart is refused with 422 naming it, never dropped. Drips (entry by
 * joining a list) have no Resend counterpart and are not on this surface.
 */

type ResendStep = { key: string; type: string; config?: Record<string, unknown> }
type ResendConnection = { from: string; to: string; type?: string }

/** Longest wait the native graph accepts (graph.ts): also a wait for event without a timeout. */
const MAX_WAIT_SECONDS = 3 * 365 * 86_400

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 }
const DURATION = /^\s*(\d+)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)\s*$/i

/** A step Mailroom cannot run: 422 naming the step (and the field), as the native graph check does. */
function stepError(key: string, field: string | null, why: string): never {
  const at = field ? `steps.${key}.${field}` : `steps.${key}`
  throw new AppError('validation_failed', `The step ${key} cannot run in Mailroom.`, { [at]: [why] })
}

/** Resend's durations ("30 minutes", "2 days", "1h") in seconds; a step error otherwise. */
function secondsOf(key: string, field: string, text: unknown): number {
  const m = typeof text === 'string' ? DURATION.exec(text) : null
  if (!m) return stepError(key, field, 'must be a number and a unit (seconds, minutes, hours, days, weeks), such as "2 days"')
  return Number(m[1]) * UNITS[m[2]![0]!.toLowerCase()]!
}

/** Seconds as Resend writes a duration: the largest unit that divides them. */
function durationOf(seconds: number): string {
  for (const [unit, n] of [
    ['week', 604_800],
    ['day', 86_400],
    ['hour', 3600],
    ['minute', 60],
  ] as const)
    if (seconds % n === 0) return `${seconds / n} ${unit}${seconds / n === 1 ? '' : 's'}`
  return `${seconds} second${seconds === 1 ? '' : 's'}`
}

const isVar = (v: unknown) => typeof v === 'object' && v !== null && 'var' in v

/** A rule field on the event payload (`event.plan`) as the native property path (`plan`). */
function payloadPath(key: string, field: string, value: unknown): string {
  if (typeof value !== 'string' || !/^(event|payload)\.[^.].*/.test(value))
    stepError(key, field, 'only fields of the event payload (event.<name>) can be tested; contact fields are not available in a step')
  return value.slice(value.indexOf('.') + 1)
}

/** Resend's operators -> the native condition's (graph.ts PROPERTY_OPS). */
const OPS: Record<string, string> = {
  eq: 'eq',
  neq: 'ne',
  gt: 'gt',
  gte: 'gte',
  lt: 'lt',
  lte: 'lte',
  contains: 'contains',
  exists: 'exists',
  is_empty: 'not_exists',
}
const OPS_BACK = Object.fromEntries(Object.entries(OPS).map(([k, v]) => [v, k]))

/** A wait for event's filter rule -> the native equality filter: `eq` rules, alone or under one `and`. */
function filterOf(key: string, rule: unknown): Record<string, unknown> {
  const r = rule as { type?: string; field?: unknown; operator?: string; value?: unknown; rules?: unknown[] }
  const rules = r.type === 'and' && Array.isArray(r.rules) ? r.rules : [r]
  const out: Record<string, unknown> = {}
  for (const one of rules as Array<typeof r>) {
    if (one?.type !== 'rule' || one.operator !== 'eq')
      stepError(key, 'config.filter_rule', 'only `eq` rules (alone or under one `and`) can filter a wait for an event')
    out[payloadPath(key, 'config.filter_rule', one.field)] = one.value
  }
  return out
}

/** One Resend step (not the trigger) as a native step without edges. */
function nativeStep(s: ResendStep): StepGraphStep {
  const c = s.config ?? {}
  const step = (kind: string, settings: Record<string, unknown>): StepGraphStep => ({ id: s.key, kind, settings })
  switch (s.type) {
    case 'delay':
      return step('wait', { duration_seconds: secondsOf(s.key, 'config.duration', c.duration) })
    case 'send_email': {
      if (c.topic_id != null) stepError(s.key, 'config.topic_id', 'Mailroom has no topics; unsubscribes apply per list')
      if (c.reply_to != null) stepError(s.key, 'config.reply_to', "a template step sends with the template's Reply-To")
      const template = c.template as { id?: unknown; variables?: Record<string, unknown> } | undefined
      const from = typeof c.from === 'string' ? { from: c.from } : {}
      if (!template) {
        // Not in the SDK's types, but the native step's inline content: kept when given.
        if (typeof c.subject !== 'string') stepError(s.key, 'config.template', 'is required')
        return step('send', { subject: c.subject, html: c.html, text: c.text, ...from })
      }
      if (c.subject != null) stepError(s.key, 'config.subject', "a template step sends the template's subject")
      if (template.variables && Object.keys(template.variables).length)
        stepError(
          s.key,
          'config.template.variables',
          "a template's variables come from the contact and the event payload ({{event.<name>}}), not from the step",
        )
      const id = typeof template.id === 'string' ? tryDecodeId('template', template.id) : null
      if (id === null) stepError(s.key, 'config.template.id', 'no template with this id')
      return step('send', { template_id: id, ...from })
    }
    case 'wait_for_event': {
      if (typeof c.event_name !== 'string' || !c.event_name) stepError(s.key, 'config.event_name', 'is required')
      return step('wait_for_event', {
        event: c.event_name,
        // Resend may wait without end; Mailroom's longest wait is three years.
        timeout_seconds: c.timeout == null ? MAX_WAIT_SECONDS : secondsOf(s.key, 'config.timeout', c.timeout),
        ...(c.filter_rule == null ? {} : { filter: filterOf(s.key, c.filter_rule) }),
      })
    }
    case 'condition': {
      if (c.type !== 'rule') stepError(s.key, 'config.type', 'a condition tests one rule; `and` / `or` groups are not available (chain condition steps)')
      const op = OPS[c.operator as string]
      if (!op) stepError(s.key, 'config.operator', `must be one of: ${Object.keys(OPS).join(', ')}`)
      return step('condition', { type: 'event', property: payloadPath(s.key, 'config.field', c.field), op, value: c.value })
    }
    case 'contact_update': {
      for (const [k, v] of Object.entries(c))
        if (isVar(v) || (k === 'properties' && Object.values((v as Record<string, unknown>) ?? {}).some(isVar)))
          stepError(s.key, `config.${k}`, 'values from variables ({ var }) are not available; give the value')
      const settings: Record<string, unknown> = {}
      if (c.first_name !== undefined) settings.first_name = c.first_name
      if (c.last_name !== undefined) settings.last_name = c.last_name
      if (c.unsubscribed !== undefined) settings.status = c.unsubscribed ? 'unsubscribed' : 'subscribed'
      if (c.properties !== undefined) settings.fields = c.properties
      return step('update_contact', settings)
    }
    case 'add_to_segment': {
      const id = typeof c.segment_id === 'string' ? tryDecodeId('segment', c.segment_id) : null
      if (id === null) stepError(s.key, 'config.segment_id', 'no segment with this id')
      return step('add_to_list', { list_id: id })
    }
    case 'contact_delete':
      return stepError(s.key, 'type', 'automations do not delete contacts in Mailroom (update the contact, or unsubscribe it)')
    default:
      return stepError(s.key, 'type', `no step type ${s.type}`)
  }
}

/** Resend's connection type -> the native outcome label, by the kind of the step it leaves. */
function labelOf(from: StepGraphStep, type: string): string | null {
  switch (type) {
    case 'default':
      return from.kind === 'wait_for_event' ? 'event_received' : from.kind === 'condition' ? null : 'next'
    case 'condition_met':
      return from.kind === 'condition' ? 'yes' : null
    case 'condition_not_met':
      return from.kind === 'condition' ? 'no' : null
    case 'event_received':
    case 'timeout':
      return from.kind === 'wait_for_event' ? type : null
    default:
      return null
  }
}

/** Resend's steps and connections -> the native trigger's event name and step graph (the entry first). */
function toNative(steps: ResendStep[], connections: ResendConnection[]): { event_name: string; graph: StepGraph } {
  const triggers = steps.filter((s) => s.type === 'trigger')
  if (triggers.length !== 1) refuse('steps', 'an automation has exactly one step of type trigger')
  const trigger = triggers[0]!
  const eventName = trigger.config?.event_name
  if (typeof eventName !== 'string' || !eventName) stepError(trigger.key, 'config.event_name', 'is required')
  const native = steps.filter((s) => s !== trigger).map(nativeStep)
  const byKey = new Map(native.map((s) => [s.id, s]))
  let entry: string | null = null
  for (const c of connections) {
    const to = byKey.get(c.to)
    if (!to) stepError(c.to, null, `a connection from ${c.from} leads to no step with this key`)
    if (c.from === trigger.key) {
      if (entry !== null) stepError(trigger.key, null, 'the trigger connects to one step')
      entry = c.to
      continue
    }
    const from = byKey.get(c.from)
    if (!from) stepError(c.from, null, `a connection to ${c.to} leaves from no step with this key`)
    const label = labelOf(from, c.type ?? 'default')
    if (!label) stepError(c.from, null, `a ${from.kind === 'wait' ? 'delay' : from.kind} step has no connection of type ${c.type ?? 'default'}`)
    from.edges ??= {}
    if (from.edges[label]) stepError(c.from, null, `has two connections of type ${c.type ?? 'default'}`)
    from.edges[label] = c.to
  }
  if (entry === null) stepError(trigger.key, null, 'the trigger connects to no step: add a connection from it')
  const first = byKey.get(entry)!
  return { event_name: eventName, graph: { steps: [first, ...native.filter((s) => s !== first)] } }
}

/** Native kinds -> Resend's step types (a native-only kind, such as webhook, keeps its name). */
const TYPES: Record<string, string> = { send: 'send_email', wait: 'delay', update_contact: 'contact_update', add_to_list: 'add_to_segment' }
const CONNECTIONS: Record<string, string> = {
  next: 'default',
  yes: 'condition_met',
  no: 'condition_not_met',
  event_received: 'event_received',
  timeout: 'timeout',
}

/** A native step's settings as Resend's step config (native-only settings are shown as they are). */
function configOf(s: StepGraphStep): Record<string, unknown> {
  const c = s.settings
  switch (s.kind) {
    case 'send': {
      const from = typeof c.from === 'string' ? { from: c.from } : {}
      return typeof c.template_id === 'number'
        ? { template: { id: encodeId('template', c.template_id) }, ...from }
        : { subject: c.subject, html: c.html, text: c.text, ...from }
    }
    case 'wait':
      return typeof c.duration_seconds === 'number' ? { duration: durationOf(c.duration_seconds) } : c
    case 'wait_for_event': {
      const filter = Object.entries((c.filter as Record<string, unknown> | undefined) ?? {}).map(([k, v]) => ({
        type: 'rule',
        field: `event.${k}`,
        operator: 'eq',
        value: v,
      }))
      return {
        event_name: c.event,
        timeout: typeof c.timeout_seconds === 'number' ? durationOf(c.timeout_seconds) : null,
        ...(filter.length ? { filter_rule: filter.length === 1 ? filter[0] : { type: 'and', rules: filter } } : {}),
      }
    }
    case 'condition':
      return c.type === 'event' ? { type: 'rule', field: `event.${String(c.property)}`, operator: OPS_BACK[c.op as string] ?? c.op, value: c.value } : c
    case 'update_contact': {
      const out: Record<string, unknown> = {}
      if (c.first_name !== undefined) out.first_name = c.first_name
      if (c.last_name !== undefined) out.last_name = c.last_name
      if (c.status !== undefined) out.unsubscribed = c.status === 'unsubscribed'
      if (c.fields !== undefined) out.properties = c.fields
      return out
    }
    case 'add_to_list':
      return { segment_id: encodeId('segment', c.list_id as number) }
    default:
      return c
  }
}

const statusOf = (v: Pick<AutomationView, 'status'>) => (v.status === 'active' ? ('enabled' as const) : ('disabled' as const))

/** A native trigger as Resend's list shows an automation. */
function itemOf(v: AutomationView) {
  return { id: encodeId('automation', v.id), name: v.name, status: statusOf(v), created_at: v.created_at, updated_at: v.updated_at }
}

/** A native trigger as Resend's get shows one: the trigger step, then the graph's steps and edges. */
function fullOf(v: AutomationView) {
  const steps = v.graph.steps as StepGraphStep[]
  // The trigger is not a native step: it gets a key no step uses.
  let trigger = 'trigger'
  for (let i = 1; steps.some((s) => s.id === trigger); i++) trigger = `trigger_${i}`
  return {
    object: 'automation' as const,
    ...itemOf(v),
    steps: [
      { key: trigger, type: 'trigger', config: { event_name: v.event_name } },
      ...steps.map((s) => ({ key: s.id, type: TYPES[s.kind] ?? s.kind, config: configOf(s) })),
    ],
    connections: [
      ...(steps[0] ? [{ from: trigger, to: steps[0].id, type: 'default' }] : []),
      ...steps.flatMap((s) => Object.entries(s.edges ?? {}).map(([label, to]) => ({ from: s.id, to, type: CONNECTIONS[label] ?? label }))),
    ],
  }
}

/** The native trigger behind a Resend automation id; not_found (in Resend's words) when there is none. */
function automationOf(deps: Deps, id: string): AutomationView {
  try {
    return getAutomation(deps, 'trigger', decodeId('automation', id))
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw new AppError('not_found', 'Automation not found.')
    throw e
  }
}

// Runs ------------------------------------------------------------------------------------

/**
 * Run statuses: a run under way (active or waiting) is `running`; `completed` when it
 * finished, or left by an exit step or an exit condition; `cancelled` when `stop` ended it;
 * `failed` as natively.
 */
const RUN_STATUSES = ['running', 'completed', 'failed', 'cancelled'] as const
function runStatusOf(r: Pick<RunView, 'state' | 'reason'>): (typeof RUN_STATUSES)[number] {
  if (r.state === 'active' || r.state === 'waiting') return 'running'
  if (r.state === 'failed') return 'failed'
  return r.state === 'exited' && r.reason === STOPPED_REASON ? 'cancelled' : 'completed'
}

/** The SQL of one Resend run status over the native runs table. */
function runStatusWhere(status: (typeof RUN_STATUSES)[number]): SQL | undefined {
  switch (status) {
    case 'running':
      return inArray(enrollments.state, ['active', 'waiting'])
    case 'failed':
      return eq(enrollments.state, 'failed')
    case 'cancelled':
      return and(eq(enrollments.state, 'exited'), eq(enrollments.reason, STOPPED_REASON))
    case 'completed':
      return or(eq(enrollments.state, 'finished'), and(eq(enrollments.state, 'exited'), or(isNull(enrollments.reason), ne(enrollments.reason, STOPPED_REASON))))
  }
}

function runItemOf(r: RunView) {
  const ended = r.finished_at
  return { id: encodeId('automation_run', r.id), status: runStatusOf(r), started_at: r.started_at, completed_at: ended, created_at: r.started_at }
}

/** A run with its executed steps; each step's type is read from the version the run is on. */
function runOf(deps: Deps, automationId: number, r: RunView) {
  const graph = listVersions(deps, 'trigger', automationId).find((v) => v.version === r.version)?.graph.steps ?? []
  const kinds = new Map(graph.map((s) => [s.id, s.kind]))
  const last = r.steps.length - 1
  return {
    object: 'automation_run' as const,
    ...runItemOf(r),
    steps: r.steps.map((s, i) => {
      const open = s.outcome === null
      const failed = r.state === 'failed' && i === last
      const kind = kinds.get(s.step_id) ?? 'removed'
      return {
        key: s.step_id,
        type: TYPES[kind] ?? kind,
        status: failed ? 'failed' : !open ? 'completed' : r.state === 'waiting' ? 'waiting' : 'running',
        output: open ? null : { outcome: s.outcome, ...(s.message_id ? { message_id: s.message_id } : {}), ...(s.detail ? { detail: s.detail } : {}) },
        error: failed ? { message: r.reason ?? 'failed' } : null,
        started_at: s.at,
        completed_at: open ? null : s.at,
        created_at: s.at,
      }
    }),
  }
}

// Schemas ---------------------------------------------------------------------------------

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])
const StatusEnum = t.Union([t.Literal('enabled'), t.Literal('disabled')])
const Item = t.Object({ id: t.String(), name: t.String(), status: t.String(), created_at: t.String(), updated_at: Nullable(t.String()) })
const Step = t.Object({ key: t.String({ minLength: 1 }), type: t.String(), config: t.Optional(t.Record(t.String(), t.Unknown())) })
const Connection = t.Object({ from: t.String(), to: t.String(), type: t.Optional(t.String()) })
const Full = t.Composite([
  t.Object({ object: t.Literal('automation') }),
  Item,
  t.Object({
    steps: t.Array(t.Object({ key: t.String(), type: t.String(), config: t.Record(t.String(), t.Unknown()) })),
    connections: t.Array(t.Object({ from: t.String(), to: t.String(), type: t.String() })),
  }),
])
const Ack = t.Object({ object: t.Literal('automation'), id: t.String() })
const RunItem = t.Object({ id: t.String(), status: t.String(), started_at: Nullable(t.String()), completed_at: Nullable(t.String()), created_at: t.String() })
const RunFull = t.Composite([
  t.Object({ object: t.Literal('automation_run') }),
  RunItem,
  t.Object({
    steps: t.Array(
      t.Object({
        key: t.String(),
        type: t.String(),
        status: t.String(),
        output: Nullable(t.Record(t.String(), t.Unknown())),
        error: Nullable(t.Record(t.String(), t.Unknown())),
        started_at: Nullable(t.String()),
        completed_at: Nullable(t.String()),
        created_at: t.String(),
      }),
    ),
  }),
])

/** /compat/resend/automations */
export function automationRoutes(deps: Deps) {
  const tags = ['resend-compatible']
  return new Elysia()
    .post(
      '/automations',
      ({ body }) => {
        const { event_name, graph } = toNative(body.steps, body.connections)
        // Resend runs an automation on every matching event: re-entry `always`.
        const v = createAutomation(deps, 'trigger', {
          name: body.name,
          status: body.status === 'enabled' ? 'active' : 'draft',
          reentry: 'always',
          event_name,
          graph,
        })
        return { object: 'automation' as const, id: encodeId('automation', v.id) }
      },
      {
        body: t.Object({
          name: t.String({ minLength: 1, maxLength: 200 }),
          status: t.Optional(StatusEnum),
          steps: t.Array(Step, { minItems: 1 }),
          connections: t.Array(Connection),
        }),
        response: { 200: Ack },
        detail: requires('triggers.create', 'Create an automation (Resend-compatible)', {
          tags,
          description:
            "A native trigger on the trigger step's event; the other steps become its graph (422 naming a step that has no counterpart). `disabled` (default) is a draft.",
        }),
      },
    )
    .get(
      '/automations',
      ({ query }) => {
        const where = and(
          eq(automations.kind, 'trigger'),
          query.status === undefined ? undefined : query.status === 'enabled' ? eq(automations.status, 'active') : ne(automations.status, 'active'),
        )
        const page = cursorPage(deps.db, automations, 'automation', query, where)
        return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((i) => itemOf(getAutomation(deps, 'trigger', i))) }
      },
      {
        query: t.Object({ ...PaginationQuery.properties, status: t.Optional(StatusEnum) }),
        response: { 200: ListOf(Item) },
        detail: requires('triggers.read', 'List automations (Resend-compatible)', {
          tags,
          description: 'Native triggers, newest first (drips are not on this surface).',
        }),
      },
    )
    .get('/automations/:id', ({ params }) => fullOf(automationOf(deps, params.id)), {
      response: { 200: Full },
      detail: requires('triggers.read', 'Get an automation with its steps and connections (Resend-compatible)', { tags }),
    })
    .patch(
      '/automations/:id',
      ({ params, body }) => {
        const v = automationOf(deps, params.id)
        if ((body.steps === undefined) !== (body.connections === undefined))
          refuse(body.steps ? 'connections' : 'steps', 'steps and connections are replaced together')
        const native = body.steps && body.connections ? toNative(body.steps, body.connections) : null
        updateAutomation(deps, 'trigger', v.id, {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.status !== undefined ? { status: body.status === 'enabled' ? ('active' as const) : ('draft' as const) } : {}),
          ...(native ?? {}),
        })
        return { object: 'automation' as const, id: params.id }
      },
      {
        body: t.Object({
          name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
          status: t.Optional(StatusEnum),
          steps: t.Optional(t.Array(Step, { minItems: 1 })),
          connections: t.Optional(t.Array(Connection)),
        }),
        response: { 200: Ack },
        detail: requires('triggers.update', 'Update an automation (Resend-compatible)', {
          tags,
          description:
            'New steps save a new version of the graph: runs under way finish on theirs. `disabled` is a native draft (nothing enrolls, runs under way are held), `enabled` is active.',
        }),
      },
    )
    .delete(
      '/automations/:id',
      ({ params }) => {
        deleteAutomations(deps, 'trigger', [automationOf(deps, params.id).id])
        return deleted('automation', params.id)
      },
      {
        response: { 200: t.Composite([Ack, t.Object({ deleted: t.Boolean() })]) },
        detail: requires('triggers.delete', 'Remove an automation (Resend-compatible)', {
          tags,
          description: 'With its versions and runs; mail already sent stays.',
        }),
      },
    )
    .post(
      '/automations/:id/duplicate',
      ({ params }) => ({
        object: 'automation' as const,
        id: encodeId('automation', duplicateAutomation(deps, 'trigger', automationOf(deps, params.id).id).id),
      }),
      { response: { 200: Ack }, detail: requires('triggers.create', 'Duplicate an automation, disabled (Resend-compatible)', { tags }) },
    )
    .post(
      '/automations/:id/stop',
      ({ params }) => {
        stopAutomation(deps, 'trigger', automationOf(deps, params.id).id)
        return { object: 'automation' as const, id: params.id, status: 'disabled' as const }
      },
      {
        response: { 200: t.Composite([Ack, t.Object({ status: t.Literal('disabled') })]) },
        detail: requires('triggers.update', 'Stop an automation and cancel its runs (Resend-compatible)', {
          tags,
          description: 'Disabled (natively a draft: nothing enrolls) and every run under way ends, `cancelled` here (natively exited, reason stopped).',
        }),
      },
    )
    .get(
      '/automations/:id/runs',
      ({ params, query }) => {
        const id = automationOf(deps, params.id).id
        const wanted = query.status?.split(',').map((s) => s.trim()) ?? []
        for (const s of wanted) if (!(RUN_STATUSES as readonly string[]).includes(s)) refuse('status', `must be among ${RUN_STATUSES.join(', ')}`)
        const byStatus = wanted.length ? or(...wanted.map((s) => runStatusWhere(s as (typeof RUN_STATUSES)[number]))) : undefined
        const page = cursorPage(deps.db, enrollments, 'automation_run', query, and(eq(enrollments.automation_id, id), byStatus))
        return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((r) => runItemOf(getRun(deps, 'trigger', id, r))) }
      },
      {
        query: t.Object({
          ...PaginationQuery.properties,
          status: t.Optional(t.String({ description: 'running, completed, failed, cancelled; several comma-separated.' })),
        }),
        response: { 200: ListOf(RunItem) },
        detail: requires('triggers.read', "An automation's runs (Resend-compatible)", { tags }),
      },
    )
    .get(
      '/automations/:id/runs/:run_id',
      ({ params }) => {
        const id = automationOf(deps, params.id).id
        try {
          return runOf(deps, id, getRun(deps, 'trigger', id, decodeId('automation_run', params.run_id, 'run')))
        } catch (e) {
          if (e instanceof AppError && e.code === 'not_found') throw new AppError('not_found', 'Run not found.')
          throw e
        }
      },
      { response: { 200: RunFull }, detail: requires('triggers.read', 'One run of an automation with its steps (Resend-compatible)', { tags }) },
    )
}
