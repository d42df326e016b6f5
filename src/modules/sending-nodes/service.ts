import { eq } from 'drizzle-orm'
import net from 'node:net'
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { assertNameFree as assertUnique, bulkDeleteByIds, pageOfTable, type BulkDeleteOutcome, findById, columnsOf, timestampsOf } from '../../db/crud'
import { preparedFor } from '../../db/prepared'
import { sendingNodes, type NodeKind, type RelayTlsMode } from '../../db/schema'
import { AppError, type ErrorDetails } from '../../lib/errors'
import { poolExists } from '../ip-pools/service'

type Row = typeof sendingNodes.$inferSelect
/** A row read with raw SQL: booleans are SQLite integers. */
type RawRow = Omit<Row, 'is_default' | 'active'> & { is_default: number; active: number }

const HOUR = 3_600_000
const DAY = 86_400_000

/** Relay ports by TLS mode when none is given: submission with STARTTLS (RFC 6409), implicit TLS (RFC 8314), plain SMTP. */
const DEFAULT_RELAY_PORTS: Record<RelayTlsMode, number> = { starttls: 587, tls: 465, none: 25 }

import type { SendingNodeInput, SendingNodeView } from './model'

const statements = preparedFor((db: Db) => ({
  byId: db.$client.prepare<RawRow, [number]>('SELECT * FROM sending_nodes WHERE id = ?'),
  defaultActive: db.$client.prepare<RawRow, []>('SELECT * FROM sending_nodes WHERE is_default = 1 AND active = 1 LIMIT 1'),
  caps: db.$client.prepare<{ hourly_cap: number | null; daily_cap: number | null }, [number]>('SELECT hourly_cap, daily_cap FROM sending_nodes WHERE id = ?'),
  hourUsed: db.$client.prepare<{ count: number }, [number, number]>('SELECT count FROM sending_node_usage WHERE node_id = ? AND hour = ?'),
  dayUsed: db.$client.prepare<{ n: number }, [number, number, number]>(
    'SELECT COALESCE(SUM(count), 0) AS n FROM sending_node_usage WHERE node_id = ? AND hour >= ? AND hour < ?',
  ),
  addUsage: db.$client.prepare<never, [number, number, number]>(
    'INSERT INTO sending_node_usage (node_id, hour, count) VALUES (?, ?, ?) ON CONFLICT (node_id, hour) DO UPDATE SET count = count + excluded.count',
  ),
  prune: db.$client.prepare<never, [number, number]>('DELETE FROM sending_node_usage WHERE node_id = ? AND hour < ?'),
}))

/** Deliveries counted for a node in the clock hour and the UTC day of `now` (the windows its caps apply to). */
export function nodeUsage(deps: Deps, nodeId: number, now: number): { this_hour: number; today: number } {
  const s = statements(deps.db)
  const hour = Math.floor(now / HOUR) * HOUR
  const day = Math.floor(now / DAY) * DAY
  return { this_hour: s.hourUsed.get(nodeId, hour)?.count ?? 0, today: s.dayUsed.get(nodeId, day, day + DAY)!.n }
}

function toView(deps: Deps, r: Row): SendingNodeView {
  return {
    ...columnsOf(r, ['id', 'name', 'kind', 'pool_id', 'relay_host', 'relay_port', 'relay_tls', 'relay_username']),
    has_password: r.relay_password !== null,
    ...columnsOf(r, ['hourly_cap', 'daily_cap', 'is_default', 'active']),
    usage: nodeUsage(deps, r.id, deps.clock.now()),
    ...timestampsOf(r),
  }
}

function findNode(deps: Deps, id: number): Row {
  return findById(deps.db, sendingNodes, id, 'sending node')
}

const HOST_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

type Fields = Omit<Row, 'id' | 'created_at' | 'updated_at'>

