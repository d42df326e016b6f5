/**
 * Traffic shaping: how fast mail may leave each source IP for each provider group
 * (providers.ts), adapted to what the receivers say.
 *
 * - Limits per (group, IP): deliveries in progress (connections), messages per connection,
 *   messages a minute and an hour (`limitsFor`, overridable by `shaping_limits`).
 * - Slow-down replies (rules in lib/slowdown-replies.ts) halve the pair's rate and hold it
 *   for a back-off (1, 2, 4 ... minutes, at most 30); every SUCCESS_STEP accepted messages
 *   raise the rate by half again, back up to the ceiling, where the pair is `normal` again.
 * - A block reply (5.7.1 "listed by Spamhaus" and the like) suspends the pair for
 *   `shaping_suspend_minutes`, raises `deliverability.alert` and pauses the running broadcasts
 *   of the IP's pools (guardrails.ts). After the suspension the pair resumes throttled.
 * - Warm-up (warmup.ts): an IP in `ip_warmups` sends at most its schedule's cap per UTC day
 *   and group; the counts are in `warmup_usage`.
 *
 * choose() tries the pool's IPs in rotation order and takes the first that may send now, so
 * mail over an IP's cap or hold spills to the other IPs of the pool; when none may, the rows
 * wait (postponed without spending an attempt) until the earliest IP may send again. A pair
 * whose deliveries in progress are at its `connections` limit is not a reason to postpone:
 * its deliveries end within seconds, so the job waits in memory (FIFO per pair) for the first
 * of them to finish. Postponing by a guessed second instead cost two thirds of the throughput
 * to one destination (docs/benchmarks.md, Delivery). As many jobs wait so as the pair
 * finished in the last second (at least WAIT_DEPTH a connection): about a second's work, so a
 * large batch to a slow provider does not fill the engine's in-flight room with waiters while
 * other destinations are due, and a fast one is not starved of waiters. The rest are
 * postponed, in a line served at that rate (a second ahead at least, five minutes at most), and
 * pulled forward whenever the pair has a free connection and nobody waiting (busy-line.ts): a
 * pair that proves faster than the line was written for takes its rows sooner. A fixed
 * depth of 4 a connection postponed most jobs of a batch to one fast destination, again and
 * again: each a claim, a read and a postponing write, 4.4 group-commit items a delivered
 * message instead of 1.5 (decision 66).
 * Relay routes are not shaped: the relay paces its own deliveries.
 *
 * The pair state is written to `shaping_states` on every change of state or rate (rare), so
 * it survives a restart and the queue view can read it; per-minute counts are in memory.
 */
import type { Deps } from '../deps'
import { emit } from '../modules/events/service'
import { matchSlowdown } from '../lib/slowdown-replies'
import { groupOfDomain, groupOfMxHosts, limitsFor, type GroupLimits } from './providers'
import { pauseForListedIp } from './guardrails'
import { createBusyLines } from './busy-line'
import { capFor, dayKey, defaultSchedule, nextDayStart, warmupDay, type WarmupStep } from './warmup'
import type { RecipientResult } from './transport'

export type PairState = 'normal' | 'throttled' | 'suspended'

/** Accepted messages between two rate increases while throttled. */
export const SUCCESS_STEP = 10
/** The rate a throttled pair without a configured ceiling starts from, and 8x it is where it counts as recovered. */
export const UNLIMITED_THROTTLE_START = 60
const MAX_BACKOFF_MS = 30 * 60_000
/** Jobs that may wait in memory per busy connection of a pair at least (enough to keep it fed); a pair that finishes more a second may hold that many. */
export const WAIT_DEPTH = 4
/** How long a job beyond the waiting room is postponed at least... */
const BUSY_POSTPONE_MS = 1000
/**
 * ...and at most: jobs postponed in a row are spread over the pair's rate up to this far
 * ahead, and the jobs beyond the line wait this long. So a backlog behind a busy destination
 * comes back at its rate or at backlog / BUSY_SPREAD_MS a second, whichever is more: with 30
 * s, 100,000 jobs queued behind a silent MX came back 3,300 a second, each claimed, read and
 * postponed again (20 % of a core doing nothing; docs/benchmarks.md, ninth round). Five
 * minutes is Postfix's own retry cadence for a destination that does not take mail
 * (queue_run_delay, minimal_backoff_time), and when the destination recovers the backlog is
 * back within that.
 */
