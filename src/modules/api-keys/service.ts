import { and, count, eq, isNotNull, isNull, sql, type SQL } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { columnsOf } from '../../db/crud'
import { createReadCache } from '../../db/commit-counter'
import { preparedFor } from '../../db/prepared'
import { apiKeys, roles } from '../../db/schema'
import { generateToken, parseToken, tokenMatches, tokenPrefix } from '../../lib/api-key-token'
import { toIso } from '../../lib/clock'
import { AppError, invalidField, notFound } from '../../lib/errors'
import { compileAllowlist, type IpRule } from '../../lib/ip-allowlist'
import { isSubset } from '../permissions/service'
import { pageOfRoleHolders, type Actor } from '../roles/service'
import type { ApiKeyView } from './model'

type KeyRow = typeof apiKeys.$inferSelect

export interface ApiKeyInput {
  name: string
  role_id: number
  /** Requests per minute; null is unlimited; absent takes the configured default. */
  rate_limit?: number | null
  allowed_ips?: string[]
  status?: 'active' | 'inactive'
}

function toView(row: KeyRow, role: { id: number; name: string }): ApiKeyView {
  return {
    ...columnsOf(row, ['id', 'name', 'rate_limit', 'allowed_ips', 'status', 'last_used_ip']),
    prefix: tokenPrefix(row.lookup_id),
    role,
    last_used_at: toIso(row.last_used_at),
    created_at: toIso(row.created_at)!,
    updated_at: toIso(row.updated_at)!,
    deleted_at: toIso(row.deleted_at),
  }
}

/** Validates allowlist entries, refusing the whole write with one message per bad entry. */
function checkAllowlist(entries: string[]): string[] {
  const trimmed = entries.map((e) => e.trim())
  const { errors } = compileAllowlist(trimmed)
  if (errors.length) throw new AppError('validation_failed', 'The request data is invalid.', { allowed_ips: errors })
  return [...new Set(trimmed)]
}

/** The role a key may be bound to: it must exist and grant nothing the actor lacks. */
function checkRole(deps: Deps, actor: Actor, roleId: number): { id: number; name: string; permissions: string[] } {
  const role = deps.db.select().from(roles).where(eq(roles.id, roleId)).get()
  if (!role) throw invalidField('role_id', `No role with id ${roleId}.`)
  if (!isSubset(role.permissions, actor.permissions))
    throw new AppError('forbidden', 'A key cannot be bound to a role with permissions that your own key does not have.')
  return role
}

/** A key row as SQLite returns it, with its role's name and permissions (JSON columns still text). */
type RawKeyRow = Omit<KeyRow, 'allowed_ips'> & { allowed_ips: string; role_name: string; permissions: string }

/**
 * The reads on every authenticated request, as raw prepared SQL: drizzle's row mapping
 * cost more than the query itself here, and under Bun's SQLite a join costs several times
 * the same read written with scalar subqueries (both measured for bench/http.ts). The
 * column names are the row's property names, so the mapping is one JSON.parse per column.
 */
const statements = preparedFor((db) => {
  const select = (where: string) =>
    db.$client.prepare<RawKeyRow, [string | number]>(
      `SELECT k.*, (SELECT name FROM roles WHERE id = k.role_id) AS role_name, (SELECT permissions FROM roles WHERE id = k.role_id) AS permissions FROM api_keys k WHERE ${where}`,
    )
  // Key rows by id, parsed and with their views, kept while nothing commits: every
  // key-management call reads one (db/commit-counter.ts).
  return { keyById: select('k.id = ?'), keyByLookup: select('k.lookup_id = ?'), cachedById: createReadCache<CachedKey | null>(db) }
})

/**
 * A key row parsed, with its API view: made once per row while nothing commits, not per
 * read (the JSON columns' parse and the view's timestamps were a tenth of an authenticated
 * GET of a key in process, issue 18). Shared by every read until the next commit, so
 * callers copy before they change anything (usage.overlay does).
 */
interface CachedKey {
  row: ReturnType<typeof fromRaw>
  view: ApiKeyView
}

function fromRaw(raw: RawKeyRow) {
  const { role_name, permissions, ...key } = raw
  return {
    key: { ...key, allowed_ips: JSON.parse(key.allowed_ips) as string[] },
    role: { id: key.role_id, name: role_name },
    permissions: JSON.parse(permissions) as string[],
  }
}

function findCached(deps: Deps, id: number): CachedKey {
  const { keyById, cachedById } = statements(deps.db)
  const cached = cachedById(id, () => {
    const raw = keyById.get(id)
    if (!raw) return null
    const row = fromRaw(raw)
    return { row, view: toView(row.key, row.role) }
  })
  if (!cached) throw notFound('API key', id)
  return cached
}

function findKey(deps: Deps, id: number) {
  return findCached(deps, id).row
}

/** Keys can only be managed by actors at least as powerful as the key's role. */
function findManageableKey(deps: Deps, actor: Actor, id: number) {
  const row = findKey(deps, id)
  if (!isSubset(row.permissions, actor.permissions)) throw new AppError('forbidden', 'This key has permissions that your own key does not have.')
  return row
}

