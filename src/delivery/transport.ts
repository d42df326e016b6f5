/**
 * The outbound transport: takes one message for one recipient domain (a DeliveryJob) and
 * returns one result per recipient. It knows nothing of the database; the queue calls it.
 *
 * Connection lifecycle
 * --------------------
 * - Every connection belongs to a *destination* (the recipient domain, or the relay for a
 *   relay route) and has an *identity* (source address + EHLO name, plus TLS mode and
 *   credentials for relays). A connection is only reused for the same destination and identity,
 *   so mail never leaves over another pool IP or under another EHLO name than the job asked for.
 * - deliver() first looks for an idle connection of its destination and identity and uses it
 *   without any DNS lookup (as Postfix's connection cache searches by next-hop destination
 *   first, CONNECTION_CACHE_README). Otherwise it resolves the MX hosts (mx.ts, cached by TTL)
 *   and waits for a slot.
 * - Slots: at most `destinationConcurrency` connections (open, busy or idle) per destination and
 *   `totalConcurrency` in all. Waiting jobs queue FIFO per destination; a freed slot or a
 *   released connection wakes the oldest waiter that can use it (no polling). When the total
 *   is reached, an idle connection of another destination is closed to make room, and an idle
 *   connection of the right destination with the wrong identity is closed likewise.
 * - A new connection tries the MX hosts in preference order and each host's addresses (A, then
 *   AAAA; only the source address's family), at most MAX_ADDRESSES attempts. A host is skipped
 *   on connection failure, timeout, or a refused greeting/EHLO (421 or 5xx greeting: RFC 5321
 *   3.1 and 4.2; Postfix smtp_skip_5xx_greeting). The first host that completes EHLO carries the
 *   transaction and its answers are final: no second host is tried after RCPT replies, so a
 *   message is never sent twice because of a later failure.
 * - Direct delivery uses opportunistic STARTTLS without certificate checks (RFC 7435; RFC 3207).
 *   If the TLS handshake itself fails, the same address is tried once more in plaintext, as
 *   MTAs do at the "may" security level: an MX with a broken TLS stack still gets its mail.
 *   Relay routes use the configured TLS mode ('starttls' is required, 'tls' is implicit, both
 *   verify the certificate unless `verifyTls: false`) and AUTH when credentials are given.
 * - After a transaction the connection goes back idle (RSET first when the transaction was
 *   aborted mid-envelope; after a completed DATA the server state is already reset, RFC 5321
 *   4.1.1.4). It is closed with QUIT after `maxMessagesPerConnection` messages or
 *   `idleTimeoutMs` without use, and dropped when the server closes it.
 * - A reused connection that turns out dead before the server answered anything is replaced
 *   by a fresh one once (nothing was sent, so this cannot duplicate a message).
 * - close() refuses new jobs, answers waiting ones with a deferral, QUITs idle connections and
 *   closes busy ones when their transaction ends.
 */
import { isIP, isIPv4, isIPv6 } from 'node:net'
import type { DnsResolver } from '../lib/dns'
import type { Logger } from '../lib/logger'
import { classify, type Outcome, type ReplyInput } from './classify'
import { createDestinationCache, type MxHost } from './mx'
import { openSession, type RecipientReply, type SessionOptions, type SmtpSession, type TlsMode } from './smtp-client'

export interface RelayRoute {
  kind: 'relay'
  host: string
  port: number
  tls: 'none' | 'starttls' | 'tls'
  username?: string
  password?: string
  /** Check the relay's certificate (default true; a relay receives credentials). */
  verifyTls?: boolean
}

export interface DeliveryJob {
  /** The recipient domain all `recipients` share. */
  domain: string
  /** Envelope sender (RFC 5321 reverse-path); '' for the null sender. */
  mailFrom: string
  recipients: string[]
  /** The final message bytes, already signed. */
  raw: Buffer
  /** Source address and its EHLO name; null: the OS chooses the source and the transport's default EHLO name is used. */
  source: { address: string; hostname: string } | null
  /** EHLO name overriding source.hostname. */
  ehlo?: string
  /** Absent: direct to the recipient's MX. */
  route?: RelayRoute
}

export interface RecipientResult {
  address: string
  outcome: Outcome
  suppress: boolean
  rule: string
  code: number | null
  enhanced: string | null
  response: string
  /** The MX (or relay) host name that answered, null when none was reached. */
  mx: string | null
  source_ip: string | null
}

