import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import { checkEmail } from '../../lib/email'
import { AppError } from '../../lib/errors'
import { emit } from '../events/service'
import { acceptMessages, type PreparedMessage } from '../messages/service'
import { checkRecipients } from '../suppressions/service'
import { bump, countOf, moveStatus } from './counts'
import { outcomeBatch } from './outcomes'
import { PREPARE_CHUNK, prepareStep } from './prepare'
import { broadcastRow, compileContent, versionsOf, prepareRecipientMessage, type BroadcastRow, type CompiledContent, type ContactValues } from './render'
import { isTimeZone, nextOpening } from './send-window'
import { decideSplitTest } from './split-test'

/**
 * The broadcast runner (issue 15): an in-process loop, woken by a timer and by the doorbell
 * (rung when mail is queued or bc-api changes a broadcast's status), that acts on the
 * `broadcasts.status` column:
 *
 *   scheduled (send_at due) -> preparing, or paused when the schedule was missed by more
 *     than broadcast_max_lateness_seconds (never fires silently late);
 *   preparing -> the audience snapshot in chunks (prepare.ts), then sending. A broadcast
 *     that is not a split test also sends while it prepares: after each chunk, one sending
 *     batch over the pending rows committed so far (their versions are assigned in the
 *     chunk's transaction), so the first message does not wait for a million-row snapshot.
 *     Only `sending` (reached when the snapshot is whole) is ever finished, so a broadcast is
 *     never marked sent before all its recipient rows exist. A split test's sample needs the
 *     whole audience, so it sends nothing before `sending`;
 *   sending -> batches of pending rows in id order: checked again (contact status,
 *     suppressions incl. program:broadcast:<id>, send window), rendered (render.ts) and
 *     queued through acceptMessages, the rows marked `queued` with their message ids and the
 *     counters moved IN THE SAME TRANSACTION, which also re-reads the status: a pause that
 *     committed first stops the batch whole. At most broadcast_queue_window messages are in
 *     flight (queued, not yet final) per broadcast; send_rate_per_minute paces the batches;
 *     when nothing is pending or in flight -> sent.
 *
 * Every decision is a committed row, so a restart (even kill -9) continues where the rows
 * say: pending rows are sent, queued ones are the delivery engine's (its leases bound
 * duplicates to the messages on the wire at the crash).
 */

/** Recipients per sending batch (one transaction, rendered in this thread). */
export const SEND_BATCH = 200
/** How often an idle runner looks at the broadcasts table. */
const POLL_MS = 1000
/** Least time between two idle steps when rings keep coming, so heavy API traffic does not spin the runner. */
const RING_GAP_MS = 20
/**
 * How soon a runner whose queue window is full looks again. Nothing rings when queued
 * messages are delivered (the outcomes arrive through the event log), and a window of 1,000
 * drains in well under POLL_MS at full speed: waiting for the idle poll left the delivery
 * engine without broadcast mail for most of each second (bench/broadcast.ts).
 */
const WINDOW_POLL_MS = 50

const LIVE = ['scheduled', 'preparing', 'sending'] as const

