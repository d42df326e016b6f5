import { describe, expect, test } from 'bun:test'
import { groupOfDomain, groupOfMxHosts, limitsFor, OTHER_LIMITS, PROVIDER_GROUPS } from '../../src/delivery/providers'
import { capFor, defaultSchedule, warmupDay, type WarmupStep } from '../../src/delivery/warmup'

describe('provider groups', () => {
  test.each([
    [['aspmx.l.google.com', 'alt1.aspmx.l.google.com'], 'gmail'],
    [['acme-com.mail.protection.outlook.com'], 'microsoft'],
    [['mta5.am0.yahoodns.net'], 'yahoo'],
    [['mx01.mail.icloud.com'], 'icloud'],
    [['mx00.emig.gmx.net'], 'gmx'],
    [['mx1.web.de'], 'gmx'],
    [['mxs.mail.ru'], 'mailru'],
    [['mx.yandex.net'], 'yandex'],
    [['mx1.example.co.uk', 'mx2.example.co.uk'], 'mx:example.co.uk'],
    [['example.net'], 'mx:example.net'],
  ])('%p -> %s', (hosts, group) => {
    expect(groupOfMxHosts(hosts)).toBe(group)
  })

  test('well-known domains need no lookup; others do', () => {
    expect(groupOfDomain('GMAIL.com')).toBe('gmail')
    expect(groupOfDomain('hotmail.co.uk')).toBe('microsoft')
    expect(groupOfDomain('acme.example')).toBeNull()
  })

  test('limits: defaults < group override < pool/group override', () => {
    const gmail = PROVIDER_GROUPS.find((g) => g.id === 'gmail')!.limits
    expect(limitsFor({}, 'gmail', null)).toEqual(gmail)
    expect(limitsFor({}, 'mx:example.net', 'main')).toEqual(OTHER_LIMITS)
    const o = { gmail: { per_minute: 100 }, 'bulk/gmail': { per_minute: 20, connections: 2 }, other: { per_minute: 50 } }
    expect(limitsFor(o, 'gmail', 'main')).toEqual({ ...gmail, per_minute: 100 })
    expect(limitsFor(o, 'gmail', 'bulk')).toEqual({ ...gmail, per_minute: 20, connections: 2 })
    expect(limitsFor(o, 'mx:example.net', null).per_minute).toBe(50)
  })
})

describe('warm-up schedules', () => {
  const day0 = Date.parse('2026-03-01T18:00:00Z')
  test('days count UTC calendar days from the start', () => {
    expect(warmupDay(day0, day0)).toBe(1)
    expect(warmupDay(day0, Date.parse('2026-03-01T23:59:59Z'))).toBe(1)
    expect(warmupDay(day0, Date.parse('2026-03-02T00:00:00Z'))).toBe(2)
    expect(warmupDay(day0, Date.parse('2026-03-31T00:00:00Z'))).toBe(31)
  })
  test('the default ramp: 50 on day 1, growing, no cap after day 30', () => {
    const s = defaultSchedule()
    expect(capFor(s, 1, 'gmail')).toBe(50)
    expect(capFor(s, 2, 'mx:example.net')).toBe(100)
    expect(capFor(s, 30, 'gmail')).toBe(300_000)
    expect(capFor(s, 31, 'gmail')).toBeNull()
  })
  test('a custom schedule: a step lasts until the next; group, other and * caps', () => {
    const s: WarmupStep[] = [
      { day: 1, caps: { gmail: 10, other: 5 } },
      { day: 3, caps: { '*': 100 } },
    ]
    expect(capFor(s, 2, 'gmail')).toBe(10)
    expect(capFor(s, 2, 'mx:example.net')).toBe(5)
    expect(capFor(s, 2, 'yahoo')).toBeNull()
    expect(capFor(s, 3, 'yahoo')).toBe(100)
    expect(capFor(s, 4, 'yahoo')).toBeNull()
  })
})
