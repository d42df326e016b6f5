/**
 * Messages (issue 14 page 6): search sent mail by recipient, subject, id, bridge, status, tag
 * and acceptance time (GET /api/v2/messages), and a message's page: its delivery timeline per
 * recipient from GET /api/v2/messages/:id with each recipient's TLS and bounce reason, a
 * scheduled send's reschedule (PATCH) and cancel (POST .../cancel), its header fields
 * (GET .../headers) and its raw source (.../raw).
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import {
  AlertOctagonIcon,
  BanIcon,
  CalendarClockIcon,
  CheckCircle2Icon,
  ClockIcon,
  CopyIcon,
  DownloadIcon,
  EyeIcon,
  HourglassIcon,
  InboxIcon,
  LockIcon,
  LockOpenIcon,
  type LucideIcon,
  MailIcon,
  MousePointerClickIcon,
  SearchIcon,
  ThumbsDownIcon,
  UserMinusIcon,
  XCircleIcon,
  XIcon,
} from 'lucide-react'
import { useMemo, useState, type FormEvent, type ReactNode } from 'react'
import { toast } from 'sonner'
import { Link, Route, Switch, useLocation, useParams } from 'wouter'
import { ConfirmDialog } from '../components/confirm-dialog'
import { FormDialog } from '../components/form-dialog'
import { SelectField } from '../components/select-field'
import { BackLink, detailStates } from '../components/detail-page'
import { DataTable, type Column } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { EmptyState, ErrorState, LoadingState } from '../components/states'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../components/ui/card'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { SelectItem } from '../components/ui/select'
import { Tabs, TabsContent, TabsList, TabsTrigger } from '../components/ui/tabs'
import { ApiError, api, apiPage } from '../lib/api'
import { copyWithToast } from '../lib/clipboard'
import { can, useSession } from '../lib/session'
import { fieldErrorOf, reportError } from '../lib/form-errors'
import { useUrlQuery } from '../lib/url-query'
import { cn, formatDateTime, formatNumber, fromLocalInput, timeAgo, toLocalInput } from '../lib/utils'

/** The recipient states of docs/api.md "Message states", in the order a person reads them. */
const STATES = ['scheduled', 'queued', 'sending', 'deferred', 'sent', 'bounced', 'failed', 'suppressed', 'canceled'] as const
type State = (typeof STATES)[number]

const STATE_BADGE: Record<State, { variant: 'default' | 'secondary' | 'success' | 'warning' | 'destructive' | 'outline'; label: string }> = {
  scheduled: { variant: 'outline', label: 'Scheduled' },
  queued: { variant: 'secondary', label: 'Queued' },
  sending: { variant: 'default', label: 'Sending' },
  deferred: { variant: 'warning', label: 'Deferred' },
  sent: { variant: 'success', label: 'Sent' },
  bounced: { variant: 'destructive', label: 'Bounced' },
  failed: { variant: 'destructive', label: 'Failed' },
  suppressed: { variant: 'outline', label: 'Suppressed' },
  canceled: { variant: 'outline', label: 'Canceled' },
}

/** A recipient state as a coloured label. */
export function StateBadge({ state }: { state: string }) {
  const s = STATE_BADGE[state as State] ?? { variant: 'outline' as const, label: state }
  return <Badge variant={s.variant}>{s.label}</Badge>
}

interface MessageSummary {
  id: string
  source: string
  from: string
  subject: string
  bridge_id: number | null
  size: number
  status: string
  recipients: Array<{ address: string; state: string }>
  created_at: string
}

interface LastResponse {
  code: number | null
  enhanced_code: string | null
  text: string | null
  rule: string | null
}

interface MessageRecipient {
  address: string
  kind: string
  state: string
  attempts: number
  next_attempt_at: string | null
  last_response: LastResponse | null
  /** Why the last attempt or bounce report failed (docs/api.md "Bounce reasons"). */
  reason: string | null
  mx: string | null
  source_ip: string | null
  /** The TLS of the last attempt's session; null: plaintext, or no session was opened. */
  tls: { version: string | null; cipher: string | null; verified: boolean; verify_error: string | null } | null
  suppression: Record<string, unknown> | null
  updated_at: string
  finished_at: string | null
}

interface MessageEvent {
  id: number
  kind: string
  recipient: string | null
  created_at: string
  data: Record<string, unknown>
}

