import { eq } from 'drizzle-orm'
import net from 'node:net'
import type { Deps } from '../../deps'
import { ips, sendingDomains, systemState } from '../../db/schema'
import { toIso } from '../../lib/clock'
import { emit } from '../events/service'
import { defaultPoolId, poolAddresses } from '../ip-pools/service'
import { checkBlocklist } from './checks/blocklists'
import { checkBulkDmarc, checkComplaintRate, checkOneClickUnsubscribe } from './checks/bulk-sender'
import { createDoctorDns } from './checks/dns'
import { checkDomain } from './checks/domains'
import { checkCertificate, checkHostName, checkTrackingHost } from './checks/host'
import { checkHelo, checkPtr, type SendingIp } from './checks/ips'
import { checkOutboundPort } from './checks/network'
import type { CheckResult, DoctorReport, DoctorSummary } from './model'

/** Where the last report is kept (system_state: one small JSON value, replaced by each run). */
const STATE_KEY = 'doctor_report'
/** The event raised for each check whose status changed between two runs (webhooks can carry it). */
export const DOCTOR_CHANGED = 'doctor.changed'

/** The sending IPs: the `ips` table, or, with none registered, the host name's own addresses greeting as the host name. */
async function sendingIps(deps: Deps, addressesOf: (name: string) => Promise<string[]>): Promise<SendingIp[]> {
  const rows = deps.db.select({ address: ips.address, helo: ips.hostname }).from(ips).orderBy(ips.id).all()
  if (rows.length) return rows
  return (await addressesOf(deps.config.hostname)).map((address) => ({ address, helo: deps.config.hostname }))
}

/** Counts per status. */
export function summarise(checks: readonly CheckResult[]): DoctorSummary {
  const summary: DoctorSummary = { pass: 0, warn: 0, fail: 0, skipped: 0 }
  for (const c of checks) summary[c.status]++
  return summary
}

/**
 * Runs every check once (issue 17 "Deliverability doctor"): outbound port 25, the host name and
 * its certificate, each sending IP (PTR, HELO, blocklists), each sending domain (DKIM, SPF and
 * its lookups, DMARC, return path, alignment, MTA-STS, TLS-RPT, domain blocklists) and the
 * bulk-sender rules. Lookups go to the configured resolvers and run concurrently. Nothing is
 * stored: recordDoctorReport does that.
 */
export async function runDoctor(deps: Deps): Promise<DoctorReport> {
  const dns = createDoctorDns(deps.config.dns_servers)
  const config = deps.config
  const fallbackPool = defaultPoolId(deps)
  const domains = deps.db.select().from(sendingDomains).orderBy(sendingDomains.name).all()
  const pools = new Map<number | null, string[]>()
  const addressesOfPool = (id: number | null) => {
    const key = id ?? fallbackPool
    if (!pools.has(key)) pools.set(key, poolAddresses(deps, key))
    return pools.get(key)!
  }
  const [network, host, tracking, ipChecks, domainChecks] = await Promise.all([
    checkOutboundPort(config.doctor_probe),
    checkHostName(config, dns),
    checkTrackingHost(config, dns),
    sendingIps(deps, dns.addresses).then((list) =>
      Promise.all(
        list.map(async (ip) => [
          await checkPtr(dns, ip),
          await checkHelo(dns, ip),
          ...(await Promise.all(config.doctor_ip_blocklists.map((zone) => checkBlocklist(dns, 'ip', ip.address, zone)))),
        ]),
      ).then((all) => all.flat()),
    ),
    Promise.all(
      domains.map(async (d) => [
        ...(await checkDomain(deps, dns, {
          name: d.name,
          selector: d.dkim_selector,
          publicKey: d.dkim_public_key,
          returnPathHost: d.return_path_host,
          addresses: addressesOfPool(d.pool_id),
        })),
        ...(await Promise.all(config.doctor_domain_blocklists.map((zone) => checkBlocklist(dns, 'domain', d.name, zone)))),
      ]),
    ).then((all) => all.flat()),
  ])
  const checks = [
    network,
    host,
    checkCertificate(config, deps.clock.now()),
    tracking,
    ...ipChecks,
    ...domainChecks,
    checkOneClickUnsubscribe(deps),
    checkComplaintRate(deps),
    checkBulkDmarc(domainChecks),
  ]
  return { ran_at: toIso(deps.clock.now())!, summary: summarise(checks), checks }
}

