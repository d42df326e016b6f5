import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { startDnsServer } from './dns-server'
import { startMailroom } from './server-process'
import { startSmtpSink } from './smtp-sink'

/**
 * Broadcast tests against the real server process: the loopback sink and DNS, a server on a
 * fresh data directory, and a read-write handle on its database through which a test seeds
 * contacts and broadcasts and changes a broadcast's status with SQL (as bc-api's routes will,
 * once merged).
 */
export async function startBroadcastWorld() {
  const sink = await startSmtpSink({ host: '127.0.0.1' })
  const zone = await startDnsServer({
    zones: {
      'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] },
      'mx.example.net': { A: ['127.0.0.1'] },
      'mailroom.test': { A: ['127.0.0.1'] },
    },
  })
  return { sink, zone, flags: (dataDir: string) => serverFlags(dataDir, sink.port, zone.server), close: async () => (await sink.close(), await zone.close()) }
}

/** The server flags that point delivery at the loopback sink and DNS. */
export function serverFlags(dataDir: string, mxPort: number, dns: string): string[] {
  return [
    '--data-dir',
    dataDir,
    '--mx-port',
    String(mxPort),
    '--dns-servers',
    dns,
    '--allow-unverified-domains',
    'true',
    '--hostname',
    'mailroom.test',
    '--access-log',
    'false',
    '--smtp-listen',
    '127.0.0.1:0',
  ]
}

/** Starts the server and opens its database for the test (WAL: both write; busy_timeout waits for each other). */
export async function startServerWithDb(flags: string[], dataDir: string) {
  const server = await startMailroom(flags)
  const db = new Database(join(dataDir, 'mailroom.db'))
  db.run('PRAGMA busy_timeout = 10000')
  return { ...server, db }
}

/** A list with these contacts (first name Name-<local part>); returns the list id. */
export function seedList(db: Database, name: string, emails: string[], status = 'subscribed'): number {
  const now = Date.now()
  const listId = (
    db.query('INSERT INTO lists (name, description, created_at, updated_at) VALUES (?, ?, ?, ?) RETURNING id').get(name, '', now, now) as { id: number }
  ).id
  const insert = db.prepare(
    'INSERT INTO contacts (list_id, email, first_name, last_name, status, fields, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  )
  db.transaction(() => {
    for (const email of emails) insert.run(listId, email, `Name-${email.split('@')[0]}`, 'Doe', status, '{}', now, now)
  })()
  return listId
}

export interface BroadcastSeed {
  name?: string
  list_ids: number[]
  subject?: string
  html?: string
  text?: string
  status?: string
  send_at?: number
  send_rate_per_minute?: number | null
  version_mode?: 'rotation' | 'split_test'
  split_test?: unknown
}

/** Inserts a broadcast (by default scheduled for now, so the runner starts it at once); returns its id. */
export function startBroadcastNow(db: Database, seed: BroadcastSeed): number {
  const now = Date.now()
  const row = db
    .query(
      `INSERT INTO broadcasts (name, status, from_address, subject, html, text, list_ids, archive_id, send_at, send_rate_per_minute, version_mode, split_test, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    )
    .get(
      seed.name ?? 'Newsletter',
      seed.status ?? 'scheduled',
      'News <news@example.com>',
      seed.subject ?? 'News for {{first_name}}',
      seed.html ?? '<p>Hello {{first_name}} ({{email}})</p><p><a href="https://example.org/read">Read</a></p>',
      seed.text ?? 'Hello {{first_name}}',
      JSON.stringify(seed.list_ids),
      crypto.randomUUID(),
      seed.send_at ?? now,
      seed.send_rate_per_minute ?? null,
      seed.version_mode ?? 'rotation',
      seed.split_test === undefined ? null : JSON.stringify(seed.split_test),
      now,
      now,
    ) as { id: number }
  return row.id
}

/** The broadcast's status and counters, read from its rows. */
export function broadcastState(db: Database, id: number) {
  const b = db.query('SELECT status, status_reason, split_phase, winner_version_id FROM broadcasts WHERE id = ?').get(id) as {
    status: string
    status_reason: string | null
    split_phase: string | null
    winner_version_id: number | null
  }
  const counts = Object.fromEntries(
    (db.query('SELECT metric, n FROM broadcast_counts WHERE broadcast_id = ? AND version_id = 0').all(id) as Array<{ metric: string; n: number }>).map((r) => [
      r.metric,
      r.n,
    ]),
  ) as Record<string, number>
  return { ...b, counts }
}

/** The addressee of a message the sink recorded. */
export const rcptOf = (m: { rcptTo: string[] }) => m.rcptTo[0]!
