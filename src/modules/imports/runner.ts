import { asc, eq, inArray } from 'drizzle-orm'
import { existsSync, rmSync } from 'node:fs'
import type { Deps } from '../../deps'
import { imports } from '../../db/schema'
import { fieldDefinitions } from '../custom-fields/service'
import { createContactWriter } from '../contacts/writer'
import { enrollListJoins } from '../automations/runs'
import { describeErrors, preparedBatches, preparedRow, ROW_WIDTH, type PrepareOptions, type PreparedBatch } from './prepare'
import type { PrepareRequest, PrepareStart } from './prepare-worker'
import { estimateRows, type ImportFormat } from './source'
import { statusUnderSuppression } from './suppressed'
import { startWorker, type WorkerClient } from '../../lib/worker-client'
import { workerUrl } from '../../lib/worker-url'

/**
 * Rows per transaction. Larger batches write fewer WAL pages (a batch rewrites every page
 * of the (list, email) index its random addresses touch), but with the longer checkpoint
 * interval below 10,000-row batches were no faster than 5,000-row ones on a million rows
 * (20.4-21.2 s against 21.7 s) and held 18 MiB more at the peak (measured); small batches
 * also keep the server's thread free for requests more often.
 */
export const IMPORT_BATCH_ROWS = 5000

/**
 * WAL pages between checkpoints while an import runs (SQLite's default is 1,000). With the
 * default, every batch's commit copied its pages into the database file at once; with a
 * longer WAL a page written by several batches is copied once. 20 % faster imports of a
 * million rows (measured); the WAL file grows to about 200 MB meanwhile.
 */
export const IMPORT_WAL_AUTOCHECKPOINT = 50_000

/**
 * SQLite page cache while an import runs, in KiB (the connection's usual 64 MiB comes back
 * afterwards). Measured on a million-row import through the server (issue 18): peak memory
 * 287 MiB with 40 MiB, 248 with 16, 226 with 8, 233 with 2 (the noise is about 10 MiB), and
 * no slower: the pages the inserts touch most, the upper levels of the (list, email) index
 * and the right-hand ends of the others, fit in 8 MiB; the rest is in the OS cache.
 */
export const IMPORT_CACHE_KIB = 8 * 1024

export { rowToContact } from './prepare'

export interface ImportRunnerOptions {
  /**
   * Suppression reasons of the suppressed addresses among a batch's (normalised) addresses;
   * suppressed addresses are imported with a status saying so. Asked once per batch.
   */
  suppressionReasons?: (emails: string[], listId: number) => Map<string, string>
  batchRows?: number
  /** Read and check rows in a worker thread (the default), or in this one. */
  worker?: boolean
}

interface BatchSource {
  /** The next batch, or null at the end of the file. */
  next(): Promise<PreparedBatch | null>
  close(): void
}

function inThreadSource(path: string, format: ImportFormat, skip: number, batchRows: number, opts: PrepareOptions): BatchSource {
  const batches = preparedBatches(path, format, skip, batchRows, opts)
  return {
    async next() {
      const r = await batches.next()
      return r.done ? null : r.value
    },
    close() {
      void batches.return(undefined)
    },
  }
}

/**
 * Batches from a worker thread, always one requested ahead: the worker reads and checks
 * batch n+1 while this thread writes batch n. Null when no worker can start (the caller
 * then reads in its own thread); a worker that fails before its first answer counts as not
 * started (for instance a single-file build made without the worker's entry point).
 */
async function workerSource(start: PrepareStart): Promise<{ source: BatchSource; first: PreparedBatch | null } | null> {
  let worker: WorkerClient<PrepareRequest, PreparedBatch | null>
  try {
    worker = startWorker(workerUrl(import.meta.url, './prepare-worker.ts', './modules/imports/prepare-worker.ts'), { name: 'the import worker' })
  } catch {
    return null
  }
  const request = (): Promise<PreparedBatch | null> => {
    const p = worker.request({ type: 'next' })
    // Awaited later; until then a failure must not count as unhandled.
    p.catch(() => {})
    return p
  }
  worker.send(start)
  let ahead = request()
  const source: BatchSource = {
    async next() {
      const batch = await ahead
      ahead = batch ? request() : Promise.resolve(null)
      return batch
    },
    close() {
      worker.terminate()
    },
  }
  try {
    return { source, first: await source.next() }
  } catch (e) {
    source.close()
    if (worker.failure && worker.answered === 0) return null
    throw e
  }
}

/**
 * Runs queued imports one at a time in the background. Each batch of rows commits in one
 * transaction together with the import's counters and `rows_done`, so after a crash or
 * restart `resume()` reads the file again, skips the rows already committed, and goes on:
 * no row is lost or counted twice.
 */
