import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { CircleCheckIcon, CircleDashedIcon, CircleXIcon, RefreshCwIcon, StethoscopeIcon, TriangleAlertIcon, type LucideIcon } from 'lucide-react'
import { useState } from 'react'
import { toast } from 'sonner'
import { CopyButton } from '../components/copy-field'
import { PageHeader } from '../components/page-header'
import { EmptyState, ErrorState, LoadingState } from '../components/states'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../components/ui/card'
import { Tabs, TabsContent, TabsList, TabsTrigger } from '../components/ui/tabs'
import { api, errorMessage } from '../lib/api'
import { formatDateTime, timeAgo } from '../lib/utils'

type Status = 'pass' | 'warn' | 'fail' | 'skipped'
type Category = 'network' | 'host' | 'ip' | 'domain' | 'blocklist' | 'bulk_sender'

/** One check as GET /api/v2/doctor answers. */
interface Check {
  id: string
  category: Category
  subject: string | null
  title: string
  status: Status
  detail: string
  fix: string | null
}

/** GET /api/v2/doctor. */
interface Report {
  ran_at: string
  summary: Record<Status, number>
  checks: Check[]
}

const STATUS: Record<Status, { label: string; icon: LucideIcon; variant: 'success' | 'warning' | 'destructive' | 'outline'; iconClass: string }> = {
  fail: { label: 'Fail', icon: CircleXIcon, variant: 'destructive', iconClass: 'text-destructive' },
  warn: { label: 'Warning', icon: TriangleAlertIcon, variant: 'warning', iconClass: 'text-warning' },
  pass: { label: 'Pass', icon: CircleCheckIcon, variant: 'success', iconClass: 'text-success' },
  skipped: { label: 'Skipped', icon: CircleDashedIcon, variant: 'outline', iconClass: 'text-muted-foreground' },
}
const ORDER: Status[] = ['fail', 'warn', 'pass', 'skipped']
const SUMMARY_WORDS: Record<Status, string> = { fail: 'failing', warn: 'warnings', pass: 'passing', skipped: 'skipped' }

const CATEGORIES: Array<{ id: Category; title: string; description: string }> = [
  { id: 'network', title: 'Network', description: 'Whether mail can leave this server at all.' },
  { id: 'host', title: 'Server name and certificate', description: 'The name receivers see and the TLS certificate that proves it.' },
  { id: 'ip', title: 'Sending IPs', description: 'Reverse DNS and the name each address greets with.' },
  { id: 'domain', title: 'Sending domains', description: 'DKIM, SPF, DMARC, the return path, alignment, MTA-STS and TLS reporting.' },
  { id: 'blocklist', title: 'Blocklists', description: 'DNS blocklists each sending IP and domain is looked up in.' },
  { id: 'bulk_sender', title: 'Gmail and Yahoo bulk-sender rules', description: 'One-click unsubscribe, complaint rate under 0.3 %, DMARC everywhere.' },
]

function StatusBadge({ status }: { status: Status }) {
  const s = STATUS[status]
  const Icon = s.icon
  return (
    <Badge variant={s.variant} data-status={status}>
      <Icon aria-hidden="true" />
      {s.label}
    </Badge>
  )
}

function CheckRow({ check }: { check: Check }) {
  const Icon = STATUS[check.status].icon
  return (
    <li className="grid gap-2 py-4 first:pt-0 last:pb-0" data-check={check.id}>
      <div className="flex flex-wrap items-start gap-x-3 gap-y-1">
        <Icon className={`mt-0.5 size-4 shrink-0 ${STATUS[check.status].iconClass}`} aria-hidden="true" />
        <div className="grid min-w-0 flex-1 gap-1">
          <div className="flex flex-wrap items-center gap-2">
            <span className="font-medium">{check.title}</span>
            {check.subject ? <span className="font-mono text-xs text-muted-foreground [overflow-wrap:anywhere]">{check.subject}</span> : null}
          </div>
          <p className="text-sm text-muted-foreground [overflow-wrap:anywhere]">{check.detail}</p>
        </div>
        <StatusBadge status={check.status} />
      </div>
      {check.fix ? (
        <div className="ml-7 flex items-start gap-2 rounded-md border bg-muted/40 px-3 py-2">
          <div className="grid min-w-0 flex-1 gap-0.5">
            <span className="text-xs font-medium text-muted-foreground">Fix</span>
            <p className="text-sm [overflow-wrap:anywhere]">{check.fix}</p>
          </div>
          <CopyButton value={check.fix} label={`fix for ${check.title}${check.subject ? ` (${check.subject})` : ''}`} />
        </div>
      ) : null}
    </li>
  )
}

