import { asc, count, eq, sql, type SQL } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { assertNameFree, columnsOf, timestampsOf } from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import { admins, apiKeys, roles } from '../../db/schema'
import { AppError, notFound } from '../../lib/errors'
import { pageMeta, pageRequest, type PageMeta } from '../../lib/pagination'
import { ALL, isPermission, isSubset } from '../permissions/service'
import type { RoleView } from './model'

export const ADMINISTRATOR = 'Administrator'

export type RoleRow = typeof roles.$inferSelect

/** Whoever acts: an API key or a console administrator with its role's grants, or the command line with every grant. */
export interface Actor {
  key_id: number | null
  /** The administrator signed in to the console (issue 14); absent for keys and the command line. */
  admin_id?: number | null
  name: string
  permissions: readonly string[]
}

export const CLI_ACTOR: Actor = { key_id: null, name: 'command line', permissions: [ALL] }

/**
 * A role's live keys, through api_keys_role_id_idx: a correlated count written out with its
 * names qualified by hand, because drizzle renders a single-table select's columns
 * unqualified, so `roles.id` inside a drizzle subquery over api_keys meant api_keys.id (issue
 * 13). For one role 5-7 µs an execution, where a grouped join took 16-21 µs (issue 18,
 * docs/benchmarks.md sixteenth round).
 */
const liveKeyCount = sql<number>`(SELECT count(*) FROM "api_keys" AS k WHERE k."role_id" = "roles"."id" AND k."deleted_at" IS NULL)`

const statements = preparedFor((db) => ({
  roleById: db
    .select({ role: roles, key_count: liveKeyCount })
    .from(roles)
    .where(eq(roles.id, sql.placeholder('id')))
    .prepare(),
  roleRowById: db
    .select()
    .from(roles)
    .where(eq(roles.id, sql.placeholder('id')))
    .prepare(),
}))

/** A role as the records that hold one (API keys, administrators) show it. */
export interface RoleRef {
  id: number
  name: string
}

/**
 * A page of the records that hold a role (API keys or administrators), oldest first, each
 * with its role's id and name from the same query; `where` filters the page and the total.
 */
export function pageOfRoleHolders<T extends typeof apiKeys | typeof admins>(
  deps: Deps,
  table: T,
  where: SQL | undefined,
  query: { page?: number; per_page?: number },
): { rows: Array<{ row: T['$inferSelect']; role: RoleRef }>; meta: PageMeta } {
  const req = pageRequest(query)
  const holders = table as typeof apiKeys
  const total = deps.db.select({ n: count() }).from(holders).where(where).get()!.n
  const rows = deps.db
    .select({ row: holders, role: { id: roles.id, name: roles.name } })
    .from(holders)
    .innerJoin(roles, eq(roles.id, holders.role_id))
    .where(where)
    .orderBy(asc(holders.id))
    .limit(req.per_page)
    .offset(req.offset)
    .all()
  return { rows: rows as Array<{ row: T['$inferSelect']; role: RoleRef }>, meta: pageMeta(req, total) }
}

function toView(row: RoleRow, key_count: number): RoleView {
  return { ...columnsOf(row, ['id', 'name', 'description', 'permissions', 'builtin']), key_count, ...timestampsOf(row) }
}

/** Creates the built-in Administrator role (every permission, now and later) if it is missing. */
export function ensureBuiltinRoles(deps: Deps): void {
  const now = deps.clock.now()
  deps.db
    .insert(roles)
    .values({
      name: ADMINISTRATOR,
      description: 'Every permission, including those added by later versions.',
      permissions: [ALL],
      builtin: true,
      created_at: now,
      updated_at: now,
    })
    .onConflictDoNothing()
    .run()
}

function validatePermissions(permissions: readonly string[], actor: Actor): string[] {
  const unknown = permissions.filter((p) => p !== ALL && !isPermission(p))
  if (unknown.length) {
    throw new AppError('validation_failed', 'The request data is invalid.', {
      permissions: unknown.map((p) => `"${p}" is not a permission; GET /api/v2/permissions lists them`),
    })
  }
  if (!isSubset(permissions, actor.permissions)) {
    throw new AppError('forbidden', 'A role cannot grant permissions that your own key does not have.')
  }
  return [...new Set(permissions)].sort()
}

