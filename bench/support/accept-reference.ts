/**
 * The reference for `bench/accept.ts` (issue 18): what accepting a send costs with nothing of
 * Mailroom. Elysia, `POST /v1/send` with a JSON body, one bun:sqlite INSERT of the body per
 * request, group commit (every request that arrived while the last transaction ran goes into
 * the next one; WAL, synchronous=FULL, so each commit is fsync'd) and 202 after the commit.
 * The database is in the directory given as the first argument. Prints
 * "reference listening on http://127.0.0.1:PORT".
 */
import { Database } from 'bun:sqlite'
import { Elysia } from 'elysia'
import { join } from 'node:path'

const dir = process.argv[2] ?? '/tmp'
const db = new Database(join(dir, 'reference.db'), { create: true })
db.exec('PRAGMA journal_mode = WAL')
db.exec('PRAGMA synchronous = FULL')
db.exec('CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, created_at INTEGER NOT NULL, body TEXT NOT NULL)')
const insert = db.prepare<never, [number, string]>('INSERT INTO messages (created_at, body) VALUES (?, ?)')

let pending: Array<{ body: string; done: (id: number) => void; fail: (e: unknown) => void }> = []
let scheduled = false
const commit = db.transaction((batch: typeof pending) => batch.map((p) => Number(insert.run(Date.now(), p.body).lastInsertRowid)))
const flush = () => {
  scheduled = false
  const batch = pending
  pending = []
  try {
    const ids = commit(batch)
    batch.forEach((p, i) => p.done(ids[i]!))
  } catch (e) {
    for (const p of batch) p.fail(e)
  }
}
const store = (body: string) =>
  new Promise<number>((done, fail) => {
    pending.push({ body, done, fail })
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  })

const app = new Elysia()
  .post('/v1/send', async ({ body, set }) => {
    const id = await store(JSON.stringify(body))
    set.status = 202
    return { success: true, data: { id: String(id) } }
  })
  .listen({ hostname: '127.0.0.1', port: 0 })
process.stdout.write(`reference listening on http://127.0.0.1:${app.server!.port}\n`)
process.once('SIGTERM', () => {
  void app.stop(true).finally(() => {
    db.close()
    process.exit(0)
  })
})
