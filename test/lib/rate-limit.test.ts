import { expect, test } from 'bun:test'
import { createRateLimiter } from '../../src/lib/rate-limit'

const minute = Date.parse('2026-03-01T12:00:00Z')

test('counts up to the limit in one minute, then refuses without counting', () => {
  const limiter = createRateLimiter()
  const results = Array.from({ length: 5 }, () => limiter.take(1, 3, minute + 10_000))
  expect(results.map((r) => r.allowed)).toEqual([true, true, true, false, false])
  expect(results.map((r) => r.remaining)).toEqual([2, 1, 0, 0, 0])
  expect(results[0]!.resetSeconds).toBe(50)
})

test('a new minute starts a new window', () => {
  const limiter = createRateLimiter()
  expect(limiter.take(1, 1, minute + 59_999).allowed).toBe(true)
  expect(limiter.take(1, 1, minute + 59_999).allowed).toBe(false)
  const next = limiter.take(1, 1, minute + 60_000)
  expect(next.allowed).toBe(true)
  expect(next.resetSeconds).toBe(60)
})

test('keys are counted apart', () => {
  const limiter = createRateLimiter()
  expect(limiter.take(1, 1, minute).allowed).toBe(true)
  expect(limiter.take(2, 1, minute).allowed).toBe(true)
  expect(limiter.take(1, 1, minute).allowed).toBe(false)
})

test('a raised limit applies at once within the window', () => {
  const limiter = createRateLimiter()
  limiter.take(1, 1, minute)
  expect(limiter.take(1, 1, minute).allowed).toBe(false)
  expect(limiter.take(1, 5, minute).allowed).toBe(true)
})
