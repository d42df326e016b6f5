/**
 * Webhooks (issue 14 page 9): the list (/api/v2/webhooks), creating one (its signing secret
 * shown once), and a webhook's page at /webhooks/:id: endpoint and events, the delivery log
 * with each attempt, a test send per event kind, re-enable, rotate the secret, delete.
 */
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import {
  AlertTriangleIcon,
  CheckCircle2Icon,
  KeyRoundIcon,
  PlusIcon,
  PowerIcon,
  RotateCcwIcon,
  SendIcon,
  Trash2Icon,
  WebhookIcon,
  XCircleIcon,
} from 'lucide-react'
import { useState, type FormEvent } from 'react'
import { toast } from 'sonner'
import { Link, Route, Switch, useLocation, useParams } from 'wouter'
import { SelectField } from '../components/select-field'
import { FormDialog } from '../components/form-dialog'
import { BackLink, detailStates } from '../components/detail-page'
import { ConfirmDialog } from '../components/confirm-dialog'
import { DataTable, type Column } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { SecretDialog } from '../components/secret-dialog'
import { EmptyState, ErrorState, LoadingState } from '../components/states'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../components/ui/card'
import { Checkbox } from '../components/ui/checkbox'
import { Dialog, DialogContent, DialogDescription, DialogFooter, DialogHeader, DialogTitle } from '../components/ui/dialog'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { Label } from '../components/ui/label'
import { Pagination } from '../components/ui/pagination'
import { SelectItem } from '../components/ui/select'
import { ApiError, api, apiPage, errorMessage, fieldError } from '../lib/api'
import { can, useSession } from '../lib/session'
import { useUrlQuery } from '../lib/url-query'
import { cn, formatDateTime, timeAgo } from '../lib/utils'

interface Webhook {
  id: number
  endpoint: string
  description: string
  events: string[]
  enabled: boolean
  disabled_reason: 'manual' | 'failures' | 'gone' | null
  disabled_at: string | null
  consecutive_failures: number
  last_success_at: string | null
  last_failure_at: string | null
  previous_secret_expires_at: string | null
  format: WebhookFormat
  created_at: string
  updated_at: string
}

type WebhookFormat = 'mailroom' | 'resend'

const FORMATS: Array<{ value: WebhookFormat; label: string; hint: string }> = [
  { value: 'mailroom', label: 'Mailroom', hint: 'Mailroom’s event names and data, signed with Standard Webhooks headers.' },
  {
    value: 'resend',
    label: 'Resend',
    hint: 'Resend’s event names and data (email.sent, email.bounced…), signed with Svix headers: a consumer written for Resend works unchanged.',
  },
]

/** The payload format as a labelled select, with what each one means under it. */
function FormatField({ value, onChange, disabled, error }: { value: WebhookFormat; onChange: (v: WebhookFormat) => void; disabled?: boolean; error?: string }) {
  return (
    <FormField label="Payload format" hint={FORMATS.find((f) => f.value === value)?.hint} error={error}>
      <SelectField
        value={value}
        onValueChange={(v) => onChange(v as WebhookFormat)}
        disabled={disabled}
        options={FORMATS.map((f) => ({ value: f.value, label: f.label }))}
      />
    </FormField>
  )
}

interface Delivery {
  id: number
  webhook_id: number
  event_id: number
  kind: string
  message_id: string
  state: 'pending' | 'sending' | 'succeeded' | 'failed'
  attempts: number
  next_attempt_at: string | null
  last_status: number | null
  last_error: string | null
  created_at: string
  updated_at: string
  finished_at: string | null
}

interface Attempt {
  id: number
  delivery_id: number
  attempted_at: string
  status: number | null
  latency_ms: number | null
  error: string | null
  response_snippet: string | null
}

interface TestResult {
  kind: string
  webhook_id: string
  ok: boolean
  status: number | null
  latency_ms: number
  error: string | null
  response_snippet: string | null
}

const DISABLED_WHY: Record<string, string> = {
  failures: 'It was switched off after 10 failed attempts in a row.',
  gone: 'It was switched off because the endpoint answered 410 Gone.',
  manual: 'Someone switched it off.',
}

function StateBadge({ w }: { w: Webhook }) {
  if (w.enabled) return <Badge variant="success">Enabled</Badge>
  return <Badge variant="destructive">Disabled{w.disabled_reason && w.disabled_reason !== 'manual' ? ` (${w.disabled_reason})` : ''}</Badge>
}

