/** Time as a dependency, so tests can run on a fixed or stepped clock. */
export interface Clock {
  now(): number
}

/** Wall-clock time in milliseconds since the epoch. */
export const systemClock: Clock = { now: () => Date.now() }

/** A clock that only moves when a test moves it. */
export function fixedClock(start: number | string = '2026-01-01T00:00:00Z'): Clock & { advance(ms: number): void; set(ms: number): void } {
  let current = typeof start === 'number' ? start : Date.parse(start)
  return {
    now: () => current,
    advance: (ms) => {
      current += ms
    },
    set: (ms) => {
      current = ms
    },
  }
}

/** ISO 8601 UTC string for the wire, or null. */
export function toIso(ms: number | null | undefined): string | null {
  return ms == null ? null : new Date(ms).toISOString()
}
