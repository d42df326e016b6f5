import type { PropertyFilter, StepGraph, StepGraphStep } from '../../db/schema/automations'
import type { ErrorDetails } from '../../lib/errors'

/**
 * The step graph of an automation, without the database: which step kinds exist, which
 * outcome labels each may follow, the checks a graph must pass (422 naming the step), the
 * property filter of triggers and waits, and wait arithmetic. The engine (runner.ts) and the
 * API (service.ts) share it.
 */

export const STEP_KINDS = ['send', 'wait', 'wait_for_event', 'condition', 'update_contact', 'add_to_list', 'remove_from_list', 'webhook', 'exit'] as const
export type StepKind = (typeof STEP_KINDS)[number]

/** The outcome labels a step kind's edges may carry. A missing `next` ends the run there (finished). */
export const OUTCOMES: Record<StepKind, readonly string[]> = {
  send: ['next'],
  wait: ['next'],
  wait_for_event: ['event_received', 'timeout'],
  condition: ['yes', 'no'],
  update_contact: ['next'],
  add_to_list: ['next'],
  remove_from_list: ['next'],
  webhook: ['next'],
  exit: [],
}

/** Kinds that park a run on a wake-up: only a cycle through one of them is allowed. */
export const WAITING_KINDS: ReadonlySet<string> = new Set(['wait', 'wait_for_event'])

export const MAX_STEPS = 200
const STEP_ID = /^[A-Za-z0-9_-]{1,64}$/
const TIME_OF_DAY = /^([01]\d|2[0-3]):([0-5]\d)$/
const MAX_WAIT_SECONDS = 3 * 365 * 86_400

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const isPositiveInt = (v: unknown, max = Number.MAX_SAFE_INTEGER): v is number => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= max

/** What the graph checks must know about the database. */
export interface GraphCatalog {
  templateExists(id: number): boolean
  listExists(id: number): boolean
  segmentExists(id: number): boolean
  webhookExists(id: number): boolean
}

/** The settings problems of one step, as messages under `steps.<id>.<field>`. */
function checkSettings(step: StepGraphStep, catalog: GraphCatalog, ids: ReadonlySet<string>, add: (field: string, message: string) => void): void {
  const s = step.settings
  switch (step.kind as StepKind) {
    case 'send': {
      if (s.template_id !== undefined && s.template_id !== null) {
        if (!isPositiveInt(s.template_id)) add('template_id', 'must be a template id')
        else if (!catalog.templateExists(s.template_id)) add('template_id', `no template with id ${s.template_id}`)
        if (s.template_version !== undefined && s.template_version !== null && !isPositiveInt(s.template_version))
          add('template_version', 'must be a version number')
      } else {
        if (typeof s.subject !== 'string' || !s.subject.trim()) add('subject', 'is required without template_id')
        if (typeof s.html !== 'string' && typeof s.text !== 'string') add('html', 'html or text is required without template_id')
      }
      if (s.from !== undefined && s.from !== null && typeof s.from !== 'string') add('from', 'must be a string')
      break
    }
    case 'wait': {
      const given = ['duration_seconds', 'until', 'time_of_day'].filter((k) => s[k] !== undefined && s[k] !== null)
      if (given.length !== 1) add('settings', 'give exactly one of duration_seconds, until, time_of_day')
      if (s.duration_seconds != null && !isPositiveInt(s.duration_seconds, MAX_WAIT_SECONDS)) add('duration_seconds', 'must be 1 to 3 years in seconds')
      if (s.until != null && (typeof s.until !== 'string' || Number.isNaN(Date.parse(s.until)))) add('until', 'must be an ISO 8601 date-time')
      if (s.time_of_day != null && (typeof s.time_of_day !== 'string' || !TIME_OF_DAY.test(s.time_of_day))) add('time_of_day', 'must be HH:MM (24 h)')
      if (s.timezone != null && (typeof s.timezone !== 'string' || !isTimeZone(s.timezone))) add('timezone', 'must be an IANA time zone')
      break
    }
    case 'wait_for_event':
      if (typeof s.event !== 'string' || !s.event.trim()) add('event', 'is required')
      if (s.filter != null && !isObject(s.filter)) add('filter', 'must be an object')
      if (!isPositiveInt(s.timeout_seconds, MAX_WAIT_SECONDS)) add('timeout_seconds', 'is required: 1 to 3 years in seconds')
      break
    case 'condition': {
      const type = s.type
      if (type === 'segment') {
        if (s.segment_id != null) {
          if (!isPositiveInt(s.segment_id) || !catalog.segmentExists(s.segment_id)) add('segment_id', `no segment with id ${String(s.segment_id)}`)
        } else if (!isObject(s.rules)) add('rules', 'segment_id or rules is required')
      } else if (type === 'event') {
        if (typeof s.property !== 'string' || !s.property) add('property', 'is required')
        if (!(PROPERTY_OPS as readonly unknown[]).includes(s.op)) add('op', `must be one of: ${PROPERTY_OPS.join(', ')}`)
      } else if (type === 'engagement') {
        if (typeof s.step_id !== 'string' || !ids.has(s.step_id)) add('step_id', 'must name a send step of this graph')
        if (s.activity !== 'opened' && s.activity !== 'clicked') add('activity', 'must be opened or clicked')
      } else add('type', 'must be segment, event or engagement')
      break
    }
    case 'update_contact': {
      const keys = ['first_name', 'last_name', 'status', 'fields'].filter((k) => s[k] !== undefined)
      if (!keys.length) add('settings', 'give at least one of first_name, last_name, status, fields')
      if (s.status !== undefined && !['subscribed', 'unsubscribed'].includes(s.status as string)) add('status', 'must be subscribed or unsubscribed')
      if (s.fields !== undefined && !isObject(s.fields)) add('fields', 'must be an object')
      break
    }
    case 'add_to_list':
    case 'remove_from_list':
      if (!isPositiveInt(s.list_id) || !catalog.listExists(s.list_id)) add('list_id', `no list with id ${String(s.list_id)}`)
      break
    case 'webhook':
      if (!isPositiveInt(s.webhook_id) || !catalog.webhookExists(s.webhook_id)) add('webhook_id', `no webhook with id ${String(s.webhook_id)}`)
      break
    case 'exit':
      break
  }
}

