import { expect, test } from 'bun:test'
import { checkEmail, domainOf, normaliseDomain } from '../../src/lib/email'

test('valid addresses are normalised', () => {
  for (const [input, out] of [
    ['Ada@Example.COM', 'ada@example.com'],
    ['  bob.smith+news@mail.example.org ', 'bob.smith+news@mail.example.org'],
    ["o'hara@example.ie", "o'hara@example.ie"],
    ['x@münchen.de', 'x@xn--mnchen-3ya.de'],
    ['user@sub-domain.example.co.uk.', 'user@sub-domain.example.co.uk'],
  ])
    expect(checkEmail(input)).toEqual({ ok: true, email: out! })
})

test('invalid addresses say why', () => {
  for (const [input, reason] of [
    ['', /empty/],
    ['plainaddress', /name@example.com/],
    ['@example.com', /name@example.com/],
    ['a@', /name@example.com/],
    ['a b@example.com', /spaces/],
    ['a@example.com\r\nBcc: x@evil.test', /control/],
    ['a..b@example.com', /not allowed before/],
    ['.a@example.com', /not allowed before/],
    ['"quoted"@example.com', /not allowed before/],
    ['a@localhost', /invalid domain/],
    ['a@[127.0.0.1]', /invalid domain/],
    ['a@1.2.3.4', /invalid domain/],
    ['a@-bad.example.com', /invalid domain/],
    ['a@exa_mple.com', /invalid domain/],
    ['x'.repeat(65) + '@example.com', /longer than 64/],
    ['a@' + 'b'.repeat(64) + '.com', /invalid domain/],
  ] as const) {
    const r = checkEmail(input)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.error).toMatch(reason)
  }
  expect(checkEmail(42).ok).toBe(false)
})

test('domains', () => {
  expect(normaliseDomain('Example.COM')).toBe('example.com')
  expect(normaliseDomain('nodot')).toBeNull()
  expect(domainOf('a@b.example')).toBe('b.example')
})
