import { availableParallelism } from 'node:os'
import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import type { Logger } from '../../lib/logger'
import { startWorker, type WorkerClient } from '../../lib/worker-client'
import { workerUrl } from '../../lib/worker-url'
import type { CountRequest } from './count-worker'
import type { Condition, SqlValue } from './rules'

/**
 * The parallel segment count. A segment whose conditions no index serves (custom fields,
 * a status most contacts have) is counted by a scan of every contact; on a million contacts
 * that is 250-450 ms of one core, all of it on the thread that serves HTTP. Here the scan is
 * cut into rowid ranges counted at once by worker threads (count-worker.ts), each on its own
 * read-only connection to the database file: WAL readers do not block one another.
 *
 * Used only when it pays, otherwise `null` and the caller counts on the server's connection:
 * - the database is a file (an in-memory database has no second connection: tests);
 * - the audience is large (`minContacts`, from the trigger-kept contact_counts): below it a
 *   scan is fast and a round trip through the workers is pure cost;
 * - SQLite's plan for the whole count is a plain table scan (`SCAN contacts`). When an index
 *   narrows the count (a rare status, a creation-time window), the one indexed search is
 *   already short, and cutting it by rowid would make each range walk the same index;
 * - the workers started. A build without the worker's entry point, or a worker that fails
 *   before it answers, leaves the pool unavailable for good (logged once).
 *
 * Consistency: each range is counted in its own read transaction, on its own snapshot, so a
 * write committed while a count runs may be seen by one range and not another. The count of
 * a changing audience is a point in time within the request either way; callers that need
 * a count consistent with something else they read (segmentContacts: its page and total)
 * count on the server's connection inside their own read transaction.
 */

/** Below this many contacts the count stays on the server's connection. */
export const PARALLEL_COUNT_MIN_CONTACTS = 100_000
/**
 * Ranges per worker. More ranges than workers keep both busy to the end when one range
 * holds more matches (more JSON to parse) or the machine takes a core away for a moment: a
 * worker that is done takes the next range. Each range costs a message and a statement run.
 */
export const RANGES_PER_WORKER = 4
/** A worker that has not opened its connection by then counts as not started. */
const START_TIMEOUT_MS = 10_000
/** How long stop() waits for terminated workers to close. */
const CLOSE_TIMEOUT_MS = 2_000

export interface CountPoolOptions {
  /** Worker threads; default min(2, availableParallelism()). Fewer than 2 turns the parallel count off. */
  workers?: number
  /** Contacts below which the count stays on the server's connection; default PARALLEL_COUNT_MIN_CONTACTS. */
  minContacts?: number
  /** The worker module; tests point it at a missing file to see the fallback. */
  workerUrl?: URL
  /** Rowid ranges per worker; default RANGES_PER_WORKER. */
  rangesPerWorker?: number
}

interface Task {
  sql: string
  params: SqlValue[]
  resolve(n: number): void
  reject(e: Error): void
}

interface Slot {
  worker: WorkerClient<CountRequest, number>
  task: Task | null
}

type State = 'idle' | 'starting' | 'ready' | 'unavailable' | 'stopped'

/**
 * The worker threads of one database, started on first use. A worker is referenced only
 * while it counts (worker-client.ts): an idle pool never keeps a process alive, and the
 * server stops it when it stops (cli.ts serve).
 */
export class CountPool {
  readonly size: number
  readonly minContacts: number
  readonly rangesPerWorker: number
  private readonly url: URL
  private state: State = 'idle'
  private starting: Promise<boolean> | null = null
  private slots: Slot[] = []
  private queue: Task[] = []
  private closed: Array<Promise<void>> = []
  /** What happened so far, for tests and diagnostics. */
  readonly stats = { parallel: 0, single: 0, alive: 0 }

  constructor(
    private readonly path: string,
    private readonly busyTimeoutMs: number,
    private readonly log: Logger,
    options: CountPoolOptions = {},
  ) {
    this.size = options.workers ?? Math.min(2, availableParallelism())
    this.minContacts = options.minContacts ?? PARALLEL_COUNT_MIN_CONTACTS
    this.rangesPerWorker = Math.max(1, options.rangesPerWorker ?? RANGES_PER_WORKER)
    this.url = options.workerUrl ?? workerUrl(import.meta.url, './count-worker.ts', './modules/segments/count-worker.ts')
  }

