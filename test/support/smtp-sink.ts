/**
 * A recording SMTP sink for end-to-end tests of the delivery engine.
 *
 * It plays the recipient's MX: it records every transaction (envelope, raw DATA bytes,
 * TLS, the addresses on both ends) and chooses its answer from the recipient's local part,
 * so a test picks an outcome by picking an address:
 *
 *   tempfail@...   451 4.3.0 at RCPT (transient: the engine defers)
 *   permfail@...   550 5.1.1 at RCPT (bad mailbox: the engine bounces and suppresses)
 *   greylist@...   450 4.7.1 the first time a (client ip, sender, recipient) is seen, then accepted
 *   policy@...     550 5.7.1 at RCPT (a reputation/policy block, which is not a bad address)
 *   ratelimit@...  421 4.7.28 at RCPT, Gmail's "unusual rate" text (a slow-down reply: the shaper throttles)
 *   listed@...     554 5.7.1 at RCPT, "blocked using zen.spamhaus.org" (a block reply: the shaper suspends)
 *   disconnect@... the socket is destroyed during DATA, after some bytes arrived, with no reply
 *   anything else  accepted
 *
 * Several recipients in one transaction get their own RCPT replies, so mixed results work.
 * The enhanced status codes (RFC 3463) are written by the sink itself rather than by
 * smtp-server's automatic table, which maps by reply code only and so cannot tell a 550 5.7.1
 * policy block from a 550 5.1.1 unknown user; for that reason `hideENHANCEDSTATUSCODES` is on.
 */
import { SMTPServer, type SMTPServerAddress, type SMTPServerSession } from 'smtp-server'
import { generate } from 'selfsigned'
import type { AddressInfo } from 'node:net'

/** One DATA transaction as the sink saw it. */
export interface Recorded {
  /** smtp-server's connection id; several transactions on one connection share it. */
  connectionId: string
  /** 1-based index of the transaction on its connection. */
  transaction: number
  /** The client's source address: proves which pool IP the engine bound. */
  remoteAddress: string
  remotePort: number
  /** The sink address/port the connection came in on. */
  localAddress: string
  localPort: number
  /** The EHLO/HELO name the client announced. */
  ehlo: string
  /** Whether the session was upgraded with STARTTLS before this transaction. */
  secure: boolean
  /** TLS protocol (e.g. 'TLSv1.3') when secure, else null. */
  tlsProtocol: string | null
  /** MAIL FROM address; '' for the null reverse path (<>). */
  mailFrom: string
  /** Accepted RCPT TO addresses only, in order. */
  rcptTo: string[]
  /** The DATA bytes exactly as received, CRLF intact and dot-unstuffed, without the final '.'. */
  raw: Buffer
}

/** A RCPT TO the sink refused (or, for greylist, deferred). */
export interface Refused {
  connectionId: string
  remoteAddress: string
  mailFrom: string
  rcpt: string
  /** The reply code and text sent, e.g. 451 and '4.3.0 Temporary ...'. */
  code: number
  message: string
}

/** A transaction cut off by a disconnect@ recipient: what had arrived when the socket was destroyed. */
export interface Aborted extends Omit<Recorded, 'raw'> {
  /** The bytes read before the connection was destroyed (a prefix of the message). */
  partial: Buffer
}

export interface SmtpSinkOptions {
  /** Loopback address to bind; use 127.0.0.2, 127.0.0.3 ... to run several MXes. */
  host?: string
  /** 0 picks a free port. */
  port?: number
  /** Server name in the greeting and EHLO reply. */
  name?: string
  /** Advertise and allow STARTTLS (default true). Plain sessions are always allowed. */
  starttls?: boolean
}

export interface SmtpSink {
  host: string
  port: number
  /** Accepted messages (the sink answered 250 to DATA), in arrival order. */
  messages: Recorded[]
  /** Refused RCPT commands, in order. */
  refused: Refused[]
  /** Transactions cut off during DATA by a disconnect@ recipient. */
  aborted: Aborted[]
  /** Resolves with `messages` once at least `count` were accepted; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<Recorded[]>
  /**
   * Holds the reply to every DATA from now on (the message is read, not answered, not yet
   * recorded) until the returned function (or reset()) is called: a destination whose
   * deliveries are all in progress.
   */
  hold(): () => void
  /** Forget everything recorded, including greylist state. */
  reset(): void
  /** Stops listening and closes open connections. */
  close(): Promise<void>
}

/** The reply for a refused RCPT: code plus text beginning with the enhanced status code. */
interface Reply {
  code: number
  message: string
}

const TEMPFAIL: Reply = { code: 451, message: '4.3.0 Temporary local problem, try again later' }
const PERMFAIL: Reply = { code: 550, message: '5.1.1 The email account that you tried to reach does not exist' }
const GREYLIST: Reply = { code: 450, message: '4.7.1 Greylisted, please try again later' }
const POLICY: Reply = { code: 550, message: '5.7.1 Message rejected due to the sending IP reputation (policy)' }
const RATELIMIT: Reply = { code: 421, message: '4.7.28 Our system has detected an unusual rate of unsolicited mail originating from your IP address' }
const LISTED: Reply = { code: 554, message: '5.7.1 Service unavailable; Client host blocked using zen.spamhaus.org' }

// Generated once per process: RSA key generation costs ~100-200 ms and every sink in a test
// run can share one throwaway certificate. node:crypto can make keys but not X.509
// certificates, hence the `selfsigned` package.
let certificate: Promise<{ key: string; cert: string }> | undefined
function loadCertificate(): Promise<{ key: string; cert: string }> {
  certificate ??= generate([{ name: 'commonName', value: 'mailroom-sink.test' }], {
    keySize: 2048,
    algorithm: 'sha256',
  }).then((pems) => ({ key: pems.private, cert: pems.cert }))
  return certificate
}

