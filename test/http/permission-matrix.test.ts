import { describe, expect, test } from 'bun:test'
import { ALL_PERMISSIONS } from '../../src/modules/permissions/service'
import { testApp } from '../support/app'

/**
 * The role x route matrix: for every route that requires a permission, a key whose role
 * grants every permission but that one is refused with 403, and a key whose role grants
 * only that one gets past the permission check. Together they prove that each route is
 * guarded by exactly the permission it declares.
 */
const t = testApp()
const protectedRoutes = t.app.routes
  .map((r) => ({
    method: r.method,
    path: r.path,
    permission: (r.hooks?.detail as Record<string, unknown> | undefined)?.['x-permission'] as string | undefined,
  }))
  .filter((r): r is { method: string; path: string; permission: string } => !!r.permission)

/** The error code and message, also from the Resend-compatible routes, which answer in Resend's format. */
const failure = (body: any): { code?: string; message?: string } =>
  body?.error ?? (body?.name ? { code: body.name === 'restricted_api_key' ? 'forbidden' : body.name, message: body.message } : {})

/** The refusal status: Resend answers a key without the permission 401 restricted_api_key (src/modules/messages/resend-errors.ts). */
const refusedStatus = (path: string) => (path.startsWith('/compat/resend/') ? 401 : 403)

// A record id that does not exist: a call that passes the permission check reaches the handler and gets 404.
const concrete = (path: string) => path.replace(/:[a-z_]+/g, '999999').replace(/\/$/, '')

describe('role x route matrix', () => {
  test('there are protected routes to check', () => {
    expect(protectedRoutes.length).toBeGreaterThan(10)
  })

  for (const route of protectedRoutes) {
    test(`${route.method} ${route.path} needs ${route.permission}`, async () => {
      const allBut = t.makeKey({ permissions: ALL_PERMISSIONS.filter((p) => p !== route.permission) })
      const only = t.makeKey({ permissions: [route.permission] })
      const body = ['POST', 'PATCH', 'PUT'].includes(route.method) ? {} : undefined

      const denied = await t.call(route.method, concrete(route.path), { key: allBut.key, body })
      expect(denied.status).toBe(refusedStatus(route.path))
      expect(failure(denied.body).code).toBe('forbidden')
      expect(failure(denied.body).message).toContain(route.permission)

      const allowed = await t.call(route.method, concrete(route.path), { key: only.key, body })
      expect(allowed.status).not.toBe(401)
      expect(failure(allowed.body).code).not.toBe('forbidden')
    })
  }

  test('a role with no permissions is refused everywhere', async () => {
    const none = t.makeKey({ permissions: [] })
    for (const route of protectedRoutes) {
      const r = await t.call(route.method, concrete(route.path), { key: none.key })
      expect(r.status).toBe(refusedStatus(route.path))
    }
  })
})
