import { describe, expect, test } from 'bun:test'
import { resendError } from '../../src/modules/messages/resend-errors'
import type { Failure } from '../../src/http/envelope'

/**
 * The one mapping of our failures to Resend's error names and statuses
 * (https://resend.com/docs/api-reference/errors), which every /compat/resend route answers.
 */
const req = (headers: Record<string, string> = { authorization: 'Bearer x' }) => new Request('http://mailroom.test/compat/resend/emails', { headers })

describe('resendError', () => {
  const cases: Array<[string, Failure, Request, { statusCode: number; name: string }]> = [
    ['no Authorization header', { code: 'unauthorized', message: 'Missing API key.' }, req({}), { statusCode: 401, name: 'missing_api_key' }],
    ['a bad key', { code: 'unauthorized', message: 'The API key is not valid.' }, req(), { statusCode: 403, name: 'invalid_api_key' }],
    ['a role without the permission', { code: 'forbidden', message: 'x' }, req(), { statusCode: 401, name: 'restricted_api_key' }],
    ['an IP the key does not allow', { code: 'ip_not_allowed', message: 'x' }, req(), { statusCode: 401, name: 'restricted_api_key' }],
    [
      'required fields only',
      { code: 'validation_failed', message: 'x', details: { subject: ['is required'], '1.to': ['is required'] } },
      req(),
      { statusCode: 422, name: 'missing_required_field' },
    ],
    [
      'a bad sender',
      { code: 'validation_failed', message: 'x', details: { from: ['must hold exactly one email address'] } },
      req(),
      { statusCode: 422, name: 'invalid_from_address' },
    ],
    [
      'a bad sender and more',
      { code: 'validation_failed', message: 'x', details: { from: ['bad'], to: ['bad'] } },
      req(),
      { statusCode: 422, name: 'validation_error' },
    ],
    [
      'a bad Idempotency-Key',
      { code: 'validation_failed', message: 'x', details: { 'Idempotency-Key': ['must be 1-256'] } },
      req(),
      { statusCode: 400, name: 'invalid_idempotency_key' },
    ],
    ['a key reused with another body', { code: 'idempotency_key_reused', message: 'x' }, req(), { statusCode: 409, name: 'invalid_idempotent_request' }],
    ['a key still in flight', { code: 'idempotency_in_progress', message: 'x' }, req(), { statusCode: 409, name: 'concurrent_idempotent_requests' }],
    ['the rate limit', { code: 'rate_limited', message: 'x' }, req(), { statusCode: 429, name: 'rate_limit_exceeded' }],
    ['an unknown id', { code: 'not_found', message: 'x' }, req(), { statusCode: 404, name: 'not_found' }],
    ['an unverified domain', { code: 'domain_not_verified', message: 'x' }, req(), { statusCode: 403, name: 'validation_error' }],
    ['a bug', { code: 'internal', message: 'x' }, req(), { statusCode: 500, name: 'internal_server_error' }],
  ]
  for (const [what, failure, request, want] of cases) {
    test(`${what} -> ${want.statusCode} ${want.name}`, () => {
      expect(resendError(failure, request)).toMatchObject(want)
    })
  }
  test('field problems are appended to the one message', () => {
    expect(resendError({ code: 'validation_failed', message: 'The request data is invalid.', details: { to: ['a', 'b'], subject: ['c'] } }).message).toBe(
      'The request data is invalid. to: a; b. subject: c',
    )
  })
})
