import { unpackMessage } from '../lib/stored-message'
import type { GroupCommitter } from '../db/group-commit'
import { preparedFor } from '../db/prepared'
import type { Deps } from '../deps'
import { countBridge } from '../modules/bridges/quotas'
import { emitPrepared } from '../modules/events/service'
import { purgeIdempotencyKeys } from '../modules/messages/idempotency'
import { queueOwnMessage } from '../modules/messages/service'
import { resolveNode } from '../modules/sending-nodes/service'
import { suppressForFeedback } from '../modules/suppressions/feedback'
import { serverSecret } from '../modules/system/secrets'
import { nextCapWindow, takeNodeCapacity } from './node-caps'
import { downgradeTo7bit } from './downgrade'
import { buildDsn, dsnStatus, type DsnRecipient } from './dsn'
import { envelopeSender } from './return-path'
import { rotationCandidates, type Shaper } from './shaping'
import type { DeliveryJob, RecipientResult } from './transport'

/**
 * The delivery engine: the in-process scheduler over the durable per-recipient queue
 * (table message_recipients, states in docs/api.md "Message states").
 *
 * Cycle: claim due rows (queued/deferred with next_attempt_at <= now) by moving them to
 * `sending` with a lease, group them by (message, recipient domain) into one SMTP
 * transaction each, sign (worker threads), hand them to the transport, and write each
 * recipient's outcome with its event. Claims and outcomes go through the group committer,
 * so they share fsyncs with the send API.
 *
 * Crash safety: all state is in the database. At start every `sending` row is put back in
 * the queue (nothing can be on the wire before start), and a row whose lease ran out while
 * running is requeued too, so duplicates are bounded by the messages on the wire when the
 * process died. A message is removed from the queue only by a committed outcome.
 */

export interface EngineParts {
  transport: { deliver(job: DeliveryJob): Promise<RecipientResult[]> }
  signer: { sign(raw: Buffer, key: { domain: string; selector: string; privateKey: string }): Promise<Buffer> }
  rotation: { next(poolId: number | null): { address: string; hostname: string } | null }
  commits: GroupCommitter
  /** Jitter source in [0, 1); tests pass a constant. */
  random?: () => number
  /** How long a claimed row may stay `sending` before it is requeued. */
  leaseMs?: number
  /** Most recipients being delivered at once. */
  maxInFlight?: number
  /** Traffic shaping and warm-up (shaping.ts); absent: every source may send at any pace. */
  shaper?: Shaper
}

interface Claimed {
  id: number
  message_id: string
  address: string
  domain: string
  attempts: number
  created_at: number
}

interface MessageRow {
  mail_from: string
  /** bun:sqlite returns BLOBs as Uint8Array. */
  raw: Uint8Array
  domain_id: number | null
  pool_id: number | null
  node_id: number | null
  /** The bridge the message came through (issue 5), whose delivered/bounced counts it feeds. */
  bridge_id: number | null
  source: string
  /** SMTP submission's MAIL FROM: where a DSN goes. */
  envelope_from: string | null
  created_at: number
  /** A scheduled send's time: its maximum age counts from then, not from acceptance. */
  scheduled_at: number | null
}