interface MessageDetail {
  id: string
  source: string
  from: string
  subject: string
  tags: string[]
  message_id_header: string
  signed: boolean
  template_id: number | null
  template_version_id: number | null
  size: number
  status: string
  created_at: string
  /** When a scheduled send is (or was) due; null when it was sent at once. */
  scheduled_at: string | null
  recipients: MessageRecipient[]
  events: MessageEvent[]
}

/** A size in bytes as a person reads it. */
function formatBytes(n: number): string {
  if (n < 1024) return `${formatNumber(n)} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`
  return `${(n / 1024 / 1024).toFixed(1)} MB`
}

/** A time with its seconds: steps of one delivery are often within the same minute. */
function formatWithSeconds(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' })
}

/** The bounce reasons of docs/api.md "Bounce reasons", as a person reads them. */
const REASON_LABEL: Record<string, string> = {
  user_unknown: 'The mailbox does not exist',
  host_unknown: 'The domain does not exist or accepts no mail',
  mailbox_full: 'The mailbox is full',
  policy: 'Refused by a filter or an access rule',
  spam_block: 'Blocklist, reputation or spam verdict',
  rate_limit: 'Too much, too fast',
  expired: 'Gave up after retrying',
  auth_failure: 'SPF, DKIM, DMARC or reverse DNS',
  message_too_large: 'The message is too large',
  relay_denied: 'The server is not the domain’s mail server',
  mailbox_disabled: 'The account is disabled',
  other: 'The reply does not say why',
}

/** A bounce reason in words, with its code from the API. */
function Reason({ reason }: { reason: string }) {
  return (
    <span>
      {REASON_LABEL[reason] ?? reason.replace(/_/g, ' ')} <code className="font-mono text-muted-foreground">{reason}</code>
    </span>
  )
}

const SOURCE_LABEL: Record<string, string> = { api: 'API', template: 'Template', resend: 'Resend API', smtp: 'SMTP', broadcast: 'Broadcast' }

// ---------------------------------------------------------------------------------------
// Search
// ---------------------------------------------------------------------------------------

const FILTERS = ['recipient', 'subject', 'id', 'bridge_id', 'status', 'tag', 'created_after', 'created_before'] as const
type Filter = (typeof FILTERS)[number]
/** The time filters: ISO 8601 in the URL and the API, local time in their datetime-local fields. */
const TIMES: readonly Filter[] = ['created_after', 'created_before']
const ANY = 'any'