/**
 * Checks a graph: unique step ids, known kinds, settings, edges with the kind's labels that
 * point at existing steps, and no cycle without a wait (a run would loop at full speed,
 * sending on every turn). Errors are keyed `steps.<step id>[.<field>]`, so an editor can put
 * each message on its step.
 */
export function checkGraph(graph: unknown, catalog: GraphCatalog): ErrorDetails {
  const errors: ErrorDetails = {}
  const add = (key: string, message: string) => (errors[key] ??= []).push(message)
  if (!isObject(graph) || !Array.isArray(graph.steps)) return { graph: ['must be {"steps": [...]}'] }
  const steps = graph.steps as unknown[]
  if (steps.length === 0) add('graph.steps', 'must have at least one step')
  if (steps.length > MAX_STEPS) add('graph.steps', `must have at most ${MAX_STEPS} steps`)
  const ids = new Set<string>()
  steps.forEach((raw, i) => {
    if (!isObject(raw) || typeof raw.id !== 'string' || !STEP_ID.test(raw.id)) return add(`graph.steps.${i}.id`, 'must be 1-64 letters, digits, _ or -')
    if (ids.has(raw.id)) add(`steps.${raw.id}`, 'the step id is used twice')
    ids.add(raw.id)
  })
  if (Object.keys(errors).length) return errors
  for (const step of steps as StepGraphStep[]) {
    const key = `steps.${step.id}`
    if (!(STEP_KINDS as readonly string[]).includes(step.kind)) {
      add(`${key}.kind`, `must be one of: ${STEP_KINDS.join(', ')}`)
      continue
    }
    if (step.settings === undefined) step.settings = {}
    if (!isObject(step.settings)) {
      add(`${key}.settings`, 'must be an object')
      continue
    }
    checkSettings(step, catalog, ids, (field, message) => add(field === 'settings' ? `${key}.settings` : `${key}.settings.${field}`, message))
    if (step.edges !== undefined && !isObject(step.edges)) {
      add(`${key}.edges`, 'must be an object of outcome -> step id')
      continue
    }
    for (const [label, target] of Object.entries(step.edges ?? {})) {
      if (!OUTCOMES[step.kind as StepKind].includes(label))
        add(`${key}.edges.${label}`, `a ${step.kind} step has no outcome ${label} (it has: ${OUTCOMES[step.kind as StepKind].join(', ') || 'none'})`)
      else if (typeof target !== 'string' || !ids.has(target)) add(`${key}.edges.${label}`, `no step with id ${String(target)}`)
    }
  }
  if (Object.keys(errors).length) return errors
  const loop = cycleWithoutWait(graph as unknown as StepGraph)
  if (loop) add(`steps.${loop}`, 'is on a cycle without a wait: add a wait step to the loop')
  return errors
}

