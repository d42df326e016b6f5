import { CONTACT_STATUSES, type ContactStatus } from '../../db/schema/audience-values'
import { checkEmail } from '../../lib/email'
import { checkFieldInput, mergeFieldValues, type FieldDefinition } from '../custom-fields/values'

/**
 * The checks of a contact that need no database. Apart from the writer (writer.ts) so that
 * the import's worker thread, which runs them on every row, loads neither drizzle nor the
 * events module (issue 18: the worker's memory).
 */

/** One contact as a client (or an import row) describes it. */
export interface ContactInput {
  email?: unknown
  first_name?: unknown
  last_name?: unknown
  status?: unknown
  fields?: Record<string, unknown>
}

export const NAME_MAX = 200

/** Checks a first or last name; undefined when absent, null when empty. */
export function checkName(value: unknown, field: string, errors: Record<string, string[]>): string | null | undefined {
  if (value === undefined) return undefined
  if (value === null) return null
  if (typeof value !== 'string') return void (errors[field] = ['must be a string'])
  const text = value.trim()
  if (text.length > NAME_MAX) return void (errors[field] = [`must be at most ${NAME_MAX} characters`])
  // Names end up in To: headers; no line breaks or control characters (RFC 5322 section 2.2).
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(text)) return void (errors[field] = ['must not contain line breaks or control characters'])
  return text === '' ? null : text
}

/** Checks a status value; undefined when absent. */
export function checkStatus(value: unknown, errors: Record<string, string[]>): ContactStatus | undefined {
  if (value === undefined) return undefined
  if (typeof value === 'string' && (CONTACT_STATUSES as readonly string[]).includes(value)) return value as ContactStatus
  errors.status = [`must be one of: ${CONTACT_STATUSES.join(', ')}`]
  return undefined
}

/**
 * A contact as checkContact accepted it: address normalised, names and status checked,
 * custom field values checked (errors among them do not refuse the row outright: with mode
 * `skip` an existing contact is skipped whatever the values). Plain data, so a bulk import
 * can check rows in its worker thread and hand them to the writer.
 */
export interface CheckedContact {
  email: string
  first_name: string | null | undefined
  last_name: string | null | undefined
  status: ContactStatus | undefined
  /** The custom field values given, checked (null clears one), for merging over an existing contact. */
  fieldInput: { values: Record<string, unknown>; errors: Record<string, string[]> }
  /** JSON of the custom field values of a new contact (defaults applied), or null when they do not make one (see newErrors). */
  newFields: string | null
  newErrors: Record<string, string[]> | null
}

export type ContactCheck = { ok: true; contact: CheckedContact } | { ok: false; email: string | null; errors: Record<string, string[]> }

/** Checks one contact as a client (or an import row) describes it, without the database. */
export function checkContact(input: ContactInput, defs: ReadonlyMap<string, FieldDefinition>, coerce = false): ContactCheck {
  const errors: Record<string, string[]> = {}
  const emailCheck = checkEmail(input.email)
  if (!emailCheck.ok) errors.email = [emailCheck.error]
  const first = checkName(input.first_name, 'first_name', errors)
  const last = checkName(input.last_name, 'last_name', errors)
  const status = checkStatus(input.status, errors)
  if (input.fields !== undefined && (typeof input.fields !== 'object' || input.fields === null || Array.isArray(input.fields)))
    errors.fields = ['must be an object']
  const fieldInput = errors.fields ? null : checkFieldInput(defs, input.fields, coerce)
  if (!emailCheck.ok || Object.keys(errors).length) {
    // Every failing field in one answer (issue 13): the custom field values' own errors too.
    return { ok: false, email: emailCheck.ok ? emailCheck.email : null, errors: { ...errors, ...fieldInput?.errors } }
  }
  const asNew = mergeFieldValues(defs, fieldInput!, null)
  const valid = Object.keys(asNew.errors).length === 0
  return {
    ok: true,
    contact: {
      email: emailCheck.email,
      first_name: first,
      last_name: last,
      status,
      fieldInput: fieldInput!,
      newFields: valid ? JSON.stringify(asNew.values) : null,
      newErrors: valid ? null : asNew.errors,
    },
  }
}