export const BUSY_SPREAD_MS = 300_000

interface Pair {
  state: PairState
  /** Messages a minute allowed now; null = the ceiling. */
  rate: number | null
  holdUntil: number | null
  successes: number
  strikes: number
  reason: string | null
  minute: number
  minuteCount: number
  hour: number
  hourCount: number
  inFlight: number
  /** The ceiling of the pool this pair was last chosen for; null = none. */
  ceiling: number | null
  /** Deliveries finished in the clock second `doneSecond`, and in the second before it. */
  doneSecond: number
  doneNow: number
  donePrevious: number
  /** Where the next job postponed because the pair is busy goes (laterSlot). */
  nextSlot: number
  /** The limits the pair was last admitted under (its line is pulled by them); null before the first. */
  limits: GroupLimits | null
  /** Rows of its line last pulled forward and not yet come back through choose(), and when. */
  pulled: number
  pulledAt: number
}

export interface Candidate {
  address: string
  hostname: string
}

export type Choice =
  | { kind: 'send'; source: Candidate | null; admit: number; group: string; limits: GroupLimits }
  /** `line`: postponed into the line of this busy pair; the caller hands the rows to lineUp(). */
  | { kind: 'wait'; until: number; reason: string; line?: string }

export interface Shaper {
  /** The provider group of a recipient domain (well-known domains, else the MX hosts). */
  groupOf(domain: string): Promise<string>
  /** Picks the source for up to `n` messages to `group` among the pool's candidates (in rotation order; [] = the host's default address). */
  choose(group: string, poolId: number | null, candidates: Candidate[], n: number): Promise<Choice>
  /** Ends a delivery started by a `send` choice and learns from its results. */
  finish(group: string, ip: string, results: RecipientResult[]): Promise<void>
  /** Rows postponed (committed) by a `wait` choice with a `line`, so the line can be pulled forward. */
  lineUp(line: string, ids: number[], at: number): void
}

type StateRow = { state: PairState; rate_per_minute: number | null; hold_until: number | null; successes: number; reason: string | null }

