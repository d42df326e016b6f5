import { buildApp } from '../../src/app'
import { loadConfig, type Config } from '../../src/config'
import { openDatabase, type Db } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { createDeps, type Deps } from '../../src/deps'
import { fixedClock } from '../../src/lib/clock'
import { memoryLogger } from '../../src/lib/logger'
import { createApiKey } from '../../src/modules/api-keys/service'
import { CLI_ACTOR, createRole, ensureBuiltinRoles, findRoleByName } from '../../src/modules/roles/service'
import { createSecretBox, generateSecretKey } from '../../src/lib/secret-box'
import { tempDir } from './temp-dirs'

/** Deps on a fresh database with the real migrations, a fixed clock and a log a test can read. */
export function testDeps(
  overrides: Partial<Config> = {},
  path = ':memory:',
): Deps & { clock: ReturnType<typeof fixedClock>; log: ReturnType<typeof memoryLogger>; db: Db } {
  const db = openDatabase(path)
  const clock = fixedClock('2026-03-01T12:00:30Z')
  migrate(db, { now: clock.now() })
  // Files (imports) go to a temporary data directory, never into the working tree.
  const dataDir = tempDir('mailroom-test-')
  const config = Object.freeze({
    ...loadConfig({ env: {}, flags: { hostname: 'mailroom.test', 'access-log': 'false', 'validate-responses': 'true', 'data-dir': dataDir } }),
    ...overrides,
  })
  const deps = createDeps({ db, clock, log: memoryLogger(), config, secrets: createSecretBox(generateSecretKey()) })
  ensureBuiltinRoles(deps)
  return deps
}

export interface Reply {
  status: number
  headers: Headers
  body: any
  /** The body as received, for substring checks. */
  text: string
}

/**
 * A test application with helpers to make keys and call routes through app.handle. In memory
 * unless `dbPath` names a file (what only a file in WAL mode has, such as the commit counter).
 */
export function testApp(overrides: Partial<Config> = {}, opts: { dbPath?: string } = {}) {
  const deps = testDeps(overrides, opts.dbPath)
  // Strict: a field a response schema does not declare fails the request, so no handler relies on the response check removing it.
  const { app, usage, imports } = buildApp(deps, { strictResponses: true })

  const call = async (
    method: string,
    path: string,
    opts: { key?: string; body?: unknown; rawBody?: string | Uint8Array; headers?: Record<string, string> } = {},
  ): Promise<Reply> => {
    const headers: Record<string, string> = { ...opts.headers }
    if (opts.key) headers.authorization = `Bearer ${opts.key}`
    let body: string | Uint8Array | undefined = opts.rawBody
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body)
      headers['content-type'] ??= 'application/json'
    }
    const res = await app.handle(new Request(`http://mailroom.test${path}`, { method, headers, body: body as BodyInit | undefined }))
    const text = await res.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {}
    return { status: res.status, headers: res.headers, body: parsed, text }
  }

  /** Creates a key through the service; `permissions` makes a fresh role with exactly those grants. */
  const makeKey = (opts: { permissions?: string[]; role?: string; rate_limit?: number | null; allowed_ips?: string[]; name?: string } = {}) => {
    let roleId: number
    if (opts.permissions) {
      roleId = createRole(deps, CLI_ACTOR, { name: `role-${Math.random().toString(36).slice(2)}`, permissions: opts.permissions }).id
    } else {
      roleId = findRoleByName(deps, opts.role ?? 'Administrator')!.id
    }
    const { view, key } = createApiKey(deps, CLI_ACTOR, {
      name: opts.name ?? 'test key',
      role_id: roleId,
      rate_limit: opts.rate_limit === undefined ? null : opts.rate_limit,
      allowed_ips: opts.allowed_ips,
    })
    return { id: view.id, key, role_id: roleId }
  }

  return { deps, app, usage, imports, call, makeKey }
}

export type TestApp = ReturnType<typeof testApp>
