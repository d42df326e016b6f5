/**
 * IP warm-up schedules: how many messages a new source IP may send per UTC day and provider
 * group while receivers learn its reputation. Pure functions; the rows are in `ip_warmups`
 * (one per IP) and the day's counts in `warmup_usage`, both read by the shaper (shaping.ts).
 */

export interface WarmupStep {
  /** First day (1-based) this step applies to; it lasts until the next step's day. */
  day: number
  /** Daily cap per provider group id; 'other' covers every group outside the built-in ones, '*' any group not named. */
  caps: Record<string, number>
}

/**
 * The built-in ramp: 30 days from 50 to 300,000 messages a day per provider group, roughly
 * doubling in the first week and growing 20-40 % a day after, the shape the big providers'
 * sender guidelines and ESP warm-up plans share. After day 30 the IP is warm (no cap).
 */
export const DEFAULT_RAMP: readonly number[] = [
  50, 100, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000, 4_000, 5_000, 7_500, 10_000, 12_500, 15_000, 20_000, 25_000, 30_000, 40_000, 50_000, 60_000, 75_000,
  90_000, 110_000, 130_000, 150_000, 180_000, 220_000, 300_000,
]

/** The built-in ramp as a schedule. */
export function defaultSchedule(): WarmupStep[] {
  return DEFAULT_RAMP.map((cap, i) => ({ day: i + 1, caps: { '*': cap } }))
}

const DAY_MS = 86_400_000

/** The day of the warm-up (1 on the day it started) at `now`. */
export function warmupDay(startedAt: number, now: number): number {
  return Math.floor((Math.floor(now / DAY_MS) * DAY_MS - Math.floor(startedAt / DAY_MS) * DAY_MS) / DAY_MS) + 1
}

/** The last day of a schedule; after it the IP is warm. */
export function scheduleLength(schedule: readonly WarmupStep[]): number {
  return schedule.reduce((m, s) => Math.max(m, s.day), 0)
}

/** Today's cap of a group on a schedule; null = no cap (the warm-up is over, or the schedule names no cap for the group). */
export function capFor(schedule: readonly WarmupStep[], day: number, group: string): number | null {
  if (day > scheduleLength(schedule)) return null
  let step: WarmupStep | undefined
  for (const s of schedule) if (s.day <= day && (!step || s.day > step.day)) step = s
  if (!step) return 0 // before the first step: nothing yet
  const caps = step.caps
  return caps[group] ?? (group.startsWith('mx:') ? caps['other'] : undefined) ?? caps['*'] ?? null
}

/** The UTC day key (YYYY-MM-DD) of usage counts. */
export function dayKey(now: number): string {
  return new Date(now).toISOString().slice(0, 10)
}

/** Start of the next UTC day: when a capped IP may send again. */
export function nextDayStart(now: number): number {
  return (Math.floor(now / DAY_MS) + 1) * DAY_MS
}

/** Checks a custom schedule; returns why it is wrong, or null. */
export function checkSchedule(schedule: WarmupStep[]): string | null {
  if (schedule.length === 0) return 'must have at least one step'
  const days = new Set<number>()
  for (const s of schedule) {
    if (days.has(s.day)) return `day ${s.day} appears twice`
    days.add(s.day)
    if (Object.keys(s.caps).length === 0) return `day ${s.day}: caps must name at least one group or "*"`
  }
  return null
}
