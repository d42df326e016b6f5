import { randomBytes } from 'node:crypto'
import { asc, count, eq, inArray } from 'drizzle-orm'
import addressparser from 'nodemailer/lib/addressparser'
import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import { bridges, roles } from '../../db/schema'
import type { Deps } from '../../deps'
import { hashToken, tokenMatches, tokenPrefix } from '../../lib/api-key-token'
import { toIso } from '../../lib/clock'
import { checkEmail, domainOf, normaliseDomain } from '../../lib/email'
import { AppError, invalidField, notFound, type ErrorDetails } from '../../lib/errors'
import { compileAllowlist, isAllowed, type IpRule } from '../../lib/ip-allowlist'
import { pageMeta, pageRequest } from '../../lib/pagination'
import { PUBLIC_HOST_NAME_PLACEHOLDER, publicHostNameWarning } from '../../lib/public-host-name'
import { createApiKey, deleteApiKey, getApiKey, updateApiKey } from '../api-keys/service'
import { poolExists } from '../ip-pools/service'
import { isSubset } from '../permissions/catalog'
import { CLI_ACTOR, type Actor } from '../roles/service'
import { findSendingDomain } from '../sending-domains/service'

/**
 * Bridges (issue 5): one application's way in. A bridge holds SMTP credentials for the
 * submission listener and its own API key for the per-application send endpoint, and
 * fixes what that application may do: its From domains, the pool or node its mail leaves
 * through, hourly and daily quotas, and an IP allowlist (kept identical on its API key, so
 * the HTTP auth layer enforces it without knowing about bridges).
 */

type Row = typeof bridges.$inferSelect

const HOUR = 3_600_000
const DAY = 86_400_000

/** What a bridge's API key may do: send, and read what it sent. */
export const BRIDGE_PERMISSIONS = ['transactional.read', 'transactional.send'] as const
/** The built-in role of bridge keys; built-in roles cannot be edited or deleted through the API. */
export const BRIDGE_ROLE = 'Bridge'

/** What the SMTP listener and the send path need to know about a bridge. */
export interface BridgeIdentity {
  id: number
  name: string
  domains: string[]
  pool_id: number | null
  node_id: number | null
  allowed_ips: string[]
  api_key_id: number | null
  active: boolean
  /** Tracking defaults of the bridge's mail (src/modules/tracking trackingChoice). */
  tracking: { track_opens: boolean; track_clicks: boolean }
}

export interface BridgeCounts {
  accepted: number
  delivered: number
  bounced: number
  complained: number
}

export interface BridgeView {
  id: number
  name: string
  smtp_username: string
  api_key_id: number | null
  /** The non-secret start of the bridge's API key, to recognise it. */
  api_key_prefix: string | null
  domains: string[]
  pool_id: number | null
  node_id: number | null
  hourly_quota: number | null
  daily_quota: number | null
  allowed_ips: string[]
  track_opens: boolean
  track_clicks: boolean
  active: boolean
  counts: BridgeCounts
  usage: { this_hour: number; today: number }
  created_at: string
  updated_at: string
}

export interface BridgeInput {
  name: string
  domains: string[]
  pool_id?: number | null
  node_id?: number | null
  hourly_quota?: number | null
  daily_quota?: number | null
  allowed_ips?: string[]
  track_opens?: boolean
  track_clicks?: boolean
  active?: boolean
}

/** Credentials in the one answer that shows them (create, rotate). */
export interface BridgeSecrets {
  smtp?: { host: string; port: number | null; username: string; password: string; warning?: string }
  api_key?: string
}

/** A bridge row as SQLite returns it: JSON columns as text, booleans as integers. */
interface RawRow {
  id: number
  name: string
  smtp_username: string
  smtp_password_hash: string
  api_key_id: number | null
  domains: string
  pool_id: number | null
  node_id: number | null
  allowed_ips: string
  active: number
  track_opens: number
  track_clicks: number
}

const COUNTER_FIELDS = ['accepted', 'delivered', 'bounced', 'complained'] as const
type CounterField = (typeof COUNTER_FIELDS)[number]

