import { createHash } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server'
import type { Deps } from '../../deps'
import { checkEmail, domainOf } from '../../lib/email'
import { AppError, type ErrorCode } from '../../lib/errors'
import { authenticateBridge, bridgeAllowsAddress, type BridgeIdentity } from '../../modules/bridges/identity'
import { checkSubmittedHeaders } from '../../modules/messages/compose'
import type { StoredResponse } from '../../modules/messages/idempotency'
import { prepareRawMessage } from '../../modules/messages/raw'
import { acceptMessages } from '../../modules/messages/service'
import { loadSmtpCertificate } from '../tls'
import { createAuthThrottle, isLoopback } from './auth-throttle'
import { createLineEndingCheck } from './line-endings'

/**
 * The SMTP submission listener (RFC 6409) for bridges: applications that already speak SMTP
 * hand their mail to Mailroom here instead of calling the send API.
 *
 * It is never an open relay: every transaction needs AUTH (PLAIN or LOGIN, RFC 4954) with a
 * bridge's credentials, from an address the bridge allows, and may only use the bridge's
 * domains in MAIL FROM and From. AUTH needs TLS (STARTTLS, RFC 3207, or the implicit-TLS port
 * of RFC 8314) unless the operator allows plaintext for loopback clients. A message is queued
 * by the accept service of the send API (prepareRawMessage, then acceptMessages, which also
 * answers resubmissions with an Idempotency-Key header) and the 250 is written only after its
 * transaction is committed: a 250 means "on disk".
 */

export interface SubmissionListener {
  /** Port of the STARTTLS listener (smtp_listen), null when it is off. */
  port: number | null
  /** Port of the implicit-TLS listener (smtp_tls_listen), null when it is off. */
  tlsPort: number | null
  /** Stops accepting, lets transactions being committed finish and answer, then closes every session with 421. */
  close(): Promise<void>
}

export interface SubmissionOptions {
  /** A certificate to use instead of loading or generating one (tests and benchmarks share one). */
  certificate?: { key: string; cert: string }
}

/** Failed AUTH attempts per client address (IPv6: per /64) before it is refused for a while. */
export const AUTH_FAILURE_LIMIT = 5
export const AUTH_FAILURE_WINDOW_MS = 10 * 60 * 1000

/** An SMTP reply: code and text; the text starts with the enhanced status code (RFC 3463). */
interface Reply {
  code: number
  text: string
}

/** What a session knows once AUTH succeeded; the credentials let each transaction re-check the bridge. */
interface SessionAuth {
  username: string
  password: string
  bridge: BridgeIdentity
}

/** An Error smtp-server turns into a reply (`responseCode`, message). */
function replyError(reply: Reply): Error & { responseCode: number } {
  return Object.assign(new Error(reply.text), { responseCode: reply.code })
}

const r = (code: number, text: string): Reply => ({ code, text })

/** Replies of our own, in one place (docs/api.md "SMTP submission" lists them). */
const REPLIES = {
  authInvalid: r(535, '5.7.8 Authentication credentials invalid'),
  authFromAddress: r(535, '5.7.1 This bridge may not be used from your address'),
  authzid: r(535, '5.7.8 Authorization identity must be empty or equal the user name'),
  // RFC 4954 section 4: 538 5.7.11 "Encryption required for requested authentication mechanism".
  authNeedsTls: r(538, '5.7.11 Encryption required: use STARTTLS first'),
  throttled: r(421, '4.7.0 Too many failed authentication attempts; try again later'),
  authRequired: r(530, '5.7.0 Authentication required'),
  bridgeGone: r(421, '4.7.0 The bridge is disabled or its credentials changed; reconnect'),
  senderDomain: r(550, "5.7.1 The sender's domain is not one of this bridge's domains"),
  nullSender: r(550, '5.7.1 A null reverse-path (MAIL FROM:<>) is not accepted for submission'),
  // RFC 8689 section 5: a server that does not support REQUIRETLS answers 555 to the parameter.
  requireTls: r(555, '5.5.4 REQUIRETLS is not supported here'),
  // RFC 5321 4.1.1.11 / RFC 6531 3.4: SMTPUTF8 is not offered, so its parameter is refused.
  smtpUtf8: r(555, '5.5.4 SMTPUTF8 is not supported here'),
  badRecipient: r(501, '5.1.3 Bad recipient address syntax'),
  bareLineEnding: r(554, '5.6.0 Bare CR or LF in message data is not allowed; use CRLF line endings (RFC 5321 section 2.3.8)'),
  tooBig: (max: number) => r(552, `5.3.4 Message exceeds the maximum size of ${max} bytes`),
  internal: r(451, '4.3.0 Local error in processing; try again later'),
  shuttingDown: r(421, '4.3.2 Service shutting down; try again later'),
}

