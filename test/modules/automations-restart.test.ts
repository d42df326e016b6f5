import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { createAdminKey, startMailroom } from '../support/server-process'
import { tempDir } from '../support/temp-dirs'

/**
 * A SIGKILL while 1,000 runs are sending: after a restart every run sends each of its two
 * steps exactly once. Each step's record is committed with its message, and the claims of
 * the killed process are cleared at start, so what was cut off is done again and what was
 * committed is not.
 */
const dataDir = tempDir('mailroom-automations-restart-')
// Delivery is not what this test is about: no DNS server answers, so queued mail just waits.
const flags = () => [
  '--data-dir',
  dataDir,
  '--dns-servers',
  '127.0.0.1:1',
  '--allow-unverified-domains',
  'true',
  '--hostname',
  'mailroom.test',
  '--access-log',
  'false',
  '--smtp-listen',
  '127.0.0.1:0',
]

const N = 1000

test('restart in the middle of 1,000 runs sends each step once', async () => {
  const key = await createAdminKey(flags(), 'automations')
  let server = await startMailroom(flags())
  const call = (method: string, path: string, body?: unknown) =>
    fetch(server.base + path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))

  const listId = (await call('POST', '/api/v2/lists', { name: 'restart' })).body.data.id
  const step = (id: string, subject: string, next?: string) => ({
    id,
    kind: 'send',
    settings: { from: 'news@example.com', subject, text: subject },
    ...(next ? { edges: { next } } : {}),
  })
  const drip = await call('POST', '/api/v2/drips', {
    name: 'Two mails',
    status: 'active',
    list_ids: [listId],
    graph: { steps: [step('first', 'First', 'second'), step('second', 'Second')] },
  })
  expect(drip.status).toBe(201)
  const added = await call('POST', '/api/v2/contacts/batch', {
    list_id: listId,
    contacts: Array.from({ length: N }, (_, i) => ({ email: `u${i}@example.net` })),
  })
  expect(added.body.data.created).toBe(N)

  // Through the API while the server runs (sent per step, runs per state); the database file once it has stopped.
  const stats = async () => (await call('GET', `/api/v2/drips/${drip.body.data.id}/stats`)).body.data
  const sentNow = async () => {
    const s = await stats()
    return s.steps.reduce((sum: number, st: { sent: number }) => sum + st.sent, 0) as number
  }
  // Killed as soon as the runs have started sending, long before 2,000 messages are queued.
  for (let i = 0; (await sentNow()) === 0; i++) {
    if (i > 3000) throw new Error('no automation mail was sent')
    await Bun.sleep(5)
  }
  server.proc.kill('SIGKILL')
  await server.proc.exited

  server = await startMailroom(flags())
  const atRestart = await sentNow()
  expect(atRestart).toBeLessThan(2 * N)
  // A generous bound, not a measurement: 2,000 commits with fsync on a busy shared machine.
  const giveUpAt = Date.now() + 240_000
  while ((await stats()).runs.finished < N) {
    if (Date.now() > giveUpAt) throw new Error(`the runs did not finish: ${JSON.stringify((await stats()).runs)}`)
    await Bun.sleep(50)
  }
  server.proc.kill('SIGTERM')
  await server.proc.exited

  const db = new Database(join(dataDir, 'mailroom.db'), { readonly: true })
  const sent = () => (db.query("SELECT COUNT(*) AS n FROM messages WHERE source = 'automation'").get() as { n: number }).n
  const perRecipient = db
    .query<{ address: string; subjects: string }, []>(
      `SELECT r.address, group_concat(m.subject, ',') AS subjects FROM messages m JOIN message_recipients r ON r.message_id = m.id
       WHERE m.source = 'automation' GROUP BY r.address`,
    )
    .all()
  expect(perRecipient.length).toBe(N)
  expect(perRecipient.filter((r) => r.subjects.split(',').sort().join(',') !== 'First,Second')).toEqual([])
  expect(sent()).toBe(2 * N)
  // One record per step and run, each the first attempt.
  expect(db.query('SELECT step_id, COUNT(*) AS n, MAX(attempt) AS attempt FROM automation_step_runs GROUP BY step_id ORDER BY step_id').all()).toEqual([
    { step_id: 'first', n: N, attempt: 1 },
    { step_id: 'second', n: N, attempt: 1 },
  ])
  db.close()
}, 300_000)