export interface TransportOptions {
  resolver: DnsResolver
  mxPort: number
  totalConcurrency: number
  destinationConcurrency: number
  log: Logger
  /** EHLO name for jobs without a source: pass the `hostname` setting. Default: nodemailer's (the machine name when it is a FQDN, else [127.0.0.1]). */
  ehlo?: string
  connectTimeoutMs?: number
  /** Inactivity limit inside a session (RFC 5321 4.5.3.2 suggests minutes). */
  socketTimeoutMs?: number
  idleTimeoutMs?: number
  maxMessagesPerConnection?: number
  /** Monotonic milliseconds for the DNS cache (default performance.now). */
  now?: () => number
}

export interface Transport {
  deliver(job: DeliveryJob): Promise<RecipientResult[]>
  close(): Promise<void>
  /** Open connections per destination, for tests and metrics. */
  stats(): { open: number; idle: number; waiting: number }
}

/** Postfix smtp_mx_address_limit: addresses tried for one delivery before giving up. */
const MAX_ADDRESSES = 5

interface Conn {
  session: SmtpSession
  dest: Dest
  identity: string
  host: string
  messages: number
  state: 'busy' | 'idle' | 'dead'
  needsReset: boolean
  timer: ReturnType<typeof setTimeout> | null
  /** Holds a slot of its destination and of the total until its socket has closed. */
  slot: boolean
  /** Being closed by us; counted so that one closing connection is not followed by needless evictions. */
  closing: boolean
}

type Grant = { kind: 'idle'; conn: Conn } | { kind: 'new' } | { kind: 'closed' }

interface Waiter {
  seq: number
  identity: string
  grant(g: Grant): void
}

interface Dest {
  key: string
  /** Slots in use: connections opening, busy, idle or closing. */
  open: number
  closing: number
  /** Idle connections by identity, most recently used last. */
  idle: Map<string, Conn[]>
  /** Waiting jobs by identity, each FIFO; `seq` orders them across identities. */
  waiters: Map<string, Waiter[]>
  waiting: number
}

/** Where and how one job connects. */
interface Target {
  destKey: string
  identity: string
  source: string | undefined
  ehlo: string | undefined
  tls: TlsMode
  verifyTls: boolean
  port: number
  auth?: { user: string; pass: string }
  relay: RelayRoute | undefined
}

