import { describe, expect, test } from 'bun:test'
import { compileAllowlist, isAllowed, parseIpRule } from '../../src/lib/ip-allowlist'

describe('allowlist matching', () => {
  const cases: Array<[rule: string, client: string, allowed: boolean]> = [
    ['203.0.113.5', '203.0.113.5', true],
    ['203.0.113.5', '203.0.113.6', false],
    ['10.0.0.0/8', '10.255.1.2', true],
    ['10.0.0.0/8', '11.0.0.1', false],
    ['10.1.2.3/8', '10.9.9.9', true], // host bits in the rule are ignored
    ['0.0.0.0/0', '198.51.100.1', true],
    ['198.51.100.10-198.51.100.20', '198.51.100.10', true],
    ['198.51.100.10-198.51.100.20', '198.51.100.20', true],
    ['198.51.100.10-198.51.100.20', '198.51.100.21', false],
    ['198.51.100.10 - 198.51.100.20', '198.51.100.15', true],
    ['2001:db8::1', '2001:db8::1', true],
    ['2001:db8::1', '2001:0db8:0000::0001', true], // same address, other spelling
    ['2001:db8::/32', '2001:db8:ffff::1', true],
    ['2001:db8::/32', '2001:db9::1', false],
    ['2001:db8::10-2001:db8::20', '2001:db8::1f', true],
    ['2001:db8::10-2001:db8::20', '2001:db8::21', false],
    ['::1', '::1', true],
    // IPv4-mapped IPv6 clients match IPv4 rules (RFC 4291 section 2.5.5.2)
    ['127.0.0.1', '::ffff:127.0.0.1', true],
    ['10.0.0.0/8', '::ffff:10.1.1.1', true],
    ['10.0.0.0/8', '::ffff:11.1.1.1', false],
    ['192.0.2.1-192.0.2.9', '::ffff:192.0.2.5', true],
    // and mapped rules match plain IPv4 clients
    ['::ffff:192.0.2.7', '192.0.2.7', true],
    ['::ffff:192.0.2.0/120', '192.0.2.200', true],
    // families never cross
    ['0.0.0.0/0', '2001:db8::1', false],
    ['::/0', '192.0.2.1', false],
    // zone ids on link-local clients are ignored
    ['fe80::/10', 'fe80::1%eth0', true],
  ]
  for (const [rule, client, allowed] of cases) {
    test(`${rule} ${allowed ? 'allows' : 'refuses'} ${client}`, () => {
      const { rules, errors } = compileAllowlist([rule])
      expect(errors).toEqual([])
      expect(isAllowed(rules, client)).toBe(allowed)
    })
  }

  test('an unknown client address never matches', () => {
    const { rules } = compileAllowlist(['0.0.0.0/0', '::/0'])
    expect(isAllowed(rules, null)).toBe(false)
    expect(isAllowed(rules, 'not-an-ip')).toBe(false)
  })

  test('several rules: any match allows', () => {
    const { rules } = compileAllowlist(['192.0.2.1', '2001:db8::/64', '10.0.0.0-10.0.0.3'])
    expect(['192.0.2.1', '2001:db8::abcd', '10.0.0.3'].map((c) => isAllowed(rules, c))).toEqual([true, true, true])
    expect(['192.0.2.2', '2001:db8:1::1', '10.0.0.4'].map((c) => isAllowed(rules, c))).toEqual([false, false, false])
  })
})

describe('bad entries are refused with a reason', () => {
  const bad: Array<[entry: string, reason: RegExp]> = [
    ['', /empty/],
    ['   ', /empty/],
    ['localhost', /not a valid IP address/],
    ['10.1', /not a valid IP address/], // legacy short form
    ['0x0a.0.0.1', /not a valid IP address/], // legacy hex form
    ['256.1.1.1', /not a valid IP address/],
    ['1.2.3.4/33', /prefix length must be 0-32/],
    ['2001:db8::/129', /prefix length must be 0-128/],
    ['1.2.3.4/abc', /prefix length must be a number/],
    ['1.2.3.4/-1', /prefix length must be a number/],
    ['nope/8', /not a valid CIDR block/],
    ['1.2.3.9-1.2.3.1', /first address is after the last/],
    ['1.2.3.4-2001:db8::1', /both ends must be IPv4 or both IPv6/],
    ['1.2.3.4-', /not a valid range/],
    ['1.2.3.4-x', /not a valid range/],
  ]
  for (const [entry, reason] of bad) {
    test(JSON.stringify(entry), () => {
      const result = parseIpRule(entry)
      expect(result.ok).toBe(false)
      if (!result.ok) expect(result.error).toMatch(reason)
    })
  }

  test('compileAllowlist reports every bad entry and keeps the good ones', () => {
    const { rules, errors } = compileAllowlist(['192.0.2.1', 'bad', '10.0.0.0/99'])
    expect(rules).toHaveLength(1)
    expect(errors).toHaveLength(2)
  })
})
