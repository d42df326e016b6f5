/**
 * Serving the console as the binary does: from a bundle built ahead of time (here a fake
 * one, files in a temp directory, shaped as Bun's HTMLBundle with `files`), the page at
 * /admin and every /admin/... path (history fallback), its assets under /admin/assets/
 * with long-lived caching, and never the page for an /admin/api/ path.
 */
import type { HTMLBundle } from 'bun'
import { afterAll, describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { envelopePlugin } from '../../src/http/envelope'
import { consoleDevRoutes, consoleSite, webPlugin } from '../../src/http/web'
import { createLogger } from '../../src/lib/logger'
import { tempDir } from '../support/temp-dirs'

const dir = tempDir('mailroom-web-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const html =
  '<!doctype html><html><head><link rel="stylesheet" crossorigin href="/chunk-abc.css"><script type="module" crossorigin src="/chunk-def.js"></script></head><body><div id="root"></div></body></html>'
writeFileSync(join(dir, 'index-1.html'), html)
writeFileSync(join(dir, 'chunk-abc.css'), 'body{color:red}')
writeFileSync(join(dir, 'chunk-def.js'), 'console.log(1)')
const headers = (type: string, etag: string) => ({ 'content-type': type, etag })
const built = {
  index: join(dir, 'index-1.html'),
  files: [
    { path: join(dir, 'chunk-def.js'), loader: 'js', isEntry: true, headers: headers('text/javascript;charset=utf-8', 'js1') },
    { path: join(dir, 'index-1.html'), loader: 'html', isEntry: true, headers: headers('text/html;charset=utf-8', 'h1') },
    { path: join(dir, 'chunk-abc.css'), loader: 'css', isEntry: true, headers: headers('text/css;charset=utf-8', 'css1') },
  ],
} as unknown as HTMLBundle

const app = new Elysia().use(envelopePlugin(createLogger('error', { now: () => 0 }, () => {}))).use(webPlugin(built))
const get = (path: string, init?: RequestInit) => app.handle(new Request(`http://localhost${path}`, init))

describe('the console from a prebuilt bundle', () => {
  test('the page links its assets under /admin/assets/', () => {
    const site = consoleSite(built)!
    expect(site.html).toContain('href="/admin/assets/chunk-abc.css"')
    expect(site.html).toContain('src="/admin/assets/chunk-def.js"')
    expect([...site.assets.keys()].sort()).toEqual(['chunk-abc.css', 'chunk-def.js'])
  })

  test('/admin and any deeper path answer the page (history fallback), never cached, with a CSP', async () => {
    for (const path of ['/admin', '/admin/', '/admin/sign-in', '/admin/access/api-keys/12?page=2']) {
      const res = await get(path)
      expect(res.status, path).toBe(200)
      expect(res.headers.get('content-type')).toStartWith('text/html')
      expect(res.headers.get('cache-control')).toBe('no-cache')
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'")
      expect(await res.text()).toContain('/admin/assets/chunk-def.js')
    }
  })

  test('assets are served with their type and cached for good; a known ETag is a 304', async () => {
    const res = await get('/admin/assets/chunk-abc.css')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/css;charset=utf-8')
    expect(res.headers.get('cache-control')).toContain('immutable')
    expect(await res.text()).toBe('body{color:red}')
    const again = await get('/admin/assets/chunk-abc.css', { headers: { 'if-none-match': res.headers.get('etag')! } })
    expect(again.status).toBe(304)
  })

  test('an unknown asset and an unknown /admin/api/ route are 404 envelopes, not the page', async () => {
    for (const path of ['/admin/assets/nope.js', '/admin/api/nothing-here']) {
      const res = await get(path)
      expect(res.status, path).toBe(404)
      expect((await res.json()).error.code).toBe('not_found')
    }
  })

  test('no Bun.serve routes are added for a prebuilt bundle; from source, /admin and /admin/* go to Bun', () => {
    expect(consoleDevRoutes(built)).toEqual({})
    const source = { index: join(dir, 'index-1.html') } as unknown as HTMLBundle
    expect(Object.keys(consoleDevRoutes(source))).toEqual(['/admin', '/admin/*'])
  })
})
