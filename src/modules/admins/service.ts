import { createHash, randomBytes } from 'node:crypto'
import { and, count, eq, gt, sql, type SQL } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { adminSessions, adminSetupTokens, admins, roles } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { checkEmail } from '../../lib/email'
import { AppError, invalidField, notFound } from '../../lib/errors'
import type { PageMeta } from '../../lib/pagination'
import { ALL, isSubset } from '../permissions/service'
import { ADMINISTRATOR, pageOfRoleHolders, type Actor } from '../roles/service'
import { MIN_PASSWORD_LENGTH, type AdminView } from './model'

type AdminRow = typeof admins.$inferSelect
type Status = AdminRow['status']

/** How long the setup link printed at start stays valid. */
export const SETUP_TOKEN_TTL_MS = 60 * 60 * 1000

/** SHA-256 hex: how session and setup tokens (256 random bits each) are stored. */
export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex')
}

/** A new random token: 32 bytes, base64url. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url')
}

/** argon2id, as the issue asks (Bun's defaults: 64 MiB, 2 passes). */
export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: 'argon2id' })
}

/** The rules the API's schema states, for the paths that do not pass through it (the command line). */
export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `must be at least ${MIN_PASSWORD_LENGTH} characters long`
  if (password.length > 1000) return 'must be at most 1,000 characters long'
  return null
}

function checkPassword(password: string): string {
  const problem = passwordProblem(password)
  if (problem) throw invalidField('password', problem)
  return password
}

function checkAdminEmail(input: string): string {
  const r = checkEmail(input)
  if (!r.ok) throw invalidField('email', r.error)
  return r.email
}

function toView(row: AdminRow, role: { id: number; name: string }): AdminView {
  return {
    id: row.id,
    email: row.email,
    role,
    status: row.status,
    last_sign_in_at: toIso(row.last_sign_in_at),
    created_at: toIso(row.created_at)!,
    updated_at: toIso(row.updated_at)!,
  }
}

/** The role an administrator may be given: it must exist and grant nothing the actor lacks. */
function checkRole(deps: Deps, actor: Actor, roleId: number) {
  const role = deps.db.select().from(roles).where(eq(roles.id, roleId)).get()
  if (!role) throw invalidField('role_id', `No role with id ${roleId}.`)
  if (!isSubset(role.permissions, actor.permissions))
    throw new AppError('forbidden', 'An administrator cannot be given a role with permissions that you do not have.')
  return role
}

function findRow(deps: Deps, id: number) {
  const row = deps.db.select({ admin: admins, role: roles }).from(admins).innerJoin(roles, eq(roles.id, admins.role_id)).where(eq(admins.id, id)).get()
  if (!row) throw notFound('administrator', id)
  return row
}

/** Administrators who hold every permission and may sign in: the console must always keep one. */
function countActiveFullAdmins(deps: Deps): number {
  return deps.db
    .select({ n: count() })
    .from(admins)
    .innerJoin(roles, eq(roles.id, admins.role_id))
    .where(and(eq(admins.status, 'active'), sql`${roles.permissions} = ${JSON.stringify([ALL])}`))
    .get()!.n
}

const holdsAll = (permissions: readonly string[]) => permissions.includes(ALL)

/** Refuses a change that would leave no active administrator holding every permission. */
function assertNotLastFullAdmin(
  deps: Deps,
  row: { admin: AdminRow; role: { permissions: string[] } },
  after: { status: Status; permissions: readonly string[] } | null,
) {
  const isFull = row.admin.status === 'active' && holdsAll(row.role.permissions)
  const staysFull = after !== null && after.status === 'active' && holdsAll(after.permissions)
  if (isFull && !staysFull && countActiveFullAdmins(deps) <= 1)
    throw new AppError(
      'conflict',
      `This is the last active administrator with every permission (the ${ADMINISTRATOR} role); add another before you change or delete it.`,
    )
}

