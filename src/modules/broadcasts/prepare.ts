import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import { audienceSql } from './audience'
import type { SqlValue } from '../segments/rules'
import { bump, moveStatus } from './counts'
import { broadcastRow, versionsOf, type BroadcastRow, type VersionRow } from './render'

/**
 * Preparation (issue 15): the audience snapshot. Each step copies one range of contact ids
 * (or of the source broadcast's recipient ids, for resend-to-non-openers) into
 * `broadcast_recipients` with one INSERT ... SELECT, assigns versions and moves the counters,
 * and saves the cursor, all in one transaction; so the audience is never in memory, a
 * restart continues from `prepare_cursor`, and ON CONFLICT (broadcast, email) DO NOTHING
 * gives an address on two lists one row.
 *
 * Audience: contacts on `list_ids` (narrowed by the segment when both are given), or the
 * segment's contacts when no list is given; always only `subscribed` ones; minus any address
 * on an exclusion list or in an exclusion segment.
 */

/** Contact ids per step: one transaction each, so HTTP is served between steps. */
export const PREPARE_CHUNK = 5000

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    activeVersion: c.prepare<{ active_version_id: number | null }, [number]>('SELECT active_version_id FROM templates WHERE id = ?'),
    pinBroadcast: c.prepare<never, [number | null, number, number, number]>(
      'UPDATE broadcasts SET template_version_id = coalesce(template_version_id, ?), prepare_cursor = 0, started_at = coalesce(started_at, ?), updated_at = ? WHERE id = ?',
    ),
    pinVersion: c.prepare<never, [number, number]>('UPDATE broadcast_versions SET template_version_id = ? WHERE id = ? AND template_version_id IS NULL'),
    maxContact: c.prepare<{ hi: number | null }, []>('SELECT max(id) AS hi FROM contacts'),
    maxSource: c.prepare<{ hi: number | null }, [number]>('SELECT max(id) AS hi FROM broadcast_recipients WHERE broadcast_id = ?'),
    maxRow: c.prepare<{ hi: number | null }, []>('SELECT max(id) AS hi FROM broadcast_recipients'),
    saveCursor: c.prepare<never, [number, number, number]>('UPDATE broadcasts SET prepare_cursor = ?, updated_at = ? WHERE id = ?'),
    newCounts: c.prepare<{ version_id: number | null; n: number }, [number, number]>(
      'SELECT version_id, count(*) AS n FROM broadcast_recipients WHERE broadcast_id = ? AND id > ? GROUP BY version_id',
    ),
    fromSource: c.prepare<never, [number, number, number, number, number]>(`
      INSERT INTO broadcast_recipients (broadcast_id, contact_id, list_id, email, state, sample, updated_at)
      SELECT ?1, s.contact_id, s.list_id, s.email, 'pending', 0, ?2
      FROM broadcast_recipients s JOIN contacts c ON c.id = s.contact_id
      WHERE s.broadcast_id = ?3 AND s.id > ?4 AND s.id <= ?5 AND s.state = 'sent' AND s.opened_at IS NULL AND c.status = 'subscribed'
      ORDER BY s.id
      ON CONFLICT (broadcast_id, email) DO NOTHING`),
  }
})

/**
 * The INSERT ... SELECT of one contact id range for this broadcast's audience: the one
 * audience condition of audience.ts (which the editor's count uses too), bounded by the range.
 */
function audienceInsert(deps: Deps, b: BroadcastRow): { sql: string; params: SqlValue[] } {
  const audience = audienceSql(deps, b)
  // `contacts` stays unaliased: the segment compiler's subqueries refer to contacts.email.
  return {
    sql: `INSERT INTO broadcast_recipients (broadcast_id, contact_id, list_id, email, state, sample, updated_at)
      SELECT ?, contacts.id, contacts.list_id, contacts.email, 'pending', 0, ? FROM ${audience.from}
      WHERE contacts.id > ? AND contacts.id <= ? AND ${audience.where}
      ORDER BY contacts.id
      ON CONFLICT (broadcast_id, email) DO NOTHING`,
    params: audience.params,
  }
}