/** A step on a cycle that passes through no waiting step, or null. */
export function cycleWithoutWait(graph: StepGraph): string | null {
  const byId = new Map(graph.steps.map((s) => [s.id, s]))
  const state = new Map<string, 1 | 2>()
  const visit = (id: string): string | null => {
    state.set(id, 1)
    const step = byId.get(id)!
    // Edges out of a waiting step break any cycle through it.
    if (!WAITING_KINDS.has(step.kind)) {
      for (const target of Object.values(step.edges ?? {})) {
        if (WAITING_KINDS.has(byId.get(target)?.kind ?? '')) continue
        if (state.get(target) === 1) return target
        if (!state.has(target)) {
          const found = visit(target)
          if (found) return found
        }
      }
    }
    state.set(id, 2)
    return null
  }
  for (const s of graph.steps)
    if (!state.has(s.id)) {
      const found = visit(s.id)
      if (found) return found
    }
  return null
}

// ---------------------------------------------------------------------------------------
// Property filters and event conditions
// ---------------------------------------------------------------------------------------

/** The value at a dotted path of an object (`order.total`), or undefined. */
export function propertyAt(properties: Record<string, unknown>, path: string): unknown {
  let v: unknown = properties
  for (const part of path.split('.')) {
    if (!isObject(v) || !Object.hasOwn(v, part)) return undefined
    v = v[part]
  }
  return v
}

/**
 * Whether properties pass a filter: every key (a dotted path) must equal the value, or be
 * one of the values of an array. An absent or empty filter passes everything.
 */
export function matchesFilter(filter: PropertyFilter | null | undefined, properties: Record<string, unknown>): boolean {
  if (!filter) return true
  for (const [path, expected] of Object.entries(filter)) {
    const actual = propertyAt(properties, path)
    if (Array.isArray(expected) ? !expected.some((e) => sameValue(e, actual)) : !sameValue(expected, actual)) return false
  }
  return true
}

const sameValue = (a: unknown, b: unknown) => a === b || (typeof a === 'object' && a !== null && JSON.stringify(a) === JSON.stringify(b))

export const PROPERTY_OPS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'contains', 'exists', 'not_exists'] as const

/** A condition step on the triggering event's properties. */
export function propertyCondition(properties: Record<string, unknown>, path: string, op: string, value: unknown): boolean {
  const actual = propertyAt(properties, path)
  switch (op) {
    case 'exists':
      return actual !== undefined && actual !== null
    case 'not_exists':
      return actual === undefined || actual === null
    case 'eq':
      return sameValue(actual, value)
    case 'ne':
      return !sameValue(actual, value)
    case 'contains':
      return Array.isArray(actual) ? actual.some((a) => sameValue(a, value)) : typeof actual === 'string' && actual.includes(String(value))
    default: {
      const a = Number(actual)
      const b = Number(value)
      if (actual === null || actual === undefined || Number.isNaN(a) || Number.isNaN(b)) return false
      return op === 'gt' ? a > b : op === 'gte' ? a >= b : op === 'lt' ? a < b : a <= b
    }
  }
}

// ---------------------------------------------------------------------------------------
// Waits
// ---------------------------------------------------------------------------------------

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/** Offset of `zone` from UTC at instant `at`, in ms (positive east of Greenwich). */
function zoneOffset(zone: string, at: number): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(at))
  const n = (type: string) => Number(parts.find((p) => p.type === type)!.value)
  const wall = Date.UTC(n('year'), n('month') - 1, n('day'), n('hour'), n('minute'), n('second'))
  return wall - Math.floor(at / 1000) * 1000
}

/** The next instant after `now` when the wall clock in `zone` shows `hh:mm` (today if still ahead, else tomorrow). */
export function nextTimeOfDay(now: number, timeOfDay: string, zone: string): number {
  const [h, m] = timeOfDay.split(':').map(Number) as [number, number]
  const offset = zoneOffset(zone, now)
  const local = new Date(now + offset)
  let candidate = Date.UTC(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate(), h, m) - offset
  if (candidate <= now) candidate += 86_400_000
  // Across a daylight-saving change the offset of the target day differs: correct by it.
  return candidate + (offset - zoneOffset(zone, candidate))
}

/** When a wait step ends for a run entering it at `now`. */
export function waitUntil(settings: Record<string, unknown>, now: number, contactZone: string | null, fallbackZone: string | null): number {
  if (typeof settings.duration_seconds === 'number') return now + settings.duration_seconds * 1000
  if (typeof settings.until === 'string') return Math.max(now, Date.parse(settings.until))
  const zone = [contactZone, settings.timezone as string | undefined, fallbackZone].find((z): z is string => typeof z === 'string' && isTimeZone(z)) ?? 'UTC'
  return nextTimeOfDay(now, settings.time_of_day as string, zone)
}

/** The step a run starts at: the graph's first. */
export function entryStep(graph: StepGraph): StepGraphStep {
  return graph.steps[0]!
}
