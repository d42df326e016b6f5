/**
 * The inbound listener (MAILROOM_MX_LISTEN, port 25 of the return-path hosts): receives
 * bounces (RFC 3464 DSNs), complaints (RFC 5965 ARF, Microsoft JMRP) and DMARC aggregate
 * reports (RFC 7489) for this server's own addresses, and nothing else.
 *
 * It is never a relay: RCPT TO is accepted only for
 *   - `bounces+<token>@<host>`: the return path of our outgoing mail (src/lib/return-path-token.ts);
 *   - the address of an active feedback-loop account of kind `address`;
 *   - `dmarc@<host>`: the `rua` address the suggested DMARC record names;
 * where <host> is this server's host name or a sending domain's return-path host. Every other
 * recipient gets 550 5.7.1. There is no AUTH. The token is not checked at RCPT: a forged one is
 * accepted, changes nothing, and is logged as forged (rejecting it would tell a forger which
 * tokens are valid); for the same reason the 250 after DATA is the same for every outcome.
 *
 * After DATA the message is classified and applied in one transaction (./apply.ts);
 * the 250 is sent after the COMMIT. A database failure answers 451 so the sender retries.
 */
import type { AddressInfo } from 'node:net'
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server'
import type { Deps } from '../../deps'
import { tokenFromAddress } from '../../lib/return-path-token'
import { inboundHosts, isFeedbackLoopAddress } from '../../modules/feedback-loops/service'
import { DMARC_REPORT_LOCAL_PART } from '../../modules/sending-domains/records'
import { serverSecret } from '../../modules/system/secrets'
import { processInbound, type InboundResult } from './apply'

export interface InboundListenerOptions {
  host?: string
  port?: number
  /** PEM key and certificate: STARTTLS is offered when given (RFC 3207); plain text otherwise. */
  tls?: { key: string | Buffer; cert: string | Buffer } | null
  /** Largest message accepted (SIZE, RFC 1870); default the smtp_max_message_bytes setting. */
  maxMessageBytes?: number
  /** Called after each message is recorded (tests wait on it). */
  onProcessed?: (result: InboundResult) => void
}

export interface InboundListener {
  port: number
  close(): Promise<void>
}

/** Recipients per transaction: a DSN has one, a report a few; more is not a bounce. */
const MAX_RECIPIENTS = 20

/** Which of our addresses `address` is, or null when the listener must refuse it. */
export function inboundRecipientRole(deps: Pick<Deps, 'db' | 'config'>, address: string): 'return_path' | 'feedback_loop' | 'dmarc' | null {
  const a = address.trim().toLowerCase()
  const at = a.lastIndexOf('@')
  if (at <= 0) return null
  const local = a.slice(0, at)
  const host = a.slice(at + 1).replace(/\.$/, '')
  if (isFeedbackLoopAddress(deps, `${local}@${host}`)) return 'feedback_loop'
  if (!inboundHosts(deps).has(host)) return null
  if (tokenFromAddress(a) !== null) return 'return_path'
  if (local === DMARC_REPORT_LOCAL_PART) return 'dmarc'
  return null
}

function smtpError(code: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode: code })
}

/** Starts the inbound listener; resolves once it listens. */
export async function startInboundListener(deps: Deps, opts: InboundListenerOptions = {}): Promise<InboundListener> {
  const listen = deps.config.mx_listen
  const host = opts.host ?? listen?.host ?? '127.0.0.1'
  const port = opts.port ?? listen?.port ?? 25
  const maxBytes = opts.maxMessageBytes ?? deps.config.smtp_max_message_bytes
  const secret = serverSecret(deps, 'return-path')
  const inFlight = new Set<Promise<unknown>>()

  const server = new SMTPServer({
    name: deps.config.hostname,
    banner: 'Mailroom inbound: bounces, complaints and DMARC reports only',
    disabledCommands: opts.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(opts.tls ? { key: opts.tls.key, cert: opts.tls.cert } : {}),
    size: maxBytes,
    maxRecipients: MAX_RECIPIENTS,
    disableReverseLookup: true,
    logger: false,
    closeTimeout: 2000,
    onRcptTo(address, _session, callback) {
      try {
        if (inboundRecipientRole(deps, address.address)) return callback()
        callback(smtpError(550, '5.7.1 Relaying denied: this server accepts mail only for its own bounce and report addresses'))
      } catch (e) {
        deps.log.error('inbound RCPT check failed', { error: e instanceof Error ? e.message : String(e) })
        callback(smtpError(451, '4.3.0 Temporary failure, try again later'))
      }
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = []
      let size = 0
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length
        // Past the limit the rest is read and dropped, so the session can answer 552 and go on.
        if (size <= maxBytes) chunks.push(chunk)
      })
      stream.on('error', () => callback(smtpError(451, '4.3.0 Error reading the message')))
      stream.on('end', () => {
        if (stream.sizeExceeded || size > maxBytes) return callback(smtpError(552, `5.3.4 Message too big (at most ${maxBytes} bytes)`))
        const envelope = {
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
        }
        const work = processInbound(
          deps,
          { raw: Buffer.concat(chunks), envelope, remoteIp: session.remoteAddress, source: { kind: 'smtp' } },
          { secret, maxBytes },
        )
          .then(
            (result) => {
              // One reply for every outcome: naming it (applied, forged, duplicate) would let a
              // forger test tokens. The outcome is in the log and in inbound_messages.
              callback(null, '2.0.0 Received')
              opts.onProcessed?.(result)
            },
            (e) => {
              deps.log.error('recording an inbound message failed', { error: e instanceof Error ? e.message : String(e) })
              callback(smtpError(451, '4.3.0 Temporary failure, try again later'))
            },
          )
          .finally(() => inFlight.delete(work))
        inFlight.add(work)
      })
    },
  })
  server.on('error', (e) => deps.log.warn('inbound listener error', { error: e.message }))

  await new Promise<void>((resolve, reject) => {
    const onError = (e: Error) => reject(e)
    server.server.once('error', onError)
    server.listen(port, host, () => {
      server.server.off('error', onError)
      resolve()
    })
  })
  const bound = (server.server.address() as AddressInfo).port
  deps.log.info('inbound listener started', { host, port: bound, starttls: !!opts.tls })

  return {
    port: bound,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      // Messages already read are still committed before the process goes on to close the database.
      await Promise.allSettled([...inFlight])
    },
  }
}
