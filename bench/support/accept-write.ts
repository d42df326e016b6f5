/**
 * What the accept transaction's parts cost a message, in process (issue 18, eighteenth round):
 * the whole write of a prepared message, and its pieces one at a time, in transactions of 20
 * on a WAL file database with the real schema and `synchronous = NORMAL` (as the group commit
 * runs them: its fdatasync is off the thread). Medians of 5 runs of 100 transactions.
 *
 *   bun bench/support/accept-write.ts
 *
 * Not part of `npm run bench`: it sizes pieces the accept benchmark cannot separate.
 */
import { join } from 'node:path'
import { packMessage } from '../../src/lib/stored-message'
import { emitPrepared } from '../../src/modules/events/service'
import { prepareMessages, queueOwnMessage, type AcceptContext } from '../../src/modules/messages/service'
import { checkRecipients } from '../../src/modules/suppressions/service'
import { testDeps } from '../../test/support/app'
import { tempDir } from '../../test/support/temp-dirs'
import { ACCEPT_BODY } from '../accept'

const BATCH = 20
const TRANSACTIONS = 100
const RUNS = 5

const deps = testDeps({ allow_unverified_domains: true }, join(tempDir('mailroom-accept-write-'), 'mailroom.db'))
const client = deps.db.$client
client.run('PRAGMA synchronous = NORMAL')
const body = JSON.parse(ACCEPT_BODY) as { from: string; to: string; subject: string; html: string }
const input = { from: body.from, to: [body.to], subject: body.subject, html: body.html }
const ctx: AcceptContext = { source: 'api', apiKeyId: null }
const prepared = () => prepareMessages(deps, [input], ctx)[0]!

/** Median µs a message of `work` over BATCH items, in a transaction per batch unless `outside`. */
function time<T>(label: string, items: () => T[], work: (item: T) => void, outside = false): void {
  const runs: number[] = []
  for (let r = 0; r < RUNS; r++) {
    let ms = 0
    for (let b = 0; b < TRANSACTIONS; b++) {
      const batch = items()
      const start = performance.now()
      if (outside) for (const item of batch) work(item)
      else client.transaction(() => batch.forEach(work))()
      ms += performance.now() - start
    }
    runs.push((ms * 1000) / (TRANSACTIONS * BATCH))
  }
  runs.sort((a, b) => a - b)
  console.log(`${label.padEnd(58)} ${runs[RUNS >> 1]!.toFixed(1).padStart(6)} µs a message`)
}

const batchOf =
  <T>(make: () => T) =>
  () =>
    Array.from({ length: BATCH }, make)
const raw = prepared().raw
let n = 0

time(
  'prepare (checks, domain rule, text part, MIME)',
  batchOf(() => 0),
  () => prepareMessages(deps, [input], ctx),
  true,
)
time('the whole write (message, recipient, event, checks)', batchOf(prepared), (p) => queueOwnMessage(deps, p, 'api', Date.now()))
time(
  `zstd of the ${raw.length}-byte message`,
  batchOf(() => raw),
  (r) => packMessage(r),
  true,
)
time(
  'suppression check of one address',
  batchOf(() => 0),
  () => checkRecipients(deps, [{ email: body.to }]),
)
time(
  'one message.queued event',
  batchOf(() => `m${n++}`),
  (id) => emitPrepared(deps.db, Date.now(), { kind: 'message.queued', message_id: id, recipient: body.to, bridge_id: null, data: { kind: 'to' } }),
)