/**
 * The version assignment of new rows (ids above `after`): rotation by weight over the row
 * id; in a split test only the sample (sample_percent of the rows, spread by a multiplicative
 * hash of the id) gets a version now, the rest waits with version_id null for the winner. A
 * version with a later send time sets the row's due_at.
 */
function assignVersions(db: Db, b: BroadcastRow, versions: VersionRow[], after: number): void {
  if (!versions.length) return
  const total = versions.reduce((s, v) => s + Math.max(1, v.weight), 0)
  let acc = 0
  const arms = versions.map((v) => {
    acc += Math.max(1, v.weight)
    return `WHEN (id % ${total}) < ${acc} THEN ${v.id}`
  })
  const dueArms = versions.filter((v) => v.send_at !== null).map((v) => `WHEN ${v.id} THEN ${v.send_at}`)
  const split = b.version_mode === 'split_test' && b.split_test
  const sampleCond = split ? `((id * 37) % 100) < ${Math.max(0, Math.min(100, Math.floor(b.split_test!.sample_percent)))}` : '1'
  db.$client.run(
    `UPDATE broadcast_recipients SET version_id = CASE ${arms.join(' ')} END, sample = ${split ? 1 : 0} WHERE broadcast_id = ? AND id > ? AND ${sampleCond}`,
    [b.id, after],
  )
  if (dueArms.length)
    db.$client.run(
      `UPDATE broadcast_recipients SET due_at = CASE version_id ${dueArms.join(' ')} END WHERE broadcast_id = ? AND id > ? AND version_id IN (${versions
        .filter((v) => v.send_at !== null)
        .map((v) => v.id)
        .join(',')})`,
      [b.id, after],
    )
}

/** Pins the template versions in use now: the broadcast's and each version's template's active version. */
function pinTemplates(deps: Deps, b: BroadcastRow, versions: VersionRow[]): void {
  const st = statements(deps.db)
  const active = (templateId: number | null) => (templateId === null ? null : (st.activeVersion.get(templateId)?.active_version_id ?? null))
  const now = deps.clock.now()
  st.pinBroadcast.run(b.template_version_id === null ? active(b.template_id) : null, now, now, b.id)
  for (const v of versions) {
    const pinned = v.template_version_id ?? active(v.template_id)
    if (pinned !== null) st.pinVersion.run(pinned, v.id)
  }
}

/**
 * One step of preparation in one transaction; returns true when the snapshot is complete
 * (the broadcast is then `sending`, with `broadcast.started`). Does nothing (and returns
 * true) when the broadcast left `preparing` meanwhile.
 */
export function prepareStep(deps: Deps, broadcastId: number, chunk = PREPARE_CHUNK): boolean {
  const st = statements(deps.db)
  return deps.db.$client
    .transaction(() => {
      const b = broadcastRow(deps, broadcastId)
      if (b.status !== 'preparing') return true
      const versions = versionsOf(deps, b.id)
      if (b.prepare_cursor === null) {
        pinTemplates(deps, b, versions)
        b.prepare_cursor = 0
      }
      const now = deps.clock.now()
      const from = b.prepare_cursor
      const hi = (b.source_broadcast_id !== null ? st.maxSource.get(b.source_broadcast_id)?.hi : st.maxContact.get()?.hi) ?? 0
      if (from < hi) {
        const to = Math.min(hi, from + chunk)
        const before = st.maxRow.get()?.hi ?? 0
        if (b.source_broadcast_id !== null) st.fromSource.run(b.id, now, b.source_broadcast_id, from, to)
        else {
          const q = audienceInsert(deps, b)
          deps.db.$client.run(q.sql, [b.id, now, from, to, ...q.params])
        }
        assignVersions(deps.db, b, versions, before)
        for (const r of st.newCounts.all(b.id, before)) {
          bump(deps.db, b.id, r.version_id, 'total', r.n)
          bump(deps.db, b.id, r.version_id, 'pending', r.n)
        }
        st.saveCursor.run(to, now, b.id)
        if (to < hi) return false
      }
      if (b.version_mode === 'split_test' && b.split_test) deps.db.$client.run("UPDATE broadcasts SET split_phase = 'sampling' WHERE id = ?", [b.id])
      moveStatus(deps, b.id, 'preparing', 'sending', null, { kind: 'broadcast.started', data: { name: b.name } })
      return true
    })
    .immediate()
}
