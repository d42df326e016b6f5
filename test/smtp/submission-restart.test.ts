import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import { createAdminKey, stalledMxSuite, startMailroom, until } from '../support/server-process'

/**
 * "250 means on disk", with the real server process: messages submitted over SMTP are
 * SIGKILLed right after their 250 arrives; the next process finds every one of them in the
 * database and delivers it.
 */
const { dataDir, world, flags } = stalledMxSuite('smtp-restart', '127.0.0.6')

test('messages answered 250 survive a SIGKILL right after the reply and are delivered by the next process', async () => {
  const key = await createAdminKey(flags(), 'smtp-restart')
  const first = await startMailroom(flags(), { smtp: true })
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
    port: first.smtpPort!,
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

    world().release()
    const second = await startMailroom(flags(), { smtp: true })
    try {
      await world().sink.waitFor(stored.length, 20_000)
      const sent = () => (db.query("SELECT COUNT(*) AS n FROM message_recipients WHERE state = 'sent'").get() as { n: number }).n
      await until('every stored message recorded as sent', () => sent() === stored.length)
      const delivered = world()
        .sink.messages.map((m) => /^Subject: (.*)$/m.exec(m.raw.toString())?.[1])
        .sort()
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