function localPart(address: string): string {
  const at = address.lastIndexOf('@')
  return (at < 0 ? address : address.slice(0, at)).toLowerCase()
}

function mailFromOf(session: SMTPServerSession): string {
  return session.envelope.mailFrom ? session.envelope.mailFrom.address : ''
}

function tlsProtocolOf(session: SMTPServerSession): string | null {
  return session.secure && session.tlsOptions ? session.tlsOptions.version || null : null
}

function smtpError(reply: Reply): Error & { responseCode: number } {
  return Object.assign(new Error(reply.message), { responseCode: reply.code })
}

/** Starts a recording SMTP sink on a loopback address (see the module comment for behaviours). */
export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const { host = '127.0.0.1', port = 0, name = 'sink.mailroom.test', starttls = true } = options
  const tls = starttls ? await loadCertificate() : undefined

  const messages: Recorded[] = []
  const refused: Refused[] = []
  const aborted: Aborted[] = []
  const greylistSeen = new Set<string>()
  const waiters = new Set<() => void>()
  // While a hold() is in force: the promise the DATA replies wait for, and what ends it.
  let held: { until: Promise<void>; release: () => void } | null = null

  const notify = () => {
    for (const waiter of [...waiters]) waiter()
  }

  const server: SMTPServer = new SMTPServer({
    name,
    banner: 'Mailroom test sink',
    secure: false,
    ...(tls ?? {}),
    disabledCommands: starttls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    authOptional: true,
    hideENHANCEDSTATUSCODES: true,
    disableReverseLookup: true,
    logger: false,
    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const rcpt = address.address
      const reply = replyFor(rcpt, session)
      if (!reply) return callback()
      refused.push({
        connectionId: session.id,
        remoteAddress: session.remoteAddress,
        mailFrom: mailFromOf(session),
        rcpt,
        code: reply.code,
        message: reply.message,
      })
      callback(smtpError(reply))
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      const base = (): Omit<Recorded, 'raw'> => ({
        connectionId: session.id,
        transaction: session.transaction,
        remoteAddress: session.remoteAddress,
        remotePort: session.remotePort,
        localAddress: session.localAddress,
        localPort: session.localPort,
        ehlo: session.hostNameAppearsAs,
        secure: session.secure,
        tlsProtocol: tlsProtocolOf(session),
        mailFrom: mailFromOf(session),
        rcptTo: session.envelope.rcptTo.map((r) => r.address),
      })
      const cutOff = session.envelope.rcptTo.some((r) => localPart(r.address) === 'disconnect')
      if (cutOff) {
        // Drop the connection as soon as the first bytes of DATA arrive, before any reply:
        // the client cannot know whether the message was taken, which is the case to test.
        stream.once('data', (chunk: Buffer) => {
          aborted.push({ ...base(), partial: Buffer.from(chunk) })
          for (const connection of server.connections) {
            if (connection.id === session.id) connection._socket.destroy()
          }
          stream.resume()
          notify()
        })
        stream.on('error', () => {})
        return
      }
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('error', (err) => callback(err))
      stream.on('end', () => {
        const accept = () => {
          messages.push({ ...base(), raw: Buffer.concat(chunks) })
          callback(null, 'OK: queued as ' + session.id + '.' + session.transaction)
          notify()
        }
        if (held) void held.until.then(accept)
        else accept()
      })
    },
  })
  // Socket errors (resets from clients we or they cut off) must not crash the test process.
  server.on('error', () => {})

  function replyFor(rcpt: string, session: SMTPServerSession): Reply | undefined {
    switch (localPart(rcpt)) {
      case 'tempfail':
        return TEMPFAIL
      case 'permfail':
        return PERMFAIL
      case 'policy':
        return POLICY
      case 'ratelimit':
        return RATELIMIT
      case 'listed':
        return LISTED
      case 'greylist': {
        // The classic greylisting triplet: client IP, envelope sender, recipient.
        const key = [session.remoteAddress, mailFromOf(session).toLowerCase(), rcpt.toLowerCase()].join('\n')
        if (greylistSeen.has(key)) return undefined
        greylistSeen.add(key)
        return GREYLIST
      }
      default:
        return undefined
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject)
    server.listen(port, host, () => {
      server.server.off('error', reject)
      resolve()
    })
  })
  const bound = server.server.address() as AddressInfo

  return {
    host: bound.address,
    port: bound.port,
    messages,
    refused,
    aborted,
    waitFor(count, timeoutMs = 5000) {
      return new Promise<Recorded[]>((resolve, reject) => {
        const check = () => {
          if (messages.length < count) return
          clearTimeout(timer)
          waiters.delete(check)
          resolve(messages)
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`smtp sink ${bound.address}:${bound.port}: ${messages.length}/${count} messages after ${timeoutMs} ms`))
        }, timeoutMs)
        waiters.add(check)
        check()
      })
    },
    hold() {
      let release!: () => void
      const gate = { until: new Promise<void>((resolve) => (release = resolve)), release: () => release() }
      held?.release()
      held = gate
      return () => {
        if (held === gate) held = null
        gate.release()
      }
    },
    reset() {
      // A test that failed while holding must not hold the next one's deliveries.
      held?.release()
      held = null
      messages.length = 0
      refused.length = 0
      aborted.length = 0
      greylistSeen.clear()
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve())
        // Do not wait out smtp-server's 30 s grace period for clients (pools) still connected.
        for (const connection of server.connections) {
          connection.send(421, '4.3.2 Sink shutting down')
          connection.close()
        }
      })
    },
  }
}