  /** Whether the pool may still count (it has not failed or been stopped). */
  get running(): boolean {
    return this.state === 'ready' || this.state === 'starting' || this.state === 'idle'
  }

  /** Whether the workers are running; starts them on the first call. */
  ready(): Promise<boolean> {
    if (this.state === 'ready') return Promise.resolve(true)
    if (this.state === 'unavailable' || this.state === 'stopped' || this.size < 2) return Promise.resolve(false)
    this.starting ??= this.start()
    return this.starting
  }

  private async start(): Promise<boolean> {
    this.state = 'starting'
    const opened: Array<Promise<number>> = []
    try {
      for (let i = 0; i < this.size; i++) {
        const worker = startWorker<CountRequest, number>(this.url, { name: 'a segment count worker', onFailure: (e) => this.failed(e) })
        this.stats.alive++
        this.closed.push(worker.closed.then(() => void this.stats.alive--))
        this.slots.push({ worker, task: null })
        // Answered once the worker has opened its connection; rejected when it fails first.
        opened.push(worker.request({ type: 'open', path: this.path, busyTimeoutMs: this.busyTimeoutMs }))
      }
      let timer: Timer | undefined
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS)
        timer.unref()
      })
      try {
        await Promise.race([Promise.all(opened), timeout])
      } finally {
        clearTimeout(timer)
      }
    } catch (e) {
      opened.forEach((p) => p.catch(() => {}))
      if ((this.state as State) !== 'stopped') {
        this.log.warn('the segment count workers could not start; counting on the server thread', { error: (e as Error).message })
        this.state = 'unavailable'
      }
      this.terminate()
      // A failed start leaves no thread behind when the count goes on without it.
      await this.gone()
      return false
    }
    if ((this.state as State) === 'stopped') return false
    this.state = 'ready'
    return true
  }

  /** A started worker that dies takes the pool down: the counts fall back, later ones too. (A failed start is start's to report.) */
  private failed(error: Error): void {
    if (this.state !== 'ready') return
    this.log.error('a segment count worker failed; counting on the server thread from now on', { error: error.message })
    this.state = 'unavailable'
    this.terminate()
  }

  /** Hands queued ranges to idle workers, oldest first (ranges of concurrent counts interleave fairly). */
  private pump(): void {
    for (const slot of this.slots) {
      if (slot.task) continue
      const task = this.queue.shift()
      if (!task) break
      slot.task = task
      const settled = () => {
        if (slot.task === task) slot.task = null
        this.pump()
      }
      slot.worker.request({ type: 'count', sql: task.sql, params: task.params }).then(
        (n) => (task.resolve(n), settled()),
        (e: Error) => (task.reject(e), settled()),
      )
    }
  }

  /** The sum of `SELECT COUNT(*) AS n` over several parameter sets, counted by the workers. */
  async countAll(sql: string, paramSets: SqlValue[][]): Promise<number> {
    if (this.state !== 'ready') throw new Error('the count workers are not running')
    const parts = paramSets.map(
      (params) =>
        new Promise<number>((resolve, reject) => {
          this.queue.push({ sql, params, resolve, reject })
        }),
    )
    this.pump()
    const counts = await Promise.all(parts)
    return counts.reduce((a, b) => a + b, 0)
  }

  private terminate(): void {
    const error = new Error('the count workers stopped')
    for (const slot of this.slots) {
      slot.task?.reject(error)
      slot.task = null
      slot.worker.terminate(error)
    }
    for (const task of this.queue.splice(0)) task.reject(error)
    this.slots = []
  }

  /** Ends the workers (pending counts fall back to the server's connection) and waits until they are gone. */
  async stop(): Promise<void> {
    this.state = 'stopped'
    this.terminate()
    await this.gone()
  }

  /** Until every terminated worker has closed; bounded, so a lost close event cannot hang a count or the shutdown. */
  private async gone(): Promise<void> {
    let timer: Timer | undefined
    await Promise.race([Promise.all(this.closed), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)))])
    clearTimeout(timer)
  }
}

const pools = new WeakMap<Db, CountPool>()

/**
 * The count pool of this database handle, made on first use (no worker starts until a large
 * count needs one). Options apply only when it is made; a test makes it first, with a small
 * `minContacts`. Keyed by the handle like preparedFor: no global database.
 */