export function createImportRunner(deps: Deps, opts: ImportRunnerOptions = {}) {
  const client = deps.db.$client
  const batchRows = opts.batchRows ?? IMPORT_BATCH_ROWS
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
      // The contacts this batch subscribed to the list, for the drips' list-join entry.
      let joined: number[] = []
      const defs = fieldDefinitions(deps)
      const writer = createContactWriter(deps, {
        listId: imp.list_id,
        defs,
        mode: imp.mode,
        coerce: true,
        emitEvents: false,
        statusForNew: (email, requested) => {
          const reason = suppressed.get(email)
          return reason ? statusUnderSuppression(reason, requested) : requested
        },
        onSubscribed: imp.enroll ? (id) => joined.push(id) : undefined,
      })
      const insertError = client.prepare<unknown, [number, number, string, string]>(
        'INSERT INTO import_errors (import_id, row_number, reason, raw) VALUES (?, ?, ?, ?)',
      )
      const progress = client.prepare<unknown, [number, number, number, number, number, number]>(
        'UPDATE imports SET rows_done = rows_done + ?, created = created + ?, updated = updated + ?, skipped = skipped + ?, invalid = invalid + ? WHERE id = ?',
      )
      const commit = client.transaction((batch: PreparedBatch) => {
        const { data } = batch
        joined = []
        if (opts.suppressionReasons) {
          // Addresses come normalised from the checks: each is normalised once.
          const emails: string[] = []
          for (let i = 1; i < data.length; i += ROW_WIDTH) if (data[i] !== null) emails.push(data[i] as string)
          suppressed = opts.suppressionReasons(emails, imp.list_id)
        }
        const counts = { created: 0, updated: 0, skipped: 0, invalid: 0 }
        writer.batch(() => {
          for (let i = 0; i < data.length / ROW_WIDTH; i++) {
            const item = preparedRow(data, i)
            if ('error' in item) {
              counts.invalid++
              insertError.run(imp.id, item.row, item.error, item.raw)
              continue
            }
            const r = writer.writeChecked(item.contact)
            counts[r.result]++
            if (r.result === 'invalid') insertError.run(imp.id, item.row, describeErrors(r.errors), item.raw ?? '')
          }
        })
        // In the batch's transaction: the runs commit with the rows and rows_done, so a
        // resumed import neither misses nor repeats an enrollment.
        if (joined.length) enrollListJoins(deps, imp.list_id, joined, deps.clock.now())
        progress.run(batch.rows, counts.created, counts.updated, counts.skipped, counts.invalid, imp.id)
      })

      const prepare: PrepareOptions = { mapping: imp.mapping, defs, mode: imp.mode }
      const start: PrepareStart = {
        type: 'start',
        path: imp.file_path,
        format: imp.format,
        skip: imp.rows_done,
        batchRows,
        mapping: imp.mapping,
        defs: [...defs.values()],
        mode: imp.mode,
      }
      const viaWorker = opts.worker === false ? null : await workerSource(start)
      if (!viaWorker && opts.worker !== false) deps.log.warn('the import worker could not start; reading rows on the server thread', { import_id: imp.id })
      const source = viaWorker?.source ?? inThreadSource(imp.file_path, imp.format, imp.rows_done, batchRows, prepare)
      const autocheckpoint = (client.query('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint
      const cacheSize = (client.query('PRAGMA cache_size').get() as { cache_size: number }).cache_size
      client.run(`PRAGMA wal_autocheckpoint = ${Math.max(autocheckpoint, IMPORT_WAL_AUTOCHECKPOINT)}`)
      client.run(`PRAGMA cache_size = ${-IMPORT_CACHE_KIB}`)
      try {
        let batch = viaWorker ? viaWorker.first : await source.next()
        while (batch) {
          commit(batch)
          // Collectable from here on. No forced collection: since the heap is sized for 512 MiB
          // (decision 63) JavaScriptCore collects on its own, and one every 5 batches cost 14 %
          // of the import's time for 6-12 MiB of peak (decision 67).
          batch = null
          // Stopping leaves the import 'running': the next start resumes it after the committed rows.
          if (stopping) return
          // Let HTTP requests in between batches.
          await new Promise((resolve) => setImmediate(resolve))
          batch = await source.next()
        }
      } finally {
        source.close()
        client.run(`PRAGMA wal_autocheckpoint = ${autocheckpoint}`)
        client.run(`PRAGMA cache_size = ${cacheSize}`)
      }
      // The pages the long WAL holds go into the database file now, as part of the import
      // (otherwise the next commit of any request would pay for it).
      client.run('PRAGMA wal_checkpoint(PASSIVE)')
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
