/**
 * Per-key fixed one-minute windows aligned to the clock's minutes. JavaScript runs a
 * request's check-and-count without yielding, so counting is exact under any concurrency
 * inside this process. A refused request is not counted.
 */
export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** Whole seconds until the window resets (at least 1). */
  resetSeconds: number
}

const WINDOW_MS = 60_000

/**
 * What the X-RateLimit-* headers say for a key without a limit: the largest signed 32-bit
 * integer, above any settable limit, so that clients that parse the headers as numbers keep working.
 */
export const UNLIMITED = 2_147_483_647

export function createRateLimiter() {
  const windows = new Map<number | string, { start: number; used: number }>()
  const resetIn = (now: number, start: number) => Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000))
  return {
    /** The window as it stands, without counting a request: for answers refused before the limit applies. */
    peek(keyId: number | string, limit: number | null, now: number): RateDecision {
      const start = now - (now % WINDOW_MS)
      if (limit === null) return { allowed: true, limit: UNLIMITED, remaining: UNLIMITED, resetSeconds: resetIn(now, start) }
      const w = windows.get(keyId)
      const used = w && w.start === start ? w.used : 0
      return { allowed: used < limit, limit, remaining: Math.max(0, limit - used), resetSeconds: resetIn(now, start) }
    },
    /** Counts one request for `keyId` under `limit` per minute if there is room. */
    take(keyId: number | string, limit: number, now: number): RateDecision {
      const start = now - (now % WINDOW_MS)
      let w = windows.get(keyId)
      if (!w || w.start !== start) {
        w = { start, used: 0 }
        windows.set(keyId, w)
      }
      const resetSeconds = resetIn(now, start)
      if (w.used >= limit) return { allowed: false, limit, remaining: 0, resetSeconds }
      w.used++
      return { allowed: true, limit, remaining: limit - w.used, resetSeconds }
    },
  }
}
export type RateLimiter = ReturnType<typeof createRateLimiter>
