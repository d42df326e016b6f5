import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { FlameIcon, GaugeIcon, InboxIcon, RefreshCwIcon } from 'lucide-react'
import { toast } from 'sonner'
import { PageHeader } from '../components/page-header'
import { EmptyState, ErrorState, LoadingState } from '../components/states'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../components/ui/card'
import { Table, TableBody, TableCell, TableHead, TableHeader, TableRow } from '../components/ui/table'
import { api } from '../lib/api'
import { can, useSession } from '../lib/session'
import { reportError, UsageBar } from './sending-shared'

type PairState = 'normal' | 'throttled' | 'suspended'

interface Queue {
  total: number
  providers: Array<{
    provider: string
    name: string
    queued: number
    deferred: number
    sending: number
    oldest_at: string | null
    state: PairState
    sent_last_minute: number
    sent_24h: number
    tls_share: number | null
    limits: { connections: number; messages_per_connection: number; per_minute: number | null; per_hour: number | null }
  }>
  ips: Array<{
    ip_id: number | null
    address: string | null
    hostname: string | null
    deferred: number
    oldest_at: string | null
    state: PairState
    sent_last_minute: number
    warmup: { day: number; days_total: number; today: Array<{ provider: string; cap: number | null; sent: number }> } | null
  }>
  pairs: Array<{
    provider: string
    ip: string | null
    state: PairState
    rate_per_minute: number | null
    ceiling_per_minute: number | null
    hold_until: string | null
    reason: string | null
    sent_last_minute: number
  }>
}

const STATE_VARIANT: Record<PairState, 'success' | 'warning' | 'destructive'> = { normal: 'success', throttled: 'warning', suspended: 'destructive' }

function StateBadge({ state }: { state: PairState }) {
  return <Badge variant={STATE_VARIANT[state]}>{state === 'normal' ? 'Normal' : state === 'throttled' ? 'Throttled' : 'Suspended'}</Badge>
}

/** A TLS share (0..1) as a percentage; never rounded up to 100 % while one delivery was in plain text. */
function tlsPercent(share: number): string {
  const pct = share * 100
  return `${share < 1 && pct > 99.9 ? '99.9' : pct.toFixed(pct === 100 || pct === 0 ? 0 : 1)} %`
}

/** "3 min ago", "2 h ago": how long the oldest message has waited. */
function age(iso: string | null): string {
  if (!iso) return '—'
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000)
  if (s < 90) return `${Math.round(s)} s`
  if (s < 5400) return `${Math.round(s / 60)} min`
  if (s < 172_800) return `${Math.round(s / 3600)} h`
  return `${Math.round(s / 86_400)} days`
}

const perMinute = (n: number | null) => (n == null ? 'no limit' : `${n.toLocaleString()}/min`)

