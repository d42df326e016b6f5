import { asc, eq, inArray } from 'drizzle-orm'
import { existsSync, rmSync } from 'node:fs'
import type { Deps } from '../../deps'
import { imports } from '../../db/schema'
import { normaliseEmail } from '../../lib/email'
import { fieldDefinitions } from '../custom-fields/service'
import { createContactWriter, type ContactInput } from '../contacts/writer'
import { estimateRows, readSource, type SourceItem } from './source'
import { statusUnderSuppression } from './suppressed'

/** Rows per transaction: large enough to amortise the commit (an fsync), small enough to keep the API responsive. */
const BATCH_ROWS = 5000

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

function describeErrors(errors: Record<string, string[]>): string {
  return Object.entries(errors)
    .map(([field, messages]) => `${field} ${messages.join('; ')}`)
    .join('; ')
}

export interface ImportRunnerOptions {
  /**
   * Suppression reasons of the suppressed addresses among a batch's (normalised) addresses;
   * suppressed addresses are imported with a status saying so. Asked once per batch.
   */
  suppressionReasons?: (emails: string[], listId: number) => Map<string, string>
  batchRows?: number
}

/**
 * Runs queued imports one at a time in the background. Each batch of rows commits in one
 * transaction together with the import's counters and `rows_done`, so after a crash or
 * restart `resume()` reads the file again, skips the rows already committed, and goes on:
 * no row is lost or counted twice.
 */
export function createImportRunner(deps: Deps, opts: ImportRunnerOptions = {}) {
  const client = deps.db.$client
  const batchRows = opts.batchRows ?? BATCH_ROWS
  let active: Promise<void> | null = null
  let stopping = false

  const next = () =>
    deps.db
      .select()
      .from(imports)
      .where(inArray(imports.status, ['queued', 'running']))
      .orderBy(asc(imports.id))
      .get()
  const setState = (id: number, patch: Partial<typeof imports.$inferInsert>) => deps.db.update(imports).set(patch).where(eq(imports.id, id)).run()

  async function runOne(imp: typeof imports.$inferSelect): Promise<void> {
    const now = deps.clock.now()
    setState(imp.id, { status: 'running', started_at: imp.started_at ?? now })
    try {
      if (!existsSync(imp.file_path)) throw new Error('the uploaded file is no longer in the data directory')
      if (imp.total_rows === null) setState(imp.id, { total_rows: await estimateRows(imp.file_path, imp.format) })
      let suppressed = new Map<string, string>()
      const writer = createContactWriter(deps, {
        listId: imp.list_id,
        defs: fieldDefinitions(deps),
        mode: imp.mode,
        coerce: true,
        emitEvents: false,
        statusForNew: (email, requested) => {
          const reason = suppressed.get(email)
          return reason ? statusUnderSuppression(reason, requested) : requested
        },
      })
      const emailSource = imp.mapping.email!
      const insertError = client.prepare<unknown, [number, number, string, string]>(
        'INSERT INTO import_errors (import_id, row_number, reason, raw) VALUES (?, ?, ?, ?)',
      )
      const progress = client.prepare<unknown, [number, number, number, number, number, number]>(
        'UPDATE imports SET rows_done = rows_done + ?, created = created + ?, updated = updated + ?, skipped = skipped + ?, invalid = invalid + ? WHERE id = ?',
      )
      const commit = client.transaction((items: SourceItem[]) => {
        if (opts.suppressionReasons) {
          const emails = items.flatMap((item) => ('values' in item ? (normaliseEmail(item.values[emailSource]) ?? []) : []))
          suppressed = opts.suppressionReasons(emails, imp.list_id)
        }
        const counts = { created: 0, updated: 0, skipped: 0, invalid: 0 }
        for (const item of items) {
          if ('error' in item) {
            counts.invalid++
            insertError.run(imp.id, item.row, item.error, item.raw)
            continue
          }
          const r = writer.write(rowToContact(item.values, imp.mapping))
          counts[r.result]++
          if (r.result === 'invalid') insertError.run(imp.id, item.row, describeErrors(r.errors), item.raw)
        }
        progress.run(items.length, counts.created, counts.updated, counts.skipped, counts.invalid, imp.id)
      })

      let batch: SourceItem[] = []
      for await (const item of readSource(imp.file_path, imp.format, imp.rows_done)) {
        batch.push(item)
        if (batch.length >= batchRows) {
          commit(batch)
          batch = []
          // Stopping leaves the import 'running': the next start resumes it after the committed rows.
          if (stopping) return
          // Let HTTP requests in between batches.
          await new Promise((resolve) => setImmediate(resolve))
        }
      }
      if (batch.length) commit(batch)
      // The estimate counted line breaks; now the exact number of rows is known.
      client.run("UPDATE imports SET status = 'completed', total_rows = rows_done, finished_at = ? WHERE id = ?", [deps.clock.now(), imp.id])
      rmSync(imp.file_path, { force: true })
    } catch (e) {
      deps.log.error('import failed', { import_id: imp.id, error: (e as Error).message })
      setState(imp.id, { status: 'failed', error: (e as Error).message, finished_at: deps.clock.now() })
    }
  }

  async function drain(): Promise<void> {
    for (let imp = next(); imp && !stopping; imp = next()) await runOne(imp)
  }

  const runner = {
    /** Starts work on queued imports unless it is already under way. */
    kick(): void {
      if (active || stopping) return
      active = drain().finally(() => {
        active = null
        if (!stopping && next()) runner.kick()
      })
    },
    /** Resolves when no import is being worked on (tests). */
    async idle(): Promise<void> {
      while (active) await active
    },
    /** Finishes the batch in hand and stops; unfinished imports resume at the next start. */
    async stop(): Promise<void> {
      stopping = true
      while (active) await active
    },
  }
  return runner
}
export type ImportRunner = ReturnType<typeof createImportRunner>
