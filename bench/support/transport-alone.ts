/**
 * The SMTP client path alone, in process (issue 18, eighteenth round): Mailroom's delivery
 * transport (src/delivery/transport.ts, DNS from the benchmark's server, connections pooled
 * as the engine pools them) against nodemailer's pooled client (the plain client of
 * bench/delivery.ts), each sending the delivery benchmark's message to the counting sink,
 * alternating for three rounds. Prints each side's rate and this process's user and system
 * CPU a message: what the client costs without the engine, the accept or the database.
 *
 *   bun bench/support/transport-alone.ts [--messages 6000]
 *
 * Not part of `npm run bench`: it sizes one piece the delivery benchmark cannot separate.
 */
import nodemailer from 'nodemailer'
import { parseArgs } from 'node:util'
import { createTransport } from '../../src/delivery/transport'
import { createResolver } from '../../src/lib/dns'
import { memoryLogger } from '../../src/lib/logger'
import { DOMAIN, HTML, startBenchDns } from '../delivery'
import { readProcCpuSplitMs } from './proc'
import { startCountingSink, stopAll } from './servers'

const { values } = parseArgs({ args: process.argv.slice(2), options: { messages: { type: 'string' } } })
const n = Number(values.messages ?? 6000)
const built = await nodemailer
  .createTransport({ streamTransport: true, buffer: true })
  .sendMail({ from: `ada@${DOMAIN}`, to: `user@${DOMAIN}`, subject: 'Benchmark message', html: HTML })
const raw = built.message as Buffer
const dns = await startBenchDns()
const sink = await startCountingSink()

type Send = (count: number) => Promise<void>

/** Mailroom's transport: `inFlight` jobs at a time over at most `connections`, each closed after `perConnection` messages. */
function mailroomTransport(connections: number, perConnection: number | undefined, inFlight: number): Send {
  const transport = createTransport({
    resolver: createResolver([dns.server]),
    mxPort: sink.smtpPort,
    totalConcurrency: connections,
    destinationConcurrency: connections,
    log: memoryLogger(),
    ehlo: 'mailroom.bench',
  })
  return async (count) => {
    let next = 0
    const worker = async () => {
      while (next < count) {
        const i = next++
        const [result] = await transport.deliver({
          domain: DOMAIN,
          mailFrom: `ada@${DOMAIN}`,
          recipients: [`user${i}@${DOMAIN}`],
          raw,
          source: null,
          maxMessagesPerConnection: perConnection,
        })
        if (result!.outcome !== 'sent') throw new Error(`not sent: ${result!.response}`)
      }
    }
    await Promise.all(Array.from({ length: inFlight }, worker))
  }
}

/** nodemailer's pool with every message queued at once, as bench/delivery.ts's plain client. */
function nodemailerPool(connections: number): Send {
  const transport = nodemailer.createTransport({
    pool: true,
    host: '127.0.0.1',
    port: sink.smtpPort,
    maxConnections: connections,
    maxMessages: Infinity,
    ignoreTLS: true,
  })
  return async (count) => {
    await Promise.all(Array.from({ length: count }, (_, i) => transport.sendMail({ envelope: { from: `ada@${DOMAIN}`, to: [`user${i}@${DOMAIN}`] }, raw })))
  }
}

const sides: Array<[string, Send]> = [
  // The engine's limits for a destination outside the provider groups (providers.ts OTHER_LIMITS).
  ['Mailroom transport, 20 connections, 100 messages each', mailroomTransport(20, 100, 64)],
  ['nodemailer pool, 8 connections (the plain client)', nodemailerPool(8)],
]
try {
  for (const [, send] of sides) await send(1000) // warm-up, unmeasured
  for (let round = 1; round <= 3; round++) {
    for (const [label, send] of round % 2 ? sides : [...sides].reverse()) {
      const before = (await sink.count()).messages
      const cpu0 = readProcCpuSplitMs('self')!
      const t0 = performance.now()
      await send(n)
      const seconds = (performance.now() - t0) / 1000
      const cpu1 = readProcCpuSplitMs('self')!
      const counted = (await sink.count()).messages - before
      if (counted !== n) throw new Error(`${label}: the sink counted ${counted} messages, expected ${n}`)
      const µs = (ms: number) => ((ms * 1000) / n).toFixed(0).padStart(4)
      console.log(
        `round ${round}  ${label.padEnd(54)} ${(n / seconds).toFixed(0).padStart(6)}/s  user ${µs(cpu1.user - cpu0.user)} µs  system ${µs(cpu1.system - cpu0.system)} µs a message`,
      )
    }
  }
} finally {
  await stopAll()
  await dns.close()
}
process.exit(0)