const statements = preparedFor((db: Db) => {
  const c = db.$client
  const identityColumns = 'id, name, smtp_username, smtp_password_hash, api_key_id, domains, pool_id, node_id, allowed_ips, active, track_opens, track_clicks'
  // Upserts through a SELECT on bridges, so a count for a bridge deleted meanwhile is a no-op
  // instead of a foreign-key failure that would fail the caller's whole write.
  const counter = (field: CounterField) =>
    c.prepare<never, [number, number]>(
      `INSERT INTO bridge_counters (bridge_id, ${field}) SELECT id, ?1 FROM bridges WHERE id = ?2
       ON CONFLICT (bridge_id) DO UPDATE SET ${field} = ${field} + excluded.${field}`,
    )
  return {
    byUsername: c.prepare<RawRow, [string]>(`SELECT ${identityColumns} FROM bridges WHERE smtp_username = ?`),
    byApiKey: c.prepare<RawRow, [number]>(`SELECT ${identityColumns} FROM bridges WHERE api_key_id = ?`),
    quotas: c.prepare<{ name: string; hourly_quota: number | null; daily_quota: number | null }, [number]>(
      'SELECT name, hourly_quota, daily_quota FROM bridges WHERE id = ?',
    ),
    hourUsed: c.prepare<{ count: number }, [number, number]>('SELECT count FROM bridge_usage WHERE bridge_id = ? AND hour = ?'),
    dayUsed: c.prepare<{ n: number }, [number, number, number]>(
      'SELECT COALESCE(SUM(count), 0) AS n FROM bridge_usage WHERE bridge_id = ? AND hour >= ? AND hour < ?',
    ),
    addUsage: c.prepare<never, [number, number, number]>(
      'INSERT INTO bridge_usage (bridge_id, hour, count) VALUES (?, ?, ?) ON CONFLICT (bridge_id, hour) DO UPDATE SET count = count + excluded.count',
    ),
    prune: c.prepare<never, [number, number]>('DELETE FROM bridge_usage WHERE bridge_id = ? AND hour < ?'),
    counters: c.prepare<BridgeCounts, [number]>('SELECT accepted, delivered, bounced, complained FROM bridge_counters WHERE bridge_id = ?'),
    count: Object.fromEntries(COUNTER_FIELDS.map((f) => [f, counter(f)])) as Record<CounterField, ReturnType<typeof counter>>,
  }
})

// ---------------------------------------------------------------------------------------
// Identity lookups for the SMTP listener and the send path, with a small cache.
// ---------------------------------------------------------------------------------------

interface CacheEntry {
  identity: BridgeIdentity
  hash: Uint8Array
}

/** Compiled allowlists of cached identities, so an address check does not parse the list again. */
const compiledRules = new WeakMap<BridgeIdentity, IpRule[]>()

/**
 * Identities by SMTP user name and by API key id, per database handle. Every write to a
 * bridge goes through this module and clears the cache, so a change (deactivation, new
 * password, new domains) applies to the very next AUTH or send. Only bridges that exist are
 * cached by user name, so guessed names cannot grow it; the API-key map also remembers keys
 * that belong to no bridge (bounded by the number of keys).
 */
const caches = new WeakMap<Db, { byUsername: Map<string, CacheEntry>; byApiKey: Map<number, CacheEntry | null> }>()

function cacheOf(db: Db) {
  let cache = caches.get(db)
  if (!cache) {
    cache = { byUsername: new Map(), byApiKey: new Map() }
    caches.set(db, cache)
  }
  return cache
}

function invalidate(db: Db): void {
  caches.delete(db)
}

function entryOf(raw: RawRow): CacheEntry {
  const allowed = JSON.parse(raw.allowed_ips) as string[]
  const identity: BridgeIdentity = {
    id: raw.id,
    name: raw.name,
    domains: JSON.parse(raw.domains) as string[],
    pool_id: raw.pool_id,
    node_id: raw.node_id,
    allowed_ips: allowed,
    api_key_id: raw.api_key_id,
    active: raw.active === 1,
    tracking: { track_opens: raw.track_opens === 1, track_clicks: raw.track_clicks === 1 },
  }
  // Shared by every caller until the next change: frozen, so none can alter another's view.
  Object.freeze(identity.domains)
  Object.freeze(identity.allowed_ips)
  Object.freeze(identity.tracking)
  Object.freeze(identity)
  compiledRules.set(identity, compileAllowlist(allowed).rules)
  return { identity, hash: Buffer.from(raw.smtp_password_hash, 'hex') }
}

/** Compared against when the user name is unknown, so the answer takes as long as a real check. */
const DUMMY_HASH = Buffer.alloc(32)

/**
 * The active bridge whose SMTP credentials these are, or null. The password is compared as
 * its SHA-256 in constant time (as API keys are: the generated password has 256 bits of
 * entropy, so a slow hash would protect nothing).
 */
