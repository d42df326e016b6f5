/**
 * The benchmark's SMTP sink, in its own process: accepts every message (smtp-server, no TLS,
 * no authentication), discards the bytes, and counts. `GET /count` on its HTTP port answers
 * the number of messages accepted and recipients accepted, with the wall-clock times (ms since
 * the epoch, this machine's clock) of the first and the last message since the last reset;
 * `POST` on the same port resets the counts and times. Prints
 * "listening on http://HOST:PORT smtp=PORT" once both listen.
 */
import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'

const host = process.argv[2] ?? '127.0.0.1'
let messages = 0
let recipients = 0
let firstAt: number | null = null
let lastAt: number | null = null

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  logger: false,
  size: 50 * 1024 * 1024,
  maxClients: 1000,
  onData(stream, session, callback) {
    stream.on('data', () => {})
    stream.on('end', () => {
      messages++
      lastAt = Date.now()
      firstAt ??= lastAt
      recipients += session.envelope.rcptTo.length
      callback()
    })
  },
})

await new Promise<void>((resolve) => server.listen(0, host, resolve))
const smtpPort = (server.server.address() as AddressInfo).port
const http = Bun.serve({
  hostname: host,
  port: 0,
  fetch(req) {
    if (req.method === 'POST') {
      messages = recipients = 0
      firstAt = lastAt = null
    }
    return Response.json({ messages, recipients, first_at: firstAt, last_at: lastAt })
  },
})
process.stdout.write(`listening on http://${host}:${http.port} smtp=${smtpPort}\n`)
process.on('SIGTERM', () => process.exit(0))