function SearchForm() {
  const [params, setParams] = useUrlQuery()
  const { data: session } = useSession()
  const [draft, setDraft] = useState(
    () => Object.fromEntries(FILTERS.map((f) => [f, TIMES.includes(f) ? toLocalInput(params.get(f)) : (params.get(f) ?? '')])) as Record<Filter, string>,
  )
  const [rangeError, setRangeError] = useState<string | null>(null)
  const bridges = useQuery({
    queryKey: ['bridges-for-filter'],
    queryFn: () => apiPage<{ id: number; name: string }>('/api/v2/bridges', { per_page: 100 }),
    enabled: can(session?.admin, 'bridges.read'),
    staleTime: 60_000,
  })
  const set = (k: Filter, v: string) => setDraft((d) => ({ ...d, [k]: v }))
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const after = fromLocalInput(draft.created_after)
    const before = fromLocalInput(draft.created_before)
    if (after && before && after >= before) return setRangeError('The end must be after the start.')
    setRangeError(null)
    setParams({
      ...Object.fromEntries(FILTERS.map((f) => [f, TIMES.includes(f) ? null : draft[f].trim() || null])),
      created_after: after,
      created_before: before,
      page: null,
    })
  }
  const active = FILTERS.some((f) => params.get(f))
  const clear = () => {
    setDraft(Object.fromEntries(FILTERS.map((f) => [f, ''])) as Record<Filter, string>)
    setRangeError(null)
    setParams({ ...Object.fromEntries(FILTERS.map((f) => [f, null])), page: null })
  }
  return (
    <Card className="py-4">
      <CardContent className="px-4">
        <form role="search" aria-label="Search messages" onSubmit={submit} className="grid gap-3 sm:grid-cols-2 lg:grid-cols-5 lg:items-start">
          <FormField label="Recipient">
            <Input type="search" placeholder="ada@example.org" value={draft.recipient} onChange={(e) => set('recipient', e.target.value)} autoComplete="off" />
          </FormField>
          <FormField label="Subject contains">
            <Input type="search" placeholder="Your receipt" value={draft.subject} onChange={(e) => set('subject', e.target.value)} autoComplete="off" />
          </FormField>
          <FormField label="Message id">
            <Input
              type="search"
              placeholder="0192d4e6-…"
              value={draft.id}
              onChange={(e) => set('id', e.target.value)}
              autoComplete="off"
              className="font-mono"
            />
          </FormField>
          {bridges.data?.data.length ? (
            <FormField label="Bridge">
              <SelectField value={draft.bridge_id || ANY} onValueChange={(v) => set('bridge_id', v === ANY ? '' : v)}>
                <SelectItem value={ANY}>Any bridge</SelectItem>
                {bridges.data.data.map((b) => (
                  <SelectItem key={b.id} value={String(b.id)}>
                    {b.name}
                  </SelectItem>
                ))}
              </SelectField>
            </FormField>
          ) : (
            <FormField label="Bridge id">
              <Input inputMode="numeric" placeholder="Any" value={draft.bridge_id} onChange={(e) => set('bridge_id', e.target.value.replace(/\D/g, ''))} />
            </FormField>
          )}
          <FormField label="Status">
            <SelectField value={draft.status || ANY} onValueChange={(v) => set('status', v === ANY ? '' : v)}>
              <SelectItem value={ANY}>Any status</SelectItem>
              {STATES.map((s) => (
                <SelectItem key={s} value={s}>
                  {STATE_BADGE[s].label}
                </SelectItem>
              ))}
            </SelectField>
          </FormField>
          <FormField label="Tag">
            <Input type="search" placeholder="receipt" value={draft.tag} onChange={(e) => set('tag', e.target.value)} autoComplete="off" />
          </FormField>
          <FormField label="Accepted from">
            <Input type="datetime-local" value={draft.created_after} onChange={(e) => set('created_after', e.target.value)} />
          </FormField>
          <FormField label="Accepted before" error={rangeError}>
            <Input type="datetime-local" value={draft.created_before} onChange={(e) => set('created_before', e.target.value)} />
          </FormField>
          {/* Aligned with the fields' inputs, below their labels. */}
          <div className="flex gap-2 sm:col-span-2 lg:pt-[1.375rem]">
            <Button type="submit" className="flex-1 lg:flex-none">
              <SearchIcon /> Search
            </Button>
            {active ? (
              <Button type="button" variant="ghost" onClick={clear}>
                <XIcon /> Clear
              </Button>
            ) : null}
          </div>
        </form>
      </CardContent>
    </Card>
  )
}

function RecipientsCell({ recipients }: { recipients: MessageSummary['recipients'] }) {
  const [first, ...rest] = recipients
  if (!first) return <span className="text-muted-foreground">—</span>
  return (
    <span className="inline-flex items-center gap-1.5">
      <span className="max-w-56 truncate">{first.address}</span>
      {rest.length ? <span className="text-xs text-muted-foreground">+{rest.length}</span> : null}
    </span>
  )
}

function MessageList() {
  const [, navigate] = useLocation()
  const [params] = useUrlQuery()
  const filtered = FILTERS.some((f) => params.get(f))
  const columns: Column<MessageSummary>[] = [
    { id: 'status', header: 'Status', cell: (m) => <StateBadge state={m.status} /> },
    {
      id: 'subject',
      header: 'Subject',
      className: 'max-w-[28rem]',
      cell: (m) => (
        <div className="grid min-w-48 gap-0.5">
          <Link
            href={`/${encodeURIComponent(m.id)}`}
            className="truncate font-medium hover:underline focus-visible:underline focus-visible:outline-none"
            onClick={(e) => e.stopPropagation()}
          >
            {m.subject || <span className="text-muted-foreground italic">(no subject)</span>}
          </Link>
          <span className="truncate text-xs text-muted-foreground">from {m.from}</span>
        </div>
      ),
    },
    { id: 'to', header: 'Recipients', cell: (m) => <RecipientsCell recipients={m.recipients} /> },
    {
      id: 'source',
      header: 'Via',
      className: 'hidden md:table-cell',
      cell: (m) => <span className="text-muted-foreground">{SOURCE_LABEL[m.source] ?? m.source}</span>,
    },
    {
      id: 'created',
      header: 'Accepted',
      cell: (m) => (
        <time dateTime={m.created_at} title={formatDateTime(m.created_at)} className="text-muted-foreground tabular-nums">
          {timeAgo(m.created_at)}
        </time>
      ),
    },
  ]
  return (
    <div className="grid gap-6">
      <PageHeader title="Messages" description="Search sent messages and follow each one’s delivery timeline." />
      <SearchForm />
      <DataTable<MessageSummary>
        path="/api/v2/messages"
        queryKey="messages"
        columns={columns}
        rowKey={(m) => m.id}
        filters={[...FILTERS]}
        caption="Messages, newest first"
        onRowClick={(m) => navigate(`/${encodeURIComponent(m.id)}`)}
        empty={
          filtered
            ? { icon: SearchIcon, title: 'No message matches', description: 'Try fewer filters, or the whole address rather than a part of it.' }
            : {
                icon: InboxIcon,
                title: 'No messages yet',
                description: 'Mail sent through the API, SMTP or a bridge shows up here as soon as it is accepted.',
              }
        }
      />
    </div>
  )
}

