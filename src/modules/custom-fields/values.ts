import type { CustomFieldType } from '../../db/schema/audience-values'

/**
 * Custom field values: checking what a client sends against the field definitions. Pure
 * (no database), so contacts, bulk import and segments share one set of rules.
 *
 * Values are JSON on the wire and in storage: text and one_of are strings, number a finite
 * number, boolean true or false, date a calendar date "YYYY-MM-DD". `null` clears a value.
 * Imports read every cell as text, so `coerce: true` also accepts "42", "true"/"false"
 * (and yes/no, 1/0) and trims text.
 */
export interface FieldDefinition {
  key: string
  type: CustomFieldType
  options: string[]
  required: boolean
  default_value: unknown
}

export const MAX_TEXT_LENGTH = 2000
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

function isCalendarDate(text: string): boolean {
  const m = DATE.exec(text)
  if (!m) return false
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])))
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3])
}

type Checked = { ok: true; value: unknown } | { ok: false; error: string }

/** Checks (and with `coerce`, converts from text) one value for one field. */
export function checkFieldValue(def: FieldDefinition, raw: unknown, coerce = false): Checked {
  if (raw === null) return def.required ? { ok: false, error: 'is required and cannot be cleared' } : { ok: true, value: null }
  let value = raw
  if (coerce && typeof raw === 'string') {
    const text = raw.trim()
    if (text === '') return def.required ? { ok: false, error: 'is required' } : { ok: true, value: null }
    if (def.type === 'number') value = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text) ? Number(text) : raw
    else if (def.type === 'boolean') {
      const lower = text.toLowerCase()
      value = ['true', 'yes', '1'].includes(lower) ? true : ['false', 'no', '0'].includes(lower) ? false : raw
    } else value = text
  }
  switch (def.type) {
    case 'text':
      if (typeof value !== 'string') return { ok: false, error: 'must be a string' }
      if (value.length > MAX_TEXT_LENGTH) return { ok: false, error: `must be at most ${MAX_TEXT_LENGTH} characters` }
      return { ok: true, value }
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? { ok: true, value } : { ok: false, error: 'must be a number' }
    case 'boolean':
      return typeof value === 'boolean' ? { ok: true, value } : { ok: false, error: 'must be true or false' }
    case 'date':
      return typeof value === 'string' && isCalendarDate(value) ? { ok: true, value } : { ok: false, error: 'must be a date as YYYY-MM-DD' }
    case 'one_of':
      return typeof value === 'string' && def.options.includes(value) ? { ok: true, value } : { ok: false, error: `must be one of: ${def.options.join(', ')}` }
  }
}

/**
 * Checks a set of values against the definitions, without looking at what a contact has:
 * each value checked (and with `coerce` converted), `null` kept as "clear this value".
 * Unknown keys are errors (a typo must not silently drop data). Errors are keyed
 * `fields.<key>`. Pure, so a bulk import can run it away from the database (in its worker).
 */
export function checkFieldInput(
  defs: ReadonlyMap<string, FieldDefinition>,
  input: Record<string, unknown> | undefined,
  coerce = false,
): { values: Record<string, unknown>; errors: Record<string, string[]> } {
  const values: Record<string, unknown> = {}
  const errors: Record<string, string[]> = {}
  for (const [key, raw] of Object.entries(input ?? {})) {
    const def = defs.get(key)
    if (!def) {
      errors[`fields.${key}`] = ['is not a custom field; GET /api/v2/custom-fields lists them']
      continue
    }
    const checked = checkFieldValue(def, raw, coerce)
    if (!checked.ok) errors[`fields.${key}`] = [checked.error]
    else values[key] = checked.value
  }
  return { values, errors }
}

/**
 * Merges checked values (checkFieldInput) over `current`. On create (`current` null),
 * missing fields take their default, and required fields must end up set.
 */
export function mergeFieldValues(
  defs: ReadonlyMap<string, FieldDefinition>,
  checked: { values: Record<string, unknown>; errors: Record<string, string[]> },
  current: Record<string, unknown> | null,
): { values: Record<string, unknown>; errors: Record<string, string[]> } {
  const values: Record<string, unknown> = { ...(current ?? {}) }
  const errors: Record<string, string[]> = { ...checked.errors }
  for (const [key, value] of Object.entries(checked.values)) {
    if (value === null) delete values[key]
    else values[key] = value
  }
  for (const def of defs.values()) {
    if (current === null && values[def.key] === undefined && def.default_value != null) values[def.key] = def.default_value
    if (def.required && values[def.key] === undefined && !errors[`fields.${def.key}`]) errors[`fields.${def.key}`] = ['is required']
  }
  return { values, errors }
}

/** Checks a set of values against the definitions and merges it over `current` (checkFieldInput, then mergeFieldValues). */
export function applyFieldValues(
  defs: ReadonlyMap<string, FieldDefinition>,
  input: Record<string, unknown> | undefined,
  current: Record<string, unknown> | null,
  coerce = false,
): { values: Record<string, unknown>; errors: Record<string, string[]> } {
  return mergeFieldValues(defs, checkFieldInput(defs, input, coerce), current)
}
