/**
 * The SMTP benchmark's ceiling: a submission listener that does the same protocol work as
 * Mailroom's (STARTTLS with a self-signed certificate, AUTH PLAIN accepting any credentials,
 * SIZE, ENHANCEDSTATUSCODES, reverse lookups off) but discards every message instead of
 * checking and committing it. Prints "listening smtp=PORT"; runs until SIGTERM.
 */
import type { AddressInfo } from 'node:net'
import { generate } from 'selfsigned'
import { SMTPServer } from 'smtp-server'

const host = process.argv[2] ?? '127.0.0.1'
let messages = 0
const pems = await generate([{ name: 'commonName', value: 'discard.bench' }], { keySize: 2048, algorithm: 'sha256' })

const server = new SMTPServer({
  name: 'discard.bench',
  key: pems.private,
  cert: pems.cert,
  authMethods: ['PLAIN', 'LOGIN'],
  size: 25 * 1024 * 1024,
  hideENHANCEDSTATUSCODES: false,
  disableReverseLookup: true,
  logger: false,
  onAuth(auth, _session, callback) {
    callback(null, { user: auth.username })
  },
  onData(stream, _session, callback) {
    stream.on('data', () => {})
    stream.on('end', () => {
      messages++
      callback(null, `Queued as discard-${messages}`)
    })
  },
})
server.on('error', () => {})

await new Promise<void>((resolve) => server.listen(0, host, resolve))
process.stdout.write(`listening smtp=${(server.server.address() as AddressInfo).port}\n`)
process.on('SIGTERM', () => process.exit(0))
