import { asc, eq, inArray } from 'drizzle-orm'
import net from 'node:net'
import ipaddr from 'ipaddr.js'
import type { Deps } from '../../deps'
import { bulkDeleteByIds, pageOfTable, type BulkDeleteOutcome, findById, timestampsOf, viewOf, viewsWith } from '../../db/crud'
import { ipPoolMembers, ipPools, ips } from '../../db/schema'
import { AppError, invalidField } from '../../lib/errors'
import { normaliseDomain } from '../../lib/email'
import { bumpPoolsVersion } from '../ip-pools/version'
import type { IpView } from './model'

type Row = typeof ips.$inferSelect

function poolsOf(deps: Deps, ids: number[]): Map<number, IpView['pools']> {
  const out = new Map<number, IpView['pools']>(ids.map((id) => [id, []]))
  if (ids.length === 0) return out
  const rows = deps.db
    .select({ ip_id: ipPoolMembers.ip_id, id: ipPools.id, name: ipPools.name, weight: ipPoolMembers.weight })
    .from(ipPoolMembers)
    .innerJoin(ipPools, eq(ipPools.id, ipPoolMembers.pool_id))
    .where(inArray(ipPoolMembers.ip_id, ids))
    .orderBy(asc(ipPools.id))
    .all()
  for (const r of rows) out.get(r.ip_id)!.push({ id: r.id, name: r.name, weight: r.weight })
  return out
}

function toView(r: Row, pools: IpView['pools']): IpView {
  return {
    id: r.id,
    address: r.address,
    family: net.isIPv6(r.address) ? 6 : 4,
    hostname: r.hostname,
    pools,
    ...timestampsOf(r),
  }
}

/**
 * The canonical text of a source address (IPv6 in RFC 5952 form, IPv4-mapped IPv6 as IPv4),
 * or throws 422. Only unicast addresses: an unspecified, multicast or broadcast address can
 * be bound but is no source address for mail.
 */
export function normaliseIpAddress(input: string): string {
  const text = input.trim()
  // ipaddr.js also takes legacy IPv4 forms ("127.1", "0x7f.0.0.1"); only dotted quads are addresses here.
  if (!ipaddr.isValid(text) || (!text.includes(':') && !ipaddr.IPv4.isValidFourPartDecimal(text))) {
    throw invalidField('address', 'must be an IPv4 or IPv6 address such as 203.0.113.7 or 2001:db8::7')
  }
  const parsed = ipaddr.process(text)
  const range = parsed.range()
  if (range === 'unspecified' || range === 'multicast' || range === 'broadcast') {
    throw invalidField('address', `must be a unicast address of this host, not a ${range} address`)
  }
  return parsed.kind() === 'ipv6' ? (parsed as ipaddr.IPv6).toRFC5952String() : parsed.toString()
}

/** An EHLO name (RFC 5321 section 4.1.1.1: the client's fully qualified domain name), lower-case ASCII; or 422. */
function normaliseHostname(input: string): string {
  const host = normaliseDomain(input)
  if (!host) throw invalidField('hostname', 'must be a fully qualified host name such as mta1.example.com (it should match the PTR record of the address)')
  return host
}

/**
 * Whether this host can send from `address`: listens on it (port 0) and closes again. The
 * kernel refuses addresses not configured on an interface (EADDRNOTAVAIL), which is exactly
 * what a later bind of an outgoing SMTP connection would hit.
 */
export function checkBindable(address: string): Promise<string | null> {
  return new Promise((resolve) => {
    const server = net.createServer()
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
    server.listen({ port: 0, host: address }, () => server.close(() => resolve(null)))
  })
}

async function requireBindable(address: string): Promise<void> {
  const problem = await checkBindable(address)
  if (problem) {
    throw invalidField('address', `this host cannot send from ${address} (${problem}): add the address to a network interface of this machine first`)
  }
}

function findIp(deps: Deps, id: number): Row {
  return findById(deps.db, ips, id, 'IP')
}

function assertAddressFree(deps: Deps, address: string, except?: number): void {
  const clash = deps.db.select({ id: ips.id }).from(ips).where(eq(ips.address, address)).get()
  if (clash && clash.id !== except) throw new AppError('conflict', `The address ${address} is already registered as IP ${clash.id}.`)
}

/** IPs' views with their pools, fetched for all of them in one query. */
function ipViews(deps: Deps): (rows: Row[]) => IpView[] {
  return viewsWith((ids) => poolsOf(deps, ids), toView)
}

/** One IP with its pools. */
export function getIp(deps: Deps, id: number): IpView {
  return viewOf(ipViews(deps), findIp(deps, id))
}

/** A page of IPs, oldest first. */
export function listIps(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, ips, query, ipViews(deps))
}

/** Registers a source address after checking that this host can bind it. */
export async function createIp(deps: Deps, input: { address: string; hostname: string }): Promise<IpView> {
  const address = normaliseIpAddress(input.address)
  const hostname = normaliseHostname(input.hostname)
  assertAddressFree(deps, address)
  await requireBindable(address)
  // Checked again after the await: another request may have registered it meanwhile.
  assertAddressFree(deps, address)
  const now = deps.clock.now()
  const row = deps.db.insert(ips).values({ address, hostname, created_at: now, updated_at: now }).returning().get()
  bumpPoolsVersion(deps.db)
  return toView(row, [])
}

/** Changes the EHLO name or the address (checked as on create). */
export async function updateIp(deps: Deps, id: number, input: { address?: string; hostname?: string }): Promise<IpView> {
  const current = findIp(deps, id)
  const patch: Partial<Row> = {}
  if (input.hostname !== undefined) patch.hostname = normaliseHostname(input.hostname)
  if (input.address !== undefined) {
    const address = normaliseIpAddress(input.address)
    if (address !== current.address) {
      assertAddressFree(deps, address, id)
      await requireBindable(address)
      assertAddressFree(deps, address, id)
      patch.address = address
    }
  }
  findIp(deps, id)
  deps.db
    .update(ips)
    .set({ ...patch, updated_at: deps.clock.now() })
    .where(eq(ips.id, id))
    .run()
  bumpPoolsVersion(deps.db)
  return getIp(deps, id)
}

/** Deletes IPs; they leave their pools (foreign keys cascade). */
export function deleteIps(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return bulkDeleteByIds(deps.db, ips, ids, () => bumpPoolsVersion(deps.db))
}