/** Whether any administrator exists (the console's first-run setup is needed while none does). */
export function countAdmins(deps: Deps): number {
  return deps.db.select({ n: count() }).from(admins).get()!.n
}

/** One administrator. */
export function getAdmin(deps: Deps, id: number): AdminView {
  const row = findRow(deps, id)
  return toView(row.admin, { id: row.role.id, name: row.role.name })
}

/** A page of administrators, oldest first. */
export function listAdmins(
  deps: Deps,
  filter: { page?: number; per_page?: number; status?: Status; role_id?: number },
): { items: AdminView[]; meta: PageMeta } {
  const where = and(filter.status ? eq(admins.status, filter.status) : undefined, filter.role_id !== undefined ? eq(admins.role_id, filter.role_id) : undefined)
  const { rows, meta } = pageOfRoleHolders(deps, admins, where, filter)
  return { items: rows.map((r) => toView(r.row, r.role)), meta }
}

/** Finds an administrator by email, whatever its case. */
export function findAdminByEmail(deps: Deps, email: string): AdminRow | undefined {
  return deps.db
    .select()
    .from(admins)
    .where(sql`lower(${admins.email}) = lower(${email.trim()})`)
    .get()
}

/** Creates an administrator; the role may grant only what the actor holds. */
export async function createAdmin(deps: Deps, actor: Actor, input: { email: string; password: string; role_id: number; status?: Status }): Promise<AdminView> {
  const email = checkAdminEmail(input.email)
  const role = checkRole(deps, actor, input.role_id)
  checkPassword(input.password)
  if (findAdminByEmail(deps, email)) throw new AppError('conflict', `An administrator with the email ${email} already exists.`)
  const password_hash = await hashPassword(input.password)
  const now = deps.clock.now()
  const row = deps.db
    .insert(admins)
    .values({ email, password_hash, role_id: role.id, status: input.status ?? 'active', created_at: now, updated_at: now })
    .returning()
    .get()
  return toView(row, { id: role.id, name: role.name })
}

/**
 * Changes an administrator's role, status or password. A password change or a disable ends
 * the person's other sessions (a stolen session must not outlive the reset); `keepSession`
 * is the hash of the session making the change, which stays.
 */
export async function updateAdmin(
  deps: Deps,
  actor: Actor,
  id: number,
  input: { role_id?: number; status?: Status; password?: string },
  keepSession?: string,
): Promise<AdminView> {
  const row = findRow(deps, id)
  if (!isSubset(row.role.permissions, actor.permissions)) throw new AppError('forbidden', 'This administrator has permissions that you do not have.')
  const role = input.role_id !== undefined ? checkRole(deps, actor, input.role_id) : row.role
  const status = input.status ?? row.admin.status
  if (actor.admin_id === id && status !== 'active') throw new AppError('conflict', 'You cannot disable yourself.')
  assertNotLastFullAdmin(deps, row, { status, permissions: role.permissions })
  const patch: Partial<AdminRow> = { updated_at: deps.clock.now(), role_id: role.id, status }
  if (input.password !== undefined) patch.password_hash = await hashPassword(checkPassword(input.password))
  deps.db.update(admins).set(patch).where(eq(admins.id, id)).run()
  if (input.password !== undefined || status !== 'active') endSessions(deps, id, keepSession)
  return getAdmin(deps, id)
}

/** Deletes an administrator (not yourself, not the last one with every permission); their sessions go with them. */
export function deleteAdmin(deps: Deps, actor: Actor, id: number): AdminView {
  const row = findRow(deps, id)
  if (!isSubset(row.role.permissions, actor.permissions)) throw new AppError('forbidden', 'This administrator has permissions that you do not have.')
  if (actor.admin_id === id) throw new AppError('conflict', 'You cannot delete yourself; ask another administrator.')
  assertNotLastFullAdmin(deps, row, null)
  const view = toView(row.admin, { id: row.role.id, name: row.role.name })
  deps.db.delete(admins).where(eq(admins.id, id)).run()
  return view
}

