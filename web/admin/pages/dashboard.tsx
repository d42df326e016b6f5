import { useQuery } from '@tanstack/react-query'
import { AlertTriangleIcon, ArrowRightIcon, BarChart3Icon, CheckCircle2Icon, ClockIcon, InboxIcon, LockIcon } from 'lucide-react'
import { Area, AreaChart, CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts'
import { Link } from 'wouter'
import { PageHeader } from '../components/page-header'
import { EmptyState, ErrorState } from '../components/states'
import { Badge } from '../components/ui/badge'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../components/ui/card'
import { Skeleton } from '../components/ui/skeleton'
import { Tabs, TabsList, TabsTrigger } from '../components/ui/tabs'
import { ApiError, api } from '../lib/api'
import { can, useSession } from '../lib/session'
import { useUrlQuery } from '../lib/url-query'
import { formatDateTime, formatNumber, formatRate, timeAgo } from '../lib/utils'

/** The ranges the dashboard offers, and the stats bucket each reads. */
const RANGES = {
  '24h': { label: '24 hours', hours: 24, bucket: 'hour' },
  '7d': { label: '7 days', hours: 7 * 24, bucket: 'day' },
  '30d': { label: '30 days', hours: 30 * 24, bucket: 'day' },
} as const
type RangeId = keyof typeof RANGES

/**
 * The seven figures, each from its event kinds in GET /api/v2/stats: "sent" is every
 * message accepted for delivery (message.queued), "delivered" what a receiving server
 * accepted (message.sent), "bounced" both bounces and permanent failures.
 */
const SERIES = [
  { key: 'sent', label: 'Sent', kinds: ['message.queued'], color: 'var(--color-chart-1)' },
  { key: 'delivered', label: 'Delivered', kinds: ['message.sent'], color: 'var(--color-chart-2)' },
  { key: 'deferred', label: 'Deferred', kinds: ['message.deferred'], color: 'var(--color-chart-3)' },
  { key: 'bounced', label: 'Bounced', kinds: ['message.bounced', 'message.failed'], color: 'var(--color-chart-4)' },
  { key: 'complained', label: 'Complained', kinds: ['message.complained'], color: 'var(--color-chart-5)' },
  { key: 'opened', label: 'Opened', kinds: ['message.opened'], color: 'var(--color-chart-6)' },
  { key: 'clicked', label: 'Clicked', kinds: ['message.clicked'], color: 'var(--color-chart-7)' },
] as const
type SeriesKey = (typeof SERIES)[number]['key']
const KINDS = [...new Set(SERIES.flatMap((s) => s.kinds))]

type Rates = Record<'delivery_rate' | 'bounce_rate' | 'complaint_rate' | 'open_rate' | 'click_rate', number | null>
interface StatsAnswer {
  from: string
  to: string
  bucket: 'hour' | 'day'
  rows: Array<{ bucket_start: string; counts: Record<string, number>; rates: Rates }>
  totals: Array<{ counts: Record<string, number>; rates: Rates }>
}

/** The line under each figure: its rate (GET /api/v2/stats `rates`) or what it counts. */
const NOTE_OF: Record<SeriesKey, { rate: keyof Rates; label: string } | string> = {
  sent: 'accepted for delivery',
  delivered: { rate: 'delivery_rate', label: 'delivery rate' },
  deferred: 'attempts retried later',
  bounced: { rate: 'bounce_rate', label: 'bounce rate' },
  complained: { rate: 'complaint_rate', label: 'complaint rate' },
  opened: { rate: 'open_rate', label: 'open rate' },
  clicked: { rate: 'click_rate', label: 'click rate' },
}

type Point = { t: number } & Record<SeriesKey, number>

function sumOf(counts: Record<string, number>, kinds: readonly string[]): number {
  return kinds.reduce((n, k) => n + (counts[k] ?? 0), 0)
}

/** Dense points from the sparse rows: every bucket from `from` to `to`, zero where nothing happened. */
function toPoints(stats: StatsAnswer): Point[] {
  const size = stats.bucket === 'hour' ? 3_600_000 : 86_400_000
  const byStart = new Map(stats.rows.map((r) => [new Date(r.bucket_start).getTime(), r.counts]))
  const points: Point[] = []
  for (let t = new Date(stats.from).getTime(); t < new Date(stats.to).getTime(); t += size) {
    const counts = byStart.get(t) ?? {}
    const p = { t } as Point
    for (const s of SERIES) p[s.key] = sumOf(counts, s.kinds)
    points.push(p)
  }
  return points
}

function useStats(range: RangeId) {
  return useQuery({
    queryKey: ['stats', range],
    queryFn: () => {
      const r = RANGES[range]
      const to = new Date()
      const from = new Date(to.getTime() - r.hours * 3_600_000)
      const qs = new URLSearchParams({ from: from.toISOString(), to: to.toISOString(), bucket: r.bucket, kinds: KINDS.join(',') })
      return api<StatsAnswer>('GET', `/api/v2/stats?${qs}`)
    },
    refetchInterval: 60_000,
  })
}

function tickLabel(bucket: 'hour' | 'day') {
  return (t: number) =>
    bucket === 'hour'
      ? new Date(t).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
      : new Date(t).toLocaleDateString(undefined, { month: 'short', day: 'numeric' })
}

function StatTile({ label, value, note, color }: { label: string; value: number; note: string; color: string }) {
  return (
    <Card className="gap-2 py-4">
      <CardContent className="grid gap-1.5 px-4">
        <div className="flex items-center gap-2 text-xs font-medium text-muted-foreground">
          <span className="size-2 rounded-full" style={{ background: color }} aria-hidden="true" />
          {label}
        </div>
        <div className="text-2xl font-semibold tracking-tight tabular-nums">{formatNumber(value)}</div>
        <div className="min-h-[2lh] text-xs leading-snug text-muted-foreground tabular-nums">{note}</div>
      </CardContent>
    </Card>
  )
}

function ChartTooltip({
  active,
  payload,
  label,
  bucket,
}: {
  active?: boolean
  payload?: Array<{ name: string; value: number; color: string }>
  label?: number
  bucket: 'hour' | 'day'
}) {
  if (!active || !payload?.length || label === undefined) return null
  return (
    <div className="grid min-w-40 gap-1.5 rounded-lg border bg-popover px-3 py-2 text-xs text-popover-foreground shadow-md">
      <div className="font-medium">
        {bucket === 'hour' ? formatDateTime(new Date(label).toISOString()) : new Date(label).toLocaleDateString(undefined, { dateStyle: 'medium' })}
      </div>
      {payload.map((p) => (
        <div key={p.name} className="flex items-center gap-2">
          <span className="size-2 rounded-full" style={{ background: p.color }} aria-hidden="true" />
          <span className="text-muted-foreground">{p.name}</span>
          <span className="ml-auto font-medium tabular-nums">{formatNumber(p.value)}</span>
        </div>
      ))}
    </div>
  )
}

const axis = { stroke: 'var(--color-muted-foreground)', fontSize: 12, tickLine: false, axisLine: false } as const

function DeliveryChart({ points, bucket }: { points: Point[]; bucket: 'hour' | 'day' }) {
  const shown = SERIES.filter((s) => ['sent', 'delivered', 'deferred', 'bounced'].includes(s.key))
  return (
    <ResponsiveContainer width="100%" height={280}>
      <AreaChart data={points} margin={{ top: 8, right: 8, left: -12, bottom: 0 }}>
        <defs>
          {shown.map((s) => (
            <linearGradient key={s.key} id={`fill-${s.key}`} x1="0" y1="0" x2="0" y2="1">
              <stop offset="5%" stopColor={s.color} stopOpacity={0.25} />
              <stop offset="95%" stopColor={s.color} stopOpacity={0} />
            </linearGradient>
          ))}
        </defs>
        <CartesianGrid vertical={false} stroke="var(--color-border)" />
        <XAxis dataKey="t" type="number" scale="time" domain={['dataMin', 'dataMax']} tickFormatter={tickLabel(bucket)} minTickGap={32} {...axis} />
        <YAxis allowDecimals={false} width={48} {...axis} />
        <Tooltip content={<ChartTooltip bucket={bucket} />} />
        <Legend iconType="circle" iconSize={8} wrapperStyle={{ fontSize: 12 }} itemSorter={null} />
        {shown.map((s) => (
          <Area
            key={s.key}
            type="monotone"
            dataKey={s.key}
            name={s.label}
            stroke={s.color}
            strokeWidth={2}
            fill={`url(#fill-${s.key})`}
            isAnimationActive={false}
          />
        ))}
      </AreaChart>
    </ResponsiveContainer>
  )
}

function EngagementChart({ points, bucket }: { points: Point[]; bucket: 'hour' | 'day' }) {
  const shown = SERIES.filter((s) => ['opened', 'clicked', 'complained'].includes(s.key))
  return (
    <ResponsiveContainer width="100%" height={280}>
      <LineChart data={points} margin={{ top: 8, right: 8, left: -12, bottom: 0 }}>
        <CartesianGrid vertical={false} stroke="var(--color-border)" />
        <XAxis dataKey="t" type="number" scale="time" domain={['dataMin', 'dataMax']} tickFormatter={tickLabel(bucket)} minTickGap={32} {...axis} />
        <YAxis allowDecimals={false} width={48} {...axis} />
        <Tooltip content={<ChartTooltip bucket={bucket} />} />
        <Legend iconType="circle" iconSize={8} wrapperStyle={{ fontSize: 12 }} itemSorter={null} />
        {shown.map((s) => (
          <Line key={s.key} type="monotone" dataKey={s.key} name={s.label} stroke={s.color} strokeWidth={2} dot={false} isAnimationActive={false} />
        ))}
      </LineChart>
    </ResponsiveContainer>
  )
}

function StatsSection({ range }: { range: RangeId }) {
  const stats = useStats(range)
  if (stats.isPending) {
    return (
      <div role="status" aria-live="polite" className="grid gap-6">
        <span className="sr-only">Loading statistics…</span>
        <div className="grid grid-cols-2 gap-3 sm:grid-cols-4 xl:grid-cols-7">
          {SERIES.map((s) => (
            <Skeleton key={s.key} className="h-[122px] rounded-xl" />
          ))}
        </div>
        <div className="grid gap-6 lg:grid-cols-2">
          <Skeleton className="h-[360px] rounded-xl" />
          <Skeleton className="h-[360px] rounded-xl" />
        </div>
      </div>
    )
  }
  if (stats.isError) return <ErrorState title="Statistics could not be loaded" error={stats.error} onRetry={() => stats.refetch()} />
  const points = toPoints(stats.data)
  const totals = stats.data.totals[0] ?? { counts: {}, rates: {} as Rates }
  const nothing = SERIES.every((s) => sumOf(totals.counts, s.kinds) === 0)
  return (
    <div className="grid gap-6">
      <section aria-label="Totals" className="grid grid-cols-2 gap-3 sm:grid-cols-4 xl:grid-cols-7">
        {SERIES.map((s) => {
          const note = NOTE_OF[s.key]
          const text = typeof note === 'string' ? note : `${formatRate(totals.rates[note.rate])} ${note.label}`
          return <StatTile key={s.key} label={s.label} value={sumOf(totals.counts, s.kinds)} note={text} color={s.color} />
        })}
      </section>
      <div className="grid gap-6 lg:grid-cols-2">
        <Card data-chart="delivery">
          <CardHeader>
            <CardTitle>Delivery</CardTitle>
            <CardDescription>Messages accepted, delivered, deferred and bounced over the last {RANGES[range].label}.</CardDescription>
          </CardHeader>
          <CardContent className="px-3 sm:px-5">{nothing ? <NoActivity /> : <DeliveryChart points={points} bucket={stats.data.bucket} />}</CardContent>
        </Card>
        <Card data-chart="engagement">
          <CardHeader>
            <CardTitle>Engagement</CardTitle>
            <CardDescription>Opens, clicks and complaints (opens and clicks only for tracked messages).</CardDescription>
          </CardHeader>
          <CardContent className="px-3 sm:px-5">{nothing ? <NoActivity /> : <EngagementChart points={points} bucket={stats.data.bucket} />}</CardContent>
        </Card>
      </div>
    </div>
  )
}

function NoActivity() {
  return (
    <EmptyState
      icon={BarChart3Icon}
      title="No mail in this period"
      description="Send a message through the API, SMTP or a bridge; it appears here within the hour the statistics are counted."
      className="h-[280px] border-0"
    />
  )
}

/** GET /api/v2/system/overview, read loosely: the route is new and servers before it answer 404. */
interface Overview {
  queue_depth?: number
  queue?: { depth?: number; queued?: number; deferred?: number; sending?: number; oldest_queued_at?: string | null }
  oldest_queued_at?: string | null
  warnings?: Array<{ kind: string; message: string; href?: string | null }>
}

/** Turns an API path or console path from a warning into a console link (under /admin). */
function consoleHref(href: string): string {
  return href.startsWith('/admin') ? `~${href}` : href
}

function QueueCard({ overview }: { overview: Overview }) {
  const depth = overview.queue?.depth ?? overview.queue_depth ?? 0
  const oldest = overview.queue?.oldest_queued_at ?? overview.oldest_queued_at ?? null
  const parts = (['queued', 'deferred', 'sending'] as const).filter((k) => typeof overview.queue?.[k] === 'number')
  return (
    <Card>
      <CardHeader>
        <CardTitle className="flex items-center gap-2">
          <InboxIcon className="size-4 text-muted-foreground" aria-hidden="true" /> Queue
        </CardTitle>
        <CardDescription>Messages waiting for delivery (queued, deferred or being sent).</CardDescription>
      </CardHeader>
      <CardContent className="grid gap-4">
        <div className="flex items-baseline gap-2">
          <span className="text-3xl font-semibold tracking-tight tabular-nums" data-testid="queue-depth">
            {formatNumber(depth)}
          </span>
          <span className="text-sm text-muted-foreground">{depth === 1 ? 'message' : 'messages'}</span>
        </div>
        {parts.length ? (
          <dl className="grid grid-cols-3 gap-2 text-sm">
            {parts.map((k) => (
              <div key={k} className="rounded-lg bg-muted/60 px-3 py-2">
                <dt className="text-xs text-muted-foreground capitalize">{k}</dt>
                <dd className="font-medium tabular-nums">{formatNumber(overview.queue![k]!)}</dd>
              </div>
            ))}
          </dl>
        ) : null}
        <p className="flex items-center gap-2 text-sm text-muted-foreground">
          <ClockIcon className="size-4" aria-hidden="true" />
          {oldest ? (
            <span>
              Oldest waiting since <time dateTime={oldest}>{formatDateTime(oldest)}</time> ({timeAgo(oldest)})
            </span>
          ) : (
            'Nothing is waiting.'
          )}
        </p>
      </CardContent>
    </Card>
  )
}

function WarningsCard({ warnings }: { warnings: NonNullable<Overview['warnings']> }) {
  return (
    <Card>
      <CardHeader>
        <CardTitle className="flex items-center gap-2">
          <AlertTriangleIcon className="size-4 text-muted-foreground" aria-hidden="true" /> Needs attention
          {warnings.length ? <Badge variant="warning">{warnings.length}</Badge> : null}
        </CardTitle>
        <CardDescription>Configuration that stops mail from being delivered or trusted.</CardDescription>
      </CardHeader>
      <CardContent>
        {warnings.length === 0 ? (
          <p className="flex items-center gap-2 text-sm text-muted-foreground">
            <CheckCircle2Icon className="size-4 text-success" aria-hidden="true" /> Everything looks right.
          </p>
        ) : (
          <ul className="grid gap-2">
            {warnings.map((w, i) => (
              <li key={`${w.kind}-${i}`} className="flex items-start gap-3 rounded-lg border border-warning/40 bg-warning/8 px-3 py-2.5 text-sm">
                <AlertTriangleIcon className="mt-0.5 size-4 shrink-0 text-warning" aria-hidden="true" />
                <span className="flex-1">{w.message}</span>
                {w.href ? (
                  <Link href={consoleHref(w.href)} className="inline-flex shrink-0 items-center gap-1 font-medium text-primary hover:underline">
                    Fix <ArrowRightIcon className="size-3.5" aria-hidden="true" />
                  </Link>
                ) : null}
              </li>
            ))}
          </ul>
        )}
      </CardContent>
    </Card>
  )
}

function OverviewSection() {
  const overview = useQuery({
    queryKey: ['system-overview'],
    queryFn: async () => {
      try {
        return await api<Overview>('GET', '/api/v2/system/overview')
      } catch (e) {
        // A server without the route yet: show the section as unavailable, not as an error.
        if (e instanceof ApiError && e.status === 404) return null
        throw e
      }
    },
    refetchInterval: 30_000,
  })
  if (overview.isPending) {
    return (
      <div role="status" className="grid gap-6 lg:grid-cols-2">
        <span className="sr-only">Loading the queue…</span>
        <Skeleton className="h-[210px] rounded-xl" />
        <Skeleton className="h-[210px] rounded-xl" />
      </div>
    )
  }
  if (overview.isError) return <ErrorState title="The queue could not be loaded" error={overview.error} onRetry={() => overview.refetch()} />
  if (overview.data === null) {
    return (
      <Card>
        <CardContent className="text-sm text-muted-foreground">Queue depth and warnings are not available from this server version.</CardContent>
      </Card>
    )
  }
  return (
    <div className="grid gap-6 lg:grid-cols-2">
      <QueueCard overview={overview.data} />
      <WarningsCard warnings={overview.data.warnings ?? []} />
    </div>
  )
}

/** The dashboard: sending figures and charts for a range, the queue, and warnings. */
export function DashboardPage() {
  const session = useSession()
  const admin = session.data?.admin
  const [params, setParams] = useUrlQuery()
  const raw = params.get('range')
  const range: RangeId = raw && raw in RANGES ? (raw as RangeId) : '24h'
  const mayRead = can(admin, 'statistics.read')
  return (
    <div className="grid gap-8">
      <PageHeader
        title="Dashboard"
        description="Sending activity, the queue, and what needs your attention."
        actions={
          mayRead ? (
            <Tabs value={range} onValueChange={(v) => setParams({ range: v === '24h' ? null : v }, { replace: true })}>
              <TabsList aria-label="Period">
                {(Object.keys(RANGES) as RangeId[]).map((id) => (
                  <TabsTrigger key={id} value={id} className="px-3" aria-controls="dashboard-stats">
                    {RANGES[id].label}
                  </TabsTrigger>
                ))}
              </TabsList>
            </Tabs>
          ) : null
        }
      />
      {mayRead ? (
        <>
          <div id="dashboard-stats">
            <StatsSection range={range} />
          </div>
          <OverviewSection />
        </>
      ) : (
        <EmptyState
          icon={LockIcon}
          title="Statistics are not part of your role"
          description="Ask an administrator for the statistics.read permission to see sending activity here."
        />
      )}
    </div>
  )
}
