import { randomBytes } from 'node:crypto'
import { asc, count, eq, inArray } from 'drizzle-orm'
import { bridges, roles } from '../../db/schema'
import type { Deps } from '../../deps'
import { findById, columnsOf, timestampsOf } from '../../db/crud'
import { hashToken, tokenPrefix } from '../../lib/api-key-token'
import { normaliseDomain } from '../../lib/email'
import { AppError, invalidField, type ErrorDetails } from '../../lib/errors'
import { compileAllowlist } from '../../lib/ip-allowlist'
import { pageMeta, pageRequest } from '../../lib/pagination'
import { PUBLIC_HOST_NAME_PLACEHOLDER, publicHostNameWarning } from '../../lib/public-host-name'
import { createApiKey, deleteApiKey, getApiKey, updateApiKey } from '../api-keys/service'
import { poolExists } from '../ip-pools/service'
import { isSubset } from '../permissions/service'
import { CLI_ACTOR, type Actor } from '../roles/service'
import { findSendingDomain } from '../sending-domains/service'
import { invalidateBridgeIdentities } from './identity'
import type { BridgeInput, BridgeSecrets, BridgeView } from './model'
import { bridgeCounts, bridgeUsage } from './quotas'

/**
 * Bridges (issue 5): one application's way in. A bridge holds SMTP credentials for the
 * submission listener and its own API key for the per-application send endpoint, and
 * fixes what that application may do: its From domains, the pool or node its mail leaves
 * through, hourly and daily quotas, and an IP allowlist (kept identical on its API key, so
 * the HTTP auth layer enforces it without knowing about bridges).
 */

type Row = typeof bridges.$inferSelect

/** What a bridge's API key may do: send, and read what it sent. */
export const BRIDGE_PERMISSIONS = ['transactional.read', 'transactional.send'] as const
/** The built-in role of bridge keys; built-in roles cannot be edited or deleted through the API. */
export const BRIDGE_ROLE = 'Bridge'

// This file is the resource: CRUD and credential rotation. Who a bridge is (for SMTP AUTH and
// the send path) is identity.ts; its quotas and running totals, quotas.ts; schemas, model.ts.

function prefixOf(deps: Deps, keyId: number | null): string | null {
  if (keyId === null) return null
  const row = deps.db.$client.query('SELECT lookup_id FROM api_keys WHERE id = ?').get(keyId) as { lookup_id: string } | null
  return row ? tokenPrefix(row.lookup_id) : null
}

function toView(deps: Deps, r: Row): BridgeView {
  return {
    ...columnsOf(r, ['id', 'name', 'smtp_username', 'api_key_id']),
    api_key_prefix: prefixOf(deps, r.api_key_id),
    ...columnsOf(r, ['domains', 'pool_id', 'node_id', 'hourly_quota', 'daily_quota', 'allowed_ips', 'track_opens', 'track_clicks', 'active', 'send_dsn']),
    counts: bridgeCounts(deps.db, r.id),
    usage: bridgeUsage(deps, r.id),
    ...timestampsOf(r),
  }
}

function findRow(deps: Deps, id: number): Row {
  return findById(deps.db, bridges, id, 'bridge')
}

function assertNameFree(deps: Deps, name: string, exceptId?: number): void {
  const clash = deps.db.select({ id: bridges.id }).from(bridges).where(eq(bridges.name, name)).get()
  if (clash && clash.id !== exceptId) throw new AppError('conflict', `A bridge named "${name}" already exists.`)
}

/** Each domain must be a sending domain (verified or not: sending still needs it verified unless allow_unverified_domains). */
function checkDomains(deps: Deps, domains: string[]): string[] {
  const details: ErrorDetails = {}
  const out: string[] = []
  domains.forEach((d, i) => {
    const name = normaliseDomain(d)
    if (!name) (details[`domains.${i}`] ??= []).push(`"${d}" is not a domain name`)
    else if (!findSendingDomain(deps, name))
      (details[`domains.${i}`] ??= []).push(`${name} is not a sending domain; add it under /api/v2/sending-domains first`)
    else if (!out.includes(name)) out.push(name)
  })
  if (Object.keys(details).length) throw new AppError('validation_failed', 'The request data is invalid.', details)
  return out
}

/** The same rules and messages as API key allowlists. */
function checkAllowlist(entries: string[]): string[] {
  const trimmed = entries.map((e) => e.trim())
  const { errors } = compileAllowlist(trimmed)
  if (errors.length) throw new AppError('validation_failed', 'The request data is invalid.', { allowed_ips: errors })
  return [...new Set(trimmed)]
}

function checkRouting(deps: Deps, input: { pool_id?: number | null; node_id?: number | null }): void {
  if (input.pool_id != null && !poolExists(deps, input.pool_id)) throw invalidField('pool_id', `no IP pool with id ${input.pool_id}`)
  if (input.node_id != null && !deps.db.$client.query('SELECT id FROM sending_nodes WHERE id = ?').get(input.node_id))
    throw invalidField('node_id', `no sending node with id ${input.node_id}`)
}