export function authenticateBridge(deps: Deps, username: string, password: string): BridgeIdentity | null {
  const cache = cacheOf(deps.db)
  let entry = cache.byUsername.get(username)
  if (!entry) {
    const raw = statements(deps.db).byUsername.get(username)
    if (raw) {
      entry = entryOf(raw)
      cache.byUsername.set(username, entry)
    }
  }
  const matches = tokenMatches(password, entry?.hash ?? DUMMY_HASH)
  if (!entry || !matches || !entry.identity.active) return null
  return entry.identity
}

/** The bridge an API key belongs to (active or not), or null for an ordinary key. */
export function bridgeForApiKey(deps: Deps, apiKeyId: number): BridgeIdentity | null {
  const cache = cacheOf(deps.db)
  let entry = cache.byApiKey.get(apiKeyId)
  if (entry === undefined) {
    const raw = statements(deps.db).byApiKey.get(apiKeyId)
    entry = raw ? entryOf(raw) : null
    cache.byApiKey.set(apiKeyId, entry)
  }
  return entry?.identity ?? null
}

/** Whether the bridge's IP allowlist admits the client address; an empty list admits any, an unknown address none. */
export function bridgeAllowsAddress(bridge: BridgeIdentity, ip: string | null): boolean {
  if (bridge.allowed_ips.length === 0) return true
  return isAllowed(compiledRules.get(bridge) ?? compileAllowlist(bridge.allowed_ips).rules, ip)
}

/** Whether a sender domain (MAIL FROM or From header) is one of the bridge's domains. Exact match, as for sending domains. */
export function bridgeAllowsDomain(bridge: BridgeIdentity, domain: string): boolean {
  const name = normaliseDomain(domain)
  return name !== null && bridge.domains.includes(name)
}

/**
 * Refuses a From the bridge may not use (403 naming the domain). A value that is not an
 * address at all is left to the message validation, which names every problem (422).
 */
export function checkBridgeSender(bridge: BridgeIdentity, from: string): void {
  const parsed = addressparser(from, { flatten: true })
  if (parsed.length !== 1 || !parsed[0]!.address) return
  const email = checkEmail(parsed[0]!.address)
  if (!email.ok) return
  const domain = domainOf(email.email)
  if (!bridge.domains.includes(domain)) {
    throw new AppError('forbidden', `The bridge "${bridge.name}" may not send from ${domain}; its domains are: ${bridge.domains.join(', ')}.`)
  }
}

/** Refuses a send through an inactive bridge. */
export function checkBridgeActive(bridge: BridgeIdentity): void {
  if (!bridge.active) throw new AppError('forbidden', `The bridge "${bridge.name}" is inactive; activate it with PATCH /api/v2/bridges/${bridge.id}.`)
}

// ---------------------------------------------------------------------------------------
// Quotas and counters: called inside the transaction that commits the messages.
// ---------------------------------------------------------------------------------------

/** A quota refusal as an error: 429 with when the quota resets (the HTTP route turns it into Retry-After). */
export class BridgeQuotaError extends AppError {
  constructor(
    readonly quota: 'hourly' | 'daily',
    readonly resets_at: number,
    limit: number,
    bridgeName: string,
    now: number,
  ) {
    super(
      'rate_limited',
      `The ${quota} quota of ${limit} messages of the bridge "${bridgeName}" is used up; it resets at ${toIso(resets_at)} (in ${Math.ceil((resets_at - now) / 1000)} s).`,
    )
  }
}

/**
 * Checks the bridge's hourly and daily quotas for `n` more messages and, when they fit,
 * counts them. Usage is kept per clock hour; the daily quota is the sum of the hours of the
 * current UTC day. Callers run it inside the transaction that writes the messages, so a
 * write that fails (or rolls back) never uses quota, and two writers cannot both take the
 * last slot. When both quotas are used up the daily one is reported: it resets later, so a
 * client that waits for `resets_at` is not refused again at once. An unknown bridge (deleted
 * meanwhile) is not limited.
 */
