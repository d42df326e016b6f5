/**
 * One SMTP session to one server address, as promises over nodemailer's SMTPConnection:
 * open (connect, greeting, EHLO, STARTTLS, AUTH), then any number of transactions whose
 * results are per recipient, then close. No retries, pools or DNS here: transport.ts and
 * connection-pool.ts own those. Errors never escape as exceptions; they come back as
 * ReplyInput values for classify.
 */
import { isAscii } from 'node:buffer'
import { EventEmitter } from 'node:events'
import SMTPConnection from 'nodemailer/lib/smtp-connection'
import { parseReply } from '../lib/smtp-replies'
import type { FailureKind, ReplyInput } from './classify'
import { dataBlock } from './data-block'

export type TlsMode = 'opportunistic' | 'none' | 'starttls' | 'tls'

export interface SessionOptions {
  /** The address (or name) to connect to. */
  host: string
  port: number
  /** The MX or relay host name, for SNI and certificate checks when `host` is an address. */
  servername?: string
  /** Source address to bind; undefined lets the OS choose. */
  localAddress?: string
  /** EHLO name (RFC 5321 4.1.1.1: the client's FQDN). */
  ehlo: string | undefined
  /** opportunistic: STARTTLS when offered, certificates not verified (RFC 7435); starttls: required; tls: implicit. */
  tls: TlsMode
  /** Verify the server certificate (relay modes only; opportunistic TLS never verifies). */
  verifyTls: boolean
  auth?: { user: string; pass: string }
  /** TCP connect only; the greeting has its own timeout (RFC 5321 4.5.3.2.1). */
  connectTimeoutMs: number
  /** Inactivity limit for the commands without an RFC timeout of their own (EHLO, STARTTLS, AUTH, RSET, QUIT). */
  socketTimeoutMs: number
  /** The per-command timeouts of RFC 5321 4.5.3.2; missing ones take the RFC's values. */
  timeouts?: Partial<CommandTimeouts>
}

/**
 * RFC 5321 4.5.3.2 client timeouts, in milliseconds: initial 220 greeting (4.5.3.2.1),
 * MAIL (.2), RCPT (.3), DATA initiation (.4), each data block written (.5), and the reply to
 * the final dot (.6). A server is slow rather than dead for minutes; shorter timeouts make an
 * MTA send duplicates (a dot answered after we gave up) or never reach a slow MX.
 */
export interface CommandTimeouts {
  greetingMs: number
  mailMs: number
  rcptMs: number
  dataMs: number
  dataBlockMs: number
  dotMs: number
}

/** The RFC 5321 4.5.3.2 minimums (Postfix uses the same). */
export const RFC_TIMEOUTS: CommandTimeouts = {
  greetingMs: 300_000,
  mailMs: 300_000,
  rcptMs: 300_000,
  dataMs: 120_000,
  dataBlockMs: 180_000,
  dotMs: 600_000,
}

/** What a session's TLS was: recorded per delivery attempt (issue 17). */
export interface TlsInfo {
  /** e.g. 'TLSv1.3' */
  version: string | null
  cipher: string | null
  /** The certificate chains to a trusted root and names the host (RFC 6125); opportunistic TLS does not require it. */
  verified: boolean
  /** Why it did not verify (OpenSSL's code), null when it did. */
  verify_error: string | null
}

/** The answer for one recipient of a transaction. */
export interface RecipientReply {
  address: string
  reply: ReplyInput
  /** The server's reply as received, or the error description. */
  response: string
}

export interface TransactionResult {
  recipients: RecipientReply[]
  /** True when the server answered anything for this transaction (a reused connection that died before that can be retried safely). */
  answered: boolean
  /** True when the session can carry another transaction (still open and in a known state). */
  reusable: boolean
  /** True when the server is in the middle of an aborted transaction and needs RSET first. */
  needsReset: boolean
}

export interface SmtpSession {
  readonly id: string
  readonly secure: boolean
  /** The TLS of the session, null for plaintext. */
  readonly tls: TlsInfo | null
  /** The server offered 8BITMIME (RFC 6152) in its last EHLO answer. */
  readonly eightBitMime: boolean
  readonly localAddress: string | null
  readonly remoteAddress: string
  closed(): boolean
  send(mailFrom: string, recipients: string[], raw: Buffer): Promise<TransactionResult>
  /** RSET (RFC 5321 4.1.1.5); false when the server did not answer 250 or the connection is gone. */
  reset(): Promise<boolean>
  /** QUIT politely when idle, else drop. */
  close(): void
  /** Drops the socket at once. */
  destroy(): void
  /**
   * Called once when the socket is fully closed, for any reason (server idle timeout
   * included). Not earlier: a connection counts against the limits until the server could
   * see it gone.
   */
  onEnd(listener: () => void): void
}

