import { and, eq, lte, or, lt } from 'drizzle-orm'
import type { Deps } from '../../deps'
import { preparedFor } from '../../db/prepared'
import { adminSessions } from '../../db/schema'
import { randomToken, sha256 } from './service'

/** Who a live session belongs to: what the auth layer needs on each console request. */
export interface SessionIdentity {
  /** SHA-256 of the cookie value: the session's key. */
  hash: string
  admin_id: number
  email: string
  role: { id: number; name: string }
  permissions: readonly string[]
  csrf_token: string
}

interface RawSession {
  token_hash: string
  admin_id: number
  csrf_token: string
  last_seen_at: number
  expires_at: number
  email: string
  status: string
  role_id: number
  role_name: string
  permissions: string
}

// last_seen_at is written at most once a minute per session: the idle expiry counts in
// minutes, and a write on every console request would cost a commit each.
const TOUCH_EVERY_MS = 60_000

/** One read per console request, prepared once (src/db/prepared.ts). */
const statements = preparedFor((db) => ({
  byHash: db.$client.prepare<RawSession, [string]>(
    `SELECT s.token_hash, s.admin_id, s.csrf_token, s.last_seen_at, s.expires_at, a.email, a.status, a.role_id, r.name AS role_name, r.permissions
     FROM admin_sessions s JOIN admins a ON a.id = s.admin_id JOIN roles r ON r.id = a.role_id WHERE s.token_hash = ?`,
  ),
  touch: db.$client.prepare<unknown, [number, string]>('UPDATE admin_sessions SET last_seen_at = ? WHERE token_hash = ?'),
  remove: db.$client.prepare<unknown, [string]>('DELETE FROM admin_sessions WHERE token_hash = ?'),
}))

const idleMs = (deps: Deps) => deps.config.admin_session_idle_minutes * 60_000

/**
 * Starts a session: the cookie value (returned once, stored only as its SHA-256) and the
 * CSRF token the console sends back on changes. Ended sessions are swept here, so the
 * table holds only live ones and a few dead ones at most.
 */
export function createSession(deps: Deps, adminId: number, client: { ip: string | null; userAgent: string | null }): { token: string; hash: string } {
  const now = deps.clock.now()
  deps.db
    .delete(adminSessions)
    .where(or(lte(adminSessions.expires_at, now), and(eq(adminSessions.admin_id, adminId), lt(adminSessions.last_seen_at, now - idleMs(deps)))))
    .run()
  const token = randomToken()
  const hash = sha256(token)
  deps.db
    .insert(adminSessions)
    .values({
      token_hash: hash,
      admin_id: adminId,
      csrf_token: randomToken(),
      created_at: now,
      last_seen_at: now,
      expires_at: now + deps.config.admin_session_max_hours * 3_600_000,
      ip: client.ip,
      user_agent: client.userAgent?.slice(0, 500) ?? null,
    })
    .run()
  return { token, hash }
}

/**
 * The live session a cookie names, or null: unknown, idle longer than
 * admin_session_idle_minutes, past admin_session_max_hours, or its administrator disabled.
 * An ended session is deleted on sight. A live one is marked seen (at most once a minute).
 */
export function resolveSession(deps: Deps, token: string): SessionIdentity | null {
  const st = statements(deps.db)
  const hash = sha256(token)
  const row = st.byHash.get(hash)
  if (!row) return null
  const now = deps.clock.now()
  if (now >= row.expires_at || now - row.last_seen_at >= idleMs(deps)) {
    st.remove.run(hash)
    return null
  }
  if (row.status !== 'active') return null
  if (now - row.last_seen_at >= TOUCH_EVERY_MS) st.touch.run(now, hash)
  return {
    hash,
    admin_id: row.admin_id,
    email: row.email,
    role: { id: row.role_id, name: row.role_name },
    permissions: JSON.parse(row.permissions) as string[],
    csrf_token: row.csrf_token,
  }
}

/** Ends a session (sign-out). */
export function deleteSession(deps: Deps, hash: string): void {
  statements(deps.db).remove.run(hash)
}
