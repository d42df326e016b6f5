import type { Deps } from '../../deps'
import { countOf, moveStatus } from './counts'
import { versionsOf, type BroadcastRow } from './render'

/**
 * Split tests (issue 15): the sample (split_test.sample_percent of the recipients) is sent
 * with the versions; once every sample row is final the test waits `wait_seconds`
 * (split_decide_at), then the metric picks the winner, which is given to the waiting rows.
 * With auto_send_winner the broadcast goes on; otherwise it pauses and says why.
 */

/** The metric of one version: unique opens, unique clicks or one link's clicks per delivered message. */
export function versionScore(deps: Pick<Deps, 'db'>, b: BroadcastRow, versionId: number): number {
  const delivered = countOf(deps.db, b.id, 'delivered', versionId)
  if (delivered === 0) return 0
  const t = b.split_test!
  const hits =
    t.metric === 'open_rate'
      ? countOf(deps.db, b.id, 'opened', versionId)
      : t.metric === 'click_rate'
        ? countOf(deps.db, b.id, 'clicked', versionId)
        : countOf(deps.db, b.id, `link:${t.link_url ?? ''}`, versionId)
  return hits / delivered
}

/** Picks the winner (ties: the older version), records it and hands the waiting rows to it. Inside a transaction. */
export function decideSplitTest(deps: Deps, b: BroadcastRow): number | null {
  const versions = versionsOf(deps, b.id)
  if (!versions.length) return null
  let best = versions[0]!
  let bestScore = versionScore(deps, b, best.id)
  const scores: Record<string, number> = { [best.id]: bestScore }
  for (const v of versions.slice(1)) {
    const s = versionScore(deps, b, v.id)
    scores[v.id] = s
    if (s > bestScore) ((best = v), (bestScore = s))
  }
  const now = deps.clock.now()
  const moved = deps.db.$client.run(
    "UPDATE broadcast_recipients SET version_id = ?, due_at = ?, updated_at = ? WHERE broadcast_id = ? AND state = 'pending' AND version_id IS NULL",
    [best.id, best.send_at, now, b.id],
  ).changes
  if (moved) {
    // Only the version's counters: the broadcast's already count these rows.
    deps.db.$client.run(
      'INSERT INTO broadcast_counts (broadcast_id, version_id, metric, n) VALUES (?1, ?2, ?3, ?4), (?1, ?2, ?5, ?4) ON CONFLICT (broadcast_id, version_id, metric) DO UPDATE SET n = n + excluded.n',
      [b.id, best.id, 'total', moved, 'pending'],
    )
  }
  deps.db.$client.run("UPDATE broadcasts SET winner_version_id = ?, split_phase = 'decided', updated_at = ? WHERE id = ?", [best.id, now, b.id])
  deps.log.info('split test decided', { broadcast_id: b.id, winner_version_id: best.id, scores })
  if (!b.split_test!.auto_send_winner) {
    const message = `Split test decided: version ${best.id} (${best.name}) won by ${b.split_test!.metric}; resume to send it to the rest.`
    moveStatus(deps, b.id, 'sending', 'paused', message, {
      kind: 'broadcast.paused',
      data: { reason: message, code: 'split_test_decided', from_status: 'sending', winner_version_id: best.id },
    })
  }
  return best.id
}
