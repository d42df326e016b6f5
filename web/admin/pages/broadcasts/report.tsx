/**
 * One broadcast at /broadcasts/:id: the live progress view while it sends (the record polled
 * every 1.5 s: bar, counts, pause / resume / cancel, the reason when paused, sent over time),
 * the results per version (the split-test winner marked) and per link, and the recipients
 * (filter by state and version, each linked to its message).
 */
import { keepPreviousData, useQuery } from '@tanstack/react-query'
import {
  CopyIcon,
  ExternalLinkIcon,
  MailQuestionIcon,
  PauseIcon,
  PencilIcon,
  PlayIcon,
  RepeatIcon,
  SearchIcon,
  TrophyIcon,
  UsersIcon,
  XCircleIcon,
} from 'lucide-react'
import { useEffect, useRef, useState } from 'react'
import { Area, AreaChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts'
import { Link, useLocation, useParams } from 'wouter'
import { ConfirmDialog } from '../../components/confirm-dialog'
import { DataTable, type Column } from '../../components/data-table'
import { ListToolbar, QueryFilter } from '../../components/list-toolbar'
import { BackLink, detailStates } from '../../components/detail-page'
import { PageHeader } from '../../components/page-header'
import { EmptyState, ErrorState, LoadingState } from '../../components/states'
import { Badge } from '../../components/ui/badge'
import { Button } from '../../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../../components/ui/card'
import { Progress } from '../../components/ui/progress'
import { Table, TableBody, TableCell, TableHead, TableHeader, TableRow } from '../../components/ui/table'
import { Tabs, TabsContent, TabsList, TabsTrigger } from '../../components/ui/tabs'
import { api } from '../../lib/api'
import { can, useSession } from '../../lib/session'
import { useUrlQuery } from '../../lib/url-query'
import { formatDateTime, formatNumber, formatRate } from '../../lib/utils'
import { allowedActions, BroadcastStatusBadge, RECIPIENT_STATES, useTransition, type Broadcast, type Recipient, type Stats, type Version } from './shared'

/** States the engine moves on its own: the page polls while the broadcast is in one. */
const MOVING = new Set(['scheduled', 'preparing', 'sending'])
const POLL_MS = 1500

/** Samples of `sent` taken while polling, for the sent-over-time chart (kept only in the page). */
function useSentSamples(b: Broadcast | undefined) {
  const [points, setPoints] = useState<Array<{ t: number; sent: number }>>([])
  const last = useRef<string | null>(null)
  useEffect(() => {
    if (!b || b.counts.total === 0) return
    const key = `${b.updated_at}|${b.counts.sent}`
    if (last.current === key) return
    last.current = key
    setPoints((p) => [...p.slice(-300), { t: Date.now(), sent: b.counts.sent }])
  }, [b])
  return points
}

function Figure({ label, value, note, tone }: { label: string; value: string; note?: string; tone?: 'danger' }) {
  return (
    <div className="grid gap-1 rounded-lg border p-3">
      <dt className="text-xs text-muted-foreground">{label}</dt>
      <dd className={tone === 'danger' && value !== '0' ? 'text-xl font-semibold text-destructive tabular-nums' : 'text-xl font-semibold tabular-nums'}>
        {value}
      </dd>
      {note ? <dd className="text-xs text-muted-foreground">{note}</dd> : null}
    </div>
  )
}

function ProgressCard({ b }: { b: Broadcast }) {
  const points = useSentSamples(b)
  const c = b.counts
  const pct = Math.round(b.progress * 100)
  const started = b.counts.total > 0
  return (
    <Card>
      <CardHeader>
        <CardTitle>Progress</CardTitle>
        <CardDescription aria-live="polite" data-testid="progress-summary">
          {b.status === 'scheduled'
            ? `Starts ${formatDateTime(b.send_at)}.`
            : !started
              ? 'Preparing the recipient list…'
              : `${formatNumber(c.total - c.pending)} of ${formatNumber(c.total)} done (${pct}%).`}
        </CardDescription>
      </CardHeader>
      <CardContent className="grid gap-4">
        <Progress
          // Indeterminate (a pulsing bar) only while the engine is taking the recipient list.
          value={started ? pct : b.status === 'preparing' || b.status === 'sending' ? null : 0}
          aria-label="Sending progress"
          aria-valuetext={started ? `${pct}%` : 'not started'}
          className="h-3"
        />
        <dl className="grid grid-cols-2 gap-3 sm:grid-cols-4 lg:grid-cols-8" data-testid="broadcast-counts">
          <Figure label="Recipients" value={formatNumber(c.total)} />
          <Figure label="Pending" value={formatNumber(c.pending)} />
          <Figure label="Sent" value={formatNumber(c.sent)} />
          <Figure label="Skipped" value={formatNumber(c.skipped)} />
          <Figure label="Failed" value={formatNumber(c.failed)} tone="danger" />
          <Figure label="Bounced" value={formatNumber(c.bounced)} tone="danger" />
          <Figure label="Opened" value={formatNumber(c.opened)} />
          <Figure label="Clicked" value={formatNumber(c.clicked)} />
        </dl>
        {MOVING.has(b.status) && points.length > 1 ? (
          <div aria-label="Messages sent over time" role="img">
            <ResponsiveContainer width="100%" height={180}>
              <AreaChart data={points} margin={{ top: 8, right: 8, left: -12, bottom: 0 }}>
                <CartesianGrid vertical={false} stroke="var(--color-border)" />
                <XAxis
                  dataKey="t"
                  type="number"
                  scale="time"
                  domain={['dataMin', 'dataMax']}
                  tickFormatter={(t: number) => new Date(t).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })}
                  minTickGap={48}
                  tick={{ fontSize: 11, fill: 'var(--color-muted-foreground)' }}
                  stroke="var(--color-border)"
                />
                <YAxis allowDecimals={false} width={48} tick={{ fontSize: 11, fill: 'var(--color-muted-foreground)' }} stroke="var(--color-border)" />
                <Tooltip labelFormatter={(t) => new Date(Number(t)).toLocaleTimeString()} />
                <Area
                  type="monotone"
                  dataKey="sent"
                  name="Sent"
                  stroke="var(--color-primary)"
                  fill="var(--color-primary)"
                  fillOpacity={0.15}
                  isAnimationActive={false}
                />
              </AreaChart>
            </ResponsiveContainer>
          </div>
        ) : null}
      </CardContent>
    </Card>
  )
}

