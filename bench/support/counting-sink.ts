/**
 * The benchmark's SMTP sink, in its own process: accepts every message (smtp-server, no TLS,
 * no authentication), discards the bytes, and counts. `GET /count` on its HTTP port answers
 * the number of messages accepted and recipients accepted. Prints
 * "listening on http://HOST:PORT smtp=PORT" once both listen.
 */
import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'

const host = process.argv[2] ?? '127.0.0.1'
let messages = 0
let recipients = 0

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
      recipients += session.envelope.rcptTo.length
      callback()
    })
  },
})

await new Promise<void>((resolve) => server.listen(0, host, resolve))
const smtpPort = (server.server.address() as AddressInfo).port
const http = Bun.serve({ hostname: host, port: 0, fetch: () => Response.json({ messages, recipients }) })
process.stdout.write(`listening on http://${host}:${http.port} smtp=${smtpPort}\n`)
process.on('SIGTERM', () => process.exit(0))
