import type { SendWindow } from '../../db/schema/broadcasts'

/**
 * Send windows (issue 15): hours of day and days of week when a broadcast's mail may leave,
 * in each contact's time zone or the broadcast's. Pure, so it is tested without a clock.
 */

const HOUR_MS = 3_600_000
const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 }
const formats = new Map<string, Intl.DateTimeFormat>()

/** True for a zone name Intl knows (an unknown one falls back to the window's zone). */
export function isTimeZone(zone: string): boolean {
  try {
    formatOf(zone)
    return true
  } catch {
    return false
  }
}

function formatOf(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hour: 'numeric', hourCycle: 'h23', weekday: 'short' })
    formats.set(zone, f)
  }
  return f
}

/** The local hour (0-23) and weekday (0 = Sunday) of `at` in `zone`. */
export function localHour(at: number, zone: string): { hour: number; day: number } {
  const parts = formatOf(zone).formatToParts(new Date(at))
  const hour = Number(parts.find((p) => p.type === 'hour')!.value)
  const day = WEEKDAYS[parts.find((p) => p.type === 'weekday')!.value]!
  return { hour, day }
}

function inWindow(w: SendWindow, hour: number, day: number): boolean {
  // A window that starts before midnight and ends after it belongs to the day it started.
  const wraps = w.start_hour > w.end_hour
  const open = wraps ? hour >= w.start_hour || hour < w.end_hour : hour >= w.start_hour && hour < w.end_hour
  if (!open) return false
  if (!w.days || w.days.length === 0) return true
  const startDay = wraps && hour < w.end_hour ? (day + 6) % 7 : day
  return w.days.includes(startDay)
}

/**
 * The first moment at or after `now` when mail may leave under `w` in `zone`: `now` itself
 * when the window is open, else the start of the next open hour (searched a week ahead; a
 * window that never opens, such as start = end, means always open).
 */
export function nextOpening(w: SendWindow | null | undefined, zone: string, now: number): number {
  if (!w || w.start_hour === w.end_hour) return now
  let { hour, day } = localHour(now, zone)
  if (inWindow(w, hour, day)) return now
  // Whole hours in every zone we care about at the hour boundary (zones with :30 offsets open at their :30).
  let at = Math.floor(now / HOUR_MS) * HOUR_MS
  for (let i = 0; i < 24 * 8; i++) {
    at += HOUR_MS
    ;({ hour, day } = localHour(at, zone))
    if (inWindow(w, hour, day)) return at
  }
  return now
}