function ResultsCard({ b, versions }: { b: Broadcast; versions: Version[] }) {
  // Read again whenever the polled record moves (its status or its counters), so the results follow the progress.
  const stats = useQuery({
    queryKey: ['broadcasts', b.id, 'stats', b.status, b.counts],
    queryFn: () => api<Stats>('GET', `/api/v2/broadcasts/${b.id}/stats`),
    placeholderData: keepPreviousData,
  })
  if (stats.isPending) return <LoadingState rows={4} label="Loading the results" />
  if (stats.isError) return <ErrorState title="The results could not be loaded" error={stats.error} onRetry={() => stats.refetch()} />
  const s = stats.data
  const winner = s.split_test?.winner_version_id ?? b.winner_version_id
  const rows = s.versions.length > 1 || versions.length > 0 ? s.versions : []
  const line = (name: React.ReactNode, r: Stats['totals'], key: string | number) => (
    <TableRow key={key}>
      <TableCell className="font-medium">{name}</TableCell>
      <TableCell className="text-right tabular-nums">{formatNumber(r.sent)}</TableCell>
      <TableCell className="text-right tabular-nums">{formatNumber(r.delivered)}</TableCell>
      <TableCell className="text-right tabular-nums">{formatRate(r.open_rate)}</TableCell>
      <TableCell className="text-right tabular-nums">{formatRate(r.click_rate)}</TableCell>
      <TableCell className="text-right tabular-nums">{formatNumber(r.bounced)}</TableCell>
      <TableCell className="text-right tabular-nums">{formatNumber(r.complained)}</TableCell>
      <TableCell className="text-right tabular-nums">{formatNumber(r.unsubscribed)}</TableCell>
    </TableRow>
  )
  return (
    <div className="grid gap-6">
      <Card className="gap-3">
        <CardHeader>
          <CardTitle>Results</CardTitle>
          <CardDescription>
            Rates are of the messages sent.
            {s.split_test ? ` Split test by ${s.split_test.metric.replaceAll('_', ' ')}: ${s.split_test.phase ?? 'not started'}.` : ''}
          </CardDescription>
        </CardHeader>
        <CardContent className="overflow-x-auto px-0">
          <Table data-testid="results-table">
            <caption className="sr-only">Results per version</caption>
            <TableHeader>
              <TableRow className="hover:bg-transparent">
                <TableHead>Version</TableHead>
                <TableHead className="text-right">Sent</TableHead>
                <TableHead className="text-right">Delivered</TableHead>
                <TableHead className="text-right">Open rate</TableHead>
                <TableHead className="text-right">Click rate</TableHead>
                <TableHead className="text-right">Bounces</TableHead>
                <TableHead className="text-right">Complaints</TableHead>
                <TableHead className="text-right">Unsubscribes</TableHead>
              </TableRow>
            </TableHeader>
            <TableBody>
              {rows.map((v) =>
                line(
                  <span className="inline-flex items-center gap-2">
                    {v.name}
                    {winner === v.version_id ? (
                      <Badge variant="success">
                        <TrophyIcon aria-hidden="true" /> winner
                      </Badge>
                    ) : null}
                  </span>,
                  v,
                  v.version_id,
                ),
              )}
              {line(rows.length ? 'All versions' : 'All recipients', s.totals, 'totals')}
            </TableBody>
          </Table>
        </CardContent>
      </Card>
      <Card className="gap-3">
        <CardHeader>
          <CardTitle>Links</CardTitle>
          <CardDescription>Clicks per link (unique: distinct messages).</CardDescription>
        </CardHeader>
        <CardContent className="overflow-x-auto px-0">
          {s.links.length === 0 ? (
            <p className="px-6 text-sm text-muted-foreground">{b.track_clicks ? 'No clicks yet.' : 'Click tracking is off for this broadcast.'}</p>
          ) : (
            <Table>
              <caption className="sr-only">Clicks per link</caption>
              <TableHeader>
                <TableRow className="hover:bg-transparent">
                  <TableHead>Link</TableHead>
                  <TableHead className="text-right">Clicks</TableHead>
                  <TableHead className="text-right">Unique</TableHead>
                </TableRow>
              </TableHeader>
              <TableBody>
                {s.links.map((l) => (
                  <TableRow key={l.url}>
                    <TableCell className="max-w-xl truncate font-mono text-xs">{l.url}</TableCell>
                    <TableCell className="text-right tabular-nums">{formatNumber(l.clicks)}</TableCell>
                    <TableCell className="text-right tabular-nums">{formatNumber(l.unique_clicks)}</TableCell>
                  </TableRow>
                ))}
              </TableBody>
            </Table>
          )}
        </CardContent>
      </Card>
    </div>
  )
}