// ---------------------------------------------------------------------------------------
// One message
// ---------------------------------------------------------------------------------------

const EVENT_STYLE: Record<string, { icon: LucideIcon; label: string; tone: string }> = {
  'message.scheduled': { icon: CalendarClockIcon, label: 'Scheduled', tone: 'bg-primary/12 text-primary' },
  'message.canceled': { icon: BanIcon, label: 'Canceled before it was sent', tone: 'bg-muted text-muted-foreground' },
  'message.queued': { icon: InboxIcon, label: 'Queued', tone: 'bg-muted text-muted-foreground' },
  'message.sent': { icon: CheckCircle2Icon, label: 'Delivered to the receiving server', tone: 'bg-success/15 text-success' },
  'message.deferred': { icon: HourglassIcon, label: 'Deferred, will retry', tone: 'bg-warning/20 text-foreground' },
  'message.delayed': { icon: ClockIcon, label: 'Delayed', tone: 'bg-warning/20 text-foreground' },
  'message.bounced': { icon: XCircleIcon, label: 'Bounced', tone: 'bg-destructive/12 text-destructive' },
  'message.failed': { icon: AlertOctagonIcon, label: 'Failed: gave up retrying', tone: 'bg-destructive/12 text-destructive' },
  'message.suppressed': { icon: BanIcon, label: 'Suppressed, not sent', tone: 'bg-muted text-muted-foreground' },
  'message.complained': { icon: ThumbsDownIcon, label: 'Marked as spam', tone: 'bg-destructive/12 text-destructive' },
  'message.opened': { icon: EyeIcon, label: 'Opened', tone: 'bg-primary/12 text-primary' },
  'message.clicked': { icon: MousePointerClickIcon, label: 'Clicked a link', tone: 'bg-primary/12 text-primary' },
  'message.unsubscribed': { icon: UserMinusIcon, label: 'Unsubscribed', tone: 'bg-muted text-muted-foreground' },
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : null)

/** The SMTP reply of a delivery event or a recipient: "250 2.0.0 Ok: queued as 4XyZ". */
function SmtpReply({ code, enhanced, text }: { code: unknown; enhanced: unknown; text: unknown }) {
  const c = str(code)
  const t = str(text)
  if (!c && !t) return null
  // The reply text usually repeats the code; show it once.
  const shown = t && c && t.startsWith(c) ? t : [c, str(enhanced), t].filter(Boolean).join(' ')
  return <code className="block rounded-md bg-muted px-2.5 py-1.5 font-mono text-xs break-all whitespace-pre-wrap">{shown}</code>
}

