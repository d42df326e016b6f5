import { expect, test } from 'bun:test'
import { localHour, nextOpening } from '../../src/modules/broadcasts/send-window'

const at = (iso: string) => Date.parse(iso)

test.each([
  // [window, zone, now, expected]
  [{ start_hour: 9, end_hour: 17 }, 'UTC', '2026-03-02T10:15:00Z', '2026-03-02T10:15:00Z'],
  [{ start_hour: 9, end_hour: 17 }, 'UTC', '2026-03-02T18:00:00Z', '2026-03-03T09:00:00Z'],
  // 09:00 in New York (UTC-5 in early March) is 14:00 UTC.
  [{ start_hour: 9, end_hour: 17 }, 'America/New_York', '2026-03-02T12:00:00Z', '2026-03-02T14:00:00Z'],
  // Wrapping past midnight: 22-02 is open at 01:00.
  [{ start_hour: 22, end_hour: 2 }, 'UTC', '2026-03-02T01:00:00Z', '2026-03-02T01:00:00Z'],
  [{ start_hour: 22, end_hour: 2 }, 'UTC', '2026-03-02T03:00:00Z', '2026-03-02T22:00:00Z'],
  // Weekdays only: Saturday 2026-03-07 waits for Monday.
  [{ start_hour: 9, end_hour: 17, days: [1, 2, 3, 4, 5] }, 'UTC', '2026-03-07T10:00:00Z', '2026-03-09T09:00:00Z'],
  // start = end never closes.
  [{ start_hour: 5, end_hour: 5 }, 'UTC', '2026-03-02T01:00:00Z', '2026-03-02T01:00:00Z'],
] as const)('window %o in %s at %s opens at %s', (w, zone, now, expected) => {
  expect(new Date(nextOpening({ ...w, days: 'days' in w ? [...w.days] : undefined }, zone, at(now))).toISOString()).toBe(new Date(at(expected)).toISOString())
})

test('localHour reads the zone', () => {
  expect(localHour(at('2026-03-02T12:00:00Z'), 'Asia/Tokyo')).toEqual({ hour: 21, day: 1 })
})