/** Creates a key; the value is returned here and never again. */
export function createApiKey(deps: Deps, actor: Actor, input: ApiKeyInput): { view: ApiKeyView; key: string } {
  const role = checkRole(deps, actor, input.role_id)
  const allowed = checkAllowlist(input.allowed_ips ?? [])
  const token = generateToken()
  const now = deps.clock.now()
  const row = deps.db
    .insert(apiKeys)
    .values({
      name: input.name.trim(),
      lookup_id: token.lookupId,
      secret_hash: token.hash,
      role_id: role.id,
      rate_limit: input.rate_limit === undefined ? deps.config.default_rate_limit : input.rate_limit,
      allowed_ips: allowed,
      status: input.status ?? 'active',
      created_at: now,
      updated_at: now,
    })
    .returning()
    .get()
  return { view: toView(row, { id: role.id, name: role.name }), key: token.value }
}

/** One key, deleted or not. */
export function getApiKey(deps: Deps, id: number): ApiKeyView {
  return findCached(deps, id).view
}

export interface ApiKeyFilter {
  page?: number
  per_page?: number
  status?: 'active' | 'inactive'
  role_id?: number
  /** live (default), deleted, or all */
  state?: 'live' | 'deleted' | 'all'
}

/** A page of keys, oldest first. */
export function listApiKeys(deps: Deps, filter: ApiKeyFilter) {
  const conditions: Array<SQL | undefined> = [
    filter.status ? eq(apiKeys.status, filter.status) : undefined,
    filter.role_id ? eq(apiKeys.role_id, filter.role_id) : undefined,
    filter.state === 'all' ? undefined : filter.state === 'deleted' ? isNotNull(apiKeys.deleted_at) : isNull(apiKeys.deleted_at),
  ]
  const where = and(...conditions)
  const { rows, meta } = pageOfRoleHolders(deps, apiKeys, where, filter)
  return { items: rows.map((r) => toView(r.row, r.role)), meta }
}

/** How many keys are not deleted (the first start tells how to create one when there are none). */
export function countLiveKeys(deps: Deps): number {
  return deps.db.select({ n: count() }).from(apiKeys).where(isNull(apiKeys.deleted_at)).get()!.n
}

/**
 * A bridge's key is managed through its bridge (its allowlist mirrors the bridge's, its role
 * is fixed): the key routes refuse to change, delete or restore it (409).
 */
export function assertNotBridgeKey(deps: Deps, id: number): void {
  const bridge = deps.db.$client.query<{ id: number; name: string }, [number]>('SELECT id, name FROM bridges WHERE api_key_id = ?').get(id)
  if (bridge) {
    throw new AppError('conflict', `This key belongs to bridge ${bridge.id} ("${bridge.name}"); change or rotate it through /api/v2/bridges/${bridge.id}.`)
  }
}

/** Changes name, role, limit, allowlist or status without changing the key value. */
export function updateApiKey(deps: Deps, actor: Actor, id: number, input: Partial<ApiKeyInput>): ApiKeyView {
  const current = findManageableKey(deps, actor, id)
  if (current.key.deleted_at !== null) throw new AppError('conflict', 'The key is deleted; restore it before changing it.')
  const patch: Partial<KeyRow> = { updated_at: deps.clock.now() }
  if (input.name !== undefined) patch.name = input.name.trim()
  if (input.role_id !== undefined) patch.role_id = checkRole(deps, actor, input.role_id).id
  if (input.rate_limit !== undefined) patch.rate_limit = input.rate_limit
  if (input.allowed_ips !== undefined) patch.allowed_ips = checkAllowlist(input.allowed_ips)
  if (input.status !== undefined) patch.status = input.status
  deps.db.update(apiKeys).set(patch).where(eq(apiKeys.id, id)).run()
  return getApiKey(deps, id)
}

/** Soft delete: the key stops working at once and can be restored. */
export function deleteApiKey(deps: Deps, actor: Actor, id: number): ApiKeyView {
  const current = findManageableKey(deps, actor, id)
  if (current.key.deleted_at === null) {
    const now = deps.clock.now()
    deps.db.update(apiKeys).set({ deleted_at: now, updated_at: now }).where(eq(apiKeys.id, id)).run()
  }
  return getApiKey(deps, id)
}

/** Undoes a soft delete; the key works again with its old value. */
export function restoreApiKey(deps: Deps, actor: Actor, id: number): ApiKeyView {
  const current = findManageableKey(deps, actor, id)
  if (current.key.deleted_at === null) throw new AppError('conflict', 'The key is not deleted.')
  deps.db.update(apiKeys).set({ deleted_at: null, updated_at: deps.clock.now() }).where(eq(apiKeys.id, id)).run()
  return getApiKey(deps, id)
}