/** The last stored report, or null before the first run. */
export function lastDoctorReport(deps: { db: Pick<Deps['db'], 'select'> }): DoctorReport | null {
  const row = deps.db.select({ value: systemState.value }).from(systemState).where(eq(systemState.key, STATE_KEY)).get()
  return row ? (JSON.parse(row.value) as DoctorReport) : null
}

/** A check whose status differs from the last run's, as the data of a doctor.changed event. */
export interface DoctorChange {
  check_id: string
  title: string
  subject: string | null
  from: CheckResult['status'] | null
  to: CheckResult['status']
  detail: string
  fix: string | null
}

/**
 * What changed since `previous`: every check whose status moved, and on a first run (or a
 * new subject) every check that does not pass, so a problem is announced once, when seen.
 */
export function doctorChanges(previous: DoctorReport | null, next: DoctorReport): DoctorChange[] {
  const before = new Map((previous?.checks ?? []).map((c) => [c.id, c.status]))
  const changes: DoctorChange[] = []
  for (const c of next.checks) {
    const from = before.get(c.id) ?? null
    if (from === c.status) continue
    if (from === null && (c.status === 'pass' || c.status === 'skipped')) continue
    changes.push({ check_id: c.id, title: c.title, subject: c.subject, from, to: c.status, detail: c.detail, fix: c.fix })
  }
  return changes
}

/** Stores the report as the last one and raises one doctor.changed event per change, in one transaction. */
export function recordDoctorReport(deps: Pick<Deps, 'db' | 'clock'>, report: DoctorReport): DoctorChange[] {
  return deps.db.transaction((tx) => {
    const changes = doctorChanges(lastDoctorReport({ db: tx }), report)
    const now = deps.clock.now()
    const value = JSON.stringify(report)
    tx.insert(systemState)
      .values({ key: STATE_KEY, value, updated_at: now })
      .onConflictDoUpdate({ target: systemState.key, set: { value, updated_at: now } })
      .run()
    for (const change of changes) emit(tx, now, { kind: DOCTOR_CHANGED, data: { ...change } })
    return changes
  })
}

/**
 * What the composition root wires in (app.ts, cli.ts): the delivery guardrails pause the
 * broadcasts of a pool whose IP became listed (delivery/guardrails.ts pauseForListedIp), and
 * this module must not import delivery/ (dependencies point the other way).
 */
export interface DoctorHooks {
  onListedIp?: (address: string, evidence: string) => void
}

/** The sending IPs that a blocklist check newly fails for, with the check's detail as evidence. */
export function newlyListedIps(changes: readonly DoctorChange[]): Array<{ address: string; evidence: string }> {
  return changes
    .filter((c) => c.check_id.startsWith('blocklist.') && c.to === 'fail' && c.subject !== null && net.isIP(c.subject) !== 0)
    .map((c) => ({ address: c.subject!, evidence: c.detail }))
}

/** Stores a report and hands every newly listed IP to the hook (once per listing: a listing that stays is not news). */
export function recordAndAct(deps: Deps, report: DoctorReport, hooks: DoctorHooks = {}): DoctorChange[] {
  const changes = recordDoctorReport(deps, report)
  for (const listed of newlyListedIps(changes)) hooks.onListedIp?.(listed.address, listed.evidence)
  return changes
}

/** Runs the checks and stores the result: what `GET /api/v2/doctor?refresh=true`, the CLI and the daily run do. */
export async function runAndRecordDoctor(deps: Deps, hooks: DoctorHooks = {}): Promise<{ report: DoctorReport; changes: DoctorChange[] }> {
  const report = await runDoctor(deps)
  return { report, changes: recordAndAct(deps, report, hooks) }
}

/** The report the API answers with: a fresh run when asked for or when there is none yet, else the last one. */
export async function getDoctorReport(deps: Deps, refresh: boolean, hooks: DoctorHooks = {}): Promise<DoctorReport> {
  if (!refresh) {
    const last = lastDoctorReport(deps)
    if (last) return last
  }
  return (await runAndRecordDoctor(deps, hooks)).report
}

/** One line for the log and the CLI: the counts and the failing checks' ids. */
export function doctorSummaryLine(report: DoctorReport): string {
  const s = report.summary
  const failing = report.checks.filter((c) => c.status === 'fail').map((c) => c.id)
  return `deliverability doctor: ${s.pass} pass, ${s.warn} warn, ${s.fail} fail, ${s.skipped} skipped${failing.length ? ` (failing: ${failing.slice(0, 10).join(', ')}${failing.length > 10 ? ', ...' : ''})` : ''}`
}