function EventDetail({ e }: { e: MessageEvent }) {
  const d = e.data
  const facts: Array<[string, string]> = []
  if (str(d.mx)) facts.push(['Server', str(d.mx)!])
  if (str(d.source_ip)) facts.push(['From IP', str(d.source_ip)!])
  if (typeof d.attempt === 'number') facts.push(['Attempt', String(d.attempt)])
  if (str(d.rule)) facts.push(['Classified as', str(d.rule)!.replace(/_/g, ' ')])
  if (e.kind === 'message.bounced' && d.suppressed === true) facts.push(['Suppression', 'address added (hard bounce)'])
  if (e.kind === 'message.failed' && typeof d.max_age_seconds === 'number') facts.push(['Gave up after', `${Math.round(d.max_age_seconds / 3600)} hours`])
  if (str(d.ip)) facts.push(['Reader IP', str(d.ip)!])
  if (str(d.user_agent)) facts.push(['Client', str(d.user_agent)!])
  if (['message.suppressed', 'message.bounced', 'message.deferred', 'message.delayed', 'message.failed'].includes(e.kind) && str(d.reason))
    facts.push(['Reason', REASON_LABEL[str(d.reason)!] ?? str(d.reason)!.replace(/_/g, ' ')])
  if (e.kind === 'message.scheduled' && str(d.scheduled_at)) facts.push(['Due', formatDateTime(str(d.scheduled_at))])
  const tls = d.tls && typeof d.tls === 'object' ? (d.tls as Record<string, unknown>) : null
  if (tls && str(tls.version)) facts.push(['TLS', [str(tls.version), str(tls.cipher)].filter(Boolean).join(' · ')])
  return (
    <div className="grid gap-2 text-sm">
      {e.kind === 'message.deferred' && str(d.next_attempt_at) ? (
        <p className="text-muted-foreground">
          Next attempt{' '}
          <time dateTime={str(d.next_attempt_at)!} className="font-medium text-foreground">
            {formatDateTime(str(d.next_attempt_at))}
          </time>{' '}
          ({timeAgo(str(d.next_attempt_at)!)})
        </p>
      ) : null}
      <SmtpReply code={d.code} enhanced={d.enhanced_code} text={d.response} />
      {e.kind === 'message.clicked' && str(d.url) ? (
        <a href={str(d.url)!} target="_blank" rel="noreferrer noopener" className="truncate text-primary hover:underline">
          {str(d.url)}
        </a>
      ) : null}
      {facts.length ? (
        <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-xs">
          {facts.map(([k, v]) => (
            <div key={k} className="contents">
              <dt className="text-muted-foreground">{k}</dt>
              <dd className="break-all">{v}</dd>
            </div>
          ))}
        </dl>
      ) : null}
    </div>
  )
}

function Timeline({ events, showRecipient }: { events: MessageEvent[]; showRecipient: boolean }) {
  if (!events.length) return <EmptyState icon={ClockIcon} title="Nothing has happened yet" description="Events appear here as the message moves." />
  return (
    <ol className="relative grid gap-0" aria-label="Timeline">
      {events.map((e, i) => {
        const style = EVENT_STYLE[e.kind] ?? { icon: MailIcon, label: e.kind, tone: 'bg-muted text-muted-foreground' }
        const Icon = style.icon
        return (
          <li key={e.id} className="relative grid grid-cols-[2.25rem_1fr] gap-3 pb-6 last:pb-0" data-kind={e.kind}>
            {i < events.length - 1 ? <span className="absolute top-9 bottom-0 left-[1.07rem] w-px bg-border" aria-hidden="true" /> : null}
            <span className={cn('z-10 flex size-9 items-center justify-center rounded-full ring-4 ring-card', style.tone)} aria-hidden="true">
              <Icon className="size-4" />
            </span>
            <div className="grid min-w-0 gap-1.5 pt-1.5">
              <div className="flex flex-wrap items-baseline gap-x-2 gap-y-0.5">
                <span className="font-medium">{style.label}</span>
                {showRecipient && e.recipient ? <span className="truncate text-sm text-muted-foreground">{e.recipient}</span> : null}
                <time dateTime={e.created_at} className="ml-auto text-xs text-muted-foreground tabular-nums">
                  {formatWithSeconds(e.created_at)}
                </time>
              </div>
              <EventDetail e={e} />
            </div>
          </li>
        )
      })}
    </ol>
  )
}

/** The last attempt's TLS: version and cipher, and whether the MX certificate verified (RFC 6125) or why not. */
function TlsFact({ tls }: { tls: MessageRecipient['tls'] }) {
  if (!tls || !tls.version) return <span className="text-muted-foreground">None (plaintext, or no session)</span>
  return (
    <span className="grid gap-0.5">
      <span className="inline-flex items-center gap-1">
        {tls.verified ? (
          <LockIcon className="size-3 text-success" aria-hidden="true" />
        ) : (
          <LockOpenIcon className="size-3 text-muted-foreground" aria-hidden="true" />
        )}
        <span>{tls.version}</span>
        {tls.cipher ? <code className="font-mono break-all text-muted-foreground">{tls.cipher}</code> : null}
      </span>
      <span className={tls.verified ? 'text-success' : 'text-muted-foreground'}>
        {tls.verified ? 'Certificate verified' : `Certificate not verified${tls.verify_error ? ` (${tls.verify_error})` : ''}`}
      </span>
    </span>
  )
}

