import { describe, expect, test } from 'bun:test'
import { cycleWithoutWait, matchesFilter, nextTimeOfDay, propertyCondition, waitUntil } from '../../src/modules/automations/graph'

describe('automation graph helpers', () => {
  test('a cycle is refused only when no wait is on it', () => {
    const step = (id: string, kind: string, edges: Record<string, string> = {}) => ({ id, kind, settings: {}, edges })
    expect(cycleWithoutWait({ steps: [step('a', 'send', { next: 'b' }), step('b', 'update_contact', { next: 'a' })] })).toBe('a')
    expect(cycleWithoutWait({ steps: [step('a', 'send', { next: 'b' }), step('b', 'wait', { next: 'a' })] })).toBeNull()
    expect(cycleWithoutWait({ steps: [step('a', 'condition', { yes: 'b', no: 'c' }), step('b', 'send', { next: 'c' }), step('c', 'exit')] })).toBeNull()
  })

  test('property filters: dotted paths, a list of values, objects by value', () => {
    const props = { plan: 'pro', order: { total: 120, items: ['a'] } }
    expect(matchesFilter({ plan: 'pro' }, props)).toBe(true)
    expect(matchesFilter({ plan: ['team', 'pro'], 'order.total': 120 }, props)).toBe(true)
    expect(matchesFilter({ 'order.total': '120' }, props)).toBe(false)
    expect(matchesFilter({ missing: 1 }, props)).toBe(false)
    expect(matchesFilter(null, props)).toBe(true)
    expect(propertyCondition(props, 'order.total', 'gt', 100)).toBe(true)
    expect(propertyCondition(props, 'order.items', 'contains', 'a')).toBe(true)
    expect(propertyCondition(props, 'order.none', 'exists', null)).toBe(false)
  })

  test("time-of-day waits end at the next such time in the contact's zone, across a daylight-saving change", () => {
    // 2026-03-28 20:00 UTC is 21:00 in Paris (UTC+1); 09:00 the next morning is after the change to UTC+2.
    const now = Date.parse('2026-03-28T20:00:00Z')
    expect(new Date(nextTimeOfDay(now, '09:00', 'Europe/Paris')).toISOString()).toBe('2026-03-29T07:00:00.000Z')
    expect(new Date(nextTimeOfDay(now, '22:30', 'Europe/Paris')).toISOString()).toBe('2026-03-28T21:30:00.000Z')
    expect(new Date(waitUntil({ time_of_day: '09:00' }, now, 'America/New_York', null)).toISOString()).toBe('2026-03-29T13:00:00.000Z')
    // An unknown zone falls back to the step's, the automation's, then UTC.
    expect(new Date(waitUntil({ time_of_day: '09:00' }, now, 'Mars/Olympus', null)).toISOString()).toBe('2026-03-29T09:00:00.000Z')
    expect(waitUntil({ duration_seconds: 60 }, now, null, null)).toBe(now + 60_000)
    expect(waitUntil({ until: '2026-01-01T00:00:00Z' }, now, null, null)).toBe(now)
  })
})
