import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { createAdminKey, stalledMxSuite, startMailroom, until } from '../support/server-process'

/**
 * Crash safety of the queue with the real server process: messages accepted (202) while
 * their deliveries hang on the wire survive a SIGKILL, and the next process delivers each of
 * them exactly once (nothing had completed on the wire, so there is nothing to duplicate).
 */
const { dataDir, world, flags } = stalledMxSuite('restart', '127.0.0.5')

test('accepted mail survives SIGKILL mid-delivery and is delivered once after the restart', async () => {
  const key = await createAdminKey(flags(), 'restart')
  const first = await startMailroom(flags())
  const ids: string[] = []
  for (let i = 0; i < 10; i++) {
    const r = await fetch(`${first.base}/v1/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'ada@example.com', to: `user${i}@example.net`, subject: `Message ${i}`, text: 'hello' }),
    })
    expect(r.status).toBe(202)
    ids.push(((await r.json()) as { data: { id: string } }).data.id)
  }
  const db = new Database(join(dataDir, 'mailroom.db'), { readonly: true })
  const count = (state: string) => (db.query('SELECT COUNT(*) AS n FROM message_recipients WHERE state = ?').get(state) as { n: number }).n
  // Every delivery is stuck on the silent MX, leased as `sending`.
  await until('all ten recipients sending', () => count('sending') === 10)
  first.proc.kill('SIGKILL')
  await first.proc.exited
  expect(count('sending')).toBe(10)
  expect(world().sink.messages).toHaveLength(0)

  // The MX now points at the working sink; the next process requeues and delivers.
  world().release()
  const second = await startMailroom(flags())
  try {
    await world().sink.waitFor(10, 20_000)
    await until('all ten recorded as sent', () => count('sent') === 10)
    const delivered = world().sink.messages.map((m) => /^Message-ID: <([^@>]+)@/im.exec(m.raw.toString())?.[1])
    expect(delivered.sort()).toEqual([...ids].sort())
    // Retries count: each recipient was attempted once before the crash and once after.
    const attempts = db.query('SELECT DISTINCT attempts FROM message_recipients').all() as Array<{ attempts: number }>
    expect(attempts).toEqual([{ attempts: 2 }])
  } finally {
    second.proc.kill('SIGTERM')
    await second.proc.exited
    db.close()
  }
}, 60_000)