const STATE_VARIANT: Record<string, 'success' | 'secondary' | 'outline' | 'warning' | 'destructive'> = {
  pending: 'outline',
  queued: 'secondary',
  sent: 'success',
  skipped: 'warning',
  failed: 'destructive',
  bounced: 'destructive',
}

function RecipientsTable({ b, versions }: { b: Broadcast; versions: Version[] }) {
  const versionName = (id: number | null) => (id == null ? '—' : (versions.find((v) => v.id === id)?.name ?? `Version ${id}`))
  const columns: Column<Recipient>[] = [
    { id: 'email', header: 'Recipient', cell: (r) => <span className="font-medium break-all">{r.email}</span> },
    {
      id: 'state',
      header: 'State',
      cell: (r) => (
        <span className="inline-flex flex-wrap items-center gap-2">
          <Badge variant={STATE_VARIANT[r.state] ?? 'outline'}>{r.state}</Badge>
          {r.reason ? <span className="text-xs text-muted-foreground">{r.reason}</span> : null}
        </span>
      ),
    },
    ...(versions.length ? [{ id: 'version', header: 'Version', className: 'hidden md:table-cell', cell: (r: Recipient) => versionName(r.version_id) }] : []),
    { id: 'opened', header: 'Opened', className: 'hidden lg:table-cell text-muted-foreground', cell: (r) => formatDateTime(r.opened_at) },
    { id: 'clicked', header: 'Clicked', className: 'hidden lg:table-cell text-muted-foreground', cell: (r) => formatDateTime(r.clicked_at) },
    {
      id: 'message',
      header: <span className="sr-only">Message</span>,
      className: 'w-0 text-right',
      cell: (r) =>
        r.message_id ? (
          <Button asChild variant="ghost" size="sm">
            <Link href={`~/admin/messages/${encodeURIComponent(r.message_id)}`} aria-label={`Message to ${r.email}`}>
              <ExternalLinkIcon /> Message
            </Link>
          </Button>
        ) : null,
    },
  ]
  return (
    <div className="grid gap-4">
      <ListToolbar>
        <QueryFilter id="recipient-state" name="state" label="State" allLabel="Any state" values={RECIPIENT_STATES} className="w-full sm:w-40" />
        {versions.length ? (
          <QueryFilter
            id="recipient-version"
            name="version_id"
            label="Version"
            allLabel="Any version"
            options={versions.map((v) => ({ value: String(v.id), label: v.name }))}
            className="w-full sm:w-44"
          />
        ) : null}
      </ListToolbar>
      <DataTable
        path={`/api/v2/broadcasts/${b.id}/recipients`}
        queryKey={`broadcast-${b.id}-recipients`}
        columns={columns}
        rowKey={(r) => r.id}
        filters={['state', 'version_id']}
        caption="Recipients"
        refetchInterval={() => (MOVING.has(b.status) ? POLL_MS * 2 : false)}
        empty={
          b.counts.total === 0
            ? { icon: UsersIcon, title: 'No recipients yet', description: 'The recipient list is taken from the audience when the broadcast starts.' }
            : { icon: SearchIcon, title: 'No recipients match', description: 'Choose another state or version.' }
        }
      />
    </div>
  )
}

