import { expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { createAuth } from '../../src/http/auth'
import { envelopePlugin } from '../../src/http/envelope'
import { createRateLimiter } from '../../src/lib/rate-limit'
import { createRouteTable } from '../../src/lib/route-table'
import { createApiKey, createKeyResolver, createUsageRecorder } from '../../src/modules/api-keys/service'
import { CLI_ACTOR } from '../../src/modules/roles/service'
import { testDeps } from '../support/app'

test('a route under /api/ that declares no permission is closed to every key, even an Administrator', async () => {
  const deps = testDeps()
  const auth = createAuth(deps, {
    routes: () => createRouteTable([{ method: 'GET', path: '/api/v2/forgotten', permission: null, contentTypes: [] }]),
    resolveKey: createKeyResolver(deps),
    limiter: createRateLimiter(),
    usage: createUsageRecorder(deps),
  })
  let reached = false
  const app = new Elysia()
    .use(envelopePlugin(deps.log))
    .use(auth.plugin)
    .get('/api/v2/forgotten', () => {
      reached = true
      return 'open'
    })
  const { key } = createApiKey(deps, CLI_ACTOR, { name: 'admin', role_id: 1 })
  const res = await app.handle(new Request('http://mailroom.test/api/v2/forgotten', { headers: { authorization: `Bearer ${key}` } }))
  expect(res.status).toBe(403)
  expect(((await res.json()) as { error: { message: string } }).error.message).toContain('declares no permission')
  expect(reached).toBe(false)
})