/**
 * The record an input gives on top of `current` (null on create), checked as a whole:
 * a direct node has no relay settings; a relay node has a host, a TLS mode and a port
 * (default by mode), and a username exactly when it has a password. Changing the kind
 * drops the settings of the old kind.
 */
function resolveFields(deps: Deps, current: Row | null, input: Partial<SendingNodeInput>): Fields {
  const kind = input.kind ?? current!.kind
  const base: Fields = current
    ? { ...current }
    : {
        name: '',
        kind,
        pool_id: null,
        relay_host: null,
        relay_port: null,
        relay_tls: null,
        relay_username: null,
        relay_password: null,
        hourly_cap: null,
        daily_cap: null,
        is_default: false,
        active: true,
      }
  if (current && kind !== current.kind) {
    Object.assign(base, { kind, pool_id: null, relay_host: null, relay_port: null, relay_tls: null, relay_username: null, relay_password: null })
  }
  const f: Fields = { ...base }
  for (const key of Object.keys(input) as Array<keyof SendingNodeInput>) {
    if (input[key] !== undefined) (f as Record<string, unknown>)[key] = input[key]
  }
  f.name = f.name.trim()

  const details: ErrorDetails = {}
  const fail = (field: string, message: string) => (details[field] ??= []).push(message)
  if (f.kind === 'direct') {
    for (const key of ['relay_host', 'relay_port', 'relay_tls', 'relay_username', 'relay_password'] as const) {
      if (f[key] !== null) fail(key, 'only for relay nodes')
    }
    if (f.pool_id !== null && !poolExists(deps, f.pool_id)) fail('pool_id', `no IP pool with id ${f.pool_id}; GET /api/v2/ip-pools lists them`)
  } else {
    if (f.pool_id !== null) fail('pool_id', 'only for direct nodes (a relay chooses its own source address)')
    if (f.relay_host === null) fail('relay_host', 'is required for a relay node')
    else {
      f.relay_host = f.relay_host.trim().toLowerCase().replace(/\.$/, '')
      if (!net.isIP(f.relay_host) && !(f.relay_host.length <= 253 && f.relay_host.split('.').every((l) => HOST_LABEL.test(l)))) {
        fail('relay_host', 'must be a host name or an IP address')
      }
    }
    f.relay_tls ??= 'starttls'
    f.relay_port ??= DEFAULT_RELAY_PORTS[f.relay_tls]
    if ((f.relay_username === null) !== (f.relay_password === null)) {
      fail(f.relay_username === null ? 'relay_username' : 'relay_password', 'relay_username and relay_password go together (SMTP AUTH, RFC 4954)')
    }
  }
  if (f.name === '') fail('name', 'must not be empty')
  if (Object.keys(details).length) throw new AppError('validation_failed', 'The request data is invalid.', details)
  return f
}

/** The fields with a password the input brings sealed for storage (a kept one is sealed already). */
const sealPassword = (deps: Deps, f: Fields, input: Partial<SendingNodeInput>): Fields =>
  f.relay_password !== null && f.relay_password === input.relay_password ? { ...f, relay_password: deps.secrets.seal(f.relay_password) } : f

function assertNameFree(deps: Deps, name: string, exceptId?: number): void {
  assertUnique(deps.db, sendingNodes, sendingNodes.name, name, { exceptId, message: `A sending node named "${name}" already exists.` })
}

/** One sending node (without its password). */
export function getSendingNode(deps: Deps, id: number): SendingNodeView {
  return toView(deps, findNode(deps, id))
}

/** A page of sending nodes, oldest first. */
export function listSendingNodes(deps: Deps, query: { page?: number; per_page?: number }) {
  return pageOfTable(deps.db, sendingNodes, query, (rows: Row[]) => rows.map((r) => toView(deps, r)))
}

