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

export function createRateLimiter() {
  const windows = new Map<number, { start: number; used: number }>()
  return {
    /** Counts one request for `keyId` under `limit` per minute if there is room. */
    take(keyId: number, limit: number, now: number): RateDecision {
      const start = now - (now % WINDOW_MS)
      let w = windows.get(keyId)
      if (!w || w.start !== start) {
        w = { start, used: 0 }
        windows.set(keyId, w)
      }
      const resetSeconds = Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000))
      if (w.used >= limit) return { allowed: false, limit, remaining: 0, resetSeconds }
      w.used++
      return { allowed: true, limit, remaining: limit - w.used, resetSeconds }
    },
  }
}
export type RateLimiter = ReturnType<typeof createRateLimiter>