function findRow(deps: Deps, id: number): RoleRow {
  const row = statements(deps.db).roleRowById.get({ id })
  if (!row) throw notFound('role', id)
  return row
}

/** Role names are unique whatever their case. */
function assertRoleNameFree(deps: Deps, name: string, exceptId?: number): void {
  assertNameFree(deps.db, roles, roles.name, name, { exceptId, caseInsensitive: true, message: `A role named "${name}" already exists.` })
}

function assertEditable(row: RoleRow): void {
  if (row.builtin) throw new AppError('conflict', `The built-in ${row.name} role cannot be changed or deleted.`)
}

/** One role with its count of live keys. */
export function getRole(deps: Deps, id: number): RoleView {
  const row = statements(deps.db).roleById.get({ id })
  if (!row) throw notFound('role', id)
  return toView(row.role, row.key_count)
}

/** Finds a role by name, case-insensitively (used by the command line). */
export function findRoleByName(deps: Deps, name: string): RoleRow | undefined {
  return deps.db
    .select()
    .from(roles)
    .where(sql`lower(${roles.name}) = lower(${name})`)
    .get()
}

/** A page of roles, oldest first. */
export function listRoles(deps: Deps, query: { page?: number; per_page?: number }) {
  const req = pageRequest(query)
  const total = deps.db.select({ n: count() }).from(roles).get()!.n
  const rows = deps.db.select({ role: roles, key_count: liveKeyCount }).from(roles).orderBy(asc(roles.id)).limit(req.per_page).offset(req.offset).all()
  return { items: rows.map((r) => toView(r.role, r.key_count)), meta: pageMeta(req, total) }
}

/** Creates a custom role; it may only grant what the actor holds. */
export function createRole(deps: Deps, actor: Actor, input: { name: string; description?: string; permissions: string[] }): RoleView {
  const permissions = validatePermissions(input.permissions, actor)
  const name = input.name.trim()
  assertRoleNameFree(deps, name)
  const now = deps.clock.now()
  const row = deps.db
    .insert(roles)
    .values({ name, description: input.description ?? '', permissions, builtin: false, created_at: now, updated_at: now })
    .returning()
    .get()
  return toView(row, 0)
}

/** Changes a custom role; its keys see the change on their next request. */
export function updateRole(deps: Deps, actor: Actor, id: number, input: { name?: string; description?: string; permissions?: string[] }): RoleView {
  const row = findRow(deps, id)
  assertEditable(row)
  // Editing a role more powerful than yourself would let you strip or hand out grants you lack.
  if (!isSubset(row.permissions, actor.permissions)) throw new AppError('forbidden', 'This role has permissions that your own key does not have.')
  const patch: Partial<RoleRow> = { updated_at: deps.clock.now() }
  if (input.name !== undefined) {
    patch.name = input.name.trim()
    assertRoleNameFree(deps, patch.name, id)
  }
  if (input.description !== undefined) patch.description = input.description
  if (input.permissions !== undefined) patch.permissions = validatePermissions(input.permissions, actor)
  deps.db.update(roles).set(patch).where(eq(roles.id, id)).run()
  return getRole(deps, id)
}

/** Deletes a custom role that no key (live or soft-deleted) is bound to. */
export function deleteRole(deps: Deps, actor: Actor, id: number): RoleView {
  const row = findRow(deps, id)
  assertEditable(row)
  if (!isSubset(row.permissions, actor.permissions)) throw new AppError('forbidden', 'This role has permissions that your own key does not have.')
  const bound = deps.db.select({ n: count() }).from(apiKeys).where(eq(apiKeys.role_id, id)).get()!.n
  if (bound > 0) throw new AppError('conflict', `The role is bound to ${bound} API key(s), including deleted ones; move them to another role first.`)
  const people = deps.db.select({ n: count() }).from(admins).where(eq(admins.role_id, id)).get()!.n
  if (people > 0) throw new AppError('conflict', `The role is held by ${people} administrator(s); give them another role first.`)
  deps.db.delete(roles).where(eq(roles.id, id)).run()
  return toView(row, 0)
}
