import { and, asc, count, desc, eq, gt } from 'drizzle-orm'
import { createWriteStream, mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Deps } from '../../deps'
import { columnsOf } from '../../db/crud'
import { importErrors, imports } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { AppError, invalidField, notFound } from '../../lib/errors'
import { utf8Check } from '../../lib/utf8-check'
import { pageMeta, pageRequest } from '../../lib/pagination'
import { fieldDefinitions } from '../custom-fields/service'
import { listExists } from '../lists/service'
import type { ImportView } from './model'
import { readCsvHeader, rowCounter, type ImportFormat } from './source'

type Row = typeof imports.$inferSelect

/** The wire form of an import row. */
export function importView(r: Row): ImportView {
  return {
    ...columnsOf(r, [
      'id',
      'list_id',
      'format',
      'mode',
      'mapping',
      'enroll',
      'status',
      'total_rows',
      'rows_done',
      'created',
      'updated',
      'skipped',
      'invalid',
      'error',
      'file_bytes',
    ]),
    created_at: toIso(r.created_at)!,
    started_at: toIso(r.started_at),
    finished_at: toIso(r.finished_at),
  }
}

/** Contact attributes a column can fill; custom fields as `fields.<key>`. */
const ATTRIBUTES = ['email', 'first_name', 'last_name', 'status']

/**
 * The mapping from contact attribute to source column. Without one, columns map by name:
 * `email`, `first_name`, `last_name`, `status` (any case) and custom field keys; other
 * columns are ignored. An explicit mapping must name columns the header has.
 */
export function resolveMapping(deps: Deps, header: string[] | null, explicit: Record<string, string> | undefined): Record<string, string> {
  const customKeys = new Set(fieldDefinitions(deps).keys())
  const errors: string[] = []
  let mapping: Record<string, string> = {}
  if (explicit) {
    for (const [target, source] of Object.entries(explicit)) {
      const known = ATTRIBUTES.includes(target) || (target.startsWith('fields.') && customKeys.has(target.slice(7)))
      if (!known) errors.push(`"${target}" is not a contact attribute (${ATTRIBUTES.join(', ')}, or fields.<custom field key>)`)
      else if (header && !header.includes(source)) errors.push(`column "${source}" (for ${target}) is not in the header: ${header.join(', ')}`)
      else mapping[target] = source
    }
  } else if (header) {
    for (const column of header) {
      const name = column.trim().toLowerCase()
      if (ATTRIBUTES.includes(name)) mapping[name] ??= column
      else if (customKeys.has(name)) mapping[`fields.${name}`] ??= column
    }
  } else mapping = Object.fromEntries([...ATTRIBUTES.map((a) => [a, a]), ...[...customKeys].map((k) => [`fields.${k}`, k])])
  if (!mapping.email && !errors.length) errors.push(header ? `no column maps to email; the header has: ${header.join(', ')}` : 'no source key maps to email')
  if (errors.length) throw new AppError('validation_failed', 'The import cannot start.', { mapping: errors })
  return mapping
}

/**
 * Streams an upload to the data directory, checking its size and that it is UTF-8 and
 * counting its rows as it arrives; nothing of it is held in memory. Refusals remove the
 * partial file.
 */
async function storeUpload(body: ReadableStream<Uint8Array>, path: string, maxBytes: number, format: ImportFormat): Promise<{ bytes: number; rows: number }> {
  const out = createWriteStream(path, { mode: 0o600 })
  const utf8 = utf8Check()
  const counter = rowCounter(format)
  let bytes = 0
  try {
    for await (const chunk of body) {
      bytes += chunk.byteLength
      if (bytes > maxBytes) throw new AppError('payload_too_large', `The import file is larger than the limit of ${maxBytes} bytes.`)
      if (!utf8.push(chunk))
        throw invalidField('file', `is not UTF-8 text (an invalid byte sequence ends near byte ${bytes}); save the file as UTF-8 and upload it again`)
      counter.push(chunk)
      if (!out.write(chunk)) await new Promise((r) => out.once('drain', r))
    }
    if (!utf8.end()) throw invalidField('file', 'is not UTF-8 text (it ends inside a multi-byte character)')
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())))
    return { bytes, rows: counter.rows() }
  } catch (e) {
    out.destroy()
    rmSync(path, { force: true })
    throw e
  }
}