/** /broadcasts/:id: progress, results and recipients of one broadcast. */
export function BroadcastReport() {
  const params = useParams<{ id: string }>()
  const id = Number(params.id)
  const valid = Number.isInteger(id) && id > 0
  const [query, setQuery] = useUrlQuery()
  const [, navigate] = useLocation()
  const { data: session } = useSession()
  const admin = session?.admin
  const [cancelling, setCancelling] = useState(false)
  const q = useQuery({
    queryKey: ['broadcasts', id],
    queryFn: () => api<Broadcast>('GET', `/api/v2/broadcasts/${id}`),
    enabled: valid,
    refetchInterval: (qq) => (qq.state.data && MOVING.has(qq.state.data.status) ? POLL_MS : false),
  })
  const versions = useQuery({
    queryKey: ['broadcasts', id, 'versions'],
    queryFn: () => api<Version[]>('GET', `/api/v2/broadcasts/${id}/versions`),
    enabled: valid,
  })
  const transition = useTransition((b, action) => {
    if (action === 'duplicate' || action === 'resend-to-non-openers') navigate(`~/admin/broadcasts/${b.id}/edit`)
  })
  const back = <BackLink>All broadcasts</BackLink>
  const state = detailStates(q, {
    back,
    invalid: !valid,
    notFound: { icon: MailQuestionIcon, title: 'No such broadcast', description: 'It may have been deleted.' },
    loadingLabel: 'Loading the broadcast',
  })
  if (state) return state
  const b = q.data!
  const a = allowedActions(b)
  const maySend = can(admin, 'broadcasts.send')
  const tab = query.get('tab') === 'recipients' ? 'recipients' : 'overview'
  const run = (action: 'pause' | 'resume' | 'duplicate' | 'resend-to-non-openers') => transition.mutate({ id: b.id, action })
  return (
    <div className="grid gap-6">
      {back}
      <PageHeader
        title={b.name}
        description={
          <span className="inline-flex flex-wrap items-center gap-2">
            <BroadcastStatusBadge status={b.status} />
            <span>{b.subject}</span>
          </span>
        }
        actions={
          <>
            <Button asChild variant="outline">
              <Link href={`/${b.id}/edit`}>
                <PencilIcon /> {a.edit && can(admin, 'broadcasts.update') ? 'Edit' : 'Settings'}
              </Link>
            </Button>
            {maySend && a.pause ? (
              <Button variant="outline" onClick={() => run('pause')} disabled={transition.isPending}>
                <PauseIcon /> Pause
              </Button>
            ) : null}
            {maySend && a.resume ? (
              <Button onClick={() => run('resume')} disabled={transition.isPending}>
                <PlayIcon /> Resume
              </Button>
            ) : null}
            {maySend && a.cancel ? (
              <Button variant="outline" onClick={() => setCancelling(true)} disabled={transition.isPending}>
                <XCircleIcon /> Cancel
              </Button>
            ) : null}
            {can(admin, 'broadcasts.create') ? (
              <Button variant="ghost" onClick={() => run('duplicate')} disabled={transition.isPending}>
                <CopyIcon /> Duplicate
              </Button>
            ) : null}
            {maySend && b.status === 'sent' ? (
              <Button variant="ghost" onClick={() => run('resend-to-non-openers')} disabled={transition.isPending}>
                <RepeatIcon /> Resend to non-openers
              </Button>
            ) : null}
          </>
        }
      />
      {b.status_reason && (b.status === 'paused' || b.status === 'failed' || b.status === 'cancelled') ? (
        <div
          role="status"
          data-testid="status-reason"
          className={
            b.status === 'failed'
              ? 'rounded-lg border border-destructive/30 bg-destructive/5 px-4 py-3 text-sm'
              : 'rounded-lg border border-warning/40 bg-warning/10 px-4 py-3 text-sm'
          }
        >
          <strong className="font-medium capitalize">{b.status}:</strong> {b.status_reason}
        </div>
      ) : null}
      <dl className="flex flex-wrap gap-x-8 gap-y-2 text-sm">
        <div>
          <dt className="text-muted-foreground">From</dt>
          <dd className="break-all">{b.from}</dd>
        </div>
        <div>
          <dt className="text-muted-foreground">{b.status === 'scheduled' ? 'Starts' : 'Started'}</dt>
          <dd>{formatDateTime(b.started_at ?? b.send_at)}</dd>
        </div>
        <div>
          <dt className="text-muted-foreground">Finished</dt>
          <dd>{formatDateTime(b.finished_at)}</dd>
        </div>
        {b.archive && b.status === 'sent' ? (
          <div>
            <dt className="text-muted-foreground">Archive</dt>
            <dd>
              <a href={`/archive/${b.archive_id}`} className="underline" target="_blank" rel="noreferrer">
                Public page
              </a>
            </dd>
          </div>
        ) : null}
      </dl>
      {b.status === 'draft' ? (
        <EmptyState
          title="Not scheduled yet"
          description="Progress and results show here once it is scheduled."
          action={
            <Button asChild>
              <Link href={`/${b.id}/edit`}>Open the editor</Link>
            </Button>
          }
        />
      ) : (
        <>
          <Tabs value={tab} onValueChange={(v) => setQuery({ tab: v === 'overview' ? null : v, page: null, state: null, version_id: null })}>
            <TabsList>
              <TabsTrigger value="overview">Overview</TabsTrigger>
              <TabsTrigger value="recipients">Recipients</TabsTrigger>
            </TabsList>
            <TabsContent value="overview" className="mt-4 grid gap-6">
              <ProgressCard b={b} />
              <ResultsCard b={b} versions={versions.data ?? []} />
            </TabsContent>
            <TabsContent value="recipients" className="mt-4">
              <RecipientsTable b={b} versions={versions.data ?? []} />
            </TabsContent>
          </Tabs>
        </>
      )}
      <ConfirmDialog
        open={cancelling}
        onOpenChange={setCancelling}
        title={`Cancel “${b.name}”?`}
        description="No more messages of it are sent; those not yet sent stay on record as pending. A cancelled broadcast cannot be resumed."
        confirmLabel="Cancel broadcast"
        onConfirm={() => transition.mutate({ id: b.id, action: 'cancel' })}
      />
    </div>
  )
}
