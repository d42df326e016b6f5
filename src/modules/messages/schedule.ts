import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import { toIso } from '../../lib/clock'
import { AppError, invalidField, notFound } from '../../lib/errors'
import { emitPrepared } from '../events/service'

/**
 * Scheduled sends (issue 19, docs/api.md "Scheduled sends"). A message with a `scheduled_at`
 * in the future is accepted like any other (on disk before the answer), but its recipients
 * wait in state `scheduled` with next_attempt_at = the time asked: the delivery engine's due
 * index covers them, so they go out when due, also after a restart, with no timer of their
 * own. Until then the time can be moved or the send cancelled.
 */

/** How far ahead a send may be scheduled, as Resend allows. */
export const MAX_SCHEDULE_DAYS = 30
const DAY = 86_400_000

const UNITS: Record<string, number> = {
  s: 1000,
  sec: 1000,
  second: 1000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hour: 3_600_000,
  d: DAY,
  day: DAY,
  w: 7 * DAY,
  week: 7 * DAY,
}
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday']
/** ISO 8601 date and time with its offset: a time without one names a different instant in every zone. */
const ISO = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/i
const IN = /^in\s+(\d{1,6}|an?)\s*([a-z]+?)s?$/
const TIME = /^(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$/

/** "9am", "9:30", "21:00", "noon", "midnight" -> minutes after midnight; null when not a time. */
function timeOfDay(text: string): number | null {
  if (text === 'noon') return 12 * 60
  if (text === 'midnight') return 0
  const m = TIME.exec(text)
  if (!m) return null
  let hour = Number(m[1])
  const minute = m[2] === undefined ? 0 : Number(m[2])
  if (minute > 59) return null
  if (m[3]) {
    if (hour < 1 || hour > 12) return null
    hour = (hour % 12) + (m[3] === 'pm' ? 12 : 0)
  } else if (hour > 23 || m[2] === undefined) return null // "at 9" alone is ambiguous
  return hour * 60 + minute
}

/** A natural-language time (the documented subset), in UTC; null when not understood. */
function naturalTime(text: string, now: number): number | null {
  const s = text
    .toLowerCase()
    .trim()
    .replace(/\s+/g, ' ')
    .replace(/\s+(utc|gmt|z)$/, '')
  if (s === 'now') return now
  const inMatch = IN.exec(s)
  if (inMatch) {
    const n = /^an?$/.test(inMatch[1]!) ? 1 : Number(inMatch[1])
    const unit = UNITS[inMatch[2]!]
    return unit === undefined ? null : now + n * unit
  }
  const day = /^(today|tomorrow|(?:next )?(?:sunday|monday|tuesday|wednesday|thursday|friday|saturday))(?:(?: at)? (.+))?$/.exec(s)
  if (!day) return null
  const midnight = now - (now % DAY)
  let date: number
  if (day[1] === 'today') date = midnight
  else if (day[1] === 'tomorrow') date = midnight + DAY
  else {
    const target = WEEKDAYS.indexOf(day[1]!.replace(/^next /, ''))
    const ahead = (target - new Date(now).getUTCDay() + 7) % 7 || 7
    date = midnight + ahead * DAY
  }
  if (day[2] === undefined) return date + (now - midnight) // no time: the same time of day
  const minutes = timeOfDay(day[2])
  return minutes === null ? null : date + minutes * 60_000
}

/**
 * Reads a `scheduled_at`: ISO 8601 with an offset ("2026-03-01T09:00:00Z"), or the natural
 * language subset documented in docs/api.md ("in 1 min", "in 2 hours", "tomorrow at 9am",
 * "friday 15:30", times in UTC). Returns ms; a time now or past means "send at once" (null).
 * More than MAX_SCHEDULE_DAYS ahead, or not understood: 422 on `field`.
 */
export function parseScheduledAt(text: string, now: number, field = 'scheduled_at'): number | null {
  const at = ISO.test(text.trim()) ? Date.parse(text.trim().replace(' ', 'T')) : naturalTime(text, now)
  if (at === null || !Number.isFinite(at)) {
    throw invalidField(
      field,
      'must be an ISO 8601 date and time with an offset ("2026-03-01T09:00:00Z") or a time such as "in 10 min", "in 2 hours", "tomorrow at 9am", "friday 15:30" (UTC)',
    )
  }
  if (at - now > MAX_SCHEDULE_DAYS * DAY) throw invalidField(field, `must be at most ${MAX_SCHEDULE_DAYS} days ahead`)
  return at > now ? at : null
}

const statements = preparedFor((db) => {
  const c = db.$client
  return {
    message: c.prepare<{ id: string; scheduled_at: number | null; bridge_id: number | null }, [string]>(
      'SELECT id, scheduled_at, bridge_id FROM messages WHERE id = ?',
    ),
    scheduledRecipients: c.prepare<{ id: number; address: string }, [string]>(
      "SELECT id, address FROM message_recipients WHERE message_id = ? AND state = 'scheduled' ORDER BY id",
    ),
    move: c.prepare<never, [number, number, string]>(
      "UPDATE message_recipients SET next_attempt_at = ?1, updated_at = ?2 WHERE message_id = ?3 AND state = 'scheduled'",
    ),
    moveMessage: c.prepare<never, [number, string]>('UPDATE messages SET scheduled_at = ? WHERE id = ?'),
    cancel: c.prepare<never, [number, string]>(
      "UPDATE message_recipients SET state = 'canceled', next_attempt_at = NULL, updated_at = ?1, finished_at = ?1 WHERE message_id = ?2 AND state = 'scheduled'",
    ),
  }
})

/** The message's scheduled recipients, or 404 / 409 (not a scheduled send, or already due and picked up). */
function scheduledOrThrow(deps: Deps, id: string) {
  const st = statements(deps.db)
  const m = st.message.get(id)
  if (!m) throw notFound('message', id)
  const rows = st.scheduledRecipients.all(id)
  if (rows.length === 0) {
    throw new AppError(
      'conflict',
      m.scheduled_at === null
        ? `Message ${id} was not scheduled; only a scheduled send can be moved or cancelled.`
        : `Message ${id} is no longer scheduled: it was sent or cancelled.`,
    )
  }
  return { m, rows }
}

/**
 * Moves a scheduled send to `scheduledAt` (text as on a send; a time now or past sends it at
 * once). Checked and written in one transaction, so it cannot race the engine's claim.
 */
export async function rescheduleMessage(deps: Deps, id: string, scheduledAt: string): Promise<{ id: string; scheduled_at: string }> {
  const result = await deps.commits.run(() => {
    const now = deps.clock.now()
    const at = parseScheduledAt(scheduledAt, now) ?? now
    scheduledOrThrow(deps, id)
    statements(deps.db).move.run(at, now, id)
    statements(deps.db).moveMessage.run(at, id)
    return { id, scheduled_at: toIso(at)! }
  })
  // The engine sleeps until the earliest due row; an earlier time must wake it.
  deps.doorbell.ring()
  return result
}

/** Cancels a scheduled send: its recipients become `canceled` (final), each with a message.canceled event. */
export async function cancelMessage(deps: Deps, id: string): Promise<{ id: string }> {
  return deps.commits.run(() => {
    const now = deps.clock.now()
    const { m, rows } = scheduledOrThrow(deps, id)
    statements(deps.db).cancel.run(now, id)
    for (const r of rows) emitPrepared(deps.db, now, { kind: 'message.canceled', message_id: id, recipient: r.address, bridge_id: m.bridge_id, data: {} })
    return { id }
  })
}