function RecipientCard({ r }: { r: MessageRecipient }) {
  return (
    <div className="grid gap-2 rounded-lg border p-3 text-sm">
      <div className="flex flex-wrap items-center gap-2">
        <span className="min-w-0 truncate font-medium">{r.address}</span>
        <span className="text-xs text-muted-foreground uppercase">{r.kind}</span>
        <span className="ml-auto">
          <StateBadge state={r.state} />
        </span>
      </div>
      <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-xs">
        <dt className="text-muted-foreground">Attempts</dt>
        <dd>{r.attempts}</dd>
        {r.next_attempt_at && r.state === 'deferred' ? (
          <>
            <dt className="text-muted-foreground">Next attempt</dt>
            <dd>{formatDateTime(r.next_attempt_at)}</dd>
          </>
        ) : null}
        {r.mx ? (
          <>
            <dt className="text-muted-foreground">Server</dt>
            <dd className="break-all">{r.mx}</dd>
          </>
        ) : null}
        {r.finished_at ? (
          <>
            <dt className="text-muted-foreground">Finished</dt>
            <dd>{formatDateTime(r.finished_at)}</dd>
          </>
        ) : null}
        {r.reason ? (
          <>
            <dt className="text-muted-foreground">Reason</dt>
            <dd>
              <Reason reason={r.reason} />
            </dd>
          </>
        ) : null}
        {r.attempts > 0 || r.tls ? (
          <>
            <dt className="text-muted-foreground">TLS</dt>
            <dd>
              <TlsFact tls={r.tls} />
            </dd>
          </>
        ) : null}
        {r.suppression ? (
          <>
            <dt className="text-muted-foreground">Suppressed by</dt>
            <dd>{[str(r.suppression.reason), str(r.suppression.scope)].filter(Boolean).join(', ') || 'a suppression'}</dd>
          </>
        ) : null}
      </dl>
      {r.last_response ? <SmtpReply code={r.last_response.code} enhanced={r.last_response.enhanced_code} text={r.last_response.text} /> : null}
    </div>
  )
}

function Fact({ label, children, mono }: { label: string; children: ReactNode; mono?: boolean }) {
  return (
    <div className="grid gap-0.5">
      <dt className="text-xs text-muted-foreground">{label}</dt>
      <dd className={cn('text-sm break-all', mono && 'font-mono text-xs')}>{children}</dd>
    </div>
  )
}

function HeadersCard({ id }: { id: string }) {
  const q = useQuery({
    queryKey: ['message-headers', id],
    queryFn: () => api<Array<{ name: string; value: string }>>('GET', `/api/v2/messages/${encodeURIComponent(id)}/headers`),
  })
  if (q.isPending) return <LoadingState rows={6} label="Loading the headers" />
  if (q.isError) return <ErrorState error={q.error} onRetry={() => q.refetch()} />
  return (
    <dl aria-label="Header fields as accepted" className="divide-y overflow-hidden rounded-lg border bg-card font-mono text-xs">
      {q.data.map((h, i) => (
        <div key={i} className="grid gap-1 px-4 py-2.5 sm:grid-cols-[14rem_1fr] sm:gap-4">
          <dt className="font-medium text-muted-foreground">{h.name}</dt>
          <dd className="break-all whitespace-pre-wrap">{h.value}</dd>
        </div>
      ))}
    </dl>
  )
}

/**
 * A scheduled send waiting for its time: when it goes out, and (with transactional.send)
 * Reschedule (PATCH scheduled_at; now or a past time sends at once) and Cancel (POST
 * .../cancel, nothing is sent). The API answers 409 once the message is picked up.
 */