/** The reply to each error code the message path throws: the basic and the enhanced status code (RFC 3463). */
const ERROR_REPLIES: Partial<Record<ErrorCode, [code: number, enhanced: string]>> = {
  validation_failed: [550, '5.6.0'],
  bad_request: [550, '5.6.0'],
  forbidden: [550, '5.7.1'],
  domain_not_verified: [550, '5.7.1'],
  ip_not_allowed: [550, '5.7.1'],
  payload_too_large: [552, '5.3.4'],
  // A bridge quota: temporary, the client's queue retries later (RFC 3463 4.7.1: policy, transient).
  rate_limited: [451, '4.7.1'],
  idempotency_in_progress: [451, '4.3.0'],
  idempotency_key_reused: [550, '5.7.0'],
  unavailable: [451, '4.3.0'],
}

/** Maps what the message path throws to a reply; unknown errors become 451 with nothing internal in the text. */
export function replyForError(e: unknown): Reply {
  if (!(e instanceof AppError)) return REPLIES.internal
  const reply = ERROR_REPLIES[e.code]
  if (!reply) return REPLIES.internal
  const [code, enhanced] = reply
  const detail = e.details ? Object.values(e.details).flat()[0] : undefined
  return r(code, `${enhanced} ${e.message}${detail && !e.message.includes(detail) ? ` (${detail})` : ''}`)
}

/** An enhanced status code at the start of a reply text. */
const ENHANCED_PREFIX = /^[245]\.\d{1,3}\.\d{1,3} /

/**
 * smtp-server adds an enhanced status code chosen by the reply code alone (550 is always
 * 5.1.1), which would mislabel our policy refusals (550 5.7.1) and content refusals (5.6.0).
 * Its own replies (530 5.7.0, 452 4.5.3, 552 5.3.4, 250 2.6.0 ...) are right, so
 * ENHANCEDSTATUSCODES stays on, and a reply whose text already starts with a code (ours)
 * is sent as it is.
 */
function keepOwnEnhancedCodes(server: SMTPServer, session: SMTPServerSession): void {
  for (const connection of server.connections) {
    if (connection.id !== session.id) continue
    const send = connection.send.bind(connection)
    connection.send = (code, data, context) => send(code, data, typeof data === 'string' && ENHANCED_PREFIX.test(data) ? false : context)
    return
  }
}

/**
 * What a resubmission of the same message has in common with the first: the envelope, the
 * content and the control headers (tags, pool, tracking), not Date or Message-ID.
 */
function fingerprint(
  raw: Buffer,
  mailFrom: string,
  recipients: string[],
  prepared: { fromAddress: string; subject: string; tags: string[]; poolId: number | null },
  tracking: { track_opens?: boolean; track_clicks?: boolean },
) {
  const split = raw.indexOf('\r\n\r\n')
  const body = split < 0 ? raw : raw.subarray(split + 4)
  return {
    mail_from: mailFrom.toLowerCase(),
    recipients: recipients.map((a) => a.toLowerCase()).sort(),
    from: prepared.fromAddress,
    subject: prepared.subject,
    tags: prepared.tags,
    pool_id: prepared.poolId,
    track_opens: tracking.track_opens ?? null,
    track_clicks: tracking.track_clicks ?? null,
    body_sha256: createHash('sha256').update(body).digest('hex'),
  }
}