export type OpenResult = { ok: true; session: SmtpSession } | { ok: false; reply: ReplyInput; response: string; tlsFailed: boolean }

type NodemailerError = Error & { code?: string; originalCode?: string; response?: string; responseCode?: number; command?: string; recipient?: string }

interface EnvelopeState {
  accepted: string[]
  rejected: string[]
  rejectedErrors: NodemailerError[]
  mailError?: NodemailerError
}

/** OpenSSL/node error codes of a failed handshake or an untrusted certificate. */
const TLS_ERROR = /^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_|SELF_SIGNED|DEPTH_ZERO|HOSTNAME_MISMATCH)/

function failureOf(err: NodemailerError, setup: boolean): FailureKind {
  if (TLS_ERROR.test(err.originalCode ?? '') || TLS_ERROR.test(err.code ?? '')) return 'tls'
  switch (err.code) {
    case 'ETIMEDOUT':
      return 'timeout'
    case 'ETLS':
      return 'tls'
    case 'EDNS':
      return 'dns'
    case 'EPROTOCOL':
      return 'protocol'
    case 'EAUTH':
      return 'session'
    case 'ECONNECTION':
    case 'ESOCKET':
      return setup ? 'connect' : 'disconnect'
    default:
      return setup ? 'connect' : 'local'
  }
}

/**
 * An error as classify input. During setup any failure is a session failure (a 5xx greeting
 * included: try another host or later); during a transaction a reply keeps its own code.
 */
export function errorToReply(err: NodemailerError, setup: boolean): { reply: ReplyInput; response: string } {
  const response = err.response ?? err.message
  if (err.response && /^[2-5]\d\d/.test(err.response)) {
    const parsed = parseReply(err.response)
    if (setup) return { reply: { ...parsed, failure: err.code === 'ETLS' ? 'tls' : 'session' }, response }
    if (err.code === 'EPROTOCOL') return { reply: { ...parsed, failure: 'protocol' }, response }
    return { reply: parsed, response }
  }
  // nodemailer refuses before MAIL FROM when the server's SIZE limit is smaller than the message.
  if (err.code === 'EMESSAGE' && /size larger than allowed/i.test(err.message)) {
    return { reply: { code: null, enhanced: '5.3.4', text: err.message }, response }
  }
  const text = err.originalCode ? `${err.message} (${err.originalCode})` : err.message
  return { reply: { code: null, enhanced: null, text, failure: failureOf(err, setup) }, response: text }
}

function connectionOptions(opts: SessionOptions): SMTPConnection.Options {
  const base: SMTPConnection.Options = {
    host: opts.host,
    port: opts.port,
    name: opts.ehlo,
    localAddress: opts.localAddress,
    servername: opts.servername,
    connectionTimeout: opts.connectTimeoutMs,
    greetingTimeout: { ...RFC_TIMEOUTS, ...opts.timeouts }.greetingMs,
    socketTimeout: opts.socketTimeoutMs,
    // Do not wait 5 s for a peer to close its side when we end a session.
    socketCloseTimeout: 1000,
    logger: false,
  }
  switch (opts.tls) {
    case 'opportunistic':
      // RFC 7435 / RFC 3207: encrypt when offered, without authenticating the server (MX
      // certificates rarely match and unauthenticated encryption beats plaintext); a 4xx/5xx
      // answer to STARTTLS continues in plaintext (opportunisticTLS).
      return { ...base, opportunisticTLS: true, tls: { rejectUnauthorized: false, servername: opts.servername } }
    case 'none':
      return { ...base, ignoreTLS: true }
    case 'starttls':
      return { ...base, requireTLS: true, tls: { rejectUnauthorized: opts.verifyTls, servername: opts.servername } }
    case 'tls':
      return { ...base, secure: true, tls: { rejectUnauthorized: opts.verifyTls, servername: opts.servername } }
  }
}

