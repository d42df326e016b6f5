import { eq } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { imports } from '../../db/schema'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { requires } from '../../http/schemas'
import { AppError, invalidField } from '../../lib/errors'
import type { ImportRunner } from '../imports/runner'
import type { ImportView } from '../imports/model'
import { createImport, getImport } from '../imports/service'
import { cursorPage, decodeId, encodeId, ListOf, PaginationQuery } from './ids'
import { defaultList, segmentList } from './segments'
import { refuse } from './shapes'

/**
 * resend.contacts.imports onto /api/v2/imports: the CSV goes to the same background import
 * (one list: the one segment named, or the General list), `column_map` becomes the import's
 * mapping and `on_conflict` its mode, and Mailroom's own `enroll` field its enroll flag. The SDK sends multipart form data, which the framework
 * reads whole before the handler runs, so a file is held in memory once (up to
 * max_import_bytes) and then streamed to the data directory like a native upload.
 */

type Status = 'queued' | 'in_progress' | 'completed' | 'failed'
const STATUS: Record<ImportView['status'], Status> = { queued: 'queued', running: 'in_progress', completed: 'completed', failed: 'failed' }
const NATIVE_STATUS: Record<Status, ImportView['status']> = { queued: 'queued', in_progress: 'running', completed: 'completed', failed: 'failed' }

const ImportSchema = t.Object({
  object: t.Literal('contact_import'),
  id: t.String(),
  status: t.String(),
  created_at: t.String(),
  completed_at: t.Union([t.String(), t.Null()]),
  counts: t.Object({ total: t.Integer(), created: t.Integer(), updated: t.Integer(), skipped: t.Integer(), failed: t.Integer() }),
})

function importOf(v: ImportView) {
  return {
    object: 'contact_import' as const,
    id: encodeId('contact_import', v.id),
    status: STATUS[v.status],
    created_at: v.created_at,
    completed_at: v.finished_at,
    counts: { total: v.total_rows ?? 0, created: v.created, updated: v.updated, skipped: v.skipped, failed: v.invalid },
  }
}

/** A form field holding JSON: the SDK sends objects and arrays as JSON text, which the framework may already have parsed. */
function json<T>(field: string, value: unknown): T | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string') return value as T
  try {
    return JSON.parse(value) as T
  } catch {
    return refuse(field, 'must be JSON')
  }
}

interface ColumnMap {
  email?: string
  first_name?: string
  last_name?: string
  unsubscribed?: string
  properties?: Record<string, { column: string; type?: string }>
}

/** Resend's column map -> the import's mapping (contact attribute -> column). */
function mappingOf(map: ColumnMap | undefined): Record<string, string> | undefined {
  if (!map) return undefined
  if (map.unsubscribed !== undefined)
    refuse('column_map.unsubscribed', 'map a `status` column (subscribed, unsubscribed...) through POST /api/v2/imports instead')
  const mapping: Record<string, string> = {}
  if (map.email) mapping.email = map.email
  if (map.first_name) mapping.first_name = map.first_name
  if (map.last_name) mapping.last_name = map.last_name
  for (const [key, p] of Object.entries(map.properties ?? {})) mapping[`fields.${key}`] = p.column
  return mapping
}

/** The `enroll` form field: true or false (as text in multipart, or already parsed); absent means true. */
function enrollOf(value: unknown): boolean {
  if (value === undefined || value === true || value === 'true') return true
  if (value === false || value === 'false') return false
  throw invalidField('enroll', 'must be true or false')
}

/** /compat/resend/contacts/imports */
export function contactImportRoutes(deps: Deps, authOf: AuthOf, runner?: ImportRunner) {
  const tags = ['resend-compatible']
  return new Elysia()
    .post(
      '/contacts/imports',
      async ({ body, request }) => {
        if (body.topics !== undefined) refuse('topics', 'topics are not available; use segments (lists)')
        const segments = json<Array<{ id: string }>>('segments', body.segments) ?? []
        if (segments.length > 1) refuse('segments', 'an import fills one segment; import the file once per segment')
        const listId = segments.length ? segmentList(deps, segments[0]!.id) : defaultList(deps)
        // Not a Resend field: Mailroom's drips (issue 16); true by default, as natively.
        const enroll = enrollOf(body.enroll)
        const created = await createImport(
          deps,
          {
            list_id: listId,
            format: 'csv',
            mode: body.on_conflict === 'upsert' ? 'update' : 'skip',
            mapping: mappingOf(json<ColumnMap>('column_map', body.column_map)),
            enroll,
          },
          body.file.stream(),
        )
        authOf(request).target = { type: 'imports', id: created.id }
        runner?.kick()
        return { object: 'contact_import' as const, id: encodeId('contact_import', created.id) }
      },
      {
        body: t.Object({
          file: t.File(),
          column_map: t.Optional(t.Unknown({ description: 'JSON: { email, first_name, last_name, properties: { key: { column } } }' })),
          on_conflict: t.Optional(t.Union([t.Literal('upsert'), t.Literal('skip')])),
          segments: t.Optional(t.Unknown({ description: 'JSON: [{ id }], at most one segment' })),
          topics: t.Optional(t.Unknown()),
          enroll: t.Optional(t.Unknown({ description: "Mailroom: false imports without starting the segment's drips (default true)." })),
        }),
        response: { 200: t.Object({ object: t.Literal('contact_import'), id: t.String() }) },
        detail: {
          ...requires('contacts.import', 'Import contacts from a CSV file (Resend-compatible)', { tags, contentTypes: ['multipart/form-data'] }),
          'x-max-bytes': deps.config.max_import_bytes,
        },
      },
    )
    .get(
      '/contacts/imports',
      ({ query }) => {
        const where = query.status === undefined ? undefined : eq(imports.status, NATIVE_STATUS[query.status])
        const page = cursorPage(deps.db, imports, 'contact_import', query, where)
        return { object: 'list' as const, has_more: page.has_more, data: page.ids.map((i) => importOf(getImport(deps, i))) }
      },
      {
        query: t.Object({
          ...PaginationQuery.properties,
          status: t.Optional(t.Union([t.Literal('queued'), t.Literal('in_progress'), t.Literal('completed'), t.Literal('failed')])),
        }),
        response: { 200: ListOf(ImportSchema) },
        detail: requires('contacts.import', 'List contact imports (Resend-compatible)', { tags }),
      },
    )
    .get(
      '/contacts/imports/:id',
      ({ params }) => {
        const n = decodeId('contact_import', params.id, 'contact import')
        try {
          return importOf(getImport(deps, n))
        } catch (e) {
          if (e instanceof AppError && e.code === 'not_found') throw new AppError('not_found', 'Contact import not found.')
          throw e
        }
      },
      { response: { 200: ImportSchema }, detail: requires('contacts.import', 'Get a contact import and its progress (Resend-compatible)', { tags }) },
    )
}
