import { eq } from 'drizzle-orm'
import { generateKeyPair } from 'node:crypto'
import { domainToASCII } from 'node:url'
import { promisify } from 'node:util'
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { assertNameFree as assertUnique, bulkDeleteByIds, pageOfTable, type BulkDeleteOutcome, findById, columnsOf, timestampsOf } from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import { sendingDomains, type DomainStatus } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { invalidField } from '../../lib/errors'
import { normaliseDomain } from '../../lib/email'
import { emit } from '../events/service'
import { defaultPoolId, poolAddresses, poolExists } from '../ip-pools/service'
import { dkimSelector, expectedRecords, nextDomainStatus, type DnsRecordSpec, type RecordCheck, type RecordPurpose } from './records'
import { checkRecords } from './verify'

type Row = typeof sendingDomains.$inferSelect

/** What records_state holds per purpose: the last check and the value it was checked against. */
interface StoredCheck extends RecordCheck {
  name: string
  value: string
}

import type { DnsRecordView, SendingDomainSettings, SendingDomainView } from './model'

const generateRsa = promisify(generateKeyPair)

/** Pool addresses by the pool a domain uses (its own or the default); one lookup per distinct pool. */
function addressesFor(deps: Deps) {
  const cache = new Map<number | null, string[]>()
  const fallback = defaultPoolId(deps)
  return (poolId: number | null) => {
    const id = poolId ?? fallback
    let addresses = cache.get(id)
    if (!addresses) cache.set(id, (addresses = poolAddresses(deps, id)))
    return addresses
  }
}

function recordsOf(deps: Deps, r: Row, addresses: string[]): DnsRecordSpec[] {
  return expectedRecords({
    domain: r.name,
    selector: r.dkim_selector,
    publicKey: r.dkim_public_key,
    returnPathHost: r.return_path_host,
    addresses,
    hostname: deps.config.hostname,
  })
}

function toView(deps: Deps, r: Row, addresses: string[]): SendingDomainView {
  const stored = (r.records_state ?? {}) as Partial<Record<RecordPurpose, StoredCheck>>
  const dns_records = recordsOf(deps, r, addresses).map((spec): DnsRecordView => {
    const check = stored[spec.purpose]
    // A state is shown only for the value it was checked against: after a pool change the SPF record differs and is unchecked.
    if (!check || check.name !== spec.name || check.value !== spec.value) return { ...spec, state: 'unchecked' }
    return { ...spec, state: check.state, ...(check.found && { found: check.found }), ...(check.message && { message: check.message }) }
  })
  return {
    ...columnsOf(r, ['id', 'name', 'status', 'pool_id', 'dkim_selector', 'return_path_host', 'track_opens', 'track_clicks']),
    dns_records,
    warnings: [...new Set(dns_records.flatMap((d) => (d.warning ? [d.warning] : [])))],
    checked_at: toIso(r.checked_at),
    verified_at: toIso(r.verified_at),
    ...timestampsOf(r),
  }
}

/**
 * A `domain.*` event (issue 19) carries the domain as it was then, records included, so a
 * webhook sent later (or for a deleted domain) describes the change, not the present.
 */
function emitDomainEvent(deps: Deps, kind: 'domain.created' | 'domain.updated' | 'domain.deleted', v: SendingDomainView): void {
  emit(deps.db, deps.clock.now(), {
    kind,
    data: {
      domain_id: v.id,
      name: v.name,
      status: v.status,
      created_at: v.created_at,
      dns_records: v.dns_records.map((r) => ({ purpose: r.purpose, type: r.type, name: r.name, value: r.value, state: r.state })),
    },
  })
}

function findDomain(deps: Deps, id: number): Row {
  return findById(deps.db, sendingDomains, id, 'sending domain')
}

function checkPool(deps: Deps, poolId: number | null | undefined): void {
  if (poolId != null && !poolExists(deps, poolId)) throw invalidField('pool_id', `no IP pool with id ${poolId}; GET /api/v2/ip-pools lists them`)
}

/** The return-path host: a name strictly below the domain (its CNAME cannot sit at the apex beside the MX and SPF records). */
function returnPathHost(domain: string, input: string | undefined): string {
  if (input === undefined) return `bounces.${domain}`
  const host = normaliseDomain(input)
  if (!host || !host.endsWith(`.${domain}`)) throw invalidField('return_path_host', `must be a host name under ${domain}, such as bounces.${domain}`)
  return host
}

function assertNameFree(deps: Deps, name: string): void {
  assertUnique(deps.db, sendingDomains, sendingDomains.name, name, { message: (id) => `The sending domain ${name} already exists (id ${id}).` })
}

/** One sending domain with the records to publish and their last checked state. */
export function getSendingDomain(deps: Deps, id: number): SendingDomainView {
  const row = findDomain(deps, id)
  return toView(deps, row, addressesFor(deps)(row.pool_id))
}

/** A page of sending domains, oldest first. */
export function listSendingDomains(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, sendingDomains, query, (rows: Row[]) => {
    const addresses = addressesFor(deps)
    return rows.map((r) => toView(deps, r, addresses(r.pool_id)))
  })
}

/**
 * Adds a sending domain with a new 2048-bit RSA DKIM key (RFC 8301 section 3.2 asks for at
 * least 1024 bits; 2048 is what receivers expect today). The key is generated off the event
 * loop (about 100 ms or more of CPU).
 */
