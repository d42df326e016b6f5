/**
 * What the Sending pages (domains, IPs and pools, nodes, bridges) share: the API's record
 * shapes, the option lists their forms pick from, and how a failed change is reported
 * (beside the field the API names, else in a toast).
 */
import { useQuery } from '@tanstack/react-query'
import { AlertTriangleIcon } from 'lucide-react'
import type { ReactNode } from 'react'
import { apiPage } from '../lib/api'
import { cn } from '../lib/utils'

export type RecordState = 'unchecked' | 'verified' | 'missing' | 'mismatch' | 'error'

/** One DNS record of a sending domain (GET /api/v2/sending-domains/:id). */
export interface DnsRecord {
  purpose: 'dkim' | 'spf' | 'dmarc' | 'return_path'
  type: 'TXT' | 'CNAME'
  name: string
  value: string
  required: boolean
  state: RecordState
  found?: string[]
  message?: string
  warning?: string
}

export interface SendingDomain {
  id: number
  name: string
  status: 'pending' | 'verified' | 'failed'
  pool_id: number | null
  dkim_selector: string
  return_path_host: string
  track_opens: boolean
  track_clicks: boolean
  dns_records: DnsRecord[]
  warnings: string[]
  checked_at: string | null
  verified_at: string | null
  created_at: string
  updated_at: string
}

export interface SourceIp {
  id: number
  address: string
  family: number
  hostname: string
  pools: Array<{ id: number; name: string; weight: number }>
  created_at: string
  updated_at: string
}

export interface Pool {
  id: number
  name: string
  is_default: boolean
  members: Array<{ ip_id: number; address: string; hostname: string; weight: number }>
  created_at: string
  updated_at: string
}

export interface SendingNode {
  id: number
  name: string
  kind: 'direct' | 'relay'
  pool_id: number | null
  relay_host: string | null
  relay_port: number | null
  relay_tls: 'none' | 'starttls' | 'tls' | null
  relay_username: string | null
  has_password: boolean
  hourly_cap: number | null
  daily_cap: number | null
  is_default: boolean
  active: boolean
  usage: { this_hour: number; today: number }
  created_at: string
  updated_at: string
}

export interface Bridge {
  id: number
  name: string
  smtp_username: string
  api_key_id: number | null
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
  /** Whether SMTP-submitted mail that bounces or expires gets an RFC 3464 DSN to its envelope sender. */
  send_dsn: boolean
  counts: { accepted: number; delivered: number; bounced: number; complained: number }
  usage: { this_hour: number; today: number }
  created_at: string
  updated_at: string
}

/** The credentials in the one answer that shows them (bridge create and rotation). */
export interface BridgeSecrets {
  smtp?: { host: string; port: number | null; username: string; password: string; warning?: string }
  api_key?: string
}

/** Every row of a list (the option lists of the forms: pools, nodes, IPs, domains), up to the API's page maximum. */
function useAll<T>(key: string, path: string, enabled = true) {
  return useQuery({ queryKey: [key, 'options'], queryFn: async () => (await apiPage<T>(path, { per_page: 100 })).data, enabled })
}

/** IP pools for a form's pool choice. */
export const usePoolOptions = (enabled = true) => useAll<Pool>('ip-pools', '/api/v2/ip-pools', enabled)
/** Sending nodes for a form's node choice. */
export const useNodeOptions = (enabled = true) => useAll<SendingNode>('sending-nodes', '/api/v2/sending-nodes', enabled)
/** Source IPs for a pool's members. */
export const useIpOptions = (enabled = true) => useAll<SourceIp>('ips', '/api/v2/ips', enabled)
/** Sending domains for a bridge's domains. */
export const useDomainOptions = (enabled = true) => useAll<SendingDomain>('sending-domains', '/api/v2/sending-domains', enabled)

export { fieldErrorOf, reportError } from '../lib/form-errors'

/** Text for an optional number field: '' for null. */
export const numText = (n: number | null | undefined) => (n == null ? '' : String(n))
/** A number field's value for the API: null when empty. */
export const numOrNull = (s: string): number | null => (s.trim() === '' ? null : Number(s))

/** A yellow note: a warning the API gave (a host name that is not public). */
export function WarningNote({ children, className }: { children: ReactNode; className?: string }) {
  return (
    <div role="note" className={cn('flex gap-3 rounded-lg border border-warning/40 bg-warning/10 p-3 text-sm', className)}>
      <AlertTriangleIcon className="mt-0.5 size-4 shrink-0 text-warning" aria-hidden="true" />
      <div className="grid gap-1">{children}</div>
    </div>
  )
}

/** "12 of 100 this hour": usage against a cap, or the usage alone without one. */
export function usageText(used: number, cap: number | null, per: string): string {
  return cap == null ? `${used.toLocaleString()} ${per}, no cap` : `${used.toLocaleString()} of ${cap.toLocaleString()} ${per}`
}

/** A thin bar of usage against a cap (nothing without a cap). */
export function UsageBar({ used, cap, label }: { used: number; cap: number | null; label: string }) {
  if (cap == null) return null
  const pct = Math.min(100, Math.round((used / cap) * 100))
  return (
    <div
      role="progressbar"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={cap}
      aria-valuenow={used}
      className="h-1.5 w-full max-w-40 overflow-hidden rounded-full bg-muted"
    >
      <div className={cn('h-full rounded-full', pct >= 90 ? 'bg-destructive' : pct >= 70 ? 'bg-warning' : 'bg-primary')} style={{ width: `${pct}%` }} />
    </div>
  )
}