interface Pick {
  id: number
  contact_id: number
  list_id: number
  email: string
  version_id: number | null
  status: string | null
  first_name: string | null
  last_name: string | null
  fields: string | null
}

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    live: c.prepare<{ id: number; status: string; send_at: number | null }, []>(
      `SELECT id, status, send_at FROM broadcasts WHERE status IN (${LIVE.map((s) => `'${s}'`).join(', ')}) ORDER BY id`,
    ),
    status: c.prepare<{ status: string }, [number]>('SELECT status FROM broadcasts WHERE id = ?'),
    pick: c.prepare<Pick, [number, number, number, number]>(`
      SELECT r.id, r.contact_id, r.list_id, r.email, r.version_id, c.status, c.first_name, c.last_name, c.fields
      FROM broadcast_recipients r LEFT JOIN contacts c ON c.id = r.contact_id
      WHERE r.broadcast_id = ?1 AND r.state = 'pending' AND (r.due_at IS NULL OR r.due_at <= ?2) AND (r.version_id IS NOT NULL OR ?3)
      ORDER BY r.id LIMIT ?4`),
    pendingAssigned: c.prepare<{ one: number }, [number]>(
      "SELECT 1 AS one FROM broadcast_recipients WHERE broadcast_id = ? AND state = 'pending' AND version_id IS NOT NULL LIMIT 1",
    ),
    queue: c.prepare<never, [string, number, number]>(
      "UPDATE broadcast_recipients SET state = 'queued', message_id = ?, updated_at = ? WHERE id = ? AND state = 'pending'",
    ),
    finish: c.prepare<never, [string, string, number, number]>(
      "UPDATE broadcast_recipients SET state = ?, reason = ?, updated_at = ? WHERE id = ? AND state = 'pending'",
    ),
    defer: c.prepare<never, [number, number, number]>('UPDATE broadcast_recipients SET due_at = ?, updated_at = ? WHERE id = ?'),
    finished: c.prepare<never, [number, number, number]>(
      "UPDATE broadcasts SET status = 'sent', finished_at = ?, updated_at = ? WHERE id = ? AND status = 'sending'",
    ),
    decideAt: c.prepare<never, [number, number]>("UPDATE broadcasts SET split_phase = 'waiting', split_decide_at = ? WHERE id = ?"),
  }
})

/** Thrown inside the queueing transaction when the broadcast left `sending`: the batch rolls back whole. */
class StatusChanged extends Error {}

/** What a sending broadcast keeps between batches of one run (rebuilt after a restart). */
interface RunState {
  contents: Map<number | null, CompiledContent>
  /** Not before this time (send_rate_per_minute). */
  nextAt: number
  /** The broadcast row as of the last batch, for rendering. */
  row: BroadcastRow
}

export interface BroadcastRunner {
  /** Look at the broadcasts now instead of at the next tick. */
  wake(): void
  /** Stops after the step in progress. */
  stop(): Promise<void>
}

const rate = (x: string | null, fallback: number) => {
  const n = x === null ? NaN : Number(x)
  return Number.isFinite(n) && n >= 0 ? n : fallback
}

/**
 * Starts the runner for `mailroom serve` (and tests): attaches to the doorbell, runs one
 * step per broadcast per turn while there is work, otherwise sleeps until the next poll or ring.
 */