/** Creates the delivery transport (see the module comment for the connection lifecycle). */
export function createTransport(opts: TransportOptions): Transport {
  const connectTimeoutMs = opts.connectTimeoutMs ?? 30_000
  const socketTimeoutMs = opts.socketTimeoutMs ?? 300_000
  const idleTimeoutMs = opts.idleTimeoutMs ?? 5_000
  const maxMessages = opts.maxMessagesPerConnection ?? 100
  const destLimit = Math.max(1, opts.destinationConcurrency)
  const totalLimit = Math.max(1, opts.totalConcurrency)
  const log = opts.log
  const dns = createDestinationCache({ resolver: opts.resolver, now: opts.now ?? (() => performance.now()) })

  const dests = new Map<string, Dest>()
  /** Every idle connection, oldest first (Set keeps insertion order): the ones to evict first. */
  const idleAll = new Set<Conn>()
  /** Destinations with waiting jobs, in the order they started waiting. */
  const waitingDests = new Set<Dest>()
  /** Connections whose socket has not closed yet. */
  const live = new Set<Conn>()
  let totalOpen = 0
  let totalClosing = 0
  let seq = 0
  let closing = false

  const destOf = (key: string): Dest => {
    let d = dests.get(key)
    if (!d) dests.set(key, (d = { key, open: 0, closing: 0, idle: new Map(), waiters: new Map(), waiting: 0 }))
    return d
  }
  const forget = (d: Dest) => {
    if (d.open === 0 && d.waiting === 0) dests.delete(d.key)
  }

  function takeIdle(d: Dest, identity: string): Conn | null {
    const list = d.idle.get(identity)
    while (list && list.length) {
      const conn = list.pop()!
      if (list.length === 0) d.idle.delete(identity)
      idleAll.delete(conn)
      if (conn.timer) clearTimeout(conn.timer)
      conn.timer = null
      conn.state = 'busy'
      if (!conn.session.closed()) return conn
      retire(conn)
    }
    return null
  }

  function removeIdle(conn: Conn) {
    const list = conn.dest.idle.get(conn.identity)
    if (list) {
      const i = list.indexOf(conn)
      if (i >= 0) list.splice(i, 1)
      if (list.length === 0) conn.dest.idle.delete(conn.identity)
    }
    idleAll.delete(conn)
    if (conn.timer) clearTimeout(conn.timer)
    conn.timer = null
  }

  /**
   * Takes a connection out of use. Its slot is freed when its socket has closed (onClosed);
   * with `keepSlot` the caller takes the slot over at once for a replacement connection.
   */
  function retire(conn: Conn, keepSlot = false) {
    if (conn.state === 'dead') return
    if (conn.state === 'idle') removeIdle(conn)
    conn.state = 'dead'
    if (keepSlot) {
      conn.slot = false
      conn.session.destroy()
      return
    }
    if (conn.slot && !conn.closing) {
      conn.closing = true
      conn.dest.closing++
      totalClosing++
    }
    conn.session.close()
  }

  function onClosed(conn: Conn) {
    live.delete(conn)
    if (conn.state === 'idle') removeIdle(conn)
    if (conn.state !== 'busy') conn.state = 'dead'
    if (conn.closing) {
      conn.closing = false
      conn.dest.closing--
      totalClosing--
    }
    if (conn.slot) {
      conn.slot = false
      freeSlot(conn.dest)
    }
  }

  function freeSlot(d: Dest) {
    d.open--
    totalOpen--
    forget(d)
    pump()
  }

  /**
   * What a job for (d, identity) can get right now, or null (then it waits). Reserves the slot
   * it grants. When a limit is reached and an idle connection could make room, that one is
   * closed; its slot comes free once its socket has closed, and the waiter gets it then.
   */
  function tryGrant(d: Dest, identity: string): Grant | null {
    const conn = takeIdle(d, identity)
    if (conn) return { kind: 'idle', conn }
    if (d.open >= destLimit) {
      if (d.closing === 0) {
        const other = [...d.idle.entries()].find(([id, list]) => id !== identity && list.length)
        if (other) retire(other[1][0]!)
      }
      return null
    }
    if (totalOpen >= totalLimit) {
      if (totalClosing === 0) {
        const oldest = idleAll.values().next().value
        if (oldest) retire(oldest)
      }
      return null
    }
    d.open++
    totalOpen++
    return { kind: 'new' }
  }

  /** The oldest waiter of a destination, across identities. */
  function oldestWaiter(d: Dest): Waiter[] | null {
    let best: Waiter[] | null = null
    for (const list of d.waiters.values()) if (list.length && (!best || list[0]!.seq < best[0]!.seq)) best = list
    return best
  }

  function shiftWaiter(d: Dest, list: Waiter[]): Waiter {
    const w = list.shift()!
    if (list.length === 0) d.waiters.delete(w.identity)
    d.waiting--
    if (d.waiting === 0) waitingDests.delete(d)
    return w
  }

  /** Wakes the waiters that can proceed, oldest destination first. */
  function pump() {
    for (const d of [...waitingDests]) {
      for (;;) {
        const list = oldestWaiter(d)
        if (!list) break
        const grant = tryGrant(d, list[0]!.identity)
        if (!grant) break
        shiftWaiter(d, list).grant(grant)
      }
    }
  }

  function acquire(d: Dest, identity: string): Promise<Grant> {
    if (closing) return Promise.resolve({ kind: 'closed' })
    // FIFO: a job only goes ahead of the queue when nobody of its destination waits.
    if (d.waiting === 0) {
      const grant = tryGrant(d, identity)
      if (grant) return Promise.resolve(grant)
    }
    return new Promise<Grant>((resolve) => {
      const list = d.waiters.get(identity) ?? []
      list.push({ seq: seq++, identity, grant: resolve })
      d.waiters.set(identity, list)
      d.waiting++
      waitingDests.add(d)
    })
  }

  /** Hands a connection back after a transaction: to a waiter of the same identity, to the idle pool, or closed. */
  function release(conn: Conn) {
    if (conn.state === 'dead') return
    const d = conn.dest
    if (closing || conn.session.closed() || conn.messages >= maxMessages) return retire(conn)
    const waiting = d.waiters.get(conn.identity)
    if (waiting && waiting.length) return shiftWaiter(d, waiting).grant({ kind: 'idle', conn })
    conn.state = 'idle'
    const list = d.idle.get(conn.identity) ?? []
    list.push(conn)
    d.idle.set(conn.identity, list)
    idleAll.add(conn)
    conn.timer = setTimeout(() => retire(conn), idleTimeoutMs)
    conn.timer.unref?.()
    // An idle connection can make room for a waiter of another identity or destination.
    if (waitingDests.size) pump()
  }

  function targetOf(job: DeliveryJob): Target {
    const source = job.source?.address
    const ehlo = job.ehlo ?? job.source?.hostname ?? opts.ehlo
    const route = job.route
    if (!route) {
      return {
        destKey: job.domain.toLowerCase(),
        identity: `${source ?? '*'} ${ehlo ?? ''}`,
        source,
        ehlo,
        tls: 'opportunistic',
        verifyTls: false,
        port: opts.mxPort,
        relay: undefined,
      }
    }
    const auth = route.username !== undefined ? { user: route.username, pass: route.password ?? '' } : undefined
    const verifyTls = route.verifyTls ?? true
    return {
      destKey: `relay ${route.host.toLowerCase()}:${route.port}`,
      // The credentials are part of the identity: a session authenticated as one user is never lent to another.
      identity: `${source ?? '*'} ${ehlo ?? ''} ${route.tls} ${verifyTls} ${auth ? `${auth.user}\u0000${auth.pass}` : ''}`,
      source,
      ehlo,
      tls: route.tls,
      verifyTls,
      port: route.port,
      auth,
      relay: route,
    }
  }

  /** Same-family addresses only: a socket bound to an IPv4 source cannot reach an IPv6 address. */
  function usable(addresses: string[], source: string | undefined): string[] {
    if (!source) return addresses
    return addresses.filter((a) => (isIPv6(source) ? isIPv6(a) : isIPv4(a)))
  }

  /** Opens a session on the first host/address that completes EHLO (and AUTH), in order. */
  async function connect(t: Target, d: Dest, hosts: MxHost[]): Promise<{ conn: Conn } | { reply: ReplyInput; response: string; host: string | null }> {
    let last: { reply: ReplyInput; response: string; host: string | null } = {
      reply: { code: null, enhanced: null, text: 'no MX address of the source address family', failure: 'connect' },
      response: 'no MX address of the source address family',
      host: null,
    }
    let attempts = 0
    for (const h of hosts) {
      for (const address of t.relay ? [h.host] : usable(h.addresses, t.source)) {
        if (attempts++ >= MAX_ADDRESSES) return last
        const base: SessionOptions = {
          host: address,
          port: t.port,
          // SNI takes names only (RFC 6066 section 3).
          servername: isIP(h.host) ? undefined : h.host,
          localAddress: t.source,
          ehlo: t.ehlo,
          tls: t.tls,
          verifyTls: t.verifyTls,
          auth: t.auth,
          connectTimeoutMs,
          socketTimeoutMs,
        }
        let r = await openSession(base)
        if (!r.ok && r.tlsFailed && t.tls === 'opportunistic') {
          log.warn('delivery: STARTTLS handshake failed, retrying in plaintext', { mx: h.host, address, error: r.response })
          r = await openSession({ ...base, tls: 'none' })
        }
        if (r.ok) {
          const conn: Conn = {
            session: r.session,
            dest: d,
            identity: t.identity,
            host: h.host,
            messages: 0,
            state: 'busy',
            needsReset: false,
            timer: null,
            slot: true,
            closing: false,
          }
          live.add(conn)
          r.session.onEnd(() => onClosed(conn))
          log.debug('delivery: connected', { mx: h.host, address, source: r.session.localAddress, tls: r.session.secure, conn: r.session.id })
          return { conn }
        }
        log.debug('delivery: connection failed', { mx: h.host, address, error: r.response })
        last = { reply: r.reply, response: r.response, host: h.host }
      }
    }
    return last
  }

  function resultsFor(job: DeliveryJob, replies: RecipientReply[], mx: string | null, sourceIp: string | null): RecipientResult[] {
    return replies.map(({ address, reply, response }) => ({
      address,
      ...classify(reply),
      code: reply.code,
      enhanced: reply.enhanced,
      response,
      mx,
      source_ip: sourceIp,
    }))
  }

  const everyone = (job: DeliveryJob, reply: ReplyInput, response: string): RecipientReply[] => job.recipients.map((address) => ({ address, reply, response }))

  async function deliver(job: DeliveryJob): Promise<RecipientResult[]> {
    if (job.recipients.length === 0) return []
    const t = targetOf(job)
    const shutdown = () =>
      resultsFor(job, everyone(job, { code: null, enhanced: null, text: 'transport closed', failure: 'connect' }, 'transport closed'), null, t.source ?? null)
    if (closing) return shutdown()
    let d = destOf(t.destKey)

    let grant: Grant | null =
      d.waiting === 0
        ? (() => {
            const conn = takeIdle(d, t.identity)
            return conn ? { kind: 'idle' as const, conn } : null
          })()
        : null
    let hosts: MxHost[] | null = null
    const lookup = async (): Promise<RecipientResult[] | null> => {
      if (t.relay) {
        hosts = [{ host: t.relay.host, priority: 0, addresses: [t.relay.host] }]
        return null
      }
      const found = await dns.resolve(job.domain)
      if (found.kind === 'hosts') {
        hosts = found.hosts
        return null
      }
      const reply: ReplyInput = found.permanent
        ? { code: null, enhanced: found.enhanced, text: found.reason }
        : { code: null, enhanced: found.enhanced, text: found.reason, failure: 'dns' }
      return resultsFor(job, everyone(job, reply, found.reason), null, t.source ?? null)
    }
    if (!grant) {
      const failed = await lookup()
      // Looked up again: a destination without slots or waiters may have been forgotten meanwhile.
      d = destOf(t.destKey)
      if (failed) {
        forget(d)
        return failed
      }
      grant = await acquire(d, t.identity)
    }

    for (let fresh = 0; ;) {
      if (grant.kind === 'closed') return shutdown()
      let conn: Conn
      if (grant.kind === 'idle') {
        conn = grant.conn
        if (conn.needsReset && !(await conn.session.reset())) {
          // Keep the slot, replace the connection.
          retire(conn, true)
          grant = { kind: 'new' }
          continue
        }
        conn.needsReset = false
      } else {
        if (!hosts) {
          const failed = await lookup()
          if (failed) {
            freeSlot(d)
            return failed
          }
        }
        const opened = await connect(t, d, hosts!)
        if (!('conn' in opened)) {
          freeSlot(d)
          return resultsFor(job, everyone(job, opened.reply, opened.response), opened.host, t.source ?? null)
        }
        conn = opened.conn
        fresh++
      }

      const tx = await conn.session.send(job.mailFrom, job.recipients, job.raw)
      conn.messages++
      const sourceIp = conn.session.localAddress ?? t.source ?? null
      if (!tx.answered && grant.kind === 'idle' && fresh === 0) {
        // A cached connection died before the server said anything: nothing was delivered,
        // so one fresh connection may try again.
        log.debug('delivery: reused connection was dead, reconnecting', { mx: conn.host })
        retire(conn, true)
        grant = { kind: 'new' }
        continue
      }
      conn.needsReset = tx.needsReset
      if (!tx.reusable) retire(conn)
      else release(conn)
      return resultsFor(job, tx.recipients, conn.host, sourceIp)
    }
  }

  async function close() {
    closing = true
    for (const d of [...waitingDests]) {
      for (;;) {
        const list = oldestWaiter(d)
        if (!list) break
        shiftWaiter(d, list).grant({ kind: 'closed' })
      }
    }
    const ended = [...live].map((conn) => new Promise<void>((resolve) => conn.session.onEnd(resolve)))
    for (const conn of [...idleAll]) retire(conn)
    // Busy connections close when their transaction returns (release sees `closing`); do not
    // wait forever for a server that never answers QUIT.
    const grace = new Promise<void>((resolve) => setTimeout(resolve, 2000).unref?.())
    await Promise.race([Promise.all(ended), grace])
    for (const conn of live) conn.session.destroy()
  }

  return {
    deliver,
    close,
    stats: () => ({ open: totalOpen, idle: idleAll.size, waiting: [...waitingDests].reduce((n, d) => n + d.waiting, 0) }),
  }
}
