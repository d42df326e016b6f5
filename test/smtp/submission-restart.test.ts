import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import { startDnsServer, type DnsServer } from '../support/dns-server'
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink'

/**
 * "250 means on disk", with the real server process: messages submitted over SMTP are
 * SIGKILLed right after their 250 arrives; the next process finds every one of them in the
 * database and delivers it.
 */
const MAIN = join(import.meta.dir, '../../src/main.ts')
const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-smtp-restart-'))
let sink: SmtpSink
let zone: DnsServer
/** The first process's MX: accepts TCP and never answers, so nothing is delivered before the kill. */
let blackHole: Server
const held: Socket[] = []

beforeAll(async () => {
  sink = await startSmtpSink({ host: '127.0.0.1' })
  blackHole = createServer((socket) => held.push(socket))
  await new Promise<void>((resolve, reject) => blackHole.once('error', reject).listen(sink.port, '127.0.0.6', resolve))
  zone = await startDnsServer({
    zones: { 'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] }, 'mx.example.net': { A: ['127.0.0.6'] } },
  })
})

afterAll(async () => {
  for (const s of held) s.destroy()
  blackHole.close()
  await sink.close()
  await zone.close()
})

const flags = () => [
  '--data-dir',
  dataDir,
  '--mx-port',
  String(sink.port),
  '--dns-servers',
  zone.server,
  '--allow-unverified-domains',
  'true',
  '--hostname',
  'mailroom.test',
  '--access-log',
  'false',
  '--smtp-listen',
  '127.0.0.1:0',
]

async function run(args: string[]): Promise<string> {
  const proc = Bun.spawn(['bun', MAIN, ...args, ...flags()], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '' } })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  expect(code, err).toBe(0)
  return out
}

/** Starts `mailroom serve` and reads the HTTP URL and the SMTP port from its first lines. */
async function startServer() {
  const proc = Bun.spawn(['bun', MAIN, 'serve', '--http-listen', '127.0.0.1:0', ...flags()], {
    stdout: 'pipe',
    stderr: 'pipe',
    env: { PATH: process.env.PATH ?? '' },
  })
  const reader = proc.stdout.getReader()
  let text = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`server exited before listening: ${text} ${await new Response(proc.stderr).text()}`)
    text += new TextDecoder().decode(value)
    const http = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text)
    const smtp = /SMTP submission listening on 127\.0\.0\.1:(\d+) \(STARTTLS\)/.exec(text)
    if (http && smtp) {
      // Keep reading so the child never blocks on a full pipe.
      void (async () => {
        while (!(await reader.read()).done);
      })().catch(() => {})
      return { proc, base: http[1]!, smtpPort: Number(smtp[1]) }
    }
  }
}

async function until(what: string, check: () => boolean, deadlineMs = 20_000): Promise<void> {
  const end = Date.now() + deadlineMs
  while (!check()) {
    if (Date.now() > end) throw new Error(`gave up waiting for: ${what}`)
    await Bun.sleep(25)
  }
}

test('messages answered 250 survive a SIGKILL right after the reply and are delivered by the next process', async () => {
  const key = (await run(['keys', 'create', '--role', 'Administrator', '--name', 'smtp-restart'])).trim().split('\n').at(-1)!
  const first = await startServer()
  const api = async (path: string, body: unknown) => {
    const r = await fetch(`${first.base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    const json = (await r.json()) as { data: Record<string, any> }
    expect(r.status, JSON.stringify(json)).toBe(201)
    return json.data
  }
  await api('/api/v2/sending-domains', { name: 'example.com' })
  const bridge = await api('/api/v2/bridges', { name: 'app', domains: ['example.com'] })

  // Several sessions submit at once; the process is killed the moment the first 250 arrives.
  const transport = nodemailer.createTransport({
    pool: true,
    maxConnections: 4,
    host: '127.0.0.1',
    port: first.smtpPort,
    requireTLS: true,
    tls: { rejectUnauthorized: false },
    auth: { user: bridge.smtp.username, pass: bridge.smtp.password },
  })
  const answered: string[] = []
  let killed = false
  const sends = Array.from({ length: 12 }, (_, i) =>
    transport.sendMail({ from: 'orders@example.com', to: `user${i}@example.net`, subject: `Order ${i}`, text: 'Thanks' }).then(
      (info) => {
        answered.push(/Queued as (\S+)/.exec(info.response)![1]!)
        if (!killed) {
          killed = true
          first.proc.kill('SIGKILL')
        }
      },
      () => {},
    ),
  )
  await Promise.all(sends)
  await first.proc.exited
  transport.close()
  expect(answered.length).toBeGreaterThan(0)

  const db = new Database(join(dataDir, 'mailroom.db'), { readonly: true })
  try {
    const stored = (db.query('SELECT id FROM messages').all() as Array<{ id: string }>).map((m) => m.id)
    // Every message answered 250 is on disk (more may be: committed, with the reply lost to the kill).
    for (const id of answered) expect(stored).toContain(id)

    zone.setZone('mx.example.net', { A: ['127.0.0.1'] })
    const second = await startServer()
    try {
      await sink.waitFor(stored.length, 20_000)
      const sent = () => (db.query("SELECT COUNT(*) AS n FROM message_recipients WHERE state = 'sent'").get() as { n: number }).n
      await until('every stored message recorded as sent', () => sent() === stored.length)
      const delivered = sink.messages.map((m) => /^Subject: (.*)$/m.exec(m.raw.toString())?.[1]).sort()
      expect(delivered).toHaveLength(stored.length)
      const subjects = (db.query('SELECT subject FROM messages').all() as Array<{ subject: string }>).map((m) => m.subject).sort()
      expect(delivered).toEqual(subjects)
    } finally {
      second.proc.kill('SIGTERM')
      await second.proc.exited
    }
  } finally {
    db.close()
  }
}, 60_000)