/** New credentials put sending rights in someone's hands: only a caller who holds them may mint them (no privilege escalation). */
function assertMayMint(actor: Actor): void {
  if (!isSubset(BRIDGE_PERMISSIONS, actor.permissions)) {
    throw new AppError(
      'forbidden',
      `A bridge's credentials may send and read messages (${BRIDGE_PERMISSIONS.join(', ')}); your own key lacks some of these permissions, so it cannot create or rotate them.`,
    )
  }
}

/** The built-in role of bridge keys, created on first use. */
function bridgeRoleId(deps: Deps): number {
  const found = deps.db.$client.query('SELECT id, builtin FROM roles WHERE lower(name) = lower(?)').get(BRIDGE_ROLE) as { id: number; builtin: number } | null
  if (found) {
    if (!found.builtin)
      throw new AppError('conflict', `A custom role is named "${BRIDGE_ROLE}", the name of the built-in role of bridge keys; rename it first.`)
    return found.id
  }
  const now = deps.clock.now()
  return deps.db
    .insert(roles)
    .values({
      name: BRIDGE_ROLE,
      description: 'Built-in role of bridge API keys: send and read transactional messages.',
      permissions: [...BRIDGE_PERMISSIONS],
      builtin: true,
      created_at: now,
      updated_at: now,
    })
    .returning({ id: roles.id })
    .get().id
}

const keyName = (bridgeName: string) => `Bridge: ${bridgeName}`

/** A new API key for a bridge, with the bridge's allowlist; the caller must already have passed assertMayMint. */
function mintKey(deps: Deps, bridgeName: string, allowedIps: string[]): { id: number; key: string } {
  // The internal actor: the caller's right to hand out these grants was checked by assertMayMint.
  const { view, key } = createApiKey(deps, CLI_ACTOR, { name: keyName(bridgeName), role_id: bridgeRoleId(deps), allowed_ips: allowedIps })
  return { id: view.id, key }
}

/** Revokes a bridge's key at once: inactive and soft-deleted, so even a restore through /api/v2/api-keys does not bring it back to life. */
function revokeKey(deps: Deps, keyId: number | null): void {
  if (keyId === null) return
  const key = getApiKey(deps, keyId)
  if (key.deleted_at === null) {
    updateApiKey(deps, CLI_ACTOR, keyId, { status: 'inactive' })
    deleteApiKey(deps, CLI_ACTOR, keyId)
  }
}

/** Keeps the bridge's key named after it and its allowlist equal to the bridge's (the auth layer enforces that one). */
function syncKey(deps: Deps, keyId: number | null, patch: { name?: string; allowed_ips?: string[] }): void {
  if (keyId === null || (patch.name === undefined && patch.allowed_ips === undefined)) return
  if (getApiKey(deps, keyId).deleted_at !== null) return
  updateApiKey(deps, CLI_ACTOR, keyId, {
    ...(patch.name !== undefined && { name: keyName(patch.name) }),
    ...(patch.allowed_ips && { allowed_ips: patch.allowed_ips }),
  })
}

function newPassword(): { password: string; hash: string } {
  const password = randomBytes(32).toString('base64url')
  return { password, hash: hashToken(password) }
}

function smtpSecrets(deps: Deps, username: string, password: string): NonNullable<BridgeSecrets['smtp']> {
  const listen = deps.config.smtp_listen ?? deps.config.smtp_tls_listen
  // A host name nobody can resolve is no host to give an application: a marked placeholder and why.
  const warning = publicHostNameWarning(deps.config.hostname)
  const host = warning ? PUBLIC_HOST_NAME_PLACEHOLDER : deps.config.hostname
  return { host, port: listen?.port ?? null, username, password, ...(warning && { warning }) }
}

/** Creates a bridge with its SMTP credentials and API key; both secrets are in this answer only. */
export function createBridge(deps: Deps, actor: Actor, input: BridgeInput): { bridge: BridgeView; secrets: Required<BridgeSecrets> } {
  assertMayMint(actor)
  const name = input.name.trim()
  assertNameFree(deps, name)
  const domains = checkDomains(deps, input.domains)
  const allowed = checkAllowlist(input.allowed_ips ?? [])
  checkRouting(deps, input)
  const username = `br_${randomBytes(12).toString('hex')}`
  const { password, hash } = newPassword()
  const now = deps.clock.now()
  const { row, key } = deps.db.$client.transaction(() => {
    const key = mintKey(deps, name, allowed)
    const row = deps.db
      .insert(bridges)
      .values({
        name,
        smtp_username: username,
        smtp_password_hash: hash,
        api_key_id: key.id,
        domains,
        pool_id: input.pool_id ?? null,
        node_id: input.node_id ?? null,
        hourly_quota: input.hourly_quota ?? null,
        daily_quota: input.daily_quota ?? null,
        allowed_ips: allowed,
        track_opens: input.track_opens ?? false,
        track_clicks: input.track_clicks ?? false,
        active: input.active ?? true,
        send_dsn: input.send_dsn ?? true,
        created_at: now,
        updated_at: now,
      })
      .returning()
      .get()
    return { row, key }
  })()
  invalidateBridgeIdentities(deps.db)
  return { bridge: toView(deps, row), secrets: { smtp: smtpSecrets(deps, username, password), api_key: key.key } }
}