/** Creates the shaper; `mxHosts` resolves a domain's MX host names (the transport's cache). */
export function createShaper(deps: Deps, opts: { mxHosts: (domain: string) => Promise<string[]> }): Shaper {
  const pairs = new Map<string, Pair>()
  const lines = createBusyLines(deps)
  const learned = new Map<string, string>()
  const usage = new Map<string, number>()
  const c = deps.db.$client
  const readState = c.prepare<StateRow, [string, string]>(
    'SELECT state, rate_per_minute, hold_until, successes, reason FROM shaping_states WHERE provider = ? AND ip = ?',
  )
  const readDomain = c.prepare<{ provider: string }, [string]>('SELECT provider FROM provider_domains WHERE domain = ?')
  const readPoolName = c.prepare<{ name: string }, [number]>('SELECT name FROM ip_pools WHERE id = ?')
  const readWarmup = c.prepare<{ started_at: number; schedule: string | null }, [string]>(
    'SELECT w.started_at, w.schedule FROM ip_warmups w JOIN ips i ON i.id = w.ip_id WHERE i.address = ?',
  )
  const readUsage = c.prepare<{ count: number }, [string, string, string]>('SELECT count FROM warmup_usage WHERE ip = ? AND day = ? AND provider = ?')

  const keyOf = (group: string, ip: string) => `${group}\n${ip}`

  /** Jobs waiting for a delivery of a pair to finish, FIFO per pair; one job may wait on several pairs (each IP of its pool), the first to free one wakes it. */
  type SlotWaiter = { woken: boolean; wake: () => void }
  const slotWaiters = new Map<string, SlotWaiter[]>()

  function waitForSlot(keys: string[]): Promise<void> {
    return new Promise((resolve) => {
      const waiter: SlotWaiter = { woken: false, wake: resolve }
      for (const key of keys) {
        let list = slotWaiters.get(key)
        if (!list) slotWaiters.set(key, (list = []))
        list.push(waiter)
      }
    })
  }

  /** Wakes the first job waiting for the pair; false when none was. */
  function wakeOne(key: string): boolean {
    const list = slotWaiters.get(key)
    if (!list) return false
    let w: SlotWaiter | undefined
    while ((w = list.shift()) && w.woken);
    if (list.length === 0) slotWaiters.delete(key)
    if (!w || w.woken) return false
    w.woken = true
    w.wake()
    return true
  }

  function pairOf(group: string, ip: string): Pair {
    const key = keyOf(group, ip)
    let p = pairs.get(key)
    if (!p) {
      const row = readState.get(group, ip)
      p = {
        state: row?.state ?? 'normal',
        rate: row?.rate_per_minute ?? null,
        holdUntil: row?.hold_until ?? null,
        successes: row?.successes ?? 0,
        strikes: 0,
        reason: row?.reason ?? null,
        minute: 0,
        minuteCount: 0,
        hour: 0,
        hourCount: 0,
        inFlight: 0,
        ceiling: null,
        doneSecond: 0,
        doneNow: 0,
        donePrevious: 0,
        nextSlot: 0,
        limits: null,
        pulled: 0,
        pulledAt: 0,
      }
      pairs.set(key, p)
    }
    return p
  }

  function persist(group: string, ip: string, p: Pair): Promise<void> {
    const now = deps.clock.now()
    return deps.commits.run(() => {
      c.prepare(
        `INSERT INTO shaping_states (provider, ip, state, rate_per_minute, hold_until, successes, reason, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (provider, ip) DO UPDATE SET state = ?3, rate_per_minute = ?4, hold_until = ?5, successes = ?6, reason = ?7, updated_at = ?8`,
      ).run(group, ip, p.state, p.rate, p.holdUntil, p.successes, p.reason, now)
    })
  }

  function poolName(poolId: number | null): string | null {
    if (poolId === null) return null
    return readPoolName.get(poolId)?.name ?? null
  }

  /** Today's remaining warm-up allowance of an IP for a group; null = not warming up (or warm). */
  function warmupRoom(ip: string, group: string, now: number): number | null {
    const w = readWarmup.get(ip)
    if (!w) return null
    const schedule: WarmupStep[] = w.schedule ? JSON.parse(w.schedule) : defaultSchedule()
    const cap = capFor(schedule, warmupDay(w.started_at, now), group)
    if (cap === null) return null
    return Math.max(0, cap - usedToday(ip, group, now))
  }

  /** Today's warm-up count of an IP and group: read once from the table, then counted here as deliveries are admitted (before their write commits). */
  function usedToday(ip: string, group: string, now: number): number {
    const key = `${ip}\n${dayKey(now)}\n${group}`
    let n = usage.get(key)
    if (n === undefined) {
      if (usage.size > 10_000) usage.clear()
      n = readUsage.get(ip, dayKey(now), group)?.count ?? 0
      usage.set(key, n)
    }
    return n
  }

  /** How many of n messages the pair may take now, or when it may next. */
  function room(
    group: string,
    ip: string,
    limits: GroupLimits,
    n: number,
    now: number,
  ): { admit: number } | { until: number; reason: string } | { busy: true } {
    const p = pairOf(group, ip)
    if (p.holdUntil !== null && p.holdUntil > now) return { until: p.holdUntil, reason: `${p.state} (${p.reason ?? 'hold'})` }
    if (p.state === 'suspended') {
      // The suspension ran out: resume carefully, throttled at half the ceiling.
      p.state = 'throttled'
      p.rate = Math.max(1, Math.floor((limits.per_minute ?? UNLIMITED_THROTTLE_START * 2) / 2))
      p.holdUntil = null
      p.successes = 0
      void persist(group, ip, p)
    }
    if (p.inFlight >= limits.connections) return { busy: true }
    const minute = Math.floor(now / 60_000)
    const hour = Math.floor(now / 3_600_000)
    if (p.minute !== minute) [p.minute, p.minuteCount] = [minute, 0]
    if (p.hour !== hour) [p.hour, p.hourCount] = [hour, 0]
    let admit = n
    const perMinute = p.rate !== null ? Math.floor(p.rate) : limits.per_minute
    if (perMinute !== null) {
      const left = perMinute - p.minuteCount
      if (left <= 0) return { until: (minute + 1) * 60_000, reason: `${perMinute} a minute reached` }
      admit = Math.min(admit, left)
    }
    if (limits.per_hour !== null) {
      const left = limits.per_hour - p.hourCount
      if (left <= 0) return { until: (hour + 1) * 3_600_000, reason: `${limits.per_hour} an hour reached` }
      admit = Math.min(admit, left)
    }
    if (ip !== '') {
      const left = warmupRoom(ip, group, now)
      if (left !== null) {
        if (left <= 0) return { until: nextDayStart(now), reason: 'warm-up cap for today reached' }
        admit = Math.min(admit, left)
      }
    }
    return { admit }
  }

  /** Counts a finished delivery of the pair in its clock second. */
  function countDone(p: Pair, now: number): void {
    const second = Math.floor(now / 1000)
    if (p.doneSecond !== second) [p.donePrevious, p.doneNow, p.doneSecond] = [p.doneSecond === second - 1 ? p.doneNow : 0, 0, second]
    p.doneNow++
  }

  /** How many jobs may wait in memory for a busy pair: what it finishes in about a second, at least WAIT_DEPTH a connection. */
  function waitRoom(p: Pair, limits: GroupLimits, now: number): number {
    const second = Math.floor(now / 1000)
    const recent = p.doneSecond === second ? Math.max(p.doneNow, p.donePrevious) : p.doneSecond === second - 1 ? p.doneNow : 0
    return Math.max(WAIT_DEPTH * limits.connections, recent)
  }

  /**
   * When a job postponed because the pair is busy comes back: the pair's next free place in a
   * line served at `perSecond` (its waiting room, about what it finishes a second), at least
   * BUSY_POSTPONE_MS and at most BUSY_SPREAD_MS ahead. Postponed all by the same second, a
   * backlog for a slow or silent destination came back whole every second and was claimed,
   * read and postponed again (the accept benchmark, MX silent: 60,000 such jobs in 12 s).
   * The line is served a whole clock second at a time: the jobs of one second come back
   * together, so they are claimed and postponed again in one transaction each way. Spread to
   * the millisecond, each came back alone, and a silent destination with a backlog cost two
   * commits a job (13 % of a core for 80 jobs a second; docs/benchmarks.md, ninth round).
   */
  function laterSlot(p: Pair, perSecond: number, now: number): number {
    p.nextSlot = Math.min(Math.max(p.nextSlot, now + BUSY_POSTPONE_MS), now + BUSY_SPREAD_MS)
    const at = Math.ceil(p.nextSlot / 1000) * 1000
    p.nextSlot += 1000 / perSecond
    return at
  }

  /**
   * A delivery of the pair ended and no job waits for it: the earliest rows of its line come
   * back now, as many as the pair can take at once (its free connections and its waiting
   * room), so a pair faster than the pace its line was written at does not idle between the
   * line's seconds. The rows come back through the claim like any due row; those it cannot
   * take are postponed again. Not again until they have come back through choose(), or a
   * second later (for rows that were delivered or deleted meanwhile).
   */
  function pullLine(group: string, ip: string, key: string, p: Pair, now: number): void {
    const limits = p.limits
    if (!limits || p.state !== 'normal') return
    if (p.pulled > 0 && now - p.pulledAt < BUSY_POSTPONE_MS) return
    if (lines.ahead(key, now) === 0) return
    // What the pair can take at once, within what room() allows now (hold, rates, warm-up).
    const r = room(group, ip, limits, Math.max(0, limits.connections - p.inFlight) + waitRoom(p, limits, now), now)
    if (!('admit' in r) || r.admit <= 0) return
    const n = r.admit
    p.pulled = n
    p.pulledAt = now
    lines.pull(key, n, now).then(
      ({ moved, empty }) => {
        p.pulled = Math.min(p.pulled, moved)
        // Nothing left in the line: the next postponement starts a new one, a second ahead.
        if (empty) p.nextSlot = 0
      },
      (e: unknown) => {
        p.pulled = 0
        deps.log.error('shaping: pulling a line forward failed', { line: key, error: e instanceof Error ? e.message : String(e) })
      },
    )
  }

  /** Counts an admitted delivery of `count` messages against the pair (and its warm-up allowance). */
  async function admit(group: string, ip: string, count: number, limits: GroupLimits, now: number): Promise<void> {
    const p = pairOf(group, ip)
    p.minuteCount += count
    p.hourCount += count
    p.inFlight++
    p.ceiling = limits.per_minute
    p.limits = limits
    if (ip !== '' && warmupRoom(ip, group, now) !== null) {
      const day = dayKey(now)
      usage.set(`${ip}\n${day}\n${group}`, usedToday(ip, group, now) + count)
      await deps.commits.run(() => {
        c.prepare(
          'INSERT INTO warmup_usage (ip, day, provider, count) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (ip, day, provider) DO UPDATE SET count = count + ?4',
        ).run(ip, day, group, count)
      })
    }
  }

  return {
    lineUp(line, ids, at) {
      lines.add(line, ids, at, deps.clock.now())
    },

    async groupOf(domain) {
      const d = domain.toLowerCase()
      const known = groupOfDomain(d) ?? learned.get(d)
      if (known) return known
      let group = groupOfMxHosts(await opts.mxHosts(d))
      if (!group) group = readDomain.get(d)?.provider ?? `mx:${d}`
      else if (readDomain.get(d)?.provider !== group) {
        const now = deps.clock.now()
        await deps.commits.run(() => {
          c.prepare(
            'INSERT INTO provider_domains (domain, provider, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT (domain) DO UPDATE SET provider = ?2, updated_at = ?3',
          ).run(d, group!, now)
        })
      }
      learned.set(d, group)
      return group
    },

    async choose(group, poolId, candidates, n) {
      const limits = limitsFor(deps.config.shaping_limits, group, poolName(poolId))
      const list: Array<Candidate | null> = candidates.length ? candidates : [null]
      for (let pass = 0; ; pass++) {
        const now = deps.clock.now()
        let wait: { until: number; reason: string } | null = null
        const busy: string[] = []
        let firstBusy: Pair | null = null
        let waitingRoom = 0
        for (const cand of list) {
          const ip = cand?.address ?? ''
          const r = room(group, ip, limits, n, now)
          const p = pairOf(group, ip)
          // Rows pulled forward from the pair's line (or others for it) have come back.
          if (pass === 0 && p.pulled > 0) p.pulled = Math.max(0, p.pulled - n)
          if ('busy' in r) {
            busy.push(keyOf(group, ip))
            firstBusy ??= p
            waitingRoom += waitRoom(p, limits, now)
            continue
          }
          if ('until' in r) {
            if (!wait || r.until < wait.until) wait = { until: r.until, reason: cand ? `${ip}: ${r.reason}` : r.reason }
            continue
          }
          await admit(group, ip, r.admit, limits, now)
          return { kind: 'send', source: cand, admit: r.admit, group, limits }
        }
        if (busy.length === 0) return { kind: 'wait', ...wait! }
        const waiting = busy.reduce((sum, key) => sum + (slotWaiters.get(key)?.length ?? 0), 0)
        if (waiting >= waitingRoom)
          return wait && wait.until < now + BUSY_POSTPONE_MS
            ? { kind: 'wait', ...wait }
            : { kind: 'wait', until: laterSlot(firstBusy!, waitingRoom, now), reason: `${limits.connections} connections busy`, line: busy[0] }
        await waitForSlot(busy)
      }
    },

    async finish(group, ip, results) {
      const p = pairOf(group, ip)
      const now = deps.clock.now()
      p.inFlight = Math.max(0, p.inFlight - 1)
      countDone(p, now)
      const key = keyOf(group, ip)
      const idle = !wakeOne(key)
      let action: 'block' | 'throttle' | null = null
      let evidence: RecipientResult | null = null
      for (const r of results) {
        if (r.code === null && r.enhanced === null) continue
        const rule = matchSlowdown({ code: r.code, enhanced: r.enhanced, text: r.response })
        if (!rule || rule.action === 'none') continue
        if (rule.action === 'block' || !action) [action, evidence] = [rule.action, r]
      }
      if (action === 'block' && evidence) {
        p.state = 'suspended'
        p.holdUntil = now + deps.config.shaping_suspend_minutes * 60_000
        p.rate = Math.max(1, Math.floor((p.rate ?? p.ceiling ?? UNLIMITED_THROTTLE_START * 2) / 2))
        p.successes = 0
        p.reason = evidence.response.slice(0, 300)
        await persist(group, ip, p)
        await deps.commits.run(() =>
          emit(deps.db, now, {
            kind: 'deliverability.alert',
            data: {
              type: 'suspended',
              provider: group,
              ip: ip || null,
              until: new Date(p.holdUntil!).toISOString(),
              code: evidence.code,
              enhanced_code: evidence.enhanced,
              response: evidence.response,
              mx: evidence.mx,
            },
          }),
        )
        deps.log.warn('shaping: provider/IP pair suspended after a block reply', { provider: group, ip, response: evidence.response })
        if (ip !== '') pauseForListedIp(deps, ip, evidence.response.slice(0, 200))
        return
      }
      if (action === 'throttle' && evidence) {
        const current = p.rate ?? p.ceiling ?? UNLIMITED_THROTTLE_START * 2
        p.state = 'throttled'
        p.rate = Math.max(1, Math.floor(current / 2))
        p.strikes++
        p.holdUntil = now + Math.min(MAX_BACKOFF_MS, 60_000 * 2 ** (p.strikes - 1))
        p.successes = 0
        p.reason = evidence.response.slice(0, 300)
        await persist(group, ip, p)
        return
      }
      if (idle) pullLine(group, ip, key, p, now)
      const sent = results.filter((r) => r.outcome === 'sent').length
      if (p.state !== 'throttled' || sent === 0) return
      p.successes += sent
      if (p.successes < SUCCESS_STEP) return
      const ceiling = p.ceiling ?? UNLIMITED_THROTTLE_START * 8
      p.successes = 0
      p.rate = Math.ceil((p.rate ?? ceiling) * 1.5)
      if (p.rate >= ceiling) {
        p.state = 'normal'
        p.rate = null
        p.strikes = 0
        p.reason = null
        p.holdUntil = null
      }
      await persist(group, ip, p)
    },
  }
}

/** The pool's addresses in rotation order, starting with the rotation's next pick (so unshaped traffic keeps its weights). */
export function rotationCandidates(rotation: { next(poolId: number | null): Candidate | null }, poolId: number | null): Candidate[] {
  const out: Candidate[] = []
  const seen = new Set<string>()
  for (let i = 0; i < 64; i++) {
    const c = rotation.next(poolId)
    if (!c || seen.has(c.address)) break
    seen.add(c.address)
    out.push({ address: c.address, hostname: c.hostname })
  }
  return out
}