export function startBroadcasts(deps: Deps, opts: { pollMs?: number; batch?: number; prepareChunk?: number } = {}): BroadcastRunner {
  const pollMs = opts.pollMs ?? POLL_MS
  const batch = opts.batch ?? SEND_BATCH
  const prepareChunk = opts.prepareChunk ?? PREPARE_CHUNK
  const runs = new Map<number, RunState>()
  let stopped = false
  let woken: (() => void) | null = null
  let rung = false
  /** Set by a step in which some broadcast's queue window was full. */
  let windowFull = false

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (rung || stopped) return resolve()
      const timer = setTimeout(done, ms)
      function done() {
        clearTimeout(timer)
        woken = null
        resolve()
      }
      woken = done
    })

  /** Marks a broadcast paused with a reason and `broadcast.paused` (only from `from`). */
  const pause = (id: number, from: string, reason: string, code: string) =>
    deps.db.$client
      .transaction(() => moveStatus(deps, id, from, 'paused', reason, { kind: 'broadcast.paused', data: { reason, code, from_status: from } }))
      .immediate()

  const fail = (id: number, from: string, reason: string) => {
    deps.log.error('broadcast failed', { broadcast_id: id, reason })
    deps.db.$client.transaction(() => moveStatus(deps, id, from, 'failed', reason)).immediate()
  }

  /** Scheduled and due: start, unless the schedule was missed by more than the lateness allowed. */
  const startDue = (id: number, sendAt: number | null, now: number): boolean => {
    if (sendAt === null || sendAt > now) return false
    const late = now - sendAt
    if (late > deps.config.broadcast_max_lateness_seconds * 1000) {
      const reason = `The schedule (${new Date(sendAt).toISOString()}) was missed by ${Math.round(late / 1000)} s, more than broadcast_max_lateness_seconds (${deps.config.broadcast_max_lateness_seconds}); resume to send it now.`
      pause(id, 'scheduled', reason, 'schedule_missed')
      deps.log.warn('broadcast schedule missed', { broadcast_id: id, late_ms: late })
      return true
    }
    deps.db.$client.transaction(() => moveStatus(deps, id, 'scheduled', 'preparing', null)).immediate()
    return true
  }

  /** Auto-pause on the bounce or complaint rate (after a minimum sample), also while it sends during preparation; true when it paused. */
  const overThresholds = (b: BroadcastRow): boolean => {
    const delivered = countOf(deps.db, b.id, 'delivered')
    const bounced = countOf(deps.db, b.id, 'bounced')
    const failed = countOf(deps.db, b.id, 'failed')
    const attempted = delivered + bounced + failed
    if (attempted < deps.config.broadcast_threshold_min_sample) return false
    const maxBounce = rate(b.max_bounce_rate, deps.config.broadcast_max_bounce_rate)
    const maxComplaint = rate(b.max_complaint_rate, deps.config.broadcast_max_complaint_rate)
    const bounceRate = bounced / attempted
    const complaintRate = delivered ? countOf(deps.db, b.id, 'complained') / delivered : 0
    if (bounceRate > maxBounce)
      return pause(
        b.id,
        b.status,
        `Bounce rate ${(bounceRate * 100).toFixed(1)} % is above ${(maxBounce * 100).toFixed(1)} % after ${attempted} messages.`,
        'bounce_rate',
      )
    if (complaintRate > maxComplaint)
      return pause(
        b.id,
        b.status,
        `Complaint rate ${(complaintRate * 100).toFixed(2)} % is above ${(maxComplaint * 100).toFixed(2)} % after ${delivered} delivered.`,
        'complaint_rate',
      )
    return false
  }

  const runOf = (b: BroadcastRow): RunState => {
    let run = runs.get(b.id)
    if (!run) {
      const contents = new Map<number | null, CompiledContent>()
      const versions = versionsOf(deps, b.id)
      // Each version's content compiled once per run.
      for (const v of versions) contents.set(v.id, compileContent(deps, b, v))
      contents.set(null, versions.length ? contents.get(versions[0]!.id)! : compileContent(deps, b, null))
      run = { contents, nextAt: 0, row: b }
      runs.set(b.id, run)
    }
    run.row = b
    return run
  }

  /** One sending batch; returns 'sent' when it queued or settled rows, 'idle' when nothing was due, 'full' when the window is full. */
  const sendBatch = async (b: BroadcastRow, run: RunState, now: number): Promise<'sent' | 'idle' | 'full' | 'paced'> => {
    if (now < run.nextAt) return 'paced'
    const inFlight = countOf(deps.db, b.id, 'queued')
    const room = deps.config.broadcast_queue_window - inFlight
    if (room <= 0) return 'full'
    const perMinute = b.send_rate_per_minute
    let limit = Math.min(batch, room)
    if (perMinute) limit = Math.min(limit, Math.max(1, Math.ceil(perMinute / 60)))
    const split = b.version_mode === 'split_test' && b.split_test && b.split_phase !== 'decided'
    const rows = statements(deps.db).pick.all(b.id, now, split ? 0 : 1, limit)
    if (!rows.length) return 'idle'

    const skips: Array<{ id: number; version: number | null; reason: string }> = []
    const defers: Array<{ id: number; at: number }> = []
    const candidates: Pick[] = []
    for (const r of rows) {
      if (r.status === null) skips.push({ id: r.id, version: r.version_id, reason: 'contact deleted' })
      else if (r.status !== 'subscribed') skips.push({ id: r.id, version: r.version_id, reason: r.status })
      else if (!checkEmail(r.email).ok) skips.push({ id: r.id, version: r.version_id, reason: 'invalid address' })
      else candidates.push(r)
    }
    const decisions = checkRecipients(
      deps,
      candidates.map((r) => ({ email: r.email, list_id: r.list_id, program: { type: 'broadcast' as const, id: b.id } })),
    )
    const prepared: Array<{ row: Pick; message: PreparedMessage }> = []
    const failures: Array<{ id: number; version: number | null; reason: string }> = []
    candidates.forEach((r, i) => {
      const d = decisions[i]!
      if (!d.allowed) return skips.push({ id: r.id, version: r.version_id, reason: `suppressed (${d.suppression.scope}, ${d.suppression.reason})` })
      const fields = r.fields ? (JSON.parse(r.fields) as Record<string, unknown>) : {}
      if (b.send_window) {
        const w = b.send_window
        const own = w.contact_timezone_field ? fields[w.contact_timezone_field] : null
        const zone = typeof own === 'string' && isTimeZone(own) ? own : (w.timezone ?? b.timezone ?? 'UTC')
        const at = nextOpening(w, isTimeZone(zone) ? zone : 'UTC', now)
        if (at > now) return defers.push({ id: r.id, at })
      }
      const contact: ContactValues = { id: r.contact_id, email: r.email, first_name: r.first_name, last_name: r.last_name, fields }
      try {
        const content = run.contents.get(r.version_id) ?? run.contents.get(null)!
        prepared.push({ row: r, message: prepareRecipientMessage(deps, b, content, contact) })
      } catch (e) {
        // The sender's domain is the broadcast's problem, not this recipient's: stop, do not fail every row.
        if (e instanceof AppError && e.code === 'domain_not_verified') throw e
        failures.push({ id: r.id, version: r.version_id, reason: (e as Error).message.slice(0, 500) })
      }
    })

    const st = statements(deps.db)
    try {
      await acceptMessages(deps, {
        ctx: { source: 'broadcast', apiKeyId: null, poolId: b.pool_id, broadcastId: b.id },
        prepare: () => prepared.map((p) => p.message),
        respond: () => ({ status: 202, body: null }),
        within: (_accepted, at) => {
          // Re-read in the transaction: a pause committed before this batch stops it whole.
          // A batch picked while preparing may commit after the last chunk moved it to sending.
          const status = st.status.get(b.id)?.status
          if (status !== 'sending' && (b.status !== 'preparing' || status !== 'preparing')) throw new StatusChanged()
          for (const p of prepared) {
            st.queue.run(p.message.id, at, p.row.id)
            bump(deps.db, b.id, p.row.version_id, 'pending', -1)
            bump(deps.db, b.id, p.row.version_id, 'queued')
          }
          for (const [list, state] of [
            [skips, 'skipped'],
            [failures, 'failed'],
          ] as const) {
            for (const s of list) {
              st.finish.run(state, s.reason, at, s.id)
              bump(deps.db, b.id, s.version, 'pending', -1)
              bump(deps.db, b.id, s.version, state)
            }
          }
          for (const d of defers) st.defer.run(d.at, at, d.id)
        },
      })
    } catch (e) {
      if (e instanceof StatusChanged) return 'idle'
      throw e
    }
    if (perMinute) run.nextAt = now + Math.ceil((rows.length * 60_000) / perMinute)
    return 'sent'
  }

  /**
   * The sending batch of a broadcast still preparing (not a split test): the rows the chunks
   * so far committed, under the same thresholds. No finish check: that belongs to `sending`.
   */
  const sendWhilePreparing = async (id: number, now: number): Promise<void> => {
    const b = broadcastRow(deps, id)
    if (b.status !== 'preparing' || (b.version_mode === 'split_test' && b.split_test)) return
    if (overThresholds(b)) return
    try {
      await sendBatch(b, runOf(b), now)
    } catch (e) {
      // The step's caller fails the broadcast (it is `preparing`), with this reason.
      if (e instanceof StatusChanged) return
      throw e
    }
  }

  /** One step for a sending broadcast; returns true when more work is ready at once. */
  const stepSending = async (id: number, now: number): Promise<boolean> => {
    const b = broadcastRow(deps, id)
    if (b.status !== 'sending') return false
    if (overThresholds(b)) return false
    let run: RunState
    try {
      run = runOf(b)
    } catch (e) {
      fail(id, 'sending', (e as Error).message)
      return false
    }
    const split = b.version_mode === 'split_test' && b.split_test
    if (split && b.split_phase === 'waiting') {
      if (b.split_decide_at !== null && b.split_decide_at <= now) {
        deps.db.$client.transaction(() => decideSplitTest(deps, b)).immediate()
        return true
      }
      return false
    }
    let outcome: Awaited<ReturnType<typeof sendBatch>>
    try {
      outcome = await sendBatch(b, run, now)
    } catch (e) {
      if (!(e instanceof AppError && e.code === 'domain_not_verified')) throw e
      fail(id, 'sending', e.message)
      return false
    }
    if (outcome === 'sent') return true
    if (outcome === 'full') windowFull = true
    if (outcome !== 'idle') return false
    // Nothing due now: finished, a split test's sample done, or rows waiting for their time.
    if (countOf(deps.db, id, 'queued') > 0) return false
    if (split && b.split_phase === 'sampling') {
      if (!statements(deps.db).pendingAssigned.get(id)) st().decideAt.run(now + b.split_test!.wait_seconds * 1000, id)
      return false
    }
    if (countOf(deps.db, id, 'pending') > 0) return false
    deps.db.$client
      .transaction(() => {
        if (statements(deps.db).finished.run(now, now, id).changes === 0) return
        const data = { broadcast_id: id, total: countOf(deps.db, id, 'total'), sent: countOf(deps.db, id, 'sent'), skipped: countOf(deps.db, id, 'skipped') }
        emit(deps.db, now, { kind: 'broadcast.finished', broadcast_id: id, data })
      })
      .immediate()
    runs.delete(id)
    return false
  }
  const st = () => statements(deps.db)

  /** One pass over the live broadcasts; true when some have more work ready at once. */
  const step = async (): Promise<boolean> => {
    while (await deps.commits.run(() => outcomeBatch(deps))) await new Promise((r) => setImmediate(r))
    let busy = false
    for (const b of st().live.all()) {
      if (stopped) break
      const now = deps.clock.now()
      try {
        if (b.status === 'scheduled') busy = startDue(b.id, b.send_at, now) || busy
        else if (b.status === 'preparing') {
          if (!prepareStep(deps, b.id, prepareChunk)) await sendWhilePreparing(b.id, now)
          busy = true
        } else busy = (await stepSending(b.id, now)) || busy
      } catch (e) {
        deps.log.error('broadcast step failed', { broadcast_id: b.id, error: (e as Error).message })
        if (b.status === 'preparing') fail(b.id, 'preparing', (e as Error).message)
      }
    }
    for (const id of runs.keys()) {
      const s = st().status.get(id)?.status
      if (s !== 'sending' && s !== 'preparing') runs.delete(id)
    }
    return busy
  }

  const loop = (async () => {
    while (!stopped) {
      rung = false
      windowFull = false
      let busy = false
      try {
        busy = await step()
      } catch (e) {
        deps.log.error('broadcast runner step failed', { error: (e as Error).message })
      }
      if (busy) await new Promise((r) => setImmediate(r))
      // Rung meanwhile (every accepted API send rings): look again soon, but at most every RING_GAP_MS.
      else if (rung) await new Promise((r) => setTimeout(r, RING_GAP_MS))
      // A full window frees up as messages are delivered, which rings nothing: look again soon.
      else await sleep(windowFull ? Math.min(pollMs, WINDOW_POLL_MS) : pollMs)
    }
  })()

  const runner: BroadcastRunner = {
    wake() {
      rung = true
      woken?.()
    },
    async stop() {
      stopped = true
      woken?.()
      await loop
    },
  }
  deps.doorbell.attach(runner, 'broadcasts')
  return runner
}
