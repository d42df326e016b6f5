import { createReadStream } from 'node:fs'
import { csvRecords, type CsvRecord } from './csv'

/**
 * Reads an import file record by record without holding it in memory. Every data row
 * yields either its values by column name or the reason it could not be read, in file
 * order, so a broken row becomes a per-row error and the rest of the file still imports.
 */
export type SourceItem = { row: number; values: Record<string, unknown>; raw: string } | { row: number; error: string; raw: string }

export type ImportFormat = 'csv' | 'jsonl'

const RAW_MAX = 2000
const CHUNK = 256 * 1024

/** The file as text chunks (the upload was checked to be UTF-8); a leading BOM is dropped. */
async function* textChunks(path: string): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { ignoreBOM: false })
  for await (const chunk of createReadStream(path, { highWaterMark: CHUNK })) yield decoder.decode(chunk as Buffer, { stream: true })
  const rest = decoder.decode()
  if (rest) yield rest
}

/** The header of a CSV file (its first record), or null for an empty file. */
export async function readCsvHeader(path: string): Promise<string[] | null> {
  for await (const record of csvRecords(textChunks(path))) return 'fields' in record ? record.fields.map((f) => f.trim()) : null
  return null
}

/**
 * Data rows of a CSV file (the header is row 0 and not yielded) keyed by header name, or
 * of a JSON-lines file (one object per line). `skip` leaves out rows already imported.
 */
export async function* readSource(path: string, format: ImportFormat, skip = 0): AsyncGenerator<SourceItem> {
  if (format === 'jsonl') {
    yield* readJsonLines(path, skip)
    return
  }
  let header: string[] | null = null
  let row = 0
  for await (const record of csvRecords(textChunks(path)) as AsyncGenerator<CsvRecord>) {
    if (!header) {
      if ('fields' in record) header = record.fields.map((f) => f.trim())
      continue
    }
    if (++row <= skip) continue
    const raw = record.raw.slice(0, RAW_MAX)
    if ('error' in record) {
      yield { row, error: record.error, raw }
      continue
    }
    if (record.fields.length !== header.length) {
      yield { row, error: `has ${record.fields.length} values but the header has ${header.length} columns`, raw }
      continue
    }
    const values: Record<string, unknown> = {}
    for (let i = 0; i < header.length; i++) values[header[i]!] = record.fields[i]
    yield { row, values, raw }
  }
}

async function* readJsonLines(path: string, skip: number): AsyncGenerator<SourceItem> {
  let row = 0
  let rest = ''
  const handle = function* (line: string): Generator<SourceItem> {
    if (line.trim() === '') return
    if (++row <= skip) return
    const raw = line.slice(0, RAW_MAX)
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch {
      yield { row, error: 'is not valid JSON', raw }
      return
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) yield { row, error: 'must be a JSON object', raw }
    else yield { row, values: value as Record<string, unknown>, raw }
  }
  for await (const chunk of textChunks(path)) {
    const lines = (rest + chunk).split('\n')
    rest = lines.pop()!
    for (const line of lines) yield* handle(line.replace(/\r$/, ''))
  }
  yield* handle(rest)
}

/**
 * Data rows counted from line breaks, a chunk at a time (a fast pass over bytes, for
 * progress). A quoted value with line breaks in it makes this an overestimate; the runner
 * sets the exact figure when the import ends. The upload counts as it stores the file
 * (service.ts), so `total_rows` is known at the 202.
 */
export function rowCounter(format: ImportFormat) {
  let lines = 0
  let last = 10
  return {
    push(chunk: Uint8Array): void {
      if (chunk.byteLength === 0) return
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
      last = chunk[chunk.byteLength - 1]!
    },
    /** The estimate: a last line without a line break counts, a CSV's header does not. */
    rows(): number {
      const all = last === 10 ? lines : lines + 1
      return Math.max(0, format === 'csv' ? all - 1 : all)
    },
  }
}

/** rowCounter over a stored file: for imports queued before uploads counted their rows. */
export async function estimateRows(path: string, format: ImportFormat): Promise<number> {
  const counter = rowCounter(format)
  for await (const chunk of createReadStream(path, { highWaterMark: CHUNK }) as AsyncIterable<Buffer>) counter.push(chunk)
  return counter.rows()
}