function EventsSummary({ events }: { events: string[] }) {
  if (events.includes('*')) return <Badge variant="secondary">All events</Badge>
  return (
    <span className="flex flex-wrap gap-1">
      {events.slice(0, 2).map((e) => (
        <Badge key={e} variant="outline" className="font-mono text-foreground">
          {e}
        </Badge>
      ))}
      {events.length > 2 ? <span className="text-xs text-muted-foreground">+{events.length - 2}</span> : null}
    </span>
  )
}

/** The signing secret, shown once (the shared dialog, in the words of webhooks). */
function WebhookSecretDialog({ secret, title, onClose }: { secret: string | null; title: string; onClose: () => void }) {
  return (
    <SecretDialog
      open={secret !== null}
      title={title}
      description="Your receiver checks each request’s signature with this secret (Standard Webhooks)."
      label="Signing secret"
      value={secret ?? ''}
      warning="This is the only time the secret is shown; Mailroom keeps it encrypted and cannot show it again. If you lose it, rotate the secret."
      doneLabel="I have saved it"
      onClose={onClose}
    />
  )
}

function useEventKinds() {
  return useQuery({
    queryKey: ['webhook-event-kinds'],
    queryFn: () => api<Array<{ kind: string; description: string }>>('GET', '/api/v2/webhooks/event-kinds'),
    staleTime: Infinity,
  })
}

/** The heading of a group of event kinds (the part before the dot); an unknown group shows as it is. */
const GROUP_LABEL: Record<string, string> = {
  contact: 'Contacts',
  broadcast: 'Broadcasts',
  message: 'Messages',
  domain: 'Sending domains',
  webhook: 'Webhooks',
  deliverability: 'Deliverability',
  doctor: 'Deliverability doctor',
}

/**
 * The event kinds as checkboxes, grouped by what they are about, with "every event" on top.
 * The kinds come from the API (about 30 and growing): the groups flow in balanced columns
 * rather than rows as tall as the longest group, and each group has a checkbox for all of it.
 */
function EventPicker({ value, onChange, error }: { value: string[]; onChange: (v: string[]) => void; error?: string }) {
  const kinds = useEventKinds()
  const all = value.includes('*')
  const groups = new Map<string, Array<{ kind: string; description: string }>>()
  for (const k of kinds.data ?? []) {
    const g = k.kind.split('.')[0]!
    groups.set(g, [...(groups.get(g) ?? []), k])
  }
  const toggle = (kind: string, on: boolean) => onChange(on ? [...value.filter((v) => v !== '*'), kind] : value.filter((v) => v !== kind))
  const toggleGroup = (list: Array<{ kind: string }>, on: boolean) => {
    const members = new Set(list.map((k) => k.kind))
    const rest = value.filter((v) => v !== '*' && !members.has(v))
    onChange(on ? [...rest, ...members] : rest)
  }
  const chosen = all ? (kinds.data?.length ?? 0) : value.length
  return (
    <fieldset className="grid gap-3" aria-describedby={error ? 'events-error' : undefined} aria-invalid={error ? true : undefined}>
      <legend className="mb-2 text-sm font-medium">
        Events{' '}
        {kinds.data ? (
          <span className="font-normal text-muted-foreground" data-testid="events-chosen">
            ({all ? 'all' : chosen} of {kinds.data.length})
          </span>
        ) : null}
      </legend>
      <Label className="flex items-start gap-2.5 rounded-md border p-3 font-normal">
        <Checkbox checked={all} onCheckedChange={(c) => onChange(c === true ? ['*'] : [])} className="mt-0.5" />
        <span className="grid gap-0.5">
          <span className="font-medium">Every event</span>
          <span className="text-xs text-muted-foreground">Including kinds added in later versions.</span>
        </span>
      </Label>
      {kinds.isPending ? <LoadingState rows={3} label="Loading the event kinds" /> : null}
      {kinds.isError ? <ErrorState error={kinds.error} onRetry={() => kinds.refetch()} /> : null}
      <div className={cn('gap-6 sm:columns-2', all && 'opacity-50')} data-testid="event-groups">
        {[...groups].map(([group, list]) => {
          const picked = all ? list.length : list.filter((k) => value.includes(k.kind)).length
          const groupId = `event-group-${group}`
          return (
            <fieldset key={group} className="mb-5 grid break-inside-avoid content-start gap-2 last:mb-0" aria-labelledby={groupId}>
              <Label className="flex items-center gap-2.5 font-normal">
                <Checkbox
                  checked={picked === list.length ? true : picked > 0 ? 'indeterminate' : false}
                  disabled={all}
                  onCheckedChange={(c) => toggleGroup(list, c === true)}
                  aria-label={`All ${GROUP_LABEL[group] ?? group} events`}
                />
                <span id={groupId} className="text-xs font-medium tracking-wide text-muted-foreground uppercase">
                  {GROUP_LABEL[group] ?? group}
                </span>
                <span className="text-xs text-muted-foreground tabular-nums">
                  {picked}/{list.length}
                </span>
              </Label>
              <div className="grid gap-2 border-l pl-4 ml-2">
                {list.map((k) => (
                  <Label key={k.kind} className="flex items-start gap-2.5 font-normal">
                    <Checkbox checked={all || value.includes(k.kind)} disabled={all} onCheckedChange={(c) => toggle(k.kind, c === true)} className="mt-0.5" />
                    <span className="grid min-w-0 gap-0.5">
                      <span className="font-mono text-xs break-all">{k.kind}</span>
                      <span className="text-xs text-muted-foreground">{k.description}</span>
                    </span>
                  </Label>
                ))}
              </div>
            </fieldset>
          )
        })}
      </div>
      {error ? (
        <p id="events-error" role="alert" className="text-sm text-destructive">
          {error}
        </p>
      ) : null}
    </fieldset>
  )
}