const statements = preparedFor((db) => {
  const c = db.$client
  return {
    // The inner SELECT repeats the partial index's WHERE so SQLite can walk message_recipients_due_idx.
    claim: c.prepare<Claimed, [number, number, number, number]>(
      `UPDATE message_recipients SET state = 'sending', lease_until = ?1, attempts = attempts + 1, updated_at = ?2
       WHERE id IN (SELECT id FROM message_recipients WHERE state IN ('scheduled', 'queued', 'deferred') AND next_attempt_at <= ?3 ORDER BY next_attempt_at LIMIT ?4)
       RETURNING id, message_id, address, domain, attempts, created_at`,
    ),
    requeueAll: c.prepare<never, [number]>(
      `UPDATE message_recipients SET state = 'queued', lease_until = NULL, next_attempt_at = ?1, updated_at = ?1 WHERE state = 'sending'`,
    ),
    requeueExpired: c.prepare<never, [number]>(
      `UPDATE message_recipients SET state = 'queued', lease_until = NULL, next_attempt_at = ?1, updated_at = ?1 WHERE state = 'sending' AND lease_until < ?1`,
    ),
    sendDsn: c.prepare<{ send_dsn: number }, [number]>('SELECT send_dsn FROM bridges WHERE id = ?'),
    nextDue: c.prepare<{ at: number | null }, []>(
      `SELECT MIN(next_attempt_at) AS at FROM message_recipients WHERE state IN ('scheduled', 'queued', 'deferred')`,
    ),
    message: c.prepare<MessageRow, [string]>(
      'SELECT mail_from, raw, domain_id, pool_id, node_id, bridge_id, source, envelope_from, created_at, scheduled_at FROM messages WHERE id = ?',
    ),
    domainKey: c.prepare<{ name: string; dkim_selector: string; dkim_private_key: string; return_path_host: string }, [number]>(
      `SELECT name, dkim_selector, dkim_private_key, return_path_host FROM sending_domains WHERE id = ? AND status = 'verified'`,
    ),
    finish: c.prepare<
      never,
      [string, number | null, string | null, string | null, string, string | null, string | null, number, number, string | null, string | null]
    >(
      `UPDATE message_recipients SET state = ?1, last_code = ?2, last_enhanced = ?3, last_response = ?4, last_class = ?5, last_mx = ?6, last_ip = ?7,
         last_tls = ?10, last_reason = ?11, lease_until = NULL, next_attempt_at = NULL, updated_at = ?8, finished_at = ?8 WHERE id = ?9`,
    ),
    defer: c.prepare<
      never,
      [number | null, string | null, string | null, string, string | null, string | null, number, number, number, string | null, string | null]
    >(
      `UPDATE message_recipients SET state = 'deferred', last_code = ?1, last_enhanced = ?2, last_response = ?3, last_class = ?4, last_mx = ?5, last_ip = ?6,
         last_tls = ?10, last_reason = ?11, lease_until = NULL, next_attempt_at = ?7, updated_at = ?8 WHERE id = ?9`,
    ),
    // A cap deferral is not an attempt: give the attempt back.
    postpone: c.prepare<never, [number, number, number]>(
      `UPDATE message_recipients SET state = 'deferred', attempts = attempts - 1, lease_until = NULL, next_attempt_at = ?1, updated_at = ?2 WHERE id = ?3`,
    ),
  }
})

/** A deferral decided by the engine itself rather than by a reply (the next attempt follows the usual backoff). */
function deferral(address: string, rule: string, response: string, sourceIp: string | null = null): RecipientResult {
  return { address, outcome: 'deferred', suppress: false, rule, reason: null, code: null, enhanced: null, response, mx: null, source_ip: sourceIp, tls: null }
}

/** Retry delay after the n-th failed attempt: 1, 2, 4 ... minutes, at most 6 hours, with +-20 % jitter (so retries of one outage spread out). */
export function backoffMs(attempt: number, random: number): number {
  const base = Math.min(60_000 * 2 ** Math.max(0, attempt - 1), 6 * 3600_000)
  return Math.round(base * (0.8 + 0.4 * random))
}

export type DeliveryEngine = ReturnType<typeof createDeliveryEngine>

