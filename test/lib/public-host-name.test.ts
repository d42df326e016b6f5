import { describe, expect, test } from 'bun:test'
import { PUBLIC_HOST_NAME_PLACEHOLDER, publicHostNameProblem, publicHostNameWarning } from '../../src/lib/public-host-name'

describe('publicHostNameProblem', () => {
  const cases: Array<[name: string, problem: RegExp | null]> = [
    ['mail.example.com', null],
    ['MX1.Example.COM.', null],
    ['mailroom.test', null],
    ['vm', /short name/],
    ['localhost', /short name/],
    ['mail.localhost', /under \.localhost/],
    ['vm.local', /under \.local,/],
    ['box.localdomain', /under \.localdomain/],
    ['mx.corp.internal', /under \.internal/],
    ['server.lan', /under \.lan/],
    ['nas.home.arpa', /under \.home\.arpa/],
    ['203.0.113.5', /IP address/],
    ['2001:db8::1', /IP address/],
  ]
  for (const [name, problem] of cases) {
    test(`${name}: ${problem ?? 'public'}`, () => {
      const got = publicHostNameProblem(name)
      if (problem === null) expect(got).toBeNull()
      else expect(got).toMatch(problem)
    })
  }

  test('the warning names the host name, the setting and the placeholder; none for a public name', () => {
    expect(publicHostNameWarning('mail.example.com')).toBeNull()
    const warning = publicHostNameWarning('vm')!
    for (const part of ['"vm"', 'MAILROOM_HOSTNAME', '--hostname', PUBLIC_HOST_NAME_PLACEHOLDER]) expect(warning).toContain(part)
  })
})
