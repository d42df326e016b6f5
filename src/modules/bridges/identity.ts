import addressparser from 'nodemailer/lib/addressparser'
import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import type { Deps } from '../../deps'
import { tokenMatches } from '../../lib/api-key-token'
import { checkEmail, domainOf, normaliseDomain } from '../../lib/email'
import { AppError } from '../../lib/errors'
import { compileAllowlist, isAllowed, type IpRule } from '../../lib/ip-allowlist'

/**
 * Who a bridge is, for the SMTP listener and the send path: lookups by SMTP user name and by
 * API key, with a small cache, and the checks of what the bridge may do (its addresses,
 * domains, whether it is active). The resource itself (service.ts) clears the cache on
 * every write.
 */

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

const statements = preparedFor((db: Db) => {
  const c = db.$client
  const identityColumns = 'id, name, smtp_username, smtp_password_hash, api_key_id, domains, pool_id, node_id, allowed_ips, active, track_opens, track_clicks'
  return {
    byUsername: c.prepare<RawRow, [string]>(`SELECT ${identityColumns} FROM bridges WHERE smtp_username = ?`),
    byApiKey: c.prepare<RawRow, [number]>(`SELECT ${identityColumns} FROM bridges WHERE api_key_id = ?`),
  }
})

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

/** Forgets the cached identities of this database: called after every write to a bridge. */
export function invalidateBridgeIdentities(db: Db): void {
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