/** Opens a session: connect, greeting, EHLO, STARTTLS per the TLS mode, AUTH when credentials are given. */
export function openSession(opts: SessionOptions): Promise<OpenResult> {
  const conn = new SMTPConnection(connectionOptions(opts))
  applyTimeouts(conn, { ...RFC_TIMEOUTS, ...opts.timeouts }, opts.socketTimeoutMs)
  return new Promise<OpenResult>((resolve) => {
    let settled = false
    const fail = (err: NodemailerError) => {
      if (settled) return
      settled = true
      // Between sending STARTTLS and a secured session nodemailer holds the plaintext EHLO reply
      // (until the 220) and then `upgrading`: a failure in between is a failed TLS handshake,
      // whatever the socket reported (a peer that sends garbage shows up as ECONNRESET).
      const state = conn as unknown as { _plaintextEhlo?: string | false; upgrading?: boolean }
      const inHandshake = !conn.secure && (!!state._plaintextEhlo || state.upgrading === true)
      conn.close()
      const { reply, response } = errorToReply(err, true)
      if (inHandshake) reply.failure = 'tls'
      resolve({ ok: false, reply, response, tlsFailed: reply.failure === 'tls' })
    }
    // An 'error' event without a listener would throw; every error is also delivered to the
    // pending callback, so this one only covers the connect phase and idle sessions.
    conn.on('error', (err: NodemailerError) => fail(err))
    conn.connect((err?: NodemailerError | null) => {
      if (err) return fail(err)
      if (!opts.auth) return done()
      conn.login({ user: opts.auth.user, pass: opts.auth.pass }, (authErr) => (authErr ? fail(authErr as NodemailerError) : done()))
    })
    function done() {
      if (settled) return
      settled = true
      resolve({ ok: true, session: wrap(conn) })
    }
  })
}

type Internals = {
  _socket: import('node:net').Socket
  _remainingSetupTime(): number
  _sendCommand(str: string, logStr?: string): void
  _createSendStream(callback: unknown): import('node:stream').Writable
  _responseActions: Array<(str: string) => void>
  _actionSMTPStream(str: string, callback: unknown): void
  _currentDataStream: unknown
}

/**
 * Gives nodemailer's connection the RFC 5321 4.5.3.2 timeouts. nodemailer has one connect
 * deadline that also bounds the greeting and a single inactivity timeout for everything
 * after it, so: the greeting (and a STARTTLS handshake, Postfix smtp_starttls_timeout) get
 * their own time after the TCP connect, and the socket's inactivity timeout is set per
 * command as it is written, per data block while the message streams, and for the final dot.
 */
function applyTimeouts(conn: SMTPConnection, t: CommandTimeouts, otherMs: number): void {
  const c = conn as unknown as Internals
  c._remainingSetupTime = () => t.greetingMs
  // The timeouts of the commands written and not yet answered, oldest first: with PIPELINING
  // (RFC 2920) MAIL and RCPT leave in one batch, and the wait is for the oldest reply.
  const pending: number[] = []
  const arm = (ms: number) => c._socket?.setTimeout(ms)
  const sendCommand = c._sendCommand.bind(conn)
  c._sendCommand = (str, logStr) => {
    const verb = /^(MAIL FROM|RCPT TO|DATA)\b/i.exec(str)?.[1]?.toUpperCase()
    pending.push(verb === 'MAIL FROM' ? t.mailMs : verb === 'RCPT TO' ? t.rcptMs : verb === 'DATA' ? t.dataMs : otherMs)
    arm(pending[0]!)
    sendCommand(str, logStr)
  }
  // nodemailer stores every complete reply here before acting on it: one answered command.
  let last: string | undefined
  Object.defineProperty(conn, 'lastServerResponse', {
    configurable: true,
    get: () => last,
    set(value: string) {
      last = value
      pending.shift()
      arm(pending[0] ?? otherMs)
    },
  })
  // The message goes out as one prepared DATA block (data-block.ts) in one socket write,
  // instead of nodemailer's Transform stream piped into the socket (issue 18). What this
  // returns is all nodemailer's send() uses of that stream: write() and end() for a Buffer
  // message, `outByteCount`, and unpipe() when the connection closes mid-message. The reply
  // to the final dot is handled by nodemailer's own action for it (SMTP, never LMTP here).
  c._createSendStream = (callback) => {
    const chunks: Buffer[] = []
    const stream = Object.assign(new EventEmitter(), {
      inByteCount: 0,
      outByteCount: 0,
      write(chunk: Buffer | string) {
        chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
        return true
      },
      end() {
        const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
        const block = dataBlock(raw)
        stream.inByteCount = raw.length
        stream.outByteCount = block.length
        if (c._currentDataStream === stream) c._currentDataStream = false
        c._socket.write(block)
        // Written: from then on we wait for the reply to the final dot.
        arm(t.dotMs)
        stream.emit('end')
      },
      unpipe() {},
    })
    c._responseActions.push((str) => c._actionSMTPStream(str, callback))
    c._currentDataStream = stream
    arm(t.dataBlockMs)
    return stream as unknown as import('node:stream').Writable
  }
}