function ScheduledCard({ m }: { m: MessageDetail }) {
  const { data: session } = useSession()
  const qc = useQueryClient()
  const [rescheduling, setRescheduling] = useState(false)
  const [canceling, setCanceling] = useState(false)
  const [at, setAt] = useState('')
  const path = `/api/v2/messages/${encodeURIComponent(m.id)}`
  const done = (saved: MessageDetail) => {
    qc.setQueryData(['message', m.id], saved)
    qc.invalidateQueries({ queryKey: ['message', m.id] })
    qc.invalidateQueries({ queryKey: ['messages'] })
  }
  const reschedule = useMutation({
    mutationFn: () => api<MessageDetail>('PATCH', path, { scheduled_at: fromLocalInput(at) ?? at }),
    onSuccess: (saved) => {
      done(saved)
      setRescheduling(false)
      toast.success(saved.status === 'scheduled' ? `Rescheduled for ${formatDateTime(saved.scheduled_at)}` : 'Sending now')
    },
    onError: (e) => reportError(e, ['scheduled_at']),
  })
  const cancel = useMutation({
    mutationFn: () => api<MessageDetail>('POST', `${path}/cancel`),
    onSuccess: (saved) => {
      done(saved)
      setCanceling(false)
      toast.success('The scheduled send is canceled; nothing was sent.')
    },
    onError: (e) => {
      setCanceling(false)
      reportError(e, [])
    },
  })
  if (m.status !== 'scheduled' || !m.scheduled_at) return null
  const maySend = can(session?.admin, 'transactional.send')
  return (
    <Card className="border-primary/40 bg-primary/5 py-4" data-testid="scheduled-send">
      <CardContent className="flex flex-wrap items-center gap-x-4 gap-y-3 px-4">
        <CalendarClockIcon className="size-5 shrink-0 text-primary" aria-hidden="true" />
        <p className="min-w-0 flex-1 text-sm">
          <span className="font-medium">Scheduled to go out </span>
          <time dateTime={m.scheduled_at} className="font-medium">
            {formatDateTime(m.scheduled_at)}
          </time>{' '}
          <span className="text-muted-foreground">({timeAgo(m.scheduled_at)}). Until then it can be moved or canceled.</span>
        </p>
        {maySend ? (
          <div className="flex gap-2">
            <Button
              variant="outline"
              onClick={() => {
                setAt(toLocalInput(m.scheduled_at))
                reschedule.reset()
                setRescheduling(true)
              }}
            >
              <CalendarClockIcon /> Reschedule
            </Button>
            <Button variant="outline" className="text-destructive" onClick={() => setCanceling(true)}>
              <BanIcon /> Cancel send
            </Button>
          </div>
        ) : null}
      </CardContent>
      <FormDialog
        open={rescheduling}
        onOpenChange={setRescheduling}
        title="Reschedule this message"
        description="At most 30 days ahead. A time that has passed sends it at once."
        onSubmit={() => reschedule.mutate()}
        submitLabel="Reschedule"
        busy={reschedule.isPending}
        submitDisabled={reschedule.isPending || !at}
      >
        <FormField label="Send at" hint="Your local time." error={fieldErrorOf(reschedule.error, 'scheduled_at')}>
          <Input type="datetime-local" value={at} onChange={(e) => setAt(e.target.value)} required />
        </FormField>
      </FormDialog>
      <ConfirmDialog
        open={canceling}
        onOpenChange={setCanceling}
        title="Cancel this scheduled send?"
        description={`None of its ${m.recipients.length === 1 ? 'recipient' : `${m.recipients.length} recipients`} will get it. This cannot be undone.`}
        confirmLabel="Cancel send"
        pendingLabel="Canceling…"
        pending={cancel.isPending}
        keepOpen
        onConfirm={() => cancel.mutate()}
      />
    </Card>
  )
}