export interface NewImport {
  list_id: number
  format: ImportFormat
  mode: 'skip' | 'update'
  mapping?: Record<string, string>
  /** Start the list's drips for the contacts it subscribes (default true). */
  enroll?: boolean
}

/** Stores the file, checks its header against the mapping, and queues the import. */
export async function createImport(deps: Deps, input: NewImport, body: ReadableStream<Uint8Array> | null): Promise<ImportView> {
  if (!listExists(deps, input.list_id)) throw invalidField('list_id', `No list with id ${input.list_id}.`)
  if (!body) throw invalidField('file', 'is missing: send the file as the request body')
  const dir = join(deps.config.data_dir, 'imports')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const path = join(dir, `${crypto.randomUUID()}.${input.format}`)
  const { bytes, rows } = await storeUpload(body, path, deps.config.max_import_bytes, input.format)
  try {
    if (bytes === 0) throw invalidField('file', 'is empty')
    const header = input.format === 'csv' ? await readCsvHeader(path) : null
    if (input.format === 'csv' && (!header || header.every((h) => h === ''))) throw invalidField('file', 'has no header row')
    const mapping = resolveMapping(deps, header, input.mapping)
    const row = deps.db
      .insert(imports)
      .values({
        list_id: input.list_id,
        format: input.format,
        mode: input.mode,
        mapping,
        enroll: input.enroll ?? true,
        status: 'queued',
        file_path: path,
        file_bytes: bytes,
        total_rows: rows,
        created_at: deps.clock.now(),
      })
      .returning()
      .get()
    return importView(row)
  } catch (e) {
    rmSync(path, { force: true })
    throw e
  }
}

export function getImport(deps: Deps, id: number): ImportView {
  const row = deps.db.select().from(imports).where(eq(imports.id, id)).get()
  if (!row) throw notFound('import', id)
  return importView(row)
}

export function listImports(deps: Deps, query: { page?: number; per_page?: number; list_id?: number }) {
  const req = pageRequest(query)
  const where = query.list_id !== undefined ? eq(imports.list_id, query.list_id) : undefined
  const total = deps.db.select({ n: count() }).from(imports).where(where).get()!.n
  const rows = deps.db.select().from(imports).where(where).orderBy(desc(imports.id)).limit(req.per_page).offset(req.offset).all()
  return { items: rows.map(importView), meta: pageMeta(req, total) }
}

/** The rows that could not be imported, with their reasons, in file order. */
export function listImportErrors(deps: Deps, id: number, query: { page?: number; per_page?: number }) {
  getImport(deps, id)
  const req = pageRequest(query)
  const where = eq(importErrors.import_id, id)
  const total = deps.db.select({ n: count() }).from(importErrors).where(where).get()!.n
  const rows = deps.db
    .select({ row: importErrors.row_number, reason: importErrors.reason, raw: importErrors.raw })
    .from(importErrors)
    .where(where)
    .orderBy(asc(importErrors.row_number))
    .limit(req.per_page)
    .offset(req.offset)
    .all()
  return { items: rows, meta: pageMeta(req, total) }
}

const csvCell = (v: string | number) => (typeof v === 'number' || !/[",\r\n]/.test(v) ? String(v) : `"${v.replace(/"/g, '""')}"`)

/** The invalid rows as a CSV download (row, reason, raw), streamed a page at a time. */
export function importErrorsCsv(deps: Deps, id: number): ReadableStream<Uint8Array> {
  getImport(deps, id)
  const encoder = new TextEncoder()
  // Keyset reads on the (import_id, row_number) index: a growing OFFSET would rescan every
  // earlier error on each page. Each data row has at most one error, so row numbers are unique.
  let afterRow = 0
  let headerSent = false
  return new ReadableStream({
    pull(controller) {
      if (!headerSent) {
        headerSent = true
        controller.enqueue(encoder.encode('row,reason,raw\r\n'))
        return
      }
      const rows = deps.db
        .select({ row: importErrors.row_number, reason: importErrors.reason, raw: importErrors.raw })
        .from(importErrors)
        .where(and(eq(importErrors.import_id, id), gt(importErrors.row_number, afterRow)))
        .orderBy(asc(importErrors.row_number))
        .limit(1000)
        .all()
      if (rows.length === 0) return controller.close()
      afterRow = rows.at(-1)!.row
      controller.enqueue(encoder.encode(rows.map((r) => `${r.row},${csvCell(r.reason)},${csvCell(r.raw.replace(/\r?\n$/, ''))}\r\n`).join('')))
    },
  })
}
