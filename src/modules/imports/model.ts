import { t, type Static } from 'elysia'
import { enumOf } from '../../http/schemas'

export const ImportSchema = t.Object({
  id: t.Integer(),
  list_id: t.Integer(),
  format: enumOf(['csv', 'jsonl']),
  mode: enumOf(['skip', 'update']),
  mapping: t.Record(t.String(), t.String(), { description: 'Contact attribute -> source column.' }),
  enroll: t.Boolean({ description: "Whether the contacts it subscribes enter the list's drips." }),
  status: enumOf(['queued', 'running', 'completed', 'failed']),
  total_rows: t.Union([t.Integer(), t.Null()], {
    description: 'Data rows in the file: estimated from its line breaks at upload, exact once the import is completed.',
  }),
  rows_done: t.Integer(),
  created: t.Integer(),
  updated: t.Integer(),
  skipped: t.Integer(),
  invalid: t.Integer(),
  error: t.Union([t.String(), t.Null()], { description: 'Why a failed import stopped.' }),
  file_bytes: t.Integer(),
  created_at: t.String(),
  started_at: t.Union([t.String(), t.Null()]),
  finished_at: t.Union([t.String(), t.Null()]),
})
export type ImportView = Static<typeof ImportSchema>

/** The media types an import body may have, by format. */
export const MEDIA_TYPES = { csv: ['text/csv', 'application/csv'], jsonl: ['application/x-ndjson', 'application/jsonl', 'application/x-jsonlines'] }

export const CreateImportQuery = t.Object({
  list_id: t.Integer({ description: 'The list to import into.' }),
  mode: t.Optional(enumOf(['skip', 'update'], { description: 'Addresses already on the list: skip (default) or update.' })),
  mapping: t.Optional(
    t.String({
      description:
        'JSON object: contact attribute (email, first_name, last_name, status, fields.<key>) -> column name. Default: columns named like the attributes or custom field keys.',
    }),
  ),
  enroll: t.Optional(
    t.Boolean({
      description: "true (default): the contacts the import subscribes enter the list's drips, as joining the list does. false: import without enrolling.",
    }),
  ),
})

/** The list's filters beside page and per_page. */
export const ImportFilters = { list_id: t.Optional(t.Integer()) }

export const ImportErrorSchema = t.Object({ row: t.Integer({ description: 'Data row number; the header is row 0.' }), reason: t.String(), raw: t.String() })
