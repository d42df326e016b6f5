import { expect, test } from 'bun:test'
import { refusal } from '../../src/http/auth'
import { AppError } from '../../src/lib/errors'
import { testApp } from '../support/app'

test('a refusal is an AppError without stack frames, and later errors keep theirs', () => {
  const limit = Error.stackTraceLimit
  const e = refusal('unauthorized', 'The API key is not valid.')
  expect(e).toBeInstanceOf(AppError)
  expect(e.status).toBe(401)
  expect(e.stack ?? '').not.toMatch(/\n\s+at /)
  expect(Error.stackTraceLimit).toBe(limit)
  expect(new Error('a bug').stack).toMatch(/\n\s+at /)
})

test('refusals still answer the envelope with their status and headers', async () => {
  const t = testApp()
  const limited = t.makeKey({ rate_limit: 1 })
  expect((await t.call('GET', '/api/v2/roles', { key: 'mr_nope' })).body.error.code).toBe('unauthorized')
  expect((await t.call('GET', '/api/v2/roles?api_key=x', { key: limited.key })).status).toBe(401)
  expect((await t.call('GET', '/api/v2/roles', { key: limited.key })).status).toBe(200)
  const second = await t.call('GET', '/api/v2/roles', { key: limited.key })
  expect(second.status).toBe(429)
  expect(second.body.error.code).toBe('rate_limited')
  expect(second.headers.get('retry-after')).not.toBeNull()
})