/** A field error of `events` or any `events.N`. */
function eventsError(error: unknown): string | undefined {
  if (!(error instanceof ApiError) || !error.details) return undefined
  const entries = Object.entries(error.details).filter(([k]) => k === 'events' || k.startsWith('events.'))
  return entries.length ? entries.map(([, v]) => (Array.isArray(v) ? v.join(' ') : String(v))).join(' ') : undefined
}

const FORM_FIELDS = ['endpoint', 'description', 'format']

function NewWebhookDialog({ open, onOpenChange }: { open: boolean; onOpenChange: (o: boolean) => void }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const [endpoint, setEndpoint] = useState('')
  const [description, setDescription] = useState('')
  const [events, setEvents] = useState<string[]>(['message.sent', 'message.bounced'])
  const [format, setFormat] = useState<WebhookFormat>('mailroom')
  const [created, setCreated] = useState<(Webhook & { secret: string }) | null>(null)
  const create = useMutation({
    mutationFn: () => api<Webhook & { secret: string }>('POST', '/api/v2/webhooks', { endpoint: endpoint.trim(), description, events, format }),
    onSuccess: (w) => {
      qc.invalidateQueries({ queryKey: ['webhooks'] })
      onOpenChange(false)
      setCreated(w)
    },
    onError: (e) => {
      if (!FORM_FIELDS.some((f) => fieldError(e, f)) && !eventsError(e)) toast.error(errorMessage(e))
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (!events.length) return
    create.mutate()
  }
  return (
    <>
      <FormDialog
        open={open}
        onOpenChange={onOpenChange}
        title="New webhook"
        description="Mailroom POSTs each event to your endpoint as JSON, signed, and retries for about a day when it fails."
        onSubmit={submit}
        submitLabel="Create webhook"
        submitDisabled={create.isPending || !events.length}
        className="max-h-[90vh] overflow-y-auto sm:max-w-2xl"
      >
        <FormField label="Endpoint URL" hint="https is recommended." error={fieldError(create.error, 'endpoint')}>
          <Input
            type="url"
            value={endpoint}
            onChange={(e) => setEndpoint(e.target.value)}
            placeholder="https://hooks.example.com/mailroom"
            required
            autoFocus
          />
        </FormField>
        <FormField label="Description" error={fieldError(create.error, 'description')}>
          <Input value={description} onChange={(e) => setDescription(e.target.value)} placeholder="Bounces to the CRM" />
        </FormField>
        <FormatField value={format} onChange={setFormat} error={fieldError(create.error, 'format')} />
        <EventPicker value={events} onChange={setEvents} error={eventsError(create.error) ?? (events.length ? undefined : 'Choose at least one event.')} />
      </FormDialog>
      <WebhookSecretDialog
        secret={created?.secret ?? null}
        title="Webhook created: its signing secret"
        onClose={() => {
          const id = created?.id
          setCreated(null)
          if (id) navigate(`/${id}`)
        }}
      />
    </>
  )
}

function WebhookList() {
  const [, navigate] = useLocation()
  const { data: session } = useSession()
  const [creating, setCreating] = useState(false)
  const mayCreate = can(session?.admin, 'webhooks.create')
  const columns: Column<Webhook>[] = [
    {
      id: 'endpoint',
      header: 'Endpoint',
      className: 'max-w-[28rem]',
      cell: (w) => (
        <div className="grid min-w-48 gap-0.5">
          <Link
            href={`/${w.id}`}
            className="truncate font-mono text-xs font-medium hover:underline focus-visible:underline focus-visible:outline-none"
            onClick={(e) => e.stopPropagation()}
          >
            {w.endpoint}
          </Link>
          {w.description ? <span className="truncate text-xs text-muted-foreground">{w.description}</span> : null}
        </div>
      ),
    },
    { id: 'events', header: 'Events', cell: (w) => <EventsSummary events={w.events} /> },
    {
      id: 'format',
      header: 'Format',
      className: 'hidden md:table-cell',
      cell: (w) => <span className="text-muted-foreground">{FORMATS.find((f) => f.value === w.format)?.label ?? w.format}</span>,
    },
    { id: 'state', header: 'State', cell: (w) => <StateBadge w={w} /> },
    {
      id: 'failures',
      header: 'Failures',
      cell: (w) =>
        w.consecutive_failures ? (
          <span className="text-destructive">
            {w.consecutive_failures} in a row{w.last_failure_at ? <span className="text-muted-foreground"> · {timeAgo(w.last_failure_at)}</span> : null}
          </span>
        ) : (
          <span className="text-muted-foreground">None</span>
        ),
    },
    {
      id: 'success',
      header: 'Last success',
      className: 'hidden md:table-cell',
      cell: (w) => <span className="text-muted-foreground">{w.last_success_at ? timeAgo(w.last_success_at) : 'Never'}</span>,
    },
  ]
  return (
    <div className="grid gap-6">
      <PageHeader
        title="Webhooks"
        description="Event deliveries to your endpoints."
        actions={
          mayCreate ? (
            <Button onClick={() => setCreating(true)}>
              <PlusIcon /> New webhook
            </Button>
          ) : null
        }
      />
      <DataTable<Webhook>
        path="/api/v2/webhooks"
        queryKey="webhooks"
        columns={columns}
        rowKey={(w) => w.id}
        caption="Webhooks"
        onRowClick={(w) => navigate(`/${w.id}`)}
        empty={{
          icon: WebhookIcon,
          title: 'No webhooks yet',
          description: 'Get bounces, complaints and unsubscribes pushed to your application as they happen.',
          action: mayCreate ? (
            <Button onClick={() => setCreating(true)}>
              <PlusIcon /> New webhook
            </Button>
          ) : undefined,
        }}
      />
      <NewWebhookDialog open={creating} onOpenChange={setCreating} />
    </div>
  )
}

// ---------------------------------------------------------------------------------------
// One webhook
// ---------------------------------------------------------------------------------------

function SettingsCard({ w, mayUpdate }: { w: Webhook; mayUpdate: boolean }) {
  const qc = useQueryClient()
  const [endpoint, setEndpoint] = useState(w.endpoint)
  const [description, setDescription] = useState(w.description)
  const [events, setEvents] = useState(w.events)
  const [format, setFormat] = useState(w.format)
  const dirty =
    endpoint !== w.endpoint || description !== w.description || format !== w.format || events.slice().sort().join() !== w.events.slice().sort().join()
  const save = useMutation({
    mutationFn: () => api<Webhook>('PATCH', `/api/v2/webhooks/${w.id}`, { endpoint: endpoint.trim(), description, events, format }),
    onSuccess: (n) => {
      qc.setQueryData(['webhook', w.id], n)
      qc.invalidateQueries({ queryKey: ['webhooks'] })
      toast.success('Webhook saved')
    },
    onError: (e) => {
      if (!FORM_FIELDS.some((f) => fieldError(e, f)) && !eventsError(e)) toast.error(errorMessage(e))
    },
  })
  return (
    <Card>
      <CardHeader>
        <CardTitle>Endpoint, format and events</CardTitle>
        <CardDescription>Changes apply to events from now on.</CardDescription>
      </CardHeader>
      <CardContent>
        <form
          className="grid gap-4"
          onSubmit={(e) => {
            e.preventDefault()
            save.mutate()
          }}
        >
          <FormField label="Endpoint URL" error={fieldError(save.error, 'endpoint')}>
            <Input type="url" value={endpoint} onChange={(e) => setEndpoint(e.target.value)} readOnly={!mayUpdate} required />
          </FormField>
          <FormField label="Description" error={fieldError(save.error, 'description')}>
            <Input value={description} onChange={(e) => setDescription(e.target.value)} readOnly={!mayUpdate} />
          </FormField>
          <FormatField value={format} onChange={setFormat} disabled={!mayUpdate} error={fieldError(save.error, 'format')} />
          <EventPicker
            value={events}
            onChange={mayUpdate ? setEvents : () => {}}
            error={eventsError(save.error) ?? (events.length ? undefined : 'Choose at least one event.')}
          />
          {mayUpdate ? (
            <div className="flex justify-end gap-2">
              {dirty ? (
                <Button
                  type="button"
                  variant="outline"
                  onClick={() => {
                    setEndpoint(w.endpoint)
                    setDescription(w.description)
                    setFormat(w.format)
                    setEvents(w.events)
                  }}
                >
                  Discard
                </Button>
              ) : null}
              <Button type="submit" disabled={!dirty || !events.length || save.isPending}>
                Save changes
              </Button>
            </div>
          ) : null}
        </form>
      </CardContent>
    </Card>
  )
}

function TestDialog({ w, open, onOpenChange }: { w: Webhook; open: boolean; onOpenChange: (o: boolean) => void }) {
  const kinds = useEventKinds()
  const subscribed = w.events.includes('*') ? (kinds.data ?? []).map((k) => k.kind) : w.events
  const [chosen, setChosen] = useState<string[]>(w.events.includes('*') ? ['contact.subscribed'] : w.events)
  const test = useMutation({
    mutationFn: () => api<TestResult[]>('POST', `/api/v2/webhooks/${w.id}/test`, { events: chosen }),
    onError: (e) => toast.error(errorMessage(e)),
  })
  return (
    <Dialog open={open} onOpenChange={onOpenChange}>
      <DialogContent className="max-h-[90vh] overflow-y-auto sm:max-w-2xl">
        <DialogHeader>
          <DialogTitle>Send a test</DialogTitle>
          <DialogDescription>One signed sample event per kind, sent now. Nothing is stored and the failure count is not touched.</DialogDescription>
        </DialogHeader>
        <fieldset className="grid gap-2">
          <legend className="mb-1 text-sm font-medium">Kinds to send</legend>
          <div className="grid gap-2 sm:grid-cols-2">
            {subscribed.map((k) => (
              <Label key={k} className="flex items-center gap-2 font-normal">
                <Checkbox checked={chosen.includes(k)} onCheckedChange={(c) => setChosen((x) => (c === true ? [...x, k] : x.filter((y) => y !== k)))} />
                <span className="font-mono text-xs">{k}</span>
              </Label>
            ))}
          </div>
        </fieldset>
        {test.data ? (
          <ul className="grid gap-2" aria-label="Test results">
            {test.data.map((r) => (
              <li key={r.kind} className="grid gap-1.5 rounded-lg border p-3 text-sm" data-testid="test-result">
                <div className="flex flex-wrap items-center gap-2">
                  {r.ok ? (
                    <CheckCircle2Icon className="size-4 text-success" aria-hidden="true" />
                  ) : (
                    <XCircleIcon className="size-4 text-destructive" aria-hidden="true" />
                  )}
                  <span className="font-mono text-xs font-medium">{r.kind}</span>
                  <Badge variant={r.ok ? 'success' : 'destructive'}>{r.status ?? 'no answer'}</Badge>
                  <span className="ml-auto text-xs text-muted-foreground tabular-nums">{r.latency_ms} ms</span>
                </div>
                {r.error ? <p className="text-destructive">{r.error}</p> : null}
                {r.response_snippet ? (
                  <pre className="max-h-32 overflow-auto rounded bg-muted px-2 py-1.5 font-mono text-xs whitespace-pre-wrap">{r.response_snippet}</pre>
                ) : null}
              </li>
            ))}
          </ul>
        ) : null}
        <DialogFooter>
          <Button variant="outline" onClick={() => onOpenChange(false)}>
            Close
          </Button>
          <Button onClick={() => test.mutate()} disabled={!chosen.length || test.isPending}>
            <SendIcon /> {test.isPending ? 'Sending…' : 'Send test'}
          </Button>
        </DialogFooter>
      </DialogContent>
    </Dialog>
  )
}

const DELIVERY_BADGE: Record<Delivery['state'], 'secondary' | 'default' | 'success' | 'destructive'> = {
  pending: 'secondary',
  sending: 'default',
  succeeded: 'success',
  failed: 'destructive',
}

function AttemptsDialog({ w, delivery, onClose, mayReplay }: { w: Webhook; delivery: Delivery | null; onClose: () => void; mayReplay: boolean }) {
  const qc = useQueryClient()
  const [page, setPage] = useState(1)
  const q = useQuery({
    queryKey: ['webhook-attempts', w.id, delivery?.id, page],
    queryFn: () => apiPage<Attempt>(`/api/v2/webhooks/${w.id}/deliveries/${delivery!.id}/attempts`, { page, per_page: 10 }),
    enabled: delivery !== null,
    placeholderData: keepPreviousData,
  })
  const replay = useMutation({
    mutationFn: () => api<Delivery>('POST', `/api/v2/webhooks/${w.id}/deliveries/${delivery!.id}/replay`),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ['webhook-deliveries'] })
      toast.success(w.enabled ? 'Replay queued: it goes out now.' : 'Replay queued: it goes out when the webhook is enabled.')
      onClose()
    },
    onError: (e) => toast.error(errorMessage(e)),
  })
  const finished = delivery?.state === 'succeeded' || delivery?.state === 'failed'
  return (
    <Dialog open={delivery !== null} onOpenChange={(o) => !o && onClose()}>
      <DialogContent className="max-h-[90vh] overflow-y-auto sm:max-w-2xl">
        <DialogHeader>
          <DialogTitle>
            Delivery {delivery?.id}: <span className="font-mono text-base">{delivery?.kind}</span>
          </DialogTitle>
          <DialogDescription>
            webhook-id <code className="font-mono">{delivery?.message_id}</code>, the same on every attempt and replay.
          </DialogDescription>
        </DialogHeader>
        {q.isPending ? (
          <LoadingState rows={3} label="Loading the attempts" />
        ) : q.isError ? (
          <ErrorState error={q.error} onRetry={() => q.refetch()} />
        ) : q.data.data.length === 0 ? (
          <EmptyState
            title="No attempt yet"
            description={delivery?.next_attempt_at ? `The first is due ${formatDateTime(delivery.next_attempt_at)}.` : undefined}
          />
        ) : (
          <ol className="grid gap-2" aria-label="Attempts">
            {q.data.data.map((a) => {
              const ok = a.status !== null && a.status >= 200 && a.status < 300
              return (
                <li key={a.id} className="grid gap-1.5 rounded-lg border p-3 text-sm">
                  <div className="flex flex-wrap items-center gap-2">
                    <Badge variant={ok ? 'success' : 'destructive'}>{a.status ?? 'no answer'}</Badge>
                    <time dateTime={a.attempted_at} className="text-muted-foreground">
                      {formatDateTime(a.attempted_at)}
                    </time>
                    {a.latency_ms !== null ? <span className="ml-auto text-xs text-muted-foreground tabular-nums">{a.latency_ms} ms</span> : null}
                  </div>
                  {a.error ? <p className="text-destructive">{a.error}</p> : null}
                  {a.response_snippet ? (
                    <pre className="max-h-40 overflow-auto rounded bg-muted px-2 py-1.5 font-mono text-xs whitespace-pre-wrap" aria-label="Response">
                      {a.response_snippet}
                    </pre>
                  ) : null}
                </li>
              )
            })}
          </ol>
        )}
        {q.data && q.data.meta.last_page > 1 ? (
          <Pagination
            page={q.data.meta.current_page}
            perPage={q.data.meta.per_page}
            total={q.data.meta.total}
            lastPage={q.data.meta.last_page}
            onPage={setPage}
          />
        ) : null}
        <DialogFooter>
          <Button variant="outline" onClick={onClose}>
            Close
          </Button>
          {mayReplay && finished ? (
            <Button onClick={() => replay.mutate()} disabled={replay.isPending}>
              <RotateCcwIcon /> Replay
            </Button>
          ) : null}
        </DialogFooter>
      </DialogContent>
    </Dialog>
  )
}