/** The delivery queue by provider group and source IP, the shaper's throttles and suspensions, and IP warm-up (issue 17). */
export function SendingQueuePage() {
  const admin = useSession().data?.admin
  const qc = useQueryClient()
  const q = useQuery({ queryKey: ['queue'], queryFn: () => api<Queue>('GET', '/api/v2/queue'), refetchInterval: 15_000 })
  const warmup = useMutation({
    mutationFn: ({ id, start }: { id: number; start: boolean }) =>
      start ? api('PUT', `/api/v2/ips/${id}/warmup`, {}) : api('DELETE', `/api/v2/ips/${id}/warmup`),
    onSuccess: (_, v) => {
      qc.invalidateQueries({ queryKey: ['queue'] })
      toast.success(v.start ? 'Warm-up started: the 30-day ramp applies from today' : 'Warm-up stopped')
    },
    onError: (e) => reportError(e, []),
  })
  const mayUpdate = can(admin, 'ips.update')
  const refresh = (
    <Button variant="outline" onClick={() => q.refetch()} disabled={q.isFetching}>
      <RefreshCwIcon /> Refresh
    </Button>
  )
  return (
    <div className="grid gap-8">
      <PageHeader title="Queue" description="Mail waiting per provider and per IP, how fast each provider takes it, and IP warm-up." actions={refresh} />
      {q.isPending ? (
        <LoadingState rows={6} />
      ) : q.isError ? (
        <ErrorState error={q.error} onRetry={() => q.refetch()} />
      ) : (
        <>
          <Card>
            <CardHeader>
              <CardTitle>By provider</CardTitle>
              <CardDescription>
                {q.data.total.toLocaleString()} {q.data.total === 1 ? 'recipient' : 'recipients'} waiting or being delivered.
              </CardDescription>
            </CardHeader>
            <CardContent>
              {q.data.providers.length === 0 ? (
                <EmptyState icon={InboxIcon} title="The queue is empty" description="Everything accepted has been delivered, bounced or failed." />
              ) : (
                <Table aria-label="Queue by provider">
                  <TableHeader>
                    <TableRow>
                      <TableHead>Provider</TableHead>
                      <TableHead className="text-right">Queued</TableHead>
                      <TableHead className="text-right">Deferred</TableHead>
                      <TableHead className="text-right">Sending</TableHead>
                      <TableHead>Oldest</TableHead>
                      <TableHead>Sent last minute</TableHead>
                      <TableHead className="text-right" title="Share of the deliveries of the last 24 hours made over TLS (STARTTLS)">
                        TLS, 24 h
                      </TableHead>
                      <TableHead>State</TableHead>
                    </TableRow>
                  </TableHeader>
                  <TableBody>
                    {q.data.providers.map((p) => (
                      <TableRow key={p.provider}>
                        <TableCell className="font-medium">{p.name}</TableCell>
                        <TableCell className="text-right tabular-nums">{p.queued.toLocaleString()}</TableCell>
                        <TableCell className="text-right tabular-nums">{p.deferred.toLocaleString()}</TableCell>
                        <TableCell className="text-right tabular-nums">{p.sending.toLocaleString()}</TableCell>
                        <TableCell>{age(p.oldest_at)}</TableCell>
                        <TableCell className="tabular-nums">
                          {p.sent_last_minute.toLocaleString()} <span className="text-muted-foreground">of {perMinute(p.limits.per_minute)} per IP</span>
                        </TableCell>
                        <TableCell className="text-right tabular-nums">
                          {p.tls_share === null ? (
                            <span className="text-muted-foreground">—</span>
                          ) : (
                            <>
                              {tlsPercent(p.tls_share)} <span className="text-muted-foreground">of {p.sent_24h.toLocaleString()}</span>
                            </>
                          )}
                        </TableCell>
                        <TableCell>
                          <StateBadge state={p.state} />
                        </TableCell>
                      </TableRow>
                    ))}
                  </TableBody>
                </Table>
              )}
            </CardContent>
          </Card>

          <Card>
            <CardHeader>
              <CardTitle>By IP</CardTitle>
              <CardDescription>Deferred counts the recipients waiting for a retry whose last attempt left over the IP.</CardDescription>
            </CardHeader>
            <CardContent>
              {q.data.ips.length === 0 ? (
                <EmptyState icon={GaugeIcon} title="No source IPs" description="Mail leaves from the host’s default address. Add IPs under IPs & pools." />
              ) : (
                <Table aria-label="Queue by IP">
                  <TableHeader>
                    <TableRow>
                      <TableHead>Address</TableHead>
                      <TableHead className="text-right">Deferred</TableHead>
                      <TableHead>Oldest</TableHead>
                      <TableHead className="text-right">Sent last minute</TableHead>
                      <TableHead>State</TableHead>
                      <TableHead>Warm-up</TableHead>
                      {mayUpdate ? <TableHead className="sr-only">Actions</TableHead> : null}
                    </TableRow>
                  </TableHeader>
                  <TableBody>
                    {q.data.ips.map((ip) => (
                      <TableRow key={ip.address ?? 'host'}>
                        <TableCell>
                          <div className="font-medium">{ip.address ?? 'Host default address'}</div>
                          <div className="text-xs text-muted-foreground">{ip.hostname}</div>
                        </TableCell>
                        <TableCell className="text-right tabular-nums">{ip.deferred.toLocaleString()}</TableCell>
                        <TableCell>{age(ip.oldest_at)}</TableCell>
                        <TableCell className="text-right tabular-nums">{ip.sent_last_minute.toLocaleString()}</TableCell>
                        <TableCell>
                          <StateBadge state={ip.state} />
                        </TableCell>
                        <TableCell>
                          {ip.warmup ? (
                            <div className="grid gap-1 text-sm" data-warmup={ip.address}>
                              <span>
                                Day {ip.warmup.day} of {ip.warmup.days_total}
                              </span>
                              {ip.warmup.today.map((t) => (
                                <div key={t.provider} className="grid gap-0.5">
                                  <span className="text-xs text-muted-foreground">
                                    {t.provider === '*' ? 'each provider' : t.provider}: {t.sent.toLocaleString()} of{' '}
                                    {t.cap == null ? 'no cap' : t.cap.toLocaleString()} today
                                  </span>
                                  <UsageBar used={t.sent} cap={t.cap} label={`Warm-up of ${ip.address} today, ${t.provider}`} />
                                </div>
                              ))}
                            </div>
                          ) : (
                            <span className="text-sm text-muted-foreground">{ip.ip_id === null ? '—' : 'Warm'}</span>
                          )}
                        </TableCell>
                        {mayUpdate ? (
                          <TableCell className="text-right">
                            {ip.ip_id !== null ? (
                              <Button
                                variant="outline"
                                size="sm"
                                disabled={warmup.isPending}
                                onClick={() => warmup.mutate({ id: ip.ip_id!, start: !ip.warmup })}
                                aria-label={`${ip.warmup ? 'Stop warm-up of' : 'Start warm-up of'} ${ip.address}`}
                              >
                                <FlameIcon /> {ip.warmup ? 'Stop warm-up' : 'Start warm-up'}
                              </Button>
                            ) : null}
                          </TableCell>
                        ) : null}
                      </TableRow>
                    ))}
                  </TableBody>
                </Table>
              )}
            </CardContent>
          </Card>

          <Card>
            <CardHeader>
              <CardTitle>Throttled and suspended</CardTitle>
              <CardDescription>
                Provider/IP pairs slowed down by “try later” replies, or suspended after a block; they recover as mail is accepted again.
              </CardDescription>
            </CardHeader>
            <CardContent>
              {q.data.pairs.filter((p) => p.state !== 'normal').length === 0 ? (
                <EmptyState icon={GaugeIcon} title="Every provider takes mail at full pace" description="No slow-down or block replies lately." />
              ) : (
                <Table aria-label="Throttled and suspended pairs">
                  <TableHeader>
                    <TableRow>
                      <TableHead>Provider</TableHead>
                      <TableHead>IP</TableHead>
                      <TableHead>State</TableHead>
                      <TableHead>Rate</TableHead>
                      <TableHead>Held until</TableHead>
                      <TableHead>Last reply</TableHead>
                    </TableRow>
                  </TableHeader>
                  <TableBody>
                    {q.data.pairs
                      .filter((p) => p.state !== 'normal')
                      .map((p) => (
                        <TableRow key={`${p.provider} ${p.ip}`}>
                          <TableCell className="font-medium">{p.provider}</TableCell>
                          <TableCell>{p.ip ?? 'host default'}</TableCell>
                          <TableCell>
                            <StateBadge state={p.state} />
                          </TableCell>
                          <TableCell className="tabular-nums">
                            {perMinute(p.rate_per_minute)} <span className="text-muted-foreground">of {perMinute(p.ceiling_per_minute)}</span>
                          </TableCell>
                          <TableCell>{p.hold_until ? new Date(p.hold_until).toLocaleString() : '—'}</TableCell>
                          <TableCell className="max-w-md truncate text-xs text-muted-foreground" title={p.reason ?? undefined}>
                            {p.reason ?? '—'}
                          </TableCell>
                        </TableRow>
                      ))}
                  </TableBody>
                </Table>
              )}
            </CardContent>
          </Card>
        </>
      )}
    </div>
  )
}
