import { count, eq, inArray, sql } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { assertNameFree, bulkDeleteByIds, columnsOf, pageOfTable, type BulkDeleteOutcome } from '../../db/crud'
import { contacts, customFields, type CustomFieldType } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { AppError, notFound } from '../../lib/errors'
import type { CustomFieldView } from './model'
import { checkFieldValue, type FieldDefinition } from './values'

type Row = typeof customFields.$inferSelect

/** What a custom field value can be on the wire (dates are strings). */
export type FieldValue = string | number | boolean | null

const KEY = /^[a-z][a-z0-9_]{0,62}$/

function toView(r: Row): CustomFieldView {
  return {
    ...columnsOf(r, ['id', 'key', 'name', 'type', 'options', 'required']),
    default_value: (r.default_value ?? null) as FieldValue,
    created_at: toIso(r.created_at)!,
    updated_at: toIso(r.updated_at)!,
  }
}

function invalid(details: Record<string, string[]>): AppError {
  return new AppError('validation_failed', 'The request data is invalid.', details)
}

/** Every definition by key; contacts and imports validate against this. */
export function fieldDefinitions(deps: Deps): Map<string, FieldDefinition> {
  return new Map(
    deps.db
      .select()
      .from(customFields)
      .all()
      .map((r) => [r.key, { key: r.key, type: r.type, options: r.options, required: r.required, default_value: r.default_value ?? null }]),
  )
}

function checkDefinition(def: { type: CustomFieldType; options: string[]; required: boolean; default_value: unknown; key: string }): void {
  const errors: Record<string, string[]> = {}
  if (def.type === 'one_of') {
    if (def.options.length === 0) errors.options = ['a one_of field needs at least one option']
    if (new Set(def.options).size !== def.options.length) errors.options = ['options must be different from each other']
  } else if (def.options.length > 0) errors.options = ['only one_of fields take options']
  if (def.default_value !== null && def.default_value !== undefined && !errors.options) {
    const checked = checkFieldValue({ ...def, required: false }, def.default_value)
    if (!checked.ok) errors.default_value = [checked.error]
  }
  if (Object.keys(errors).length) throw invalid(errors)
}

export function getCustomField(deps: Deps, id: number): CustomFieldView {
  const row = deps.db.select().from(customFields).where(eq(customFields.id, id)).get()
  if (!row) throw notFound('custom field', id)
  return toView(row)
}

/** A page of custom fields, oldest first. */
export function listCustomFields(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, customFields, query, (rows: Row[]) => rows.map(toView))
}

export interface CustomFieldInput {
  key: string
  name: string
  type: CustomFieldType
  options?: string[]
  required?: boolean
  default_value?: unknown
}

/** Defines a field. Making a new field required needs a default, so existing contacts stay valid. */
export function createCustomField(deps: Deps, input: CustomFieldInput): CustomFieldView {
  if (!KEY.test(input.key)) throw invalid({ key: ['must be lower snake case: a letter, then letters, digits or _ (at most 63)'] })
  const def = { key: input.key, type: input.type, options: input.options ?? [], required: input.required ?? false, default_value: input.default_value ?? null }
  checkDefinition(def)
  if (def.required && def.default_value === null) throw invalid({ default_value: ['a required field needs a default, so that existing contacts have a value'] })
  assertNameFree(deps.db, customFields, customFields.key, def.key, { message: `A custom field with key "${def.key}" already exists.` })
  const now = deps.clock.now()
  return deps.db.transaction((tx) => {
    const row = tx
      .insert(customFields)
      .values({ ...def, name: input.name.trim(), created_at: now, updated_at: now })
      .returning()
      .get()
    if (def.required) {
      // Existing contacts get the default, as they would had the field always existed.
      tx.run(
        sql`UPDATE ${contacts} SET fields = json_set(fields, ${'$.' + def.key}, json(${JSON.stringify(def.default_value)})) WHERE json_type(fields, ${'$.' + def.key}) IS NULL`,
      )
    }
    return toView(row)
  })
}

/** Changes name, options, required flag or default. The key and the type are fixed: stored values depend on them. */
export function updateCustomField(
  deps: Deps,
  id: number,
  input: { name?: string; options?: string[]; required?: boolean; default_value?: unknown },
): CustomFieldView {
  const current = getCustomField(deps, id)
  const def = {
    key: current.key,
    type: current.type,
    options: input.options ?? current.options,
    required: input.required ?? current.required,
    default_value: input.default_value === undefined ? current.default_value : input.default_value,
  }
  checkDefinition(def)
  if (def.required && !current.required) {
    const missing = deps.db
      .select({ n: count() })
      .from(contacts)
      .where(sql`json_type(${contacts.fields}, ${'$.' + def.key}) IS NULL`)
      .get()!.n
    if (missing > 0) throw new AppError('conflict', `${missing} contact(s) have no value for "${def.key}"; give them one before making the field required.`)
  }
  if (current.type === 'one_of' && input.options) {
    const removed = current.options.filter((o) => !def.options.includes(o))
    if (removed.length) {
      const inUse = deps.db
        .select({ n: count() })
        .from(contacts)
        .where(
          sql`json_extract(${contacts.fields}, ${'$.' + def.key}) IN (${sql.join(
            removed.map((o) => sql`${o}`),
            sql`, `,
          )})`,
        )
        .get()!.n
      if (inUse > 0) throw new AppError('conflict', `${inUse} contact(s) still use an option you removed.`)
    }
  }
  deps.db
    .update(customFields)
    .set({
      name: input.name?.trim() ?? current.name,
      options: def.options,
      required: def.required,
      default_value: def.default_value,
      updated_at: deps.clock.now(),
    })
    .where(eq(customFields.id, id))
    .run()
  return getCustomField(deps, id)
}

/** Deletes definitions and the values contacts hold for them, in one transaction. */
export function deleteCustomFields(deps: Deps, ids: number[]): BulkDeleteOutcome {
  const keys = new Map(
    ids.length
      ? deps.db
          .select({ id: customFields.id, key: customFields.key })
          .from(customFields)
          .where(inArray(customFields.id, ids))
          .all()
          .map((r) => [r.id, r.key])
      : [],
  )
  return deps.db.transaction((tx) =>
    bulkDeleteByIds(tx, customFields, ids, (deleted) => {
      for (const id of deleted) {
        const key = keys.get(id)!
        tx.run(sql`UPDATE ${contacts} SET fields = json_remove(fields, ${'$.' + key}) WHERE json_type(fields, ${'$.' + key}) IS NOT NULL`)
      }
    }),
  )
}