const DELIVERY_STATES = ['pending', 'sending', 'succeeded', 'failed'] as const

function DeliveriesCard({ w, mayReplay }: { w: Webhook; mayReplay: boolean }) {
  const [params, setParams] = useUrlQuery()
  const [open, setOpen] = useState<Delivery | null>(null)
  const columns: Column<Delivery>[] = [
    {
      id: 'kind',
      header: 'Event',
      cell: (d) => (
        <button
          type="button"
          className="font-mono text-xs font-medium hover:underline focus-visible:underline focus-visible:outline-none"
          onClick={(e) => (e.stopPropagation(), setOpen(d))}
        >
          {d.kind}
        </button>
      ),
    },
    { id: 'state', header: 'State', cell: (d) => <Badge variant={DELIVERY_BADGE[d.state]}>{d.state}</Badge> },
    { id: 'attempts', header: 'Attempts', className: 'tabular-nums', cell: (d) => d.attempts },
    {
      id: 'last',
      header: 'Last answer',
      className: 'max-w-[20rem]',
      cell: (d) =>
        d.last_status !== null || d.last_error ? (
          <span
            className={cn('block truncate', d.last_status !== null && d.last_status < 300 ? 'text-foreground' : 'text-destructive')}
            title={d.last_error ?? undefined}
          >
            {[d.last_status, d.last_error].filter((x) => x !== null).join(' · ')}
          </span>
        ) : (
          <span className="text-muted-foreground">—</span>
        ),
    },
    {
      id: 'when',
      header: 'Created',
      cell: (d) => (
        <span className="grid text-muted-foreground">
          <time dateTime={d.created_at} title={formatDateTime(d.created_at)}>
            {timeAgo(d.created_at)}
          </time>
          {d.state === 'pending' && d.next_attempt_at ? <span className="text-xs">next {timeAgo(d.next_attempt_at)}</span> : null}
        </span>
      ),
    },
  ]
  return (
    <section className="grid min-w-0 content-start gap-3" aria-labelledby="delivery-log">
      <div className="flex flex-wrap items-end justify-between gap-2">
        <div className="grid gap-1">
          <h2 id="delivery-log" className="text-base font-semibold">
            Delivery log
          </h2>
          <p className="text-sm text-muted-foreground">Newest first. Open a delivery to see each attempt’s answer.</p>
        </div>
        <div className="w-44">
          <SelectField
            aria-label="Show deliveries"
            value={params.get('state') ?? 'all'}
            onValueChange={(v) => setParams({ state: v === 'all' ? null : v, page: null })}
          >
            <SelectItem value="all">All deliveries</SelectItem>
            {DELIVERY_STATES.map((s) => (
              <SelectItem key={s} value={s}>
                {s[0]!.toUpperCase() + s.slice(1)}
              </SelectItem>
            ))}
          </SelectField>
        </div>
      </div>
      <DataTable<Delivery>
        path={`/api/v2/webhooks/${w.id}/deliveries`}
        queryKey="webhook-deliveries"
        columns={columns}
        rowKey={(d) => d.id}
        filters={['state']}
        caption="Deliveries"
        onRowClick={setOpen}
        defaultPerPage={10}
        empty={{ icon: SendIcon, title: 'No deliveries yet', description: 'Events this webhook subscribes to are delivered here as they happen.' }}
      />
      <AttemptsDialog w={w} delivery={open} onClose={() => setOpen(null)} mayReplay={mayReplay} />
    </section>
  )
}