/** Sets a new password (the command line's reset); every session of the person ends. */
export async function resetAdminPassword(deps: Deps, email: string, password: string): Promise<AdminView> {
  const row = findAdminByEmail(deps, email)
  if (!row) throw new AppError('not_found', `No administrator with the email ${email.trim()}.`)
  const password_hash = await hashPassword(checkPassword(password))
  deps.db.update(admins).set({ password_hash, updated_at: deps.clock.now() }).where(eq(admins.id, row.id)).run()
  endSessions(deps, row.id)
  return getAdmin(deps, row.id)
}

/** Ends every session of an administrator but the one whose hash is `except`. */
export function endSessions(deps: Deps, adminId: number, except?: string): void {
  const where: SQL | undefined = and(eq(adminSessions.admin_id, adminId), except ? sql`${adminSessions.token_hash} <> ${except}` : undefined)
  deps.db.delete(adminSessions).where(where).run()
}

// A hash of a random password, verified against when the email is unknown, so that a wrong
// email costs the same time as a wrong password and answers cannot tell them apart.
let dummyHash: Promise<string> | null = null

/**
 * The administrator whose email and password these are, or null. Disabled accounts are
 * null too: the answer must not reveal which accounts exist or are disabled.
 */
export async function verifyCredentials(deps: Deps, email: string, password: string): Promise<AdminRow | null> {
  const row = findAdminByEmail(deps, email)
  if (!row) {
    dummyHash ??= hashPassword(randomToken())
    await Bun.password.verify(password, await dummyHash)
    return null
  }
  const ok = await Bun.password.verify(password, row.password_hash)
  return ok && row.status === 'active' ? row : null
}

/** Marks a successful sign-in. */
export function recordSignIn(deps: Deps, adminId: number): void {
  deps.db.update(admins).set({ last_sign_in_at: deps.clock.now() }).where(eq(admins.id, adminId)).run()
}

/**
 * A new one-time setup token, replacing any earlier one (the server makes one at each start
 * while no administrator exists). Only its hash is stored; the caller prints the token.
 */
export function issueSetupToken(deps: Deps, ttlMs = SETUP_TOKEN_TTL_MS): { token: string; expires_at: number } {
  const token = randomToken()
  const now = deps.clock.now()
  const expires_at = now + ttlMs
  deps.db.$client.transaction(() => {
    deps.db.delete(adminSetupTokens).run()
    deps.db
      .insert(adminSetupTokens)
      .values({ token_hash: sha256(token), expires_at, created_at: now })
      .run()
  })()
  return { token, expires_at }
}

/**
 * The first administrator, from the setup link: the token must be the current one and
 * unexpired, and no administrator may exist yet. The token is used up in the same
 * transaction that creates the account, so it works once. The role is Administrator.
 */
export async function completeSetup(deps: Deps, input: { token: string; email: string; password: string }): Promise<AdminRow> {
  const email = checkAdminEmail(input.email)
  checkPassword(input.password)
  // Hashed before the transaction (it takes tens of milliseconds); the checks and writes are one step.
  const password_hash = await hashPassword(input.password)
  const now = deps.clock.now()
  return deps.db.$client.transaction(() => {
    if (countAdmins(deps) > 0) throw new AppError('conflict', 'The console is already set up; sign in instead.')
    const used = deps.db
      .delete(adminSetupTokens)
      .where(and(eq(adminSetupTokens.token_hash, sha256(input.token)), gt(adminSetupTokens.expires_at, now)))
      .returning()
      .get()
    if (!used)
      throw new AppError('unauthorized', 'The setup link is not valid or has expired. Restart the server to print a new one, or run mailroom admin create.')
    deps.db.delete(adminSetupTokens).run()
    const role = deps.db.select().from(roles).where(eq(roles.name, ADMINISTRATOR)).get()!
    return deps.db.insert(admins).values({ email, password_hash, role_id: role.id, status: 'active', created_at: now, updated_at: now }).returning().get()
  })()
}