export function getBridge(deps: Deps, id: number): BridgeView {
  return toView(deps, findRow(deps, id))
}

/** A page of bridges, oldest first. */
export function listBridges(deps: Deps, query: { page?: number; per_page?: number }) {
  const req = pageRequest(query)
  const total = deps.db.select({ n: count() }).from(bridges).get()!.n
  const rows = deps.db.select().from(bridges).orderBy(asc(bridges.id)).limit(req.per_page).offset(req.offset).all()
  return { items: rows.map((r) => toView(deps, r)), meta: pageMeta(req, total) }
}

/** Changes everything but the credentials; the key's name and allowlist follow. */
export function updateBridge(deps: Deps, id: number, input: Partial<BridgeInput>): BridgeView {
  const current = findRow(deps, id)
  const patch: Partial<Row> = { updated_at: deps.clock.now() }
  if (input.name !== undefined) {
    patch.name = input.name.trim()
    assertNameFree(deps, patch.name, id)
  }
  if (input.domains !== undefined) patch.domains = checkDomains(deps, input.domains)
  if (input.allowed_ips !== undefined) patch.allowed_ips = checkAllowlist(input.allowed_ips)
  checkRouting(deps, input)
  if (input.pool_id !== undefined) patch.pool_id = input.pool_id
  if (input.node_id !== undefined) patch.node_id = input.node_id
  if (input.hourly_quota !== undefined) patch.hourly_quota = input.hourly_quota
  if (input.daily_quota !== undefined) patch.daily_quota = input.daily_quota
  if (input.track_opens !== undefined) patch.track_opens = input.track_opens
  if (input.track_clicks !== undefined) patch.track_clicks = input.track_clicks
  if (input.active !== undefined) patch.active = input.active
  if (input.send_dsn !== undefined) patch.send_dsn = input.send_dsn
  deps.db.$client.transaction(() => {
    deps.db.update(bridges).set(patch).where(eq(bridges.id, id)).run()
    syncKey(deps, current.api_key_id, { name: patch.name, allowed_ips: patch.allowed_ips })
  })()
  invalidateBridgeIdentities(deps.db)
  return getBridge(deps, id)
}

/** Deletes bridges with their usage and counters, and revokes their API keys, in one transaction. */
export function deleteBridges(deps: Deps, ids: number[]): { deleted: number[]; not_found: number[] } {
  const unique = [...new Set(ids)]
  const found = unique.length ? deps.db.select({ id: bridges.id, api_key_id: bridges.api_key_id }).from(bridges).where(inArray(bridges.id, unique)).all() : []
  if (found.length) {
    deps.db.$client.transaction(() => {
      for (const b of found) revokeKey(deps, b.api_key_id)
      deps.db
        .delete(bridges)
        .where(
          inArray(
            bridges.id,
            found.map((b) => b.id),
          ),
        )
        .run()
    })()
    invalidateBridgeIdentities(deps.db)
  }
  const deletedIds = found.map((b) => b.id)
  return { deleted: deletedIds, not_found: unique.filter((id) => !deletedIds.includes(id)) }
}

/**
 * New SMTP password and/or new API key (default both), shown in this answer only. The old
 * ones stop working at once: the password hash is replaced and the old key revoked in the
 * same transaction, and the identity caches are cleared.
 */
export function rotateBridgeCredentials(
  deps: Deps,
  actor: Actor,
  id: number,
  input: { smtp?: boolean; api_key?: boolean },
): { bridge: BridgeView; secrets: BridgeSecrets } {
  const row = findRow(deps, id)
  assertMayMint(actor)
  const smtp = input.smtp ?? true
  const apiKey = input.api_key ?? true
  if (!smtp && !apiKey) throw invalidField('smtp', 'smtp or api_key must be true: nothing to rotate')
  const secrets: BridgeSecrets = {}
  deps.db.$client.transaction(() => {
    const patch: Partial<Row> = { updated_at: deps.clock.now() }
    if (smtp) {
      const { password, hash } = newPassword()
      patch.smtp_password_hash = hash
      secrets.smtp = smtpSecrets(deps, row.smtp_username, password)
    }
    if (apiKey) {
      revokeKey(deps, row.api_key_id)
      const key = mintKey(deps, row.name, row.allowed_ips)
      patch.api_key_id = key.id
      secrets.api_key = key.key
    }
    deps.db.update(bridges).set(patch).where(eq(bridges.id, id)).run()
  })()
  invalidateBridgeIdentities(deps.db)
  return { bridge: getBridge(deps, id), secrets }
}