/** Creates a node; making it the default takes the flag from the previous default in the same transaction. */
export function createSendingNode(deps: Deps, input: SendingNodeInput): SendingNodeView {
  const fields = resolveFields(deps, null, input)
  assertNameFree(deps, fields.name)
  const now = deps.clock.now()
  const id = deps.db.transaction((tx) => {
    if (fields.is_default) tx.update(sendingNodes).set({ is_default: false, updated_at: now }).where(eq(sendingNodes.is_default, true)).run()
    return tx
      .insert(sendingNodes)
      .values({ ...sealPassword(deps, fields, input), created_at: now, updated_at: now })
      .returning({ id: sendingNodes.id })
      .get().id
  })
  return getSendingNode(deps, id)
}

/** Changes a node; the result is checked as a whole (see resolveFields). `relay_password: null` removes the password. */
export function updateSendingNode(deps: Deps, id: number, input: Partial<SendingNodeInput>): SendingNodeView {
  const fields = resolveFields(deps, findNode(deps, id), input)
  assertNameFree(deps, fields.name, id)
  const now = deps.clock.now()
  deps.db.transaction((tx) => {
    if (input.is_default) tx.update(sendingNodes).set({ is_default: false, updated_at: now }).where(eq(sendingNodes.is_default, true)).run()
    tx.update(sendingNodes)
      .set({ ...sealPassword(deps, fields, input), updated_at: now })
      .where(eq(sendingNodes.id, id))
      .run()
  })
  return getSendingNode(deps, id)
}

/** Deletes nodes with their usage counters; queued messages that named one take the default route. */
export function deleteSendingNodes(deps: Deps, ids: number[]): BulkDeleteOutcome {
  return bulkDeleteByIds(deps.db, sendingNodes, ids)
}

// ---------------------------------------------------------------------------------------
// For the delivery engine
// ---------------------------------------------------------------------------------------

export interface NodeRoute {
  id: number
  kind: NodeKind
  /** False for a node named explicitly that the operator switched off: hold (defer) its mail rather than take another route. */
  active: boolean
  /** direct: the pool to send over; null = the message's pool. */
  pool_id: number | null
  /** relay: the smart host. */
  relay?: { host: string; port: number; tls: RelayTlsMode; username: string | null; password: string | null }
  hourly_cap: number | null
  daily_cap: number | null
}

function toRoute(r: RawRow): NodeRoute {
  return {
    id: r.id,
    kind: r.kind,
    active: r.active === 1,
    pool_id: r.pool_id,
    ...(r.kind === 'relay' && {
      relay: { host: r.relay_host!, port: r.relay_port!, tls: r.relay_tls!, username: r.relay_username, password: r.relay_password },
    }),
    hourly_cap: r.hourly_cap,
    daily_cap: r.daily_cap,
  }
}

/**
 * The route of a message: the node it names (null when that node no longer exists), or with
 * a null id the default active node; null then means plain direct delivery over the
 * message's pool. One prepared point lookup.
 */
export function resolveNode(deps: Deps, nodeId: number | null): NodeRoute | null {
  const s = statements(deps.db)
  const row = nodeId === null ? s.defaultActive.get() : s.byId.get(nodeId)
  return row ? toRoute({ ...row, relay_password: row.relay_password === null ? null : deps.secrets.open(row.relay_password) }) : null
}

/** A node's caps; null when there is no such node. The cap decisions are the engine's (src/delivery/node-caps.ts). */
export function nodeCaps(deps: Deps, nodeId: number): { hourly_cap: number | null; daily_cap: number | null } | null {
  return statements(deps.db).caps.get(nodeId) ?? null
}

/** Counts `n` deliveries in the clock hour of `now`; the hour's first count drops the hours before yesterday, which no cap reads any more. */
export function countNodeUsage(deps: Deps, nodeId: number, now: number, n: number): void {
  const s = statements(deps.db)
  const hour = Math.floor(now / HOUR) * HOUR
  const day = Math.floor(now / DAY) * DAY
  if (!s.hourUsed.get(nodeId, hour)) s.prune.run(nodeId, day - DAY)
  s.addUsage.run(nodeId, hour, n)
}
