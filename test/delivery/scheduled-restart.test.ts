import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { Resend } from 'resend'
import { createAdminKey, startMailroom, startStalledMx, until } from '../support/server-process'
import { tempDir } from '../support/temp-dirs'

/**
 * A scheduled send with the real server process (issue 19): accepted as `scheduled`, the
 * process is killed before its time, and the next process sends it when it is due, from
 * the database alone (the engine's due index), never before its time. Asserted as order and
 * states on the real clock, not as a duration.
 */
const dataDir = tempDir('mailroom-scheduled-')
let world: Awaited<ReturnType<typeof startStalledMx>>
const flags = () => world.flags(dataDir)

beforeAll(async () => {
  world = await startStalledMx('127.0.0.6')
  // Deliveries go to the recording sink from the start.
  world.release()
})
afterAll(() => world.close())

test('a scheduled send survives a SIGKILL and goes out after the restart, not before its time', async () => {
  const key = await createAdminKey(flags(), 'scheduled')
  const first = await startMailroom(flags())
  const resend = new Resend(key, { baseUrl: `${first.base}/compat/resend` })
  // Far enough ahead that the first process is gone before it is due.
  const due = Date.now() + 8000
  const later = await resend.emails.send({
    from: 'ada@example.com',
    to: 'later@example.net',
    subject: 'Later',
    text: 'x',
    scheduledAt: new Date(due).toISOString(),
  })
  expect(later.error).toBeNull()
  const now = await resend.emails.send({ from: 'ada@example.com', to: 'now@example.net', subject: 'Now', text: 'x' })
  expect(now.error).toBeNull()
  const db = new Database(join(dataDir, 'mailroom.db'), { readonly: true })
  const state = (id: string) => (db.query('SELECT state FROM message_recipients WHERE message_id = ?').get(id) as { state: string }).state
  // Recorded as sent, not only received: a kill between the two would send it again after the restart.
  await until('the unscheduled message recorded as sent', () => state(now.data!.id) === 'sent')
  expect(world.sink.messages).toHaveLength(1)
  expect(state(later.data!.id)).toBe('scheduled')
  first.proc.kill('SIGKILL')
  await first.proc.exited

  const second = await startMailroom(flags())
  try {
    await until('the scheduled message delivered', () => world.sink.messages.length === 2, 30_000)
    const sentAt = Date.now()
    expect(sentAt).toBeGreaterThanOrEqual(due)
    const subjects = world.sink.messages.map((m) => /^Subject: (.*)$/m.exec(m.raw.toString())![1]!.trim())
    expect(subjects).toEqual(['Now', 'Later'])
    await until('recorded as sent', () => state(later.data!.id) === 'sent')
  } finally {
    second.proc.kill('SIGTERM')
    await second.proc.exited
    db.close()
  }
}, 60_000)
