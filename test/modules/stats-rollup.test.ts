import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { Db } from '../../src/db/client'
import { drainStats, rollupBatch, startStatsRollup, statsCursor } from '../../src/modules/stats/rollup'
import { emit } from '../../src/modules/events/service'
import { testDeps } from '../support/app'
import { tempDir } from '../support/temp-dirs'

const T0 = Date.parse('2026-03-01T10:20:00Z')

/** Sending infrastructure and two messages: one signed by a sending domain, one unsigned. */
function seedMessages(db: Db) {
  const c = db.$client
  c.run("INSERT INTO ip_pools (id, name, is_default, created_at, updated_at) VALUES (4, 'warm', 0, 0, 0)")
  c.run(
    "INSERT INTO sending_domains (id, name, status, dkim_selector, dkim_private_key, dkim_public_key, return_path_host, created_at, updated_at) VALUES (1, 'news.example.com', 'verified', 'mr', '-', '-', 'rp.example.com', 0, 0)",
  )
  // A direct node with its own pool: the engine sends from it whatever the message asked.
  c.run("INSERT INTO ip_pools (id, name, is_default, created_at, updated_at) VALUES (5, 'node pool', 0, 0, 0)")
  c.run("INSERT INTO sending_nodes (id, name, kind, pool_id, created_at, updated_at) VALUES (1, 'eu', 'direct', 5, 0, 0)")
  const message = c.prepare(
    "INSERT INTO messages (id, source, mail_from, from_address, subject, message_id_header, domain_id, pool_id, node_id, raw, size, created_at, bridge_id) VALUES (?, 'api', 'rp@x', ?, 's', '<x>', ?, ?, ?, X'00', 1, 0, ?)",
  )
  message.run('signed', 'ada@news.example.com', 1, 4, null, 9)
  message.run('unsigned', 'bob@Other.Example.org', null, 4, 1, null)
  // The group the shaper learned from example.net's MX hosts.
  c.run("INSERT INTO provider_domains (domain, provider, updated_at) VALUES ('example.net', 'mx:mailhost.example', 0)")
}

/** Every hourly stats row as "dim|hour|value|kind" -> count. */
function counters(db: Db): Record<string, number> {
  const rows = db.$client
    .query<{ dim: string; hour: number; dim_value: string; kind: string; count: number }, []>("SELECT * FROM stats_hourly WHERE dim NOT LIKE '%.day'")
    .all()
  return Object.fromEntries(rows.map((r) => [`${r.dim}|${new Date(r.hour).toISOString().slice(11, 13)}|${r.dim_value}|${r.kind}`, r.count]))
}

/** The day rows ('<dim>.day') as "dim|value|kind" -> count, and the same summed from the hour rows: they must agree. */
function dayTotals(db: Db) {
  const q = (sql: string) =>
    Object.fromEntries(
      db.$client
        .query<{ k: string; n: number }, []>(sql)
        .all()
        .map((r) => [r.k, r.n]),
    )
  return {
    days: q(
      "SELECT replace(dim, '.day', '') || '|' || date(hour / 1000, 'unixepoch') || '|' || dim_value || '|' || kind AS k, count AS n FROM stats_hourly WHERE dim LIKE '%.day'",
    ),
    hours: q(
      "SELECT dim || '|' || date(hour / 1000, 'unixepoch') || '|' || dim_value || '|' || kind AS k, sum(count) AS n FROM stats_hourly WHERE dim NOT LIKE '%.day' GROUP BY k",
    ),
  }
}

function seedEvents(db: Db) {
  emit(db, T0, { kind: 'message.queued', message_id: 'signed', recipient: 'a@example.net', data: { kind: 'to' } })
  emit(db, T0 + 1000, { kind: 'message.sent', message_id: 'signed', recipient: 'a@example.net', data: { source_ip: '192.0.2.1' } })
  // Over TLS, to a built-in provider group's domain (written in mixed case).
  emit(db, T0 + 2000, {
    kind: 'message.sent',
    message_id: 'unsigned',
    recipient: 'b@GMail.com',
    data: { source_ip: '192.0.2.2', tls: { version: 'TLSv1.3', cipher: 'TLS_AES_256_GCM_SHA384', verified: false } },
  })
  // Next hour: a complaint about the signed message, a contact event, a broadcast event and an event whose message is gone.
  emit(db, T0 + 3_600_000, { kind: 'message.complained', message_id: 'signed', recipient: 'a@example.net', bridge_id: 9, data: { source_ip: '192.0.2.1' } })
  emit(db, T0 + 3_600_000, { kind: 'contact.unsubscribed', contact_id: 1, list_id: 6, recipient: 'a@example.net', data: {} })
  emit(db, T0 + 3_600_000, { kind: 'broadcast.sent', broadcast_id: 12, data: {} })
  emit(db, T0 + 3_600_000, { kind: 'message.sent', message_id: 'purged', recipient: 'c@example.net', data: { source_ip: '192.0.2.1' } })
}