export async function createSendingDomain(deps: Deps, input: SendingDomainSettings & { name: string }): Promise<SendingDomainView> {
  const name = normaliseDomain(input.name)
  if (!name) throw invalidField('name', 'must be a domain name such as example.com')
  checkPool(deps, input.pool_id)
  const returnPath = returnPathHost(name, input.return_path_host)
  assertNameFree(deps, name)
  const { publicKey, privateKey } = await generateRsa('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  })
  // Checked again after the await: another request may have added the name meanwhile.
  assertNameFree(deps, name)
  checkPool(deps, input.pool_id)
  const now = deps.clock.now()
  return deps.db.transaction((tx) => {
    const row = tx
      .insert(sendingDomains)
      .values({
        name,
        status: 'pending',
        dkim_selector: dkimSelector(now),
        dkim_private_key: deps.secrets.seal(privateKey),
        dkim_public_key: publicKey.toString('base64'),
        return_path_host: returnPath,
        pool_id: input.pool_id ?? null,
        track_opens: input.track_opens ?? false,
        track_clicks: input.track_clicks ?? false,
        created_at: now,
        updated_at: now,
      })
      .returning()
      .get()
    const view = toView(deps, row, addressesFor(deps)(row.pool_id))
    emitDomainEvent(deps, 'domain.created', view)
    return view
  })
}

/** Changes the pool, the return-path host or the tracking defaults. The status stays; records whose value changed show `unchecked` until the next verify. */
export function updateSendingDomain(deps: Deps, id: number, input: SendingDomainSettings): SendingDomainView {
  const row = findDomain(deps, id)
  checkPool(deps, input.pool_id)
  const patch: Partial<Row> = { updated_at: deps.clock.now() }
  if (input.pool_id !== undefined) patch.pool_id = input.pool_id
  if (input.return_path_host !== undefined) patch.return_path_host = returnPathHost(row.name, input.return_path_host)
  if (input.track_opens !== undefined) patch.track_opens = input.track_opens
  if (input.track_clicks !== undefined) patch.track_clicks = input.track_clicks
  return deps.db.transaction(() => {
    deps.db.update(sendingDomains).set(patch).where(eq(sendingDomains.id, id)).run()
    const view = getSendingDomain(deps, id)
    emitDomainEvent(deps, 'domain.updated', view)
    return view
  })
}

/** Deletes sending domains; queued messages keep going out, unsigned (their domain_id is set null). */
export function deleteSendingDomains(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return deps.db.transaction(() => {
    const before = new Map(
      ids.flatMap((id) =>
        deps.db.select({ id: sendingDomains.id }).from(sendingDomains).where(eq(sendingDomains.id, id)).get()
          ? [[id, getSendingDomain(deps, id)] as const]
          : [],
      ),
    )
    const outcome = bulkDeleteByIds(deps.db, sendingDomains, ids)
    for (const id of outcome.deleted) emitDomainEvent(deps, 'domain.deleted', before.get(id)!)
    return outcome
  })
}

/**
 * Looks every record up (the dns_servers setting) and stores each record's state, the
 * check time and the resulting status (rules in records.ts nextDomainStatus).
 */
export async function verifySendingDomain(deps: Deps, id: number): Promise<SendingDomainView> {
  const before = findDomain(deps, id)
  const addresses = addressesFor(deps)(before.pool_id)
  const records = recordsOf(deps, before, addresses)
  const checks = await checkRecords(deps, records, { publicKey: before.dkim_public_key, addresses })
  // A placeholder cannot be checked: the record is in error until the host name is public.
  for (const spec of records) if (spec.warning) checks[spec.purpose] = { state: 'error', message: spec.warning }
  // Read again after the lookups: the domain may have changed or gone meanwhile.
  const row = findDomain(deps, id)
  const status = nextDomainStatus(row.status, checks)
  const stored = Object.fromEntries(
    records.map((spec) => [spec.purpose, { ...checks[spec.purpose], name: spec.name, value: spec.value } satisfies StoredCheck]),
  )
  const now = deps.clock.now()
  return deps.db.transaction(() => {
    deps.db
      .update(sendingDomains)
      .set({
        records_state: stored,
        status,
        checked_at: now,
        verified_at: status === 'verified' ? (row.status === 'verified' ? row.verified_at : now) : null,
        updated_at: now,
      })
      .where(eq(sendingDomains.id, id))
      .run()
    const view = getSendingDomain(deps, id)
    // Resend sends domain.updated when verification changes a domain's status.
    if (status !== row.status) emitDomainEvent(deps, 'domain.updated', view)
    return view
  })
}

// ---------------------------------------------------------------------------------------
// The send path's lookup
// ---------------------------------------------------------------------------------------

export interface SendingDomainKey {
  id: number
  name: string
  status: DomainStatus
  pool_id: number | null
  return_path_host: string
  /** 0 or 1: read through the raw driver, which does not map booleans. */
  track_opens: number
  track_clicks: number
}

const statements = preparedFor((db: Db) => ({
  byName: db.$client.prepare<SendingDomainKey, [string]>(
    'SELECT id, name, status, pool_id, return_path_host, track_opens, track_clicks FROM sending_domains WHERE name = ?',
  ),
}))

/**
 * The sending domain of a From domain, for signing and the verified check on every send:
 * an exact match on the lower-case ASCII name (no parent-domain fallback: mail from
 * news.example.com needs news.example.com registered). One prepared point lookup.
 */
export function findSendingDomain(deps: Deps, domain: string): SendingDomainKey | null {
  let name = domain.trim().toLowerCase().replace(/\.$/, '')
  if (!/^[a-z0-9.-]*$/.test(name)) name = domainToASCII(name)
  if (!name) return null
  return statements(deps.db).byName.get(name) ?? null
}