/** What the authentication layer needs to know about a presented key. */
export interface KeyIdentity {
  id: number
  name: string
  status: 'active' | 'inactive'
  deleted: boolean
  rate_limit: number | null
  allow: IpRule[] | null
  permissions: readonly string[]
}

/**
 * Resolves a presented key value, or null when it is not a key of ours. Identities are
 * cached by lookup id; the cache is valid while the `access_version` counter is unchanged.
 * Triggers (migration 0001) bump that counter on every change to a key or a role's
 * permissions, from any code path or process, so a change applies to the very next request
 * while a request costs one primary-key read instead of a join, and no read at all while no
 * transaction has committed since the last one (db/commit-counter.ts). Only real keys are
 * cached, so random tokens cannot grow the cache.
 */
export function createKeyResolver(deps: Deps): (value: string) => KeyIdentity | null {
  const byLookup = statements(deps.db).keyByLookup
  const versionQuery = deps.db.$client.prepare<{ value: string }, []>("SELECT value FROM system_state WHERE key = 'access_version'")
  // While no transaction has committed since it was read, the version cannot have changed.
  const keptVersion = createReadCache<string | undefined>(deps.db, 1)
  const cache = new Map<string, { identity: KeyIdentity; hash: Uint8Array }>()
  let cachedVersion: string | undefined

  return (value) => {
    const parsed = parseToken(value)
    if (!parsed) return null
    const version = keptVersion('access_version', () => versionQuery.get()?.value)
    if (version === undefined || version !== cachedVersion) {
      cache.clear()
      cachedVersion = version
    }
    let entry = cache.get(parsed.lookupId)
    if (!entry) {
      const raw = byLookup.get(parsed.lookupId)
      if (!raw) return null
      const row = fromRaw(raw)
      entry = {
        hash: Buffer.from(row.key.secret_hash, 'hex'),
        identity: {
          id: row.key.id,
          name: row.key.name,
          status: row.key.status,
          deleted: row.key.deleted_at !== null,
          rate_limit: row.key.rate_limit,
          allow: row.key.allowed_ips.length ? compileAllowlist(row.key.allowed_ips).rules : null,
          permissions: row.permissions,
        },
      }
      if (version !== undefined) cache.set(parsed.lookupId, entry)
    }
    return tokenMatches(value, entry.hash) ? entry.identity : null
  }
}

/**
 * Last-access bookkeeping. Writing a row on every request would cap the API at the disk's
 * commit rate, so uses are kept in memory and written in one transaction per flush (every
 * second, and at shutdown); reads through the API overlay the pending ones. The server's
 * flush every second joins the group commit (`flushGrouped`): in a transaction of its own it
 * was a blocking fsync on the server's thread every second.
 */
export function createUsageRecorder(deps: Deps) {
  const pending = new Map<number, { at: number; ip: string | null; batch: number }>()
  /** Counts writes begun: a use recorded in an earlier batch asks for the address again. */
  let batch = 0
  const update = deps.db
    .update(apiKeys)
    .set({ last_used_at: sql`max(coalesce(${apiKeys.last_used_at}, 0), ${sql.placeholder('at')})`, last_used_ip: sql`${sql.placeholder('ip')}` })
    .where(eq(apiKeys.id, sql.placeholder('id')))
    .prepare()
  /**
   * The pending uses as they stand: `write` stores them inside the caller's transaction, and
   * `written` then forgets those not replaced meanwhile. Until then reads keep overlaying them.
   */
  const take = () => {
    if (pending.size === 0) return null
    const uses = [...pending]
    batch++
    return {
      write: () => {
        for (const [id, use] of uses) update.run({ id, at: use.at, ip: use.ip })
      },
      written: () => {
        for (const [id, use] of uses) if (pending.get(id) === use) pending.delete(id)
      },
    }
  }
  return {
    /**
     * A use of a key at `at`. The address is asked for once per batch of a key's uses (the
     * first call since the last write began), not per call: reading it is a system call per
     * request (issue 18), so last_used_ip is the address of the first call in each batch.
     * A new object each time, so a use recorded while a write runs is kept for the next one.
     */
    record(keyId: number, at: number, address: () => string | null): void {
      const use = pending.get(keyId)
      pending.set(keyId, { at, ip: use && use.batch === batch ? use.ip : address(), batch })
    },
    /** A view with the last use that is not written yet, so reads are current without a write. */
    overlay(view: ApiKeyView): ApiKeyView {
      const use = pending.get(view.id)
      return use ? { ...view, last_used_at: toIso(use.at), last_used_ip: use.ip } : view
    },
    /** Writes the pending uses now, in a transaction of their own (shutdown, tests). */
    flush(): void {
      const uses = take()
      if (!uses) return
      deps.db.$client.transaction(uses.write)()
      uses.written()
    },
    /** Writes the pending uses in the next group commit. */
    async flushGrouped(): Promise<void> {
      const uses = take()
      if (!uses) return
      await deps.commits.run(uses.write)
      uses.written()
    },
  }
}
export type UsageRecorder = ReturnType<typeof createUsageRecorder>
