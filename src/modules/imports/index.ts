import { t } from 'elysia'
import type { Deps } from '../../deps'
import type { AuthOf } from '../../http/auth'
import { crudRoutes } from '../../http/crud'
import { commonErrors, Envelope, ErrorEnvelope, IdParams, ok, okPage, Paged, PageQuery, requires } from '../../http/schemas'
import { AppError } from '../../lib/errors'
import { CreateImportQuery, ImportErrorSchema, ImportFilters, ImportSchema, MEDIA_TYPES } from './model'
import type { ImportRunner } from './runner'
import { createImport, getImport, importErrorsCsv, listImportErrors, listImports } from './service'

const tags = ['imports']

function mappingFrom(query: string | undefined): Record<string, string> | undefined {
  if (query === undefined) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(query)
  } catch {
    throw new AppError('validation_failed', 'The query string is invalid.', {
      mapping: ['must be a JSON object such as {"email":"E-mail","fields.plan":"Plan"}'],
    })
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !Object.values(parsed).every((v) => typeof v === 'string')) {
    throw new AppError('validation_failed', 'The query string is invalid.', { mapping: ['must map contact attributes to column names (strings)'] })
  }
  return parsed as Record<string, string>
}

/** /api/v2/imports: bulk import of contacts from CSV or JSON lines, run in the background. */
export function importRoutes(deps: Deps, authOf: AuthOf, runner: ImportRunner) {
  return crudRoutes(authOf, {
    resource: 'imports',
    view: ImportSchema,
    list: { summary: 'List imports', permission: 'contacts.import', query: ImportFilters, handle: (query) => listImports(deps, query) },
    get: { summary: 'Get an import and its progress', permission: 'contacts.import', handle: (id) => getImport(deps, id) },
  })
    .post(
      '/',
      async ({ query, request, status }) => {
        const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
        const format = MEDIA_TYPES.jsonl.includes(type) ? 'jsonl' : 'csv'
        const created = await createImport(
          deps,
          { list_id: query.list_id, format, mode: query.mode ?? 'skip', mapping: mappingFrom(query.mapping), enroll: query.enroll ?? true },
          request.body,
        )
        authOf(request).target = { type: 'imports', id: created.id }
        runner.kick()
        return status(202, ok(created))
      },
      {
        // The file is streamed to disk by the handler; the framework must not read it first.
        parse: () => ({ streamed: true }),
        query: CreateImportQuery,
        response: { 202: Envelope(ImportSchema), 413: ErrorEnvelope, 415: ErrorEnvelope, ...commonErrors },
        detail: {
          ...requires('contacts.import', 'Import contacts from a file', {
            tags,
            contentTypes: [...MEDIA_TYPES.csv, ...MEDIA_TYPES.jsonl],
            description:
              'Send the file as the body (Content-Type text/csv or application/x-ndjson). Answers 202 with the queued import; poll GET /api/v2/imports/{id} for progress.',
          }),
          'x-max-bytes': deps.config.max_import_bytes,
        },
      },
    )
    .get('/:id/errors', ({ params, query }) => okPage(listImportErrors(deps, params.id, query)), {
      params: IdParams,
      query: t.Object(PageQuery),
      response: {
        200: Paged(ImportErrorSchema),
        404: ErrorEnvelope,
        ...commonErrors,
      },
      detail: requires('contacts.import', 'The rows an import could not take, with reasons', { tags }),
    })
    .get(
      '/:id/errors/export',
      ({ params }) =>
        new Response(importErrorsCsv(deps, params.id), {
          headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="import-${params.id}-errors.csv"` },
        }),
      {
        params: IdParams,
        response: { 200: t.String({ description: 'CSV: row,reason,raw' }), 404: ErrorEnvelope, ...commonErrors },
        detail: requires('contacts.import', 'Download the invalid rows as CSV', { tags }),
      },
    )
}
