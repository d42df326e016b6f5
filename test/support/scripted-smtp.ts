/**
 * A scripted receiving SMTP server on loopback for probing the delivery engine's manners:
 * a slow banner, a chosen EHLO extension list (no 8BITMIME, no STARTTLS ...), a command left
 * unanswered. It speaks just enough SMTP (RFC 5321) by hand, so nothing in it fixes up what
 * the client sends: the DATA bytes are recorded exactly as received (dot-unstuffed).
 */
import net, { type AddressInfo } from 'node:net'

export type StallPoint = 'MAIL' | 'RCPT' | 'DATA' | 'DOT'

export interface ScriptedOptions {
  host?: string
  /** Milliseconds before the 220 greeting. */
  greetingDelayMs?: number
  /** EHLO keywords after the first line (default: PIPELINING, 8BITMIME, SMTPUTF8). */
  extensions?: string[]
  /** A command (or the final dot) that never gets an answer. */
  stallOn?: StallPoint
}

export interface ScriptedTransaction {
  /** The MAIL FROM line's argument part as sent, e.g. '<a@b> BODY=8BITMIME SIZE=12'. */
  mailFrom: string
  rcptTo: string[]
  data: Buffer
}

export interface ScriptedServer {
  port: number
  /** Every command line received, in order. */
  commands: string[]
  transactions: ScriptedTransaction[]
  close(): Promise<void>
}

/** Starts a scripted SMTP server (see the module comment). */
export async function startScriptedSmtp(options: ScriptedOptions = {}): Promise<ScriptedServer> {
  const { host = '127.0.0.1', greetingDelayMs = 0, extensions = ['PIPELINING', '8BITMIME', 'SMTPUTF8'], stallOn } = options
  const commands: string[] = []
  const transactions: ScriptedTransaction[] = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
    let buffer = Buffer.alloc(0)
    let inData = false
    let current: ScriptedTransaction | null = null
    // Once stalled, the session stays silent (a hung server, not one that skips a reply).
    let stalled = false
    const reply = (line: string) => !stalled && socket.writable && socket.write(`${line}\r\n`)
    const stall = (point: StallPoint) => (stalled ||= stallOn === point)
    const greet = () => reply('220 scripted.test ESMTP')
    if (greetingDelayMs > 0) setTimeout(greet, greetingDelayMs)
    else greet()
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk])
      for (;;) {
        if (inData) {
          // The message ends at CRLF.CRLF; with an empty message the dot line comes first.
          const withNl = Buffer.concat([Buffer.from('\r\n'), buffer])
          const end = withNl.indexOf('\r\n.\r\n')
          if (end < 0) return
          const data = withNl.subarray(2, end + 2)
          buffer = withNl.subarray(end + 5)
          inData = false
          current!.data = Buffer.from(data.toString('latin1').replace(/^\.\./gm, '.'), 'latin1')
          transactions.push(current!)
          current = null
          if (!stall('DOT')) reply('250 2.0.0 queued')
          continue
        }
        const nl = buffer.indexOf('\r\n')
        if (nl < 0) return
        const line = buffer.subarray(0, nl).toString('utf8')
        buffer = buffer.subarray(nl + 2)
        commands.push(line)
        const verb = line.split(/[ :]/)[0]!.toUpperCase()
        if (verb === 'EHLO') {
          const lines = ['scripted.test', ...extensions]
          reply(lines.map((l, i) => `250${i === lines.length - 1 ? ' ' : '-'}${l}`).join('\r\n'))
        } else if (verb === 'HELO') reply('250 scripted.test')
        else if (verb === 'MAIL') {
          current = { mailFrom: line.slice(10).trim(), rcptTo: [], data: Buffer.alloc(0) }
          if (!stall('MAIL')) reply('250 2.1.0 ok')
        } else if (verb === 'RCPT') {
          current?.rcptTo.push(/<([^>]*)>/.exec(line)?.[1] ?? '')
          if (!stall('RCPT')) reply('250 2.1.5 ok')
        } else if (verb === 'DATA') {
          if (stall('DATA')) continue
          inData = true
          reply('354 go ahead')
        } else if (verb === 'RSET') {
          current = null
          reply('250 2.0.0 ok')
        } else if (verb === 'QUIT') {
          reply('221 2.0.0 bye')
          socket.end()
        } else reply('502 5.5.1 not implemented')
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  return {
    port: (server.address() as AddressInfo).port,
    commands,
    transactions,
    close: () => {
      for (const s of sockets) s.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
