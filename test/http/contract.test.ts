import { describe, expect, test } from 'bun:test'
import { isPermission } from '../../src/modules/permissions/service'
import { testApp } from '../support/app'

const t = testApp()
const routes = t.app.routes.map((r) => ({ method: r.method, path: r.path, hooks: r.hooks as { detail?: Record<string, unknown>; response?: unknown } }))
// The Resend-compatible surface is API too: it needs a key and answers in Resend's dialect.
const RESEND = '/compat/resend'
const apiRoutes = routes.filter((r) => r.path.startsWith('/api/v2') || r.path.startsWith('/v1') || r.path.startsWith(RESEND))
const concrete = (path: string) => path.replace(/:[a-z_]+/g, '1')

describe('every API route', () => {
  for (const r of apiRoutes) {
    test(`${r.method} ${r.path} declares a real permission and a response schema, and needs a key`, async () => {
      const permission = r.hooks.detail?.['x-permission']
      expect(typeof permission).toBe('string')
      expect(isPermission(permission as string)).toBe(true)
      expect(r.hooks.response).toBeDefined()
      const res = await t.call(r.method, concrete(r.path))
      expect(res.status).toBe(401)
      if (r.path.startsWith(RESEND)) {
        // https://resend.com/docs/api-reference/errors: what the `resend` SDK reads.
        expect(res.body).toEqual({ statusCode: 401, name: 'missing_api_key', message: expect.any(String) })
        // Its success answers are Resend's shapes, not our envelope.
        const ok = (r.hooks.response as Record<number, { properties?: Record<string, unknown> }>)[200]
        expect(ok?.properties).toBeDefined()
        expect(ok!.properties!.success).toBeUndefined()
      } else {
        expect(res.body).toEqual({ success: false, error: { code: 'unauthorized', message: expect.any(String) } })
      }
    })
  }
})

test('the Resend-compatible routes are among those checked', () => {
  expect(apiRoutes.filter((r) => r.path.startsWith(RESEND)).map((r) => `${r.method} ${r.path}`)).toEqual(
    expect.arrayContaining(['POST /compat/resend/emails', 'POST /compat/resend/emails/batch', 'GET /compat/resend/emails/:id']),
  )
})

describe('the OpenAPI document', () => {
  test('lists every API route with its permission, bearer security and envelope schemas', async () => {
    const res = await t.call('GET', '/openapi.json')
    expect(res.status).toBe(200)
    const doc = res.body
    expect(doc.openapi).toMatch(/^3\./)
    expect(doc.info.title).toBe('Mailroom API')
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
    for (const r of apiRoutes) {
      const path = r.path.replace(/:([a-z_]+)/g, '{$1}').replace(/\/$/, '') || '/'
      const op = doc.paths[path]?.[r.method.toLowerCase()] ?? doc.paths[path + '/']?.[r.method.toLowerCase()]
      expect(op).toBeDefined()
      expect(op['x-permission']).toBe(r.hooks.detail!['x-permission'])
      expect(op.responses).toBeDefined()
    }
    expect(doc.paths['/health'].get.security).toEqual([])
    // Request bodies carry their schema and media type.
    for (const r of apiRoutes.filter((r) => (r.hooks as { body?: unknown }).body)) {
      const path = r.path.replace(/:([a-z_]+)/g, '{$1}')
      const content = doc.paths[path][r.method.toLowerCase()].requestBody.content
      expect(Object.keys(content).length).toBeGreaterThan(0)
    }
    expect(doc.paths['/api/v2/roles/'].post.requestBody.content['application/json'].schema.required).toEqual(['name', 'permissions'])
    expect(Object.keys(doc.paths['/api/v2/imports/'].post.requestBody.content)).toContain('text/csv')
    expect(JSON.stringify(doc.paths['/api/v2/api-keys/{id}'].get.responses['200'])).toContain('success')
  })

  test('the docs page loads its script from this server, not the internet', async () => {
    const page = await t.call('GET', '/docs')
    expect(page.status).toBe(200)
    const html = page.body as string
    const scripts = [...html.matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1])
    expect(scripts).toEqual(['/docs/assets/scalar.js'])
    expect(html).not.toMatch(/https?:\/\/(cdn|unpkg|fonts)\./)
    const asset = await t.app.handle(new Request('http://mailroom.test/docs/assets/scalar.js'))
    expect(asset.status).toBe(200)
    expect(asset.headers.get('content-type')).toContain('javascript')
    expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(1_000_000)
  })
})
