import { expect, test } from 'bun:test'
import { buildApp } from '../../src/app'
import { createLogger } from '../../src/lib/logger'
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
    // A handler's own Response (its status is not the context's), and a module's answer from a global onRequest hook.
    await t.call('GET', '/t/c/aaaaaaaaaaaaaaaaaaaaaaaa.bbbb'),
    await t.call('GET', '/compat/resend//emails/x', { key: admin.key }),
  ]
  expect(replies.map((r) => r.status)).toEqual([200, 401, 404, 201, 422, 404, 308])
  await Bun.sleep(10) // the log line is written after the response
  const lines = t.deps.log.lines.filter((l) => l.msg === 'request')
  expect(lines.map((l) => [l.fields?.method, l.fields?.path, l.fields?.status])).toEqual([
    ['GET', '/api/v2/roles', 200],
    ['GET', '/api/v2/roles', 401],
    ['GET', '/api/v2/nothing', 404],
    ['POST', '/api/v2/roles', 201],
    ['POST', '/api/v2/roles', 422],
    ['GET', '/t/c/aaaaaaaaaaaaaaaaaaaaaaaa.bbbb', 404],
    ['GET', '/compat/resend//emails/x', 308],
  ])
  expect(lines.map((l) => l.fields?.request_id)).toEqual(replies.map((r) => r.headers.get('x-request-id')))
})

test('above info level no access-log line is made', async () => {
  const t = testApp({ access_log: true })
  const admin = t.makeKey()
  const written: string[] = []
  const log = createLogger('warn', t.deps.clock, (s) => void written.push(s))
  const { app } = buildApp({ ...t.deps, log })
  const res = await app.handle(new Request('http://mailroom.test/api/v2/roles', { headers: { authorization: `Bearer ${admin.key}` } }))
  expect(res.status).toBe(200)
  expect(res.headers.get('x-request-id')).toBeTruthy()
  await Bun.sleep(80)
  log.flush()
  expect(written.join('')).not.toContain('"msg":"request"')
  // The same app at info level writes the line.
  const infoLog = createLogger('info', t.deps.clock, (s) => void written.push(s))
  const { app: infoApp } = buildApp({ ...t.deps, log: infoLog })
  await infoApp.handle(new Request('http://mailroom.test/api/v2/roles', { headers: { authorization: `Bearer ${admin.key}` } }))
  await Bun.sleep(10)
  infoLog.flush()
  expect(written.join('')).toContain('"msg":"request"')
})
