import type { Deps } from '../deps'

/**
 * The lines of postponed jobs behind busy pairs (shaping.ts, `laterSlot`), kept in memory so a
 * line can be pulled forward when its pair turns out faster than the pace it was written at.
 *
 * A line is written at the pace the pair has shown: what it finished in the last second, at
 * least WAIT_DEPTH a connection. A pair seen for the first time has shown nothing yet, so a
 * burst to it was lined up at 4 a connection a second and came back at that pace even when
 * the destination took 1,500 a second: 1,000 sends were all delivered after 7.5-9.3 s, now
 * after about 2 (docs/benchmarks.md, thirteenth and fourteenth rounds). When a delivery of
 * the pair ends and no job is waiting for it (shaping.ts, `finish`), the earliest rows of its
 * line become due now, as many as the pair can take at once; the rows that are not taken go
 * back into the line.
 *
 * Only ids and times are kept, at most MAX_TRACKED rows in all; rows beyond that come back at
 * their written time, as before. Nothing here is durable: after a restart the rows come back
 * at their written times. A pull moves a row only if it is still deferred to exactly the time
 * its line gave it, so a row claimed, delivered, deleted or deferred by a reply since then is
 * left alone.
 */
export const MAX_TRACKED = 50_000

interface Line {
  ids: number[]
  ats: number[]
  /** Index of the first entry still in the line. */
  head: number
  /** Latest time of the rows of this line that were not tracked (over MAX_TRACKED); 0 = none. */
  untrackedUntil: number
}

export interface BusyLines {
  /** Rows just postponed to `at` in the line of the pair `key`. */
  add(key: string, ids: number[], at: number, now: number): void
  /** Tracked rows of the line not yet due. */
  ahead(key: string, now: number): number
  /**
   * Makes up to `n` of the line's earliest rows not yet due, due now. Resolves once that has
   * committed, with how many rows moved and whether the line is empty now (nothing tracked or
   * untracked ahead).
   */
  pull(key: string, n: number, now: number): Promise<{ moved: number; empty: boolean }>
}

export function createBusyLines(deps: Deps, opts: { maxTracked?: number } = {}): BusyLines {
  const maxTracked = opts.maxTracked ?? MAX_TRACKED
  const lines = new Map<string, Line>()
  let tracked = 0
  const c = deps.db.$client
  const pullRow = c.prepare<never, [number, number, number]>(
    `UPDATE message_recipients SET next_attempt_at = ?1, updated_at = ?1 WHERE id = ?2 AND state = 'deferred' AND next_attempt_at = ?3`,
  )

  /** Drops the entries that are due (claimed already, or about to be); true when nothing of the line is ahead any more. */
  function prune(line: Line, now: number): boolean {
    const before = line.head
    while (line.head < line.ids.length && line.ats[line.head]! <= now) line.head++
    tracked -= line.head - before
    if (line.head === line.ids.length) {
      line.ids = []
      line.ats = []
      line.head = 0
    } else if (line.head > 1024 && line.head * 2 > line.ids.length) {
      line.ids = line.ids.slice(line.head)
      line.ats = line.ats.slice(line.head)
      line.head = 0
    }
    return line.ids.length === 0 && line.untrackedUntil <= now
  }

  return {
    add(key, ids, at, now) {
      let line = lines.get(key)
      if (line) prune(line, now)
      else lines.set(key, (line = { ids: [], ats: [], head: 0, untrackedUntil: 0 }))
      // Near the limit, drop what has come due in every line (a line is otherwise pruned only
      // when its own pair asks, and a pair that stopped sending would hold its count forever).
      if (tracked + ids.length > maxTracked) for (const [k, other] of lines) if (prune(other, now) && other !== line) lines.delete(k)
      for (const id of ids) {
        if (tracked >= maxTracked) {
          line.untrackedUntil = Math.max(line.untrackedUntil, at)
          continue
        }
        line.ids.push(id)
        line.ats.push(at)
        tracked++
      }
    },

    ahead(key, now) {
      const line = lines.get(key)
      if (!line) return 0
      if (prune(line, now)) lines.delete(key)
      return line.ids.length - line.head
    },

    async pull(key, n, now) {
      const line = lines.get(key)
      if (!line) return { moved: 0, empty: true }
      prune(line, now)
      const end = Math.min(line.ids.length, line.head + n)
      const ids = line.ids.slice(line.head, end)
      const ats = line.ats.slice(line.head, end)
      tracked -= end - line.head
      line.head = end
      const empty = prune(line, now)
      if (empty) lines.delete(key)
      if (ids.length === 0) return { moved: 0, empty }
      const moved = await deps.commits.run(() => {
        let changed = 0
        for (let i = 0; i < ids.length; i++) changed += pullRow.run(now, ids[i]!, ats[i]!).changes
        return changed
      })
      return { moved, empty }
    },
  }
}