const EXPECTED = {
  'all|10||message.queued': 1,
  'all|10||message.sent': 2,
  'all|11||message.complained': 1,
  'all|11||contact.unsubscribed': 1,
  'all|11||broadcast.sent': 1,
  'all|11||message.sent': 1,
  'domain|10|news.example.com|message.queued': 1,
  'domain|10|news.example.com|message.sent': 1,
  'domain|10|other.example.org|message.sent': 1, // unsigned: the From address's domain, in lower case
  'domain|11|news.example.com|message.complained': 1,
  'ip|10|192.0.2.1|message.sent': 1,
  'ip|10|192.0.2.2|message.sent': 1,
  'ip|11|192.0.2.1|message.complained': 1,
  'ip|11|192.0.2.1|message.sent': 1, // the message row is gone, the event still carries its IP
  'pool|10|4|message.queued': 1,
  'pool|10|4|message.sent': 1,
  'pool|11|4|message.complained': 1,
  'pool|10|5|message.sent': 1, // the node's pool wins over the message's
  'bridge|10|9|message.queued': 1, // from the message row
  'bridge|10|9|message.sent': 1,
  'bridge|11|9|message.complained': 1,
  'list|11|6|contact.unsubscribed': 1,
  'broadcast|11|12|broadcast.sent': 1,
  // The TLS deliveries, in every dimension of their event.
  'all|10||message.sent.tls': 1,
  'domain|10|other.example.org|message.sent.tls': 1,
  'ip|10|192.0.2.2|message.sent.tls': 1,
  'pool|10|5|message.sent.tls': 1,
  // Delivery outcomes by the recipient's provider group: built-in, learned (provider_domains); not complaints.
  'provider|10|gmail|message.sent': 1,
  'provider|10|gmail|message.sent.tls': 1,
  'provider|10|mx:mailhost.example|message.sent': 1,
  'provider|11|mx:mailhost.example|message.sent': 1,
}

describe('statistics rollup job', () => {
  test('counts each event once in every dimension it has', () => {
    const deps = testDeps()
    seedMessages(deps.db)
    seedEvents(deps.db)
    expect(drainStats(deps)).toBe(1)
    expect(counters(deps.db)).toEqual(EXPECTED)
    const { days, hours } = dayTotals(deps.db)
    expect(days).toEqual(hours)
    expect(days['all|2026-03-01||message.sent']).toBe(3)
    expect(statsCursor(deps.db)).toBe(7)
  })

  test('exactly once: draining again, small batches, and new events after the cursor', () => {
    const deps = testDeps()
    seedMessages(deps.db)
    seedEvents(deps.db)
    expect(drainStats(deps, 2)).toBe(4) // 2 + 2 + 2 + 1
    expect(counters(deps.db)).toEqual(EXPECTED)
    expect(drainStats(deps)).toBe(0)
    expect(counters(deps.db)).toEqual(EXPECTED)
    emit(deps.db, T0 + 5000, { kind: 'message.sent', message_id: 'signed', recipient: 'd@example.net', data: { source_ip: '192.0.2.1' } })
    expect(rollupBatch(deps)).toBe(1)
    const after = counters(deps.db)
    expect(after['all|10||message.sent']).toBe(3)
    expect(after['domain|10|news.example.com|message.sent']).toBe(2)
    expect(after['ip|10|192.0.2.1|message.sent']).toBe(2)
    const { days, hours } = dayTotals(deps.db)
    expect(days).toEqual(hours)
    expect(days['all|2026-03-01||message.sent']).toBe(4)
  })

  test('a failed batch moves neither the counters nor the cursor', () => {
    const deps = testDeps()
    seedMessages(deps.db)
    emit(deps.db, T0, { kind: 'message.queued', message_id: 'signed', data: {} })
    drainStats(deps)
    seedEvents(deps.db)
    // The upsert fails inside the batch's transaction, as a full disk would.
    deps.db.$client.run("CREATE TRIGGER boom BEFORE UPDATE ON stats_hourly BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    expect(() => rollupBatch(deps)).toThrow('disk full')
    expect(statsCursor(deps.db)).toBe(1)
    expect(counters(deps.db)).toEqual({
      'all|10||message.queued': 1,
      'domain|10|news.example.com|message.queued': 1,
      'pool|10|4|message.queued': 1,
      'bridge|10|9|message.queued': 1,
    })
    deps.db.$client.run('DROP TRIGGER boom')
    drainStats(deps)
    expect(counters(deps.db)['all|10||message.queued']).toBe(2)
    expect(counters(deps.db)['all|10||message.sent']).toBe(2)
  })

  test('a restarted job goes on from the stored cursor', async () => {
    const path = join(tempDir('mailroom-stats-'), 'mailroom.db')
    const first = testDeps({}, path)
    seedMessages(first.db)
    seedEvents(first.db)
    const job = startStatsRollup(first, { batch: 2 })
    // The job works through the backlog one batch per event-loop turn; wait until it caught up.
    while (statsCursor(first.db) < 7) await new Promise((r) => setImmediate(r))
    await job.stop()
    expect(counters(first.db)).toEqual(EXPECTED)
    emit(first.db, T0 + 7_200_000, { kind: 'message.bounced', message_id: 'unsigned', recipient: 'b@example.net', data: {} })
    first.db.$client.close()

    // A new process on the same database: only the event after the cursor is counted.
    const second = testDeps({}, path)
    const again = startStatsRollup(second)
    // The batch started at start joins the next group commit; once it is in, nothing is left.
    while (statsCursor(second.db) < 8) await new Promise((r) => setImmediate(r))
    expect(again.drain()).toBe(0)
    await again.stop()
    expect(counters(second.db)).toEqual({
      ...EXPECTED,
      'all|12||message.bounced': 1,
      'domain|12|other.example.org|message.bounced': 1,
      'pool|12|5|message.bounced': 1,
      'provider|12|mx:mailhost.example|message.bounced': 1,
    })
    second.db.$client.close()
  })
})
