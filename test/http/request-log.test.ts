import { expect, test } from 'bun:test'
import { testApp } from '../support/app'

test('the access log records the status the client got, errors included, with the request id', async () => {
  const t = testApp({ access_log: true })
  const admin = t.makeKey()
  const replies = [
    await t.call('GET', '/api/v2/roles', { key: admin.key }),
    await t.call('GET', '/api/v2/roles'),
    await t.call('GET', '/api/v2/nothing', { key: admin.key }),
    await t.call('POST', '/api/v2/roles', { key: admin.key, body: { name: 'R', permissions: [] } }),
    await t.call('POST', '/api/v2/roles', { key: admin.key, body: { name: 5 } }),
  ]
  expect(replies.map((r) => r.status)).toEqual([200, 401, 404, 201, 422])
  await Bun.sleep(10) // the log line is written after the response
  const lines = t.deps.log.lines.filter((l) => l.msg === 'request')
  expect(lines.map((l) => [l.fields?.method, l.fields?.path, l.fields?.status])).toEqual([
    ['GET', '/api/v2/roles', 200],
    ['GET', '/api/v2/roles', 401],
    ['GET', '/api/v2/nothing', 404],
    ['POST', '/api/v2/roles', 201],
    ['POST', '/api/v2/roles', 422],
  ])
  expect(lines.map((l) => l.fields?.request_id)).toEqual(replies.map((r) => r.headers.get('x-request-id')))
})