function MessagePage() {
  const { id } = useParams<{ id: string }>()
  const q = useQuery({
    queryKey: ['message', id],
    queryFn: () => api<MessageDetail>('GET', `/api/v2/messages/${encodeURIComponent(id)}`),
    refetchInterval: 15_000,
  })
  const [who, setWho] = useState('all')
  const events = useMemo(
    () => (q.data ? (who === 'all' ? q.data.events : q.data.events.filter((e) => e.recipient === who || e.recipient === null)) : []),
    [q.data, who],
  )

  const back = <BackLink>All messages</BackLink>
  const states = detailStates(q, {
    back,
    notFound: { icon: SearchIcon, title: 'There is no such message', description: 'It may have been deleted, or the id may be mistyped.' },
    loadingLabel: 'Loading the message',
  })
  if (states || !q.data) return states
  const m = q.data
  return (
    <div className="grid gap-6">
      {back}
      <PageHeader
        title={m.subject || '(no subject)'}
        description={
          <span className="flex flex-wrap items-center gap-2">
            <StateBadge state={m.status} />
            <span>
              from <span className="text-foreground">{m.from}</span> · accepted {formatDateTime(m.created_at)}
            </span>
          </span>
        }
        actions={
          <>
            <Button variant="outline" onClick={() => copyWithToast(m.id, 'Message id')}>
              <CopyIcon /> Copy id
            </Button>
            <Button asChild>
              <a href={`/api/v2/messages/${encodeURIComponent(m.id)}/raw`} download={`${m.id}.eml`}>
                <DownloadIcon /> Download .eml
              </a>
            </Button>
          </>
        }
      />
      <ScheduledCard m={m} />
      <div className="grid gap-6 lg:grid-cols-[minmax(0,1fr)_22rem]">
        <Card className="min-w-0">
          <CardHeader className="flex-row flex-wrap items-center justify-between gap-3">
            <div className="grid gap-1">
              <CardTitle>Timeline</CardTitle>
              <CardDescription>Every step of the delivery, with the receiving server’s replies.</CardDescription>
            </div>
            {m.recipients.length > 1 ? (
              <div className="w-full sm:w-64">
                <SelectField aria-label="Show the timeline of" value={who} onValueChange={setWho}>
                  <SelectItem value="all">All {m.recipients.length} recipients</SelectItem>
                  {m.recipients.map((r) => (
                    <SelectItem key={r.address} value={r.address}>
                      {r.address}
                    </SelectItem>
                  ))}
                </SelectField>
              </div>
            ) : null}
          </CardHeader>
          <CardContent>
            <Timeline events={events} showRecipient={m.recipients.length > 1 && who === 'all'} />
          </CardContent>
        </Card>
        <div className="grid content-start gap-6">
          <Card>
            <CardHeader>
              <CardTitle>Recipients</CardTitle>
            </CardHeader>
            <CardContent className="grid gap-3">
              {m.recipients.map((r) => (
                <RecipientCard key={r.address} r={r} />
              ))}
            </CardContent>
          </Card>
          <Card>
            <CardHeader>
              <CardTitle>Summary</CardTitle>
            </CardHeader>
            <CardContent>
              <dl className="grid gap-3">
                <Fact label="Message id" mono>
                  {m.id}
                </Fact>
                <Fact label="Message-ID header" mono>
                  {m.message_id_header}
                </Fact>
                <Fact label="Sent through">{SOURCE_LABEL[m.source] ?? m.source}</Fact>
                {m.scheduled_at ? <Fact label="Scheduled for">{formatDateTime(m.scheduled_at)}</Fact> : null}
                <Fact label="Size">{formatBytes(m.size)}</Fact>
                <Fact label="DKIM">{m.signed ? 'Signed at delivery' : 'Not signed (the domain is not verified)'}</Fact>
                {m.template_id !== null ? (
                  <Fact label="Template">
                    <Link href={`~/admin/templates/${m.template_id}`} className="text-primary hover:underline">
                      Template {m.template_id}
                    </Link>
                  </Fact>
                ) : null}
                {m.tags.length ? (
                  <Fact label="Tags">
                    <span className="flex flex-wrap gap-1">
                      {m.tags.map((t) => (
                        <Badge key={t} variant="secondary">
                          {t}
                        </Badge>
                      ))}
                    </span>
                  </Fact>
                ) : null}
              </dl>
            </CardContent>
          </Card>
        </div>
      </div>
      <Tabs defaultValue="headers" className="grid gap-3">
        <TabsList>
          <TabsTrigger value="headers">Headers</TabsTrigger>
          <TabsTrigger value="source">Raw source</TabsTrigger>
        </TabsList>
        <TabsContent value="headers">
          <HeadersCard id={m.id} />
        </TabsContent>
        <TabsContent value="source">
          <RawSource id={m.id} />
        </TabsContent>
      </Tabs>
    </div>
  )
}

/** The first 64 KB of the raw message, for reading in the page; the download has all of it. */
function RawSource({ id }: { id: string }) {
  const q = useQuery({
    queryKey: ['message-raw', id],
    queryFn: async () => {
      const res = await fetch(`/api/v2/messages/${encodeURIComponent(id)}/raw`, { credentials: 'same-origin' })
      if (!res.ok) throw new ApiError(res.status, 'http_error', `The server answered ${res.status}.`)
      const text = await res.text()
      return { text: text.slice(0, 65_536), cut: text.length > 65_536 }
    },
  })
  if (q.isPending) return <LoadingState rows={6} label="Loading the source" />
  if (q.isError) return <ErrorState error={q.error} onRetry={() => q.refetch()} />
  return (
    <div className="grid gap-2">
      <pre
        tabIndex={0}
        aria-label="Raw source"
        className="max-h-[32rem] overflow-auto rounded-lg border bg-muted/40 p-4 font-mono text-xs leading-relaxed whitespace-pre-wrap break-all"
      >
        {q.data.text}
      </pre>
      {q.data.cut ? <p className="text-xs text-muted-foreground">Only the first 64 KB are shown; the download has the whole message.</p> : null}
    </div>
  )
}

/** The Messages page: the search at /messages, one message at /messages/:id. */
export function MessagesPage() {
  return (
    <Switch>
      <Route path="/" component={MessageList} />
      <Route path="/:id" component={MessagePage} />
    </Switch>
  )
}