/** The deliverability doctor (issue 17): every check, problems first, each with its fix. */
export function DeliverabilityPage() {
  const qc = useQueryClient()
  const [view, setView] = useState<'attention' | 'all'>('attention')
  const report = useQuery({ queryKey: ['doctor'], queryFn: () => api<Report>('GET', '/api/v2/doctor') })
  const refresh = useMutation({
    mutationFn: () => api<Report>('GET', '/api/v2/doctor?refresh=true'),
    onSuccess: (fresh) => {
      qc.setQueryData(['doctor'], fresh)
      qc.invalidateQueries({ queryKey: ['system-overview'] })
      toast.success(fresh.summary.fail ? `Checks ran: ${fresh.summary.fail} failing` : 'Checks ran: nothing failing')
    },
    onError: (e) => toast.error(errorMessage(e)),
  })

  const header = (
    <PageHeader
      title="Deliverability"
      description="What decides whether receivers accept this server's mail, checked against live DNS, each problem with the exact fix."
      actions={
        <Button onClick={() => refresh.mutate()} disabled={refresh.isPending || report.isPending}>
          <RefreshCwIcon className={refresh.isPending ? 'animate-spin' : undefined} aria-hidden="true" />
          {refresh.isPending ? 'Running checks…' : 'Run checks now'}
        </Button>
      }
    />
  )
  if (report.isPending)
    return (
      <div className="grid gap-6">
        {header}
        <LoadingState rows={6} label="Running the deliverability checks" />
      </div>
    )
  if (report.isError)
    return (
      <div className="grid gap-6">
        {header}
        <ErrorState title="The checks could not be loaded" error={report.error} onRetry={() => report.refetch()} />
      </div>
    )

  const data = report.data
  const shown = data.checks.filter((c) => view === 'all' || c.status === 'fail' || c.status === 'warn')
  const sorted = (checks: Check[]) => [...checks].sort((a, b) => ORDER.indexOf(a.status) - ORDER.indexOf(b.status))
  return (
    <div className="grid gap-6">
      {header}
      <div className="flex flex-wrap items-center gap-3" aria-label="Summary of the last run">
        {ORDER.map((s) => {
          const Icon = STATUS[s].icon
          // Plain text on the page background: the badges' tinted fills are legible on cards only.
          return (
            <span key={s} className="flex items-center gap-1.5 text-sm" data-summary={s}>
              <Icon className={`size-4 ${STATUS[s].iconClass}`} aria-hidden="true" />
              <span className="tabular-nums font-medium">{data.summary[s]}</span>
              <span className="text-muted-foreground">{SUMMARY_WORDS[s]}</span>
            </span>
          )
        })}
        <span className="text-sm text-muted-foreground" title={formatDateTime(data.ran_at)}>
          Last run {timeAgo(data.ran_at)} · runs at start and daily
        </span>
      </div>
      <Tabs value={view} onValueChange={(v) => setView(v as 'attention' | 'all')}>
        <TabsList aria-label="Which checks to show">
          <TabsTrigger value="attention">Needs attention ({data.summary.fail + data.summary.warn})</TabsTrigger>
          <TabsTrigger value="all">All checks ({data.checks.length})</TabsTrigger>
        </TabsList>
        <TabsContent value={view} className="mt-4 grid gap-6">
          {shown.length === 0 ? (
            <EmptyState
              icon={StethoscopeIcon}
              title="Nothing needs attention"
              description="Every check passed or had nothing to check at the last run."
              action={
                <Button variant="outline" onClick={() => setView('all')}>
                  Show all checks
                </Button>
              }
            />
          ) : (
            CATEGORIES.map((cat) => {
              const checks = shown.filter((c) => c.category === cat.id)
              if (checks.length === 0) return null
              return (
                <Card key={cat.id} data-category={cat.id}>
                  <CardHeader>
                    <CardTitle>{cat.title}</CardTitle>
                    <CardDescription>{cat.description}</CardDescription>
                  </CardHeader>
                  <CardContent>
                    <ul className="divide-y">
                      {sorted(checks).map((c) => (
                        <CheckRow key={c.id} check={c} />
                      ))}
                    </ul>
                  </CardContent>
                </Card>
              )
            })
          )}
        </TabsContent>
      </Tabs>
    </div>
  )
}