/** Version, cipher and verification of a session's TLS socket; null for plaintext. */
function tlsInfoOf(socket: import('node:net').Socket | undefined, secure: boolean): TlsInfo | null {
  if (!secure || !socket) return null
  const s = socket as import('node:tls').TLSSocket
  const error = s.authorizationError as unknown
  return {
    version: s.getProtocol?.() ?? null,
    cipher: s.getCipher?.()?.name ?? null,
    verified: s.authorized === true,
    verify_error: s.authorized ? null : error instanceof Error ? ((error as NodeJS.ErrnoException).code ?? error.message) : error ? String(error) : null,
  }
}

function wrap(conn: SMTPConnection): SmtpSession {
  // After STARTTLS this is the TLS socket, whose 'close' follows the underlying one.
  const socket = (conn as unknown as { _socket: import('node:net').Socket })._socket
  const localAddress = socket?.localAddress ?? null
  const remoteAddress = socket?.remoteAddress ?? ''
  const listeners: Array<() => void> = []
  let ended = false
  let busy = false
  const end = () => {
    if (ended) return
    ended = true
    for (const listener of listeners.splice(0)) listener()
  }
  if (!socket || socket.destroyed) end()
  else socket.once('close', end)
  return {
    id: conn.id,
    secure: conn.secure,
    tls: tlsInfoOf(socket, conn.secure),
    eightBitMime: ((conn as unknown as { _supportedExtensions?: string[] })._supportedExtensions ?? []).includes('8BITMIME'),
    localAddress,
    remoteAddress,
    closed: () => ended || conn.destroyed,
    onEnd(listener) {
      if (ended) listener()
      else listeners.push(listener)
    },
    close() {
      if (ended) return
      if (busy || conn.destroyed) return void conn.close()
      // QUIT (RFC 5321 4.1.1.10), but do not wait long for a server that never answers it.
      conn.quit()
      setTimeout(() => socket.destroy(), 2000).unref?.()
    },
    destroy() {
      conn.close()
      socket?.destroy()
    },
    reset() {
      if (ended || conn.destroyed) return Promise.resolve(false)
      busy = true
      return new Promise<boolean>((resolve) =>
        conn.reset((err) => {
          busy = false
          resolve(!err)
        }),
      )
    },
    send(mailFrom, recipients, raw) {
      busy = true
      // BODY=8BITMIME when the message has 8-bit bytes (RFC 6152); SIZE lets the server refuse early (RFC 1870).
      const use8BitMime = !isAscii(raw)
      return new Promise<TransactionResult>((resolve) => {
        conn.send({ from: mailFrom, to: recipients, size: raw.length, use8BitMime }, raw, (err, info) => {
          busy = false
          const lost = ended || conn.destroyed
          if (!err && info) {
            const final = parseReply(info.response)
            const out: RecipientReply[] = []
            const rejected = new Map((info.rejectedErrors ?? []).map((e) => [(e as NodemailerError).recipient ?? '', e as NodemailerError]))
            for (const address of recipients) {
              const refusal = rejected.get(address)
              if (refusal) out.push({ address, ...errorToReply(refusal, false) })
              else out.push({ address, reply: final, response: info.response })
            }
            return resolve({ recipients: out, answered: true, reusable: !lost, needsReset: false })
          }
          resolve(transactionError(conn, err as NodemailerError, recipients, lost))
        })
      })
    },
  }
}

/** Per-recipient results of a transaction that did not end with a 2yz to the final dot. */
function transactionError(conn: SMTPConnection, err: NodemailerError, recipients: string[], lost: boolean): TransactionResult {
  // nodemailer keeps the RCPT bookkeeping of the transaction on the connection; it is the only
  // place that says which recipients were accepted when DATA or the connection failed.
  const envelope = (conn as unknown as { _envelope?: EnvelopeState | false })._envelope || undefined
  const whole = errorToReply(err, false)
  const refusals = new Map<string, NodemailerError>()
  for (const e of envelope?.rejectedErrors ?? []) if (e.recipient) refusals.set(e.recipient, e)
  const mailRefused = err.command === 'MAIL FROM' || !!envelope?.mailError
  const answered = mailRefused || refusals.size > 0 || (envelope?.accepted.length ?? 0) > 0 || /^[2-5]\d\d/.test(err.response ?? '')
  const out: RecipientReply[] = recipients.map((address) => {
    // A refused MAIL FROM refuses the whole transaction, with that reply.
    if (mailRefused) return { address, ...whole }
    const refusal = refusals.get(address)
    if (refusal) return { address, ...errorToReply(refusal, false) }
    // Accepted (or not yet answered) recipients share the fate of DATA: its reply, or for a
    // lost connection 'disconnect', which defers them (RFC 5321 6.1: no reply to the final
    // dot is not a delivery; a duplicate is the lesser harm).
    return { address, ...whole }
  })
  return { recipients: out, answered, reusable: !lost && !conn.destroyed, needsReset: true }
}