/**
 * Starts the submission listener(s) configured by smtp_listen (STARTTLS) and smtp_tls_listen
 * (implicit TLS). Rejects with a message naming the setting when an address cannot be bound.
 */
export async function startSubmissionListener(deps: Deps, opts: SubmissionOptions = {}): Promise<SubmissionListener> {
  const { config, log } = deps
  const certificate = opts.certificate ?? (await loadSmtpCertificate(deps))
  const throttle = createAuthThrottle(deps.clock, { limit: AUTH_FAILURE_LIMIT, windowMs: AUTH_FAILURE_WINDOW_MS })
  const auths = new WeakMap<SMTPServerSession, SessionAuth>()
  /** DATA transactions between their end-of-data and their reply: close() lets them finish. */
  const inFlight = new Set<Promise<unknown>>()
  let closing = false

  const plaintextAuthAllowed = (session: SMTPServerSession) => session.secure || (config.smtp_plain_auth_loopback && isLoopback(session.remoteAddress))

  const handlers = (server: () => SMTPServer): Partial<SMTPServerOptions> => ({
    onConnect(session, callback) {
      keepOwnEnhancedCodes(server(), session)
      if (closing) return callback(replyError(REPLIES.shuttingDown))
      if (!throttle.allowed(session.remoteAddress)) return callback(replyError(REPLIES.throttled))
      callback()
    },

    onAuth(auth, session, callback) {
      const ip = session.remoteAddress
      if (!throttle.allowed(ip)) return callback(replyError(REPLIES.throttled))
      // smtp-server refuses plaintext AUTH itself (538) unless allowInsecureAuth is on, which
      // it is only when loopback clients may; other clients are refused here.
      if (!plaintextAuthAllowed(session)) return callback(replyError(REPLIES.authNeedsTls))
      const failed = (reply: Reply, reason: string) => {
        throttle.fail(ip)
        log.info('smtp auth failed', { ip, user: auth.username ?? '', reason })
        callback(replyError(reply))
      }
      // RFC 4616 section 2: an authorization identity other than the user's own would mean
      // acting for someone else, which bridges do not do.
      if (auth.method === 'PLAIN' && auth.authzid && auth.authzid !== auth.authcid) return failed(REPLIES.authzid, 'authorization identity')
      const username = auth.username ?? ''
      const password = auth.password ?? ''
      const bridge = username && password ? authenticateBridge(deps, username, password) : null
      if (!bridge || !bridge.active) return failed(REPLIES.authInvalid, bridge ? 'bridge inactive' : 'bad credentials')
      if (!bridgeAllowsAddress(bridge, ip)) {
        // The password was right: as the API does for keys (ip_not_allowed after a valid key),
        // say why, and do not count it as a guess.
        log.warn('smtp auth from an address the bridge does not allow', { ip, bridge_id: bridge.id })
        return callback(replyError(REPLIES.authFromAddress))
      }
      throttle.succeed(ip)
      auths.set(session, { username, password, bridge })
      callback(null, { user: bridge.name })
    },

    onMailFrom(address, session, callback) {
      if (closing) return callback(replyError(REPLIES.shuttingDown))
      const auth = auths.get(session)
      if (!auth) return callback(replyError(REPLIES.authRequired))
      // Checked per transaction, so a disabled bridge or rotated password stops long-lived
      // (pooled) sessions too, not only new ones.
      const bridge = authenticateBridge(deps, auth.username, auth.password)
      if (!bridge || !bridge.active || !bridgeAllowsAddress(bridge, session.remoteAddress)) return callback(replyError(REPLIES.bridgeGone))
      auth.bridge = bridge
      // RFC 8689: REQUIRETLS asks every later hop to use verified TLS. The delivery engine
      // does not enforce that, so the message must not be accepted with the flag.
      if (address.args && (address.args as Record<string, unknown>).REQUIRETLS !== undefined) return callback(replyError(REPLIES.requireTls))
      if (address.args && (address.args as Record<string, unknown>).SMTPUTF8 !== undefined) return callback(replyError(REPLIES.smtpUtf8))
      if (!address.address) return callback(replyError(REPLIES.nullSender))
      const checked = checkEmail(address.address)
      if (!checked.ok || !bridge.domains.includes(domainOf(checked.email))) return callback(replyError(REPLIES.senderDomain))
      callback()
    },

    onRcptTo(address: SMTPServerAddress, _session, callback) {
      // The count is enforced by smtp-server (maxRecipients: 452 4.5.3, RFC 5321 section 4.5.3.1.10).
      if (!checkEmail(address.address).ok) return callback(replyError(REPLIES.badRecipient))
      callback()
    },

    onData(stream: SMTPServerDataStream, session, callback) {
      const chunks: Buffer[] = []
      const endings = createLineEndingCheck()
      let answered = false
      const reply = (err: Error | null, text?: string) => {
        if (answered) return
        answered = true
        callback(err, text)
      }
      stream.on('data', (chunk: Buffer) => {
        endings.push(chunk)
        // Past the limit or already refused: keep reading (the client is still sending) but keep nothing.
        if (!stream.sizeExceeded && endings.ok()) chunks.push(chunk)
      })
      stream.on('error', () => reply(replyError(REPLIES.internal)))
      stream.on('end', () => {
        if (stream.sizeExceeded) return reply(replyError(REPLIES.tooBig(config.smtp_max_message_bytes)))
        if (!endings.ok()) {
          log.warn('smtp message refused: bare CR or LF in DATA', { ip: session.remoteAddress, bridge_id: auths.get(session)?.bridge.id })
          return reply(replyError(REPLIES.bareLineEnding))
        }
        const auth = auths.get(session)
        if (!auth || !session.envelope.mailFrom) return reply(replyError(REPLIES.authRequired))
        const job = accept(
          auth.bridge,
          Buffer.concat(chunks),
          session.envelope.mailFrom.address,
          session.envelope.rcptTo.map((a) => a.address),
        ).then(
          (text) => reply(null, text),
          (e: unknown) => {
            const refusal = replyForError(e)
            if (refusal === REPLIES.internal) log.error('smtp submission failed', { bridge_id: auth.bridge.id, error: (e as Error)?.stack ?? String(e) })
            else log.info('smtp message refused', { bridge_id: auth.bridge.id, code: refusal.code, reply: refusal.text })
            reply(replyError(refusal))
          },
        )
        inFlight.add(job)
        void job.finally(() => inFlight.delete(job))
      })
    },
  })

  /** Checks, queues and commits one message; resolves to the 250 text once it is on disk. */
  async function accept(bridge: BridgeIdentity, raw: Buffer, mailFrom: string, recipients: string[]): Promise<string> {
    checkSubmittedHeaders(raw) // the API's rule on caller headers (Sender), the same on both paths
    const { prepared, idempotencyKey, nodeId, requestedTracking } = prepareRawMessage(deps, {
      raw,
      mailFrom,
      recipients,
      allowedDomains: bridge.domains,
      poolId: bridge.pool_id,
      nodeId: bridge.node_id,
      tracking: bridge.tracking,
    })
    // As on the bridge's send endpoint: a pool the bridge names wins over X-Mailroom-Pool
    // (the operator routes the application's mail, not the application).
    if (bridge.pool_id !== null) prepared.poolId = bridge.pool_id
    const result = await acceptMessages(deps, {
      ctx: { source: 'smtp', apiKeyId: bridge.api_key_id, poolId: prepared.poolId, nodeId, bridge },
      prepare: () => [prepared],
      respond: ([a]) => ({ status: 250, body: { id: a!.id, suppressed: a!.suppressed.length } }),
      idempotency: {
        key: idempotencyKey,
        // Idempotency records are scoped to an API key; a bridge whose key was deleted gets a
        // scope of its own (a negative id, which no key has).
        scope: bridge.api_key_id ?? -bridge.id,
        endpoint: 'SMTP',
        fingerprint: fingerprint(raw, mailFrom, recipients, prepared, requestedTracking),
      },
    })
    return acceptedText(result.response)
  }

  const baseOptions: SMTPServerOptions = {
    name: config.hostname,
    banner: 'Mailroom submission',
    key: certificate.key,
    cert: certificate.cert,
    authMethods: ['PLAIN', 'LOGIN'],
    // smtp-server answers plaintext AUTH with 538 itself unless this is on; when loopback
    // clients may use plaintext, onAuth refuses everyone else.
    allowInsecureAuth: config.smtp_plain_auth_loopback,
    authRequiredMessage: 'Authentication required',
    size: config.smtp_max_message_bytes,
    // 552 5.3.4 for a message over SIZE, whatever onData decides.
    rejectOversized: true,
    maxRecipients: config.smtp_max_recipients,
    hideENHANCEDSTATUSCODES: false,
    // Not offered: DSN (the engine does not send success notifications), REQUIRETLS (not
    // enforced) and SMTPUTF8 (RFC 6531): UTF-8 local parts are not accepted by the API,
    // stored or delivered, so a client must downgrade (or be told) before it sends.
    hideDSN: true,
    hideREQUIRETLS: true,
    hideSMTPUTF8: true,
    disableReverseLookup: true,
    logger: false,
  }

  const servers: SMTPServer[] = []
  const listenOn = async (where: { host: string; port: number }, setting: string, implicit: boolean): Promise<number> => {
    let server: SMTPServer | undefined
    server = new SMTPServer({
      ...baseOptions,
      secure: implicit,
      // The implicit-TLS port is TLS from the first byte (RFC 8314 section 3.3): no STARTTLS there.
      disabledCommands: implicit ? ['STARTTLS'] : [],
      ...handlers(() => server!),
    })
    // Resets and TLS failures of single clients are theirs, not ours: log, never crash.
    server.on('error', (e: Error & { code?: string }) => log.debug('smtp connection error', { error: e.message, code: e.code }))
    await new Promise<void>((resolve, reject) => {
      const onError = (e: NodeJS.ErrnoException) =>
        reject(
          new Error(
            e.code === 'EADDRINUSE'
              ? `${setting}: ${where.host}:${where.port} is already in use; choose another address or "off"`
              : `${setting}: cannot listen on ${where.host}:${where.port} (${e.code ?? e.message})`,
          ),
        )
      server!.server.once('error', onError)
      server!.listen(where.port, where.host, () => {
        server!.server.off('error', onError)
        resolve()
      })
    })
    servers.push(server)
    const port = (server.server.address() as AddressInfo).port
    log.info('smtp submission listening', { address: `${where.host}:${port}`, tls: implicit ? 'implicit' : 'starttls' })
    return port
  }

  const stopServers = () => Promise.all(servers.map((s) => new Promise<void>((resolve) => s.server.close(() => resolve()))))
  let port: number | null = null
  let tlsPort: number | null = null
  try {
    if (config.smtp_listen) port = await listenOn(config.smtp_listen, 'smtp_listen', false)
    if (config.smtp_tls_listen) tlsPort = await listenOn(config.smtp_tls_listen, 'smtp_tls_listen', true)
  } catch (e) {
    await stopServers()
    throw e
  }

  let closed: Promise<void> | null = null
  return {
    port,
    tlsPort,
    close() {
      closed ??= (async () => {
        closing = true
        const stopped = stopServers()
        // Messages between end-of-data and their reply finish committing and get their 250;
        // no new transaction starts meanwhile (onMailFrom answers 421 once closing).
        while (inFlight.size) await Promise.allSettled([...inFlight])
        for (const server of servers) {
          // A 421 reply closes the connection (RFC 5321 section 3.8).
          for (const connection of server.connections) connection.send(REPLIES.shuttingDown.code, REPLIES.shuttingDown.text)
        }
        await stopped
      })()
      return closed
    },
  }
}

function acceptedText(response: StoredResponse): string {
  const body = response.body as { id: string; suppressed?: number }
  return `Queued as ${body.id}${body.suppressed ? ` (${body.suppressed} recipient(s) suppressed)` : ''}`
}