export function takeBridgeQuota(
  deps: Pick<Deps, 'db' | 'clock'>,
  bridgeId: number,
  n: number,
): { ok: true } | { ok: false; quota: 'hourly' | 'daily'; resets_at: number } {
  const s = statements(deps.db)
  const q = s.quotas.get(bridgeId)
  if (!q || n <= 0) return { ok: true }
  const now = deps.clock.now()
  const hour = Math.floor(now / HOUR) * HOUR
  const day = Math.floor(now / DAY) * DAY
  const hourRow = s.hourUsed.get(bridgeId, hour)
  if (q.daily_quota !== null && s.dayUsed.get(bridgeId, day, day + DAY)!.n + n > q.daily_quota) return { ok: false, quota: 'daily', resets_at: day + DAY }
  if (q.hourly_quota !== null && (hourRow?.count ?? 0) + n > q.hourly_quota) return { ok: false, quota: 'hourly', resets_at: hour + HOUR }
  // A new hour: drop rows before yesterday, which no quota or usage figure reads any more.
  if (!hourRow) s.prune.run(bridgeId, day - DAY)
  s.addUsage.run(bridgeId, hour, n)
  return { ok: true }
}

/**
 * takeBridgeQuota for the send path: throws BridgeQuotaError (429) when a quota is used up.
 * Inside the caller's transaction, like takeBridgeQuota.
 */
export function takeBridgeQuotaOrThrow(deps: Pick<Deps, 'db' | 'clock'>, bridgeId: number, n: number): void {
  const r = takeBridgeQuota(deps, bridgeId, n)
  if (r.ok) return
  const q = statements(deps.db).quotas.get(bridgeId)!
  throw new BridgeQuotaError(r.quota, r.resets_at, (r.quota === 'hourly' ? q.hourly_quota : q.daily_quota)!, q.name, deps.clock.now())
}

/**
 * Adds to one of a bridge's running totals, in the caller's transaction: `accepted` per
 * message committed, `delivered` and `bounced` per recipient outcome, `complained` per
 * complaint. A bridge that no longer exists is skipped.
 */
export function countBridge(db: Db, bridgeId: number, field: 'accepted' | 'delivered' | 'bounced' | 'complained', n = 1): void {
  if (n <= 0) return
  statements(db).count[field].run(n, bridgeId)
}

// ---------------------------------------------------------------------------------------
// The resource: CRUD and credential rotation.
// ---------------------------------------------------------------------------------------

function usageOf(deps: Deps, bridgeId: number): { this_hour: number; today: number } {
  const s = statements(deps.db)
  const now = deps.clock.now()
  const hour = Math.floor(now / HOUR) * HOUR
  const day = Math.floor(now / DAY) * DAY
  return { this_hour: s.hourUsed.get(bridgeId, hour)?.count ?? 0, today: s.dayUsed.get(bridgeId, day, day + DAY)!.n }
}

function prefixOf(deps: Deps, keyId: number | null): string | null {
  if (keyId === null) return null
  const row = deps.db.$client.query('SELECT lookup_id FROM api_keys WHERE id = ?').get(keyId) as { lookup_id: string } | null
  return row ? tokenPrefix(row.lookup_id) : null
}

function toView(deps: Deps, r: Row): BridgeView {
  const counts = statements(deps.db).counters.get(r.id)
  return {
    id: r.id,
    name: r.name,
    smtp_username: r.smtp_username,
    api_key_id: r.api_key_id,
    api_key_prefix: prefixOf(deps, r.api_key_id),
    domains: r.domains,
    pool_id: r.pool_id,
    node_id: r.node_id,
    hourly_quota: r.hourly_quota,
    daily_quota: r.daily_quota,
    allowed_ips: r.allowed_ips,
    track_opens: r.track_opens,
    track_clicks: r.track_clicks,
    active: r.active,
    counts: counts
      ? { accepted: counts.accepted, delivered: counts.delivered, bounced: counts.bounced, complained: counts.complained }
      : { accepted: 0, delivered: 0, bounced: 0, complained: 0 },
    usage: usageOf(deps, r.id),
    created_at: toIso(r.created_at)!,
    updated_at: toIso(r.updated_at)!,
  }
}

function findRow(deps: Deps, id: number): Row {
  const row = deps.db.select().from(bridges).where(eq(bridges.id, id)).get()
  if (!row) throw notFound('bridge', id)
  return row
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
        created_at: now,
        updated_at: now,
      })
      .returning()
      .get()
    return { row, key }
  })()
  invalidate(deps.db)
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
  deps.db.$client.transaction(() => {
    deps.db.update(bridges).set(patch).where(eq(bridges.id, id)).run()
    syncKey(deps, current.api_key_id, { name: patch.name, allowed_ips: patch.allowed_ips })
  })()
  invalidate(deps.db)
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
    invalidate(deps.db)
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
  invalidate(deps.db)
  return { bridge: getBridge(deps, id), secrets }
}
