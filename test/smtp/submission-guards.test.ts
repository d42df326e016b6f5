import { describe, expect, test } from 'bun:test'
import { fixedClock } from '../../src/lib/clock'
import { AppError } from '../../src/lib/errors'
import { replyForError } from '../../src/smtp/submission/server'
import { createAuthThrottle, isLoopback } from '../../src/smtp/submission/auth-throttle'
import { createLineEndingCheck } from '../../src/smtp/submission/line-endings'

/** The pure parts of the submission listener: line-ending check, AUTH throttle, error replies. */
describe('line endings in DATA', () => {
  const cases: Array<[string, boolean]> = [
    ['a\r\nb\r\n', true],
    ['', true],
    ['\r\n\r\n', true],
    ['a\nb\r\n', false],
    ['\na\r\n', false],
    ['a\rb\r\n', false],
    ['a\r\r\n', false],
    ['a\r\n\n', false],
    ['a\r\nb\r', false],
    ['hello\r\n.\nmore\r\n', false],
  ]
  test.each(cases)('%j -> %p, however the bytes are split into chunks', (text, ok) => {
    const bytes = Buffer.from(text, 'latin1')
    // Every split into two chunks, and one byte per chunk: CRLF pairs straddle the boundaries.
    for (let cut = 0; cut <= bytes.length; cut++) {
      const check = createLineEndingCheck()
      check.push(bytes.subarray(0, cut))
      check.push(bytes.subarray(cut))
      expect(check.ok()).toBe(ok)
    }
    const bytewise = createLineEndingCheck()
    for (const b of bytes) bytewise.push(Buffer.from([b]))
    expect(bytewise.ok()).toBe(ok)
  })
})

describe('AUTH throttle', () => {
  test('refuses an address after the limit within the window, until the oldest failure leaves it; success clears', () => {
    const clock = fixedClock('2026-03-01T12:00:00Z')
    const throttle = createAuthThrottle(clock, { limit: 3, windowMs: 60_000 })
    for (let i = 0; i < 3; i++) {
      expect(throttle.allowed('192.0.2.1')).toBe(true)
      throttle.fail('192.0.2.1')
      clock.advance(10_000)
    }
    expect(throttle.allowed('192.0.2.1')).toBe(false)
    // The same client written as an IPv4-mapped IPv6 address is the same client.
    expect(throttle.allowed('::ffff:192.0.2.1')).toBe(false)
    expect(throttle.allowed('192.0.2.2')).toBe(true)
    clock.advance(30_001) // the first failure is now older than the window
    expect(throttle.allowed('192.0.2.1')).toBe(true)
    throttle.succeed('192.0.2.1')
    throttle.fail('192.0.2.1')
    throttle.fail('192.0.2.1')
    expect(throttle.allowed('192.0.2.1')).toBe(true)
  })

  test('IPv6 clients count per /64', () => {
    const throttle = createAuthThrottle(fixedClock(), { limit: 2, windowMs: 60_000 })
    throttle.fail('2001:db8:1:2::1')
    throttle.fail('2001:db8:1:2:ffff::9')
    expect(throttle.allowed('2001:db8:1:2::77')).toBe(false)
    expect(throttle.allowed('2001:db8:1:3::1')).toBe(true)
  })

  test('loopback addresses', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) expect(isLoopback(a)).toBe(true)
    for (const a of ['10.0.0.1', '::2', '192.0.2.1', 'localhost', '']) expect(isLoopback(a)).toBe(false)
  })
})

describe('replies for refusals', () => {
  test('each error code gets its reply; anything unknown a 451 that reveals nothing', () => {
    const cases: Array<[AppError | Error, number, string]> = [
      [new AppError('validation_failed', 'The From header must hold exactly one valid address.', { from: ['needs one valid address'] }), 550, '5.6.0'],
      [new AppError('forbidden', 'This sender may not send from x.example.'), 550, '5.7.1'],
      [new AppError('domain_not_verified', 'The domain x.example is not a verified sending domain.'), 550, '5.7.1'],
      [new AppError('rate_limited', 'The hourly quota is used up.'), 451, '4.7.1'],
      [new AppError('idempotency_key_reused', 'Reused.'), 550, '5.7.0'],
      [new AppError('idempotency_in_progress', 'Running.'), 451, '4.3.0'],
      [new AppError('internal', 'SQLITE_FULL: database or disk is full'), 451, '4.3.0'],
      [new Error('SQLITE_IOERR at /var/lib/mailroom/mailroom.db'), 451, '4.3.0'],
    ]
    for (const [error, code, enhanced] of cases) {
      const reply = replyForError(error)
      expect(reply.code).toBe(code)
      expect(reply.text).toStartWith(`${enhanced} `)
      if (code === 451 && enhanced === '4.3.0' && !(error instanceof AppError && error.code === 'idempotency_in_progress')) {
        expect(reply.text).toBe('4.3.0 Local error in processing; try again later')
      }
    }
    expect(replyForError(cases[0]![0]).text).toBe('5.6.0 The From header must hold exactly one valid address. (needs one valid address)')
  })
})
