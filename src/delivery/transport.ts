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
 * - Slots, waiting, idle reuse and eviction are the connection pool's (connection-pool.ts):
 *   at most `destinationConcurrency` connections per destination and `totalConcurrency` in
 *   all, waiting jobs FIFO per destination, idle connections closed to make room.
 * - A new connection tries the MX hosts in preference order and each host's addresses (A, then
 *   AAAA; only the source address's family), at most MAX_ADDRESSES attempts. A host is skipped
 *   on connection failure, timeout, or a refused greeting/EHLO (421 or 5xx greeting: RFC 5321
 *   3.1 and 4.2; Postfix smtp_skip_5xx_greeting). The first host that completes EHLO carries the
 *   transaction and its answers are final: no second host is tried after RCPT replies, so a
 *   message is never sent twice because of a later failure.
 * - Direct delivery uses opportunistic STARTTLS without certificate checks (RFC 7435; RFC 3207).
 *   If the TLS handshake itself fails, the same address is tried once more in plaintext, as
 *   MTAs do at the "may" security level: an MX with a broken TLS stack still gets its mail.
 *   Two exceptions never fall back to plaintext: a domain whose MTA-STS policy (RFC 8461,
 *   mta-sts.ts) is in enforce mode gets STARTTLS with a certificate valid for the MX host, and
 *   only to the policy's MX hosts; a domain in `requireTlsDomains` gets STARTTLS (certificate
 *   not checked). Either is deferred when that cannot be had.
 *   Relay routes use the configured TLS mode ('starttls' is required, 'tls' is implicit, both
 *   verify the certificate unless `verifyTls: false`) and AUTH when credentials are given.
 * - After a transaction the connection goes back to the pool (RSET before its next use when
 *   the transaction was aborted mid-envelope; after a completed DATA the server state is
 *   already reset, RFC 5321 4.1.1.4). The pool closes it with QUIT after
 *   `maxMessagesPerConnection` messages or `idleTimeoutMs` without use, and drops it when the
 *   server closes it.
 * - A reused connection that turns out dead before the server answered anything is replaced
 *   by a fresh one once (nothing was sent, so this cannot duplicate a message).
 * - close() refuses new jobs, answers waiting ones with a deferral, QUITs idle connections and
 *   closes busy ones when their transaction ends.
 */
import { isAscii } from 'node:buffer'
import { isIP, isIPv4, isIPv6 } from 'node:net'
import type { DnsResolver } from '../lib/dns'
import type { Logger } from '../lib/logger'
import type { BounceReason, Outcome } from '../lib/smtp-replies'
import { classify, type ReplyInput } from './classify'
import { createConnectionPool, type Grant, type PooledConnection, type Slot } from './connection-pool'
import { mxAllowed, type MtaStsLookup, type StsPolicy } from './mta-sts'
import { createDestinationCache, type MxHost } from './mx'
import { openSession, type CommandTimeouts, type RecipientReply, type SessionOptions, type SmtpSession, type TlsInfo, type TlsMode } from './smtp-client'

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
  /**
   * The message converted to 7 bits and signed, for a server that does not offer 8BITMIME
   * when `raw` has 8-bit bytes (RFC 6152 section 3). Absent: such a recipient bounces.
   */
  raw7bit?: () => Promise<Buffer>
  /** Source address and its EHLO name; null: the OS chooses the source and the transport's default EHLO name is used. */
  source: { address: string; hostname: string } | null
  /** EHLO name overriding source.hostname. */
  ehlo?: string
  /** Absent: direct to the recipient's MX. */
  route?: RelayRoute
  /** Close the connection after this many messages (the provider group's limit, shaping.ts); absent: the transport's. */
  maxMessagesPerConnection?: number
}

export interface RecipientResult {
  address: string
  outcome: Outcome
  suppress: boolean
  rule: string
  /** Why it failed or was deferred (BOUNCE_REASONS); null when sent or when the engine decided. */
  reason: BounceReason | null
  code: number | null
  enhanced: string | null
  response: string
  /** The MX (or relay) host name that answered, null when none was reached. */
  mx: string | null
  source_ip: string | null
  /** The TLS of the session that carried the attempt; null for plaintext or when no session was opened. */
  tls: TlsInfo | null
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
  /** Inactivity limit for commands without an RFC 5321 4.5.3.2 timeout of their own (EHLO, STARTTLS, AUTH, RSET). */
  socketTimeoutMs?: number
  /** RFC 5321 4.5.3.2 per-command timeouts (greeting, MAIL, RCPT, DATA, data block, final dot); RFC values by default. */
  timeouts?: Partial<CommandTimeouts>
  idleTimeoutMs?: number
  maxMessagesPerConnection?: number
  /** Monotonic milliseconds for the DNS cache (default performance.now). */
  now?: () => number
  /** Recipient domains whose mail goes only over STARTTLS (the certificate is not checked): deferred rather than sent in plaintext. */
  requireTlsDomains?: readonly string[]
  /** MTA-STS policies (RFC 8461); absent: not consulted. */
  mtaSts?: MtaStsLookup
}

