import type { ContactStatus } from '../../db/schema/audience-values'
import type { FieldDefinition } from '../custom-fields/values'
import { checkContact, type CheckedContact, type ContactInput } from '../contacts/check'
import { readSource, type ImportFormat, type SourceItem } from './source'

/**
 * The part of an import that needs no database: reading the file and checking each row
 * (address, names, status, custom field values). It runs in a worker thread
 * (prepare-worker.ts) while the runner writes the previous batch, so on two cores reading
 * and checking overlap with SQLite's inserts; the runner falls back to running it in its
 * own thread when no worker can start.
 *
 * A batch crosses the thread boundary as one flat array (cheaper to copy than objects),
 * ROW_WIDTH slots per row:
 *   checked row: row number, address, first name, last name, status, new-contact fields JSON, extra
 *   broken row:  row number, null, reason, raw text, -, -, -
 * `extra` is null unless the writer may need more than an insert: in `update` mode, or when
 * the values do not make a new contact (a required field missing). It is then the JSON of
 * the checked field input, the new-contact errors and the raw row.
 */
export const ROW_WIDTH = 7

export interface PrepareOptions {
  mapping: Record<string, string>
  defs: ReadonlyMap<string, FieldDefinition>
  mode: 'skip' | 'update'
}

export interface PreparedBatch {
  /** Rows in the batch (checked and broken), for rows_done. */
  rows: number
  data: unknown[]
}

export type PreparedRow = { row: number; contact: CheckedContact; raw: string | null } | { row: number; error: string; raw: string }

/** Empty cells are "no value": they never clear what a contact already has. */
export function rowToContact(values: Record<string, unknown>, mapping: Record<string, string>): ContactInput {
  const input: ContactInput & { fields: Record<string, unknown> } = { fields: {} }
  for (const [target, source] of Object.entries(mapping)) {
    const v = values[source]
    if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) continue
    if (target.startsWith('fields.')) input.fields[target.slice(7)] = v
    else if (target === 'status') input.status = typeof v === 'string' ? v.trim().toLowerCase() : v
    else (input as unknown as Record<string, unknown>)[target] = v
  }
  return input
}

export function describeErrors(errors: Record<string, string[]>): string {
  return Object.entries(errors)
    .map(([field, messages]) => `${field} ${messages.join('; ')}`)
    .join('; ')
}

/** Checks source items and encodes them as one flat array (see ROW_WIDTH). */
export function prepareItems(items: SourceItem[], opts: PrepareOptions): PreparedBatch {
  const data: unknown[] = []
  for (const item of items) {
    if ('error' in item) {
      data.push(item.row, null, item.error, item.raw, null, null, null)
      continue
    }
    const checked = checkContact(rowToContact(item.values, opts.mapping), opts.defs, true)
    if (!checked.ok) {
      data.push(item.row, null, describeErrors(checked.errors), item.raw, null, null, null)
      continue
    }
    const c = checked.contact
    const extra = opts.mode === 'update' || c.newFields === null ? JSON.stringify({ i: c.fieldInput, e: c.newErrors, r: item.raw }) : null
    data.push(item.row, c.email, c.first_name, c.last_name, c.status, c.newFields, extra)
  }
  return { rows: items.length, data }
}

/** Row `i` of a prepared batch. */
export function preparedRow(data: unknown[], i: number): PreparedRow {
  const at = i * ROW_WIDTH
  const row = data[at] as number
  if (data[at + 1] === null) return { row, error: data[at + 2] as string, raw: data[at + 3] as string }
  const extra =
    data[at + 6] === null ? null : (JSON.parse(data[at + 6] as string) as { i: CheckedContact['fieldInput']; e: CheckedContact['newErrors']; r: string })
  return {
    row,
    raw: extra?.r ?? null,
    contact: {
      email: data[at + 1] as string,
      first_name: data[at + 2] as string | null | undefined,
      last_name: data[at + 3] as string | null | undefined,
      status: data[at + 4] as ContactStatus | undefined,
      newFields: data[at + 5] as string | null,
      fieldInput: extra?.i ?? { values: {}, errors: {} },
      newErrors: extra?.e ?? null,
    },
  }
}

/** The import's rows after `skip`, checked, `batchRows` at a time. */
export async function* preparedBatches(
  path: string,
  format: ImportFormat,
  skip: number,
  batchRows: number,
  opts: PrepareOptions,
): AsyncGenerator<PreparedBatch> {
  let items: SourceItem[] = []
  for await (const item of readSource(path, format, skip)) {
    items.push(item)
    if (items.length >= batchRows) {
      yield prepareItems(items, opts)
      items = []
    }
  }
  if (items.length) yield prepareItems(items, opts)
}