/** Creates the engine over the database queue and the given parts; start() runs it, drain() drives it in tests. */
export function createDeliveryEngine(deps: Deps, parts: EngineParts) {
  const st = statements(deps.db)
  const random = parts.random ?? Math.random
  const leaseMs = parts.leaseMs ?? 10 * 60_000
  const maxInFlight = parts.maxInFlight ?? deps.config.delivery_concurrency * 4
  const maxAge = deps.config.max_message_age_seconds * 1000
  const returnPathSecret = serverSecret(deps, 'return-path')
  let running = false
  let pumping: Promise<void> | null = null
  let inFlight = 0
  const jobs = new Set<Promise<void>>()
  let timer: ReturnType<typeof setTimeout> | null = null
  let lastSweep = 0

  /** Signing once per message even when its recipients span several domains (several jobs). */
  const signed = new Map<string, Promise<Buffer>>()

  type DomainKey = NonNullable<ReturnType<typeof st.domainKey.get>>
  type SigningKey = { domain: string; selector: string; privateKey: string }

  /**
   * The opened signing key of each sending domain, by its sealed value (issue 18): opening
   * the seal on every message cost more than the rest of the lookup. The domain's row is still
   * read per message, so a key that changes (rotated, re-sealed), a domain that is no longer
   * verified or one that was deleted takes effect at the next message; the entry is replaced
   * whenever the sealed value, name or selector differ from the cached ones.
   */
  const openedKeys = new Map<string, { sealed: string; key: SigningKey }>()
  function signingKey(row: DomainKey): SigningKey {
    const hit = openedKeys.get(row.name)
    if (hit && hit.sealed === row.dkim_private_key && hit.key.selector === row.dkim_selector) return hit.key
    const key = { domain: row.name, selector: row.dkim_selector, privateKey: deps.secrets.open(row.dkim_private_key) }
    if (openedKeys.size >= 1000) openedKeys.delete(openedKeys.keys().next().value!)
    openedKeys.set(row.name, { sealed: row.dkim_private_key, key })
    return key
  }

  /** The message signed, or with `sevenBit` first converted to 7 bits (downgrade.ts) and then signed, so the signature covers the bytes sent. */
  function signedRaw(messageId: string, m: MessageRow, key: DomainKey | null, sevenBit = false): Promise<Buffer> {
    const stored = Buffer.from(m.raw.buffer, m.raw.byteOffset, m.raw.byteLength)
    const raw = sevenBit ? downgradeTo7bit(stored) : stored
    if (!key) return Promise.resolve(raw)
    const cacheKey = sevenBit ? `${messageId} 7bit` : messageId
    let p = signed.get(cacheKey)
    if (!p) {
      p = parts.signer.sign(raw, signingKey(key))
      signed.set(cacheKey, p)
      if (signed.size > 1000) signed.delete(signed.keys().next().value!)
    }
    return p
  }

  async function deliverGroup(messageId: string, rows: Claimed[]): Promise<void> {
    const row = st.message.get(messageId)
    if (!row) return // deleted meanwhile: its recipient rows went with it (ON DELETE CASCADE)
    // Unpacked only when the message is sent (or a DSN quotes it): a job the shaper postpones
    // (its destination's connections busy) never needs the bytes, and with a slow destination
    // most jobs are such.
    let raw: Buffer | null = null
    const m: MessageRow = {
      ...row,
      get raw() {
        return (raw ??= unpackMessage(row.raw))
      },
    }
    const node = resolveNode(deps, m.node_id)
    if (node && !node.active) {
      // The message names a node the operator switched off: wait (with backoff, up to the
      // maximum age) rather than silently take another route.
      const why = `sending node ${node.id} is inactive`
      await record(
        messageId,
        rows,
        rows.map((r) => deferral(r.address, 'node_inactive', why)),
        m,
      )
      return
    }
    let deliverable = rows
    if (node && (node.hourly_cap !== null || node.daily_cap !== null)) {
      const allowed = takeNodeCapacity(deps, node.id, rows.length)
      if (allowed < rows.length) {
        const later = nextCapWindow(deps, node.id)
        const postponed = rows.slice(allowed)
        deliverable = rows.slice(0, allowed)
        await parts.commits.run(() => {
          for (const r of postponed) st.postpone.run(later, deps.clock.now(), r.id)
        })
        if (deliverable.length === 0) return
      }
    }
    const poolId = node?.kind === 'direct' && node.pool_id !== null ? node.pool_id : m.pool_id
    let source: { address: string; hostname: string } | null = null
    let shaped: { group: string; ip: string; perConnection: number } | null = null
    if (node?.kind !== 'relay' && parts.shaper) {
      // Shaping picks the IP (spilling over capped or held ones) and may hold some or all rows back.
      const group = await parts.shaper.groupOf(deliverable[0]!.domain)
      const choice = await parts.shaper.choose(group, poolId, rotationCandidates(parts.rotation, poolId), deliverable.length)
      const held = choice.kind === 'wait' ? deliverable : deliverable.slice(choice.admit)
      if (held.length > 0) {
        const at = choice.kind === 'wait' ? choice.until : deps.clock.now()
        await parts.commits.run(() => {
          for (const r of held) st.postpone.run(at, deps.clock.now(), r.id)
        })
        // Postponed behind a busy pair: the shaper may pull them forward when the pair proves faster.
        if (choice.kind === 'wait' && choice.line) {
          const ids = held.map((r) => r.id)
          parts.shaper.lineUp(choice.line, ids, at)
        }
      }
      if (choice.kind === 'wait') return
      deliverable = deliverable.slice(0, choice.admit)
      source = choice.source
      shaped = { group, ip: choice.source?.address ?? '', perConnection: choice.limits.messages_per_connection }
    } else if (node?.kind !== 'relay') source = parts.rotation.next(poolId)
    // Signed mail gets a signed return path (return-path.ts), so a bounce proves which
    // message, and for a one-recipient transaction which recipient, it is about.
    const domain = m.domain_id === null ? null : st.domainKey.get(m.domain_id)
    const mailFrom = envelopeSender(
      returnPathSecret,
      messageId,
      deliverable.map((r) => r.id),
      domain ?? null,
      m.mail_from,
    )
    let results: RecipientResult[]
    try {
      const raw = await signedRaw(messageId, m, domain)
      results = await parts.transport.deliver({
        domain: deliverable[0]!.domain,
        mailFrom,
        recipients: deliverable.map((r) => r.address),
        raw,
        raw7bit: () => signedRaw(messageId, m, domain, true),
        source,
        ehlo: source?.hostname ?? deps.config.hostname,
        route:
          node?.kind === 'relay' && node.relay
            ? { kind: 'relay', ...node.relay, username: node.relay.username ?? undefined, password: node.relay.password ?? undefined }
            : undefined,
        maxMessagesPerConnection: shaped?.perConnection,
      })
    } catch (e) {
      // The transport reports SMTP and network failures as results; an exception is a bug.
      // Defer rather than lose the rows, and say so in the log.
      deps.log.error('delivery failed unexpectedly', { message_id: messageId, error: e instanceof Error ? (e.stack ?? e.message) : String(e) })
      results = deliverable.map((r) => deferral(r.address, 'internal_error', 'internal error in the delivery engine', source?.address ?? null))
    }
    if (shaped) await parts.shaper!.finish(shaped.group, shaped.ip, results)
    await record(messageId, deliverable, results, m)
  }

  /** Whether a final failure of this message gets a DSN: SMTP-submitted mail through a bridge that sends them (dsn.ts has the rest of the rules). */
  function wantsDsn(m: MessageRow): boolean {
    if (m.source !== 'smtp' || !m.envelope_from || m.bridge_id === null) return false
    return st.sendDsn.get(m.bridge_id)?.send_dsn === 1
  }

  function record(messageId: string, rows: Claimed[], results: RecipientResult[], m: MessageRow): Promise<void> {
    const byAddress = new Map(results.map((r) => [r.address, r]))
    const bridgeId = m.bridge_id
    let dsnQueued = false
    const committed = parts.commits.run(() => {
      const now = deps.clock.now()
      let delivered = 0
      let bounced = 0
      const failed: DsnRecipient[] = []
      const fail = (r: RecipientResult, expired: boolean) =>
        failed.push({
          address: r.address,
          status: dsnStatus(r.enhanced, expired),
          diagnostic: expired ? `delivery time expired: ${r.response}` : r.response,
          remote: r.code !== null,
          mx: r.mx,
        })
      for (const row of rows) {
        const r = byAddress.get(row.address) ?? deferral(row.address, 'no_result', 'the transport gave no result for this recipient')
        // tls: version, cipher and certificate verification of the session, null for plaintext.
        const detail = {
          code: r.code,
          enhanced_code: r.enhanced,
          response: r.response,
          rule: r.rule,
          ...(r.reason ? { reason: r.reason } : {}),
          mx: r.mx,
          source_ip: r.source_ip,
          tls: r.tls,
          attempt: row.attempts,
        }
        const tls = r.tls ? JSON.stringify(r.tls) : null
        const event = (kind: string, extra: Record<string, unknown> = {}) =>
          emitPrepared(deps.db, now, { kind, message_id: messageId, recipient: row.address, bridge_id: bridgeId, data: { ...detail, ...extra } })
        if (r.outcome === 'sent') {
          st.finish.run('sent', r.code, r.enhanced, r.response, r.rule, r.mx, r.source_ip, now, row.id, tls, null)
          event('message.sent')
          delivered++
        } else if (r.outcome === 'bounced') {
          st.finish.run('bounced', r.code, r.enhanced, r.response, r.rule, r.mx, r.source_ip, now, row.id, tls, r.reason ?? 'other')
          // A hard bounce (bad mailbox): never again, and the contacts are marked (docs/api.md "Bounces").
          if (r.suppress) suppressForFeedback(deps.db, now, { address: row.address, cause: 'hard_bounce', messageId, data: detail })
          event('message.bounced', { suppressed: r.suppress })
          fail(r, false)
          bounced++
        } else {
          // Retried until the maximum age has passed, the last attempt at the limit itself
          // (RFC 5321 4.5.4.1: give up after the retry period, not before it has run out).
          // A scheduled send's age counts from its scheduled time.
          const deadline = Math.max(row.created_at, m.scheduled_at ?? 0) + maxAge
          const retryAt = Math.min(now + backoffMs(row.attempts, random()), deadline)
          if (now >= deadline) {
            st.finish.run('failed', r.code, r.enhanced, r.response, r.rule, r.mx, r.source_ip, now, row.id, tls, 'expired')
            event('message.failed', { reason: 'expired', max_age_seconds: deps.config.max_message_age_seconds })
            fail(r, true)
          } else {
            st.defer.run(r.code, r.enhanced, r.response, r.rule, r.mx, r.source_ip, retryAt, now, row.id, tls, r.reason)
            event('message.deferred', { next_attempt_at: new Date(retryAt).toISOString() })
          }
        }
      }
      // RFC 5321 6.1: the DSN is queued in the same transaction as the outcomes it reports.
      if (failed.length && wantsDsn(m)) {
        const dsn = buildDsn(deps.config.hostname, now, { id: messageId, raw: m.raw, envelopeFrom: m.envelope_from, createdAt: m.created_at }, failed)
        if (dsn) {
          queueOwnMessage(deps, dsn, 'dsn', now)
          dsnQueued = true
        }
      }
      // The bridge's per-recipient totals, in the same transaction as the outcomes.
      if (bridgeId !== null) {
        countBridge(deps.db, bridgeId, 'delivered', delivered)
        countBridge(deps.db, bridgeId, 'bounced', bounced)
      }
    })
    return committed.then(() => {
      if (dsnQueued) deps.doorbell.ring()
    })
  }

  /** Claims what is due (up to the free in-flight room) and starts its jobs; returns how many rows it claimed. */
  async function claimAndStart(): Promise<number> {
    const room = maxInFlight - inFlight
    if (room <= 0) return 0
    const claimed = await parts.commits.run(() => {
      const now = deps.clock.now()
      return st.claim.all(now + leaseMs, now, now, Math.min(room, 500))
    })
    const groups = new Map<string, Claimed[]>()
    for (const row of claimed) {
      const key = `${row.message_id}\n${row.domain}`
      const g = groups.get(key)
      if (g) g.push(row)
      else groups.set(key, [row])
    }
    for (const rows of groups.values()) {
      inFlight += rows.length
      const job = deliverGroup(rows[0]!.message_id, rows)
        .catch((e) => deps.log.error('recording a delivery outcome failed', { error: e instanceof Error ? e.message : String(e) }))
        .finally(() => {
          inFlight -= rows.length
          jobs.delete(job)
          if (running) wake()
        })
      jobs.add(job)
    }
    return claimed.length
  }

  /** Rows whose lease ran out while this process ran (a delivery that never reported back) go back in the queue. */
  function requeueExpiredLeases(): number {
    return st.requeueExpired.run(deps.clock.now()).changes
  }

  function sweep(): void {
    const now = deps.clock.now()
    if (now - lastSweep < 60_000) return
    lastSweep = now
    requeueExpiredLeases()
    purgeIdempotencyKeys(deps)
  }

  /** Claims until nothing is due or the in-flight room is used up; then sleeps until the next due row. */
  async function pump(): Promise<void> {
    while (running && (await claimAndStart()) > 0) {
      /* keep claiming while there is room and work */
    }
    if (!running) return
    sweep()
    const next = st.nextDue.get()?.at
    // Cap the sleep: rows can become due through the clock alone, and leases need sweeping.
    const delay = Math.max(0, Math.min((next ?? Infinity) - deps.clock.now(), 30_000))
    if (timer) clearTimeout(timer)
    timer = setTimeout(wake, inFlight >= maxInFlight ? 30_000 : delay)
  }

  function wake(): void {
    if (!running || pumping) return
    pumping = pump().finally(() => (pumping = null))
  }

  return {
    /** Puts rows left `sending` by a previous process back in the queue, then starts the loop. */
    start(): void {
      st.requeueAll.run(deps.clock.now())
      running = true
      wake()
    },
    wake,
    requeueExpiredLeases,
    /** Stops claiming, waits for deliveries in flight to record their outcomes. */
    async stop(): Promise<void> {
      running = false
      if (timer) clearTimeout(timer)
      await pumping
      await Promise.allSettled([...jobs])
    },
    /**
     * Delivers everything due now and waits for the outcomes (tests drive retries with a
     * fixed clock through this instead of timers). Rows that become due again only at a
     * later clock time are left for a later call.
     */
    async drain(): Promise<void> {
      for (;;) {
        const n = await claimAndStart()
        if (n === 0) {
          if (jobs.size === 0) return
          await Promise.allSettled([...jobs])
        } else if (inFlight >= maxInFlight) {
          await Promise.race(jobs)
        }
      }
    },
  }
}