export interface Transport {
  deliver(job: DeliveryJob): Promise<RecipientResult[]>
  close(): Promise<void>
  /** Open connections per destination, for tests and metrics. */
  stats(): { open: number; idle: number; waiting: number }
  /** The MX host names of a domain from the transport's DNS cache ([] when it has none or the lookup failed): the shaper's provider groups. */
  mxHosts(domain: string): Promise<string[]>
}

/** Postfix smtp_mx_address_limit: addresses tried for one delivery before giving up. */
const MAX_ADDRESSES = 5

type Conn = PooledConnection<SmtpSession>

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
  /** An MTA-STS policy in enforce mode: only its MX hosts, over verified TLS. */
  sts: StsPolicy | null
}

/** Creates the delivery transport (see the module comment for the connection lifecycle). */
export function createTransport(opts: TransportOptions): Transport {
  const connectTimeoutMs = opts.connectTimeoutMs ?? 30_000
  const socketTimeoutMs = opts.socketTimeoutMs ?? 300_000
  const log = opts.log
  const dns = createDestinationCache({ resolver: opts.resolver, now: opts.now ?? (() => performance.now()) })
  const pool = createConnectionPool<SmtpSession>({
    destinationConcurrency: opts.destinationConcurrency,
    totalConcurrency: opts.totalConcurrency,
    idleTimeoutMs: opts.idleTimeoutMs ?? 5_000,
    maxMessagesPerConnection: opts.maxMessagesPerConnection ?? 100,
  })

  const requireTls = new Set((opts.requireTlsDomains ?? []).map((d) => d.toLowerCase()))

  /**
   * Where and how a job connects. Direct delivery is opportunistic STARTTLS (RFC 7435) unless
   * the domain publishes an MTA-STS policy in enforce mode (RFC 8461 4.2: STARTTLS with a
   * certificate valid for the MX host name, only to the policy's MX hosts, else defer) or is
   * configured to require TLS (STARTTLS or defer, never plaintext). The TLS requirement is
   * part of the identity, so a connection opened under a weaker rule is never reused for it.
   */
  async function targetOf(job: DeliveryJob): Promise<Target> {
    const source = job.source?.address
    const ehlo = job.ehlo ?? job.source?.hostname ?? opts.ehlo
    const route = job.route
    if (!route) {
      const domain = job.domain.toLowerCase()
      const policy = opts.mtaSts ? await opts.mtaSts.policyFor(domain) : null
      const sts = policy?.mode === 'enforce' ? policy : null
      const tls: TlsMode = sts || requireTls.has(domain) ? 'starttls' : 'opportunistic'
      const verifyTls = sts !== null
      return {
        destKey: domain,
        identity: `${source ?? '*'} ${ehlo ?? ''} ${tls} ${verifyTls}`,
        source,
        ehlo,
        tls,
        verifyTls,
        port: opts.mxPort,
        relay: undefined,
        sts,
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
      sts: null,
    }
  }

  /** Same-family addresses only: a socket bound to an IPv4 source cannot reach an IPv6 address. */
  function usable(addresses: string[], source: string | undefined): string[] {
    if (!source) return addresses
    return addresses.filter((a) => (isIPv6(source) ? isIPv6(a) : isIPv4(a)))
  }

  /** Opens a session on the first host/address that completes EHLO (and AUTH), in order. */
  async function connect(t: Target, slot: Slot, hosts: MxHost[]): Promise<{ conn: Conn } | { reply: ReplyInput; response: string; host: string | null }> {
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
          timeouts: opts.timeouts,
        }
        let r = await openSession(base)
        if (!r.ok && r.tlsFailed && t.tls === 'opportunistic') {
          log.warn('delivery: STARTTLS handshake failed, retrying in plaintext', { mx: h.host, address, error: r.response })
          r = await openSession({ ...base, tls: 'none' })
        }
        if (r.ok) {
          const conn = pool.adopt(slot, r.session, h.host)
          log.debug('delivery: connected', { mx: h.host, address, source: r.session.localAddress, tls: r.session.secure, conn: r.session.id })
          return { conn }
        }
        log.debug('delivery: connection failed', { mx: h.host, address, error: r.response })
        last = { reply: r.reply, response: r.response, host: h.host }
      }
    }
    return last
  }

  function resultsFor(job: DeliveryJob, replies: RecipientReply[], mx: string | null, sourceIp: string | null, tls: TlsInfo | null = null): RecipientResult[] {
    return replies.map(({ address, reply, response }) => ({
      address,
      ...classify(reply),
      code: reply.code,
      enhanced: reply.enhanced,
      response,
      mx,
      source_ip: sourceIp,
      tls,
    }))
  }

  const release = (conn: Conn) => pool.release(conn)
  const needs7bit = (raw: Buffer, session: SmtpSession) => !session.eightBitMime && !isAscii(raw)

  const everyone = (job: DeliveryJob, reply: ReplyInput, response: string): RecipientReply[] => job.recipients.map((address) => ({ address, reply, response }))

  async function deliver(job: DeliveryJob): Promise<RecipientResult[]> {
    if (job.recipients.length === 0) return []
    const t = await targetOf(job)
    const shutdown = () =>
      resultsFor(job, everyone(job, { code: null, enhanced: null, text: 'transport closed', failure: 'connect' }, 'transport closed'), null, t.source ?? null)
    if (pool.closing()) return shutdown()

    // An idle connection of the destination is used without any DNS lookup.
    const idle = pool.takeIdle(t.destKey, t.identity)
    let grant: Grant<SmtpSession> | null = idle ? { kind: 'idle', conn: idle } : null
    let hosts: MxHost[] | null = null
    const lookup = async (): Promise<RecipientResult[] | null> => {
      if (t.relay) {
        hosts = [{ host: t.relay.host, priority: 0, addresses: [t.relay.host] }]
        return null
      }
      const found = await dns.resolve(job.domain)
      if (found.kind === 'hosts') {
        hosts = t.sts ? found.hosts.filter((h) => mxAllowed(t.sts!, h.host)) : found.hosts
        if (hosts.length > 0) return null
        // RFC 8461 5.1: no MX host that the enforced policy names: not delivered, retried later.
        const text = `no MX host of ${job.domain} matches its MTA-STS policy (mx: ${t.sts!.mx.join(', ')})`
        return resultsFor(job, everyone(job, { code: null, enhanced: '4.7.5', text, failure: 'tls' }, text), null, t.source ?? null)
      }
      const reply: ReplyInput = found.permanent
        ? { code: null, enhanced: found.enhanced, text: found.reason }
        : { code: null, enhanced: found.enhanced, text: found.reason, failure: 'dns' }
      return resultsFor(job, everyone(job, reply, found.reason), null, t.source ?? null)
    }
    if (!grant) {
      const failed = await lookup()
      if (failed) return failed
      grant = await pool.acquire(t.destKey, t.identity)
    }

    for (let fresh = 0; ;) {
      if (grant.kind === 'closed') return shutdown()
      let conn: Conn
      if (grant.kind === 'idle') {
        conn = grant.conn
        if (conn.needsReset && !(await conn.session.reset())) {
          // Keep the slot, replace the connection.
          grant = { kind: 'new', slot: pool.replace(conn) }
          continue
        }
        conn.needsReset = false
      } else {
        if (!hosts) {
          const failed = await lookup()
          if (failed) {
            pool.freeSlot(grant.slot)
            return failed
          }
        }
        const opened = await connect(t, grant.slot, hosts!)
        if (!('conn' in opened)) {
          pool.freeSlot(grant.slot)
          return resultsFor(job, everyone(job, opened.reply, opened.response), opened.host, t.source ?? null)
        }
        conn = opened.conn
        fresh++
      }

      const raw = needs7bit(job.raw, conn.session) ? await job.raw7bit?.() : job.raw
      if (!raw) {
        // RFC 6152 section 3: without a 7-bit form the message must not go to this server.
        release(conn)
        const text = 'the message has 8-bit data and the server does not offer 8BITMIME (RFC 6152)'
        return resultsFor(job, everyone(job, { code: null, enhanced: '5.6.3', text }, text), conn.host, conn.session.localAddress ?? t.source ?? null)
      }
      const tx = await conn.session.send(job.mailFrom, job.recipients, raw)
      conn.messages++
      const sourceIp = conn.session.localAddress ?? t.source ?? null
      if (!tx.answered && grant.kind === 'idle' && fresh === 0) {
        // A cached connection died before the server said anything: nothing was delivered,
        // so one fresh connection may try again.
        log.debug('delivery: reused connection was dead, reconnecting', { mx: conn.host })
        grant = { kind: 'new', slot: pool.replace(conn) }
        continue
      }
      conn.needsReset = tx.needsReset
      if (!tx.reusable || (job.maxMessagesPerConnection !== undefined && conn.messages >= job.maxMessagesPerConnection)) pool.retire(conn)
      else pool.release(conn)
      return resultsFor(job, tx.recipients, conn.host, sourceIp, conn.session.tls)
    }
  }

  async function mxHosts(domain: string): Promise<string[]> {
    const found = await dns.resolve(domain)
    return found.kind === 'hosts' ? found.hosts.map((h) => h.host) : []
  }

  return { deliver, close: () => pool.close(), stats: () => pool.stats(), mxHosts }
}