export function segmentCountPool(deps: Deps, options?: CountPoolOptions): CountPool {
  let pool = pools.get(deps.db)
  if (!pool) {
    const client = deps.db.$client
    const busy = client.query('PRAGMA busy_timeout').get() as Record<string, number> | null
    // The same busy_timeout as the server's connection (set in src/db/client.ts).
    pool = new CountPool(client.filename, busy ? Number(Object.values(busy)[0]) : 5000, deps.log, options)
    pools.set(deps.db, pool)
  }
  return pool
}

/** Stops this database's count workers, if any ever started. Called when the server stops. */
export async function stopSegmentCountPool(deps: Deps): Promise<void> {
  const pool = pools.get(deps.db)
  pools.delete(deps.db)
  await pool?.stop()
}

const statements = preparedFor((db: Db) => ({
  contacts: db.$client.prepare<{ n: number }, []>('SELECT coalesce(sum(n), 0) AS n FROM contact_counts'),
  // Two subqueries: SQLite answers a lone min() or max() from the end of the rowid b-tree,
  // but scans the table for min() and max() in one SELECT.
  idRange: db.$client.prepare<{ lo: number | null; hi: number | null }, []>(
    'SELECT (SELECT min(id) FROM contacts) AS lo, (SELECT max(id) FROM contacts) AS hi',
  ),
}))

function isFile(path: string): boolean {
  return path !== '' && path !== ':memory:' && !path.startsWith('file::memory:') && !/[?&]mode=memory\b/.test(path)
}

/** Whether SQLite would count these rules by reading every row of contacts (no index narrows it). */
export function countScansAllContacts(db: Db, compiled: Condition): boolean {
  // prepare, not query: query() keeps every statement text it saw, and rule sets vary without end.
  const stmt = db.$client.prepare<{ detail: string }, SqlValue[]>(`EXPLAIN QUERY PLAN SELECT COUNT(*) FROM contacts WHERE ${compiled.where}`)
  try {
    return stmt.all(...compiled.params).some((row) => row.detail === 'SCAN contacts')
  } finally {
    stmt.finalize()
  }
}

/** The rowid ranges the scan is cut into: at most `parts` ranges, none empty, covering lo..hi. */
export function rowidRanges(lo: number, hi: number, parts: number): Array<[number, number]> {
  const n = Math.max(1, Math.min(parts, hi - lo + 1))
  const step = Math.ceil((hi - lo + 1) / n)
  const ranges: Array<[number, number]> = []
  for (let start = lo; start <= hi; start += step) ranges.push([start, Math.min(hi, start + step - 1)])
  return ranges
}

/**
 * The count of one rowid range; parameters: the range's first and last id, then the rules'.
 * SQLite searches the primary key for the range and tests the rules on each row in it, as
 * the whole count does on every row (the plan tests check this).
 */
export function rangeCountSql(compiled: Condition): string {
  return `SELECT COUNT(*) AS n FROM contacts WHERE rowid BETWEEN ? AND ? AND (${compiled.where})`
}

/**
 * Counts the contacts matching compiled rules on the worker threads, or answers null when the
 * count should run on the server's connection (see the top of this file for when). A failure
 * of the workers is logged and answered with null too: the caller's count is the reference.
 */
export async function parallelCount(deps: Deps, compiled: Condition): Promise<number | null> {
  const pool = segmentCountPool(deps)
  const n = await countOnWorkers(deps, pool, compiled)
  if (n === null) pool.stats.single++
  else pool.stats.parallel++
  return n
}

async function countOnWorkers(deps: Deps, pool: CountPool, compiled: Condition): Promise<number | null> {
  const db = deps.db
  if (pool.size < 2 || !isFile(db.$client.filename)) return null
  const s = statements(db)
  if (s.contacts.get()!.n < pool.minContacts || !countScansAllContacts(db, compiled)) return null
  if (!(await pool.ready())) return null
  // Read after the workers are up (the first count waits for them), so the ranges cover
  // every contact committed before the count starts.
  const { lo, hi } = s.idRange.get()!
  if (lo === null || hi === null) return null
  const sql = rangeCountSql(compiled)
  const ranges = rowidRanges(lo, hi, pool.size * pool.rangesPerWorker)
  try {
    return await pool.countAll(
      sql,
      ranges.map(([a, b]) => [a, b, ...compiled.params]),
    )
  } catch (e) {
    if (pool.running) deps.log.warn('a parallel segment count failed; counting on the server thread', { error: (e as Error).message })
    return null
  }
}