function WebhookPage() {
  const { id } = useParams<{ id: string }>()
  const wid = Number(id)
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const { data: session } = useSession()
  const admin = session?.admin
  const mayUpdate = can(admin, 'webhooks.update')
  const q = useQuery({ queryKey: ['webhook', wid], queryFn: () => api<Webhook>('GET', `/api/v2/webhooks/${wid}`), enabled: Number.isInteger(wid) && wid > 0 })
  const [testing, setTesting] = useState(false)
  const [rotating, setRotating] = useState(false)
  const [deleting, setDeleting] = useState(false)
  const [secret, setSecret] = useState<string | null>(null)
  const updated = (w: Webhook) => {
    qc.setQueryData(['webhook', wid], w)
    qc.invalidateQueries({ queryKey: ['webhooks'] })
    qc.invalidateQueries({ queryKey: ['webhook-deliveries'] })
  }
  const setEnabled = useMutation({
    mutationFn: (enabled: boolean) => api<Webhook>('PATCH', `/api/v2/webhooks/${wid}`, { enabled }),
    onSuccess: (w) => {
      updated(w)
      toast.success(w.enabled ? 'Webhook enabled: pending deliveries go out now.' : 'Webhook disabled')
    },
    onError: (e) => toast.error(errorMessage(e)),
  })
  const rotate = useMutation({
    mutationFn: () => api<Webhook & { secret: string }>('POST', `/api/v2/webhooks/${wid}/rotate-secret`),
    onSuccess: (w) => {
      const { secret: s, ...rest } = w
      updated(rest)
      setSecret(s)
    },
    onError: (e) => toast.error(errorMessage(e)),
  })
  const remove = useMutation({
    mutationFn: () => api('DELETE', `/api/v2/webhooks/${wid}`),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ['webhooks'] })
      toast.success('Webhook deleted')
      navigate('/')
    },
    onError: (e) => toast.error(errorMessage(e)),
  })

  const back = <BackLink>All webhooks</BackLink>
  const states = detailStates(q, {
    back,
    invalid: !Number.isInteger(wid) || wid <= 0,
    notFound: { title: 'There is no such webhook', description: 'It may have been deleted.' },
    loadingLabel: 'Loading the webhook',
  })
  if (states || !q.data) return states
  const w = q.data
  return (
    <div className="grid gap-6">
      {back}
      <PageHeader
        title={w.description || 'Webhook'}
        description={
          <span className="flex flex-wrap items-center gap-2">
            <StateBadge w={w} />
            <span className="font-mono text-xs break-all">{w.endpoint}</span>
          </span>
        }
        actions={
          <>
            {can(admin, 'webhooks.delete') ? (
              <Button variant="ghost" onClick={() => setDeleting(true)}>
                <Trash2Icon /> Delete
              </Button>
            ) : null}
            {mayUpdate ? (
              <Button variant="outline" onClick={() => setRotating(true)}>
                <KeyRoundIcon /> Rotate secret
              </Button>
            ) : null}
            {mayUpdate && w.enabled ? (
              <Button variant="outline" onClick={() => setEnabled.mutate(false)} disabled={setEnabled.isPending}>
                <PowerIcon /> Disable
              </Button>
            ) : null}
            {can(admin, 'webhooks.test') ? (
              <Button onClick={() => setTesting(true)}>
                <SendIcon /> Send test
              </Button>
            ) : null}
          </>
        }
      />
      {!w.enabled ? (
        <div role="alert" className="flex flex-col gap-3 rounded-xl border border-destructive/30 bg-destructive/5 p-4 sm:flex-row sm:items-center">
          <AlertTriangleIcon className="size-5 shrink-0 text-destructive" aria-hidden="true" />
          <div className="grid flex-1 gap-0.5 text-sm">
            <p className="font-medium">This webhook is disabled{w.disabled_at ? ` since ${formatDateTime(w.disabled_at)}` : ''}.</p>
            <p className="text-muted-foreground">
              {DISABLED_WHY[w.disabled_reason ?? 'manual']} New events are kept as pending deliveries and go out when you enable it again.
            </p>
          </div>
          {mayUpdate ? (
            <Button onClick={() => setEnabled.mutate(true)} disabled={setEnabled.isPending}>
              <PowerIcon /> Re-enable
            </Button>
          ) : null}
        </div>
      ) : null}
      <div className="grid gap-6 lg:grid-cols-[minmax(0,1fr)_20rem]">
        <DeliveriesCard w={w} mayReplay={mayUpdate} />
        <Card className="content-start">
          <CardHeader>
            <CardTitle>Health</CardTitle>
          </CardHeader>
          <CardContent>
            <dl className="grid gap-3 text-sm">
              <div className="grid gap-0.5">
                <dt className="text-xs text-muted-foreground">Failures in a row</dt>
                <dd className={cn('text-2xl font-semibold tabular-nums', w.consecutive_failures > 0 && 'text-destructive')}>{w.consecutive_failures}</dd>
              </div>
              <div className="grid gap-0.5">
                <dt className="text-xs text-muted-foreground">Last success</dt>
                <dd>{w.last_success_at ? formatDateTime(w.last_success_at) : 'Never'}</dd>
              </div>
              <div className="grid gap-0.5">
                <dt className="text-xs text-muted-foreground">Last failure</dt>
                <dd>{w.last_failure_at ? formatDateTime(w.last_failure_at) : 'Never'}</dd>
              </div>
              {w.previous_secret_expires_at ? (
                <div className="grid gap-0.5">
                  <dt className="text-xs text-muted-foreground">Previous secret signs too until</dt>
                  <dd>{formatDateTime(w.previous_secret_expires_at)}</dd>
                </div>
              ) : null}
              <div className="grid gap-0.5">
                <dt className="text-xs text-muted-foreground">Created</dt>
                <dd>{formatDateTime(w.created_at)}</dd>
              </div>
            </dl>
          </CardContent>
        </Card>
      </div>
      <SettingsCard key={w.updated_at} w={w} mayUpdate={mayUpdate} />
      {testing ? <TestDialog w={w} open onOpenChange={setTesting} /> : null}
      <WebhookSecretDialog secret={secret} title="The new signing secret" onClose={() => setSecret(null)} />
      <ConfirmDialog
        open={rotating}
        onOpenChange={setRotating}
        title="Rotate the signing secret?"
        description="A new secret is made and shown once. For 24 hours requests carry signatures by both, so you can update your receiver at your pace."
        confirmLabel="Rotate secret"
        destructive={false}
        onConfirm={() => rotate.mutate()}
      />
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title="Delete this webhook?"
        description="Its pending deliveries and the delivery log go with it. Your endpoint gets nothing more from Mailroom."
        confirmLabel="Delete webhook"
        onConfirm={() => remove.mutate()}
      />
    </div>
  )
}

/** The Webhooks page: the list at /webhooks, one webhook at /webhooks/:id. */
export function WebhooksPage() {
  return (
    <Switch>
      <Route path="/" component={WebhookList} />
      <Route path="/:id" component={WebhookPage} />
    </Switch>
  )
}
