/**
 * The broadcast editor (create at /broadcasts/new, edit at /broadcasts/:id/edit): name, from
 * (a sending domain and a local part), reply-to, subject, content (a template with a preview
 * of its active version, or inline HTML and text), the audience with a live recipient count
 * (POST /api/v2/broadcasts/audience-count), tracking, send rate, send window and time zone,
 * archive, IP pool, tags, auto-pause bounce and complaint thresholds; scheduling with a
 * confirmation that shows the count; versions (each with its own content or template and
 * send time) and split-test settings; a test send. Outside draft, scheduled and paused the API refuses changes, so the
 * form is read-only with a notice.
 */
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { CalendarClockIcon, InfoIcon, LockIcon, PencilIcon, PlusIcon, SaveIcon, SendIcon, Trash2Icon, UsersIcon } from 'lucide-react'
import { useMemo, useState, type ReactNode } from 'react'
import { toast } from 'sonner'
import { Link, useLocation, useParams } from 'wouter'
import { BackLink, detailStates } from '../../components/detail-page'
import { ConfirmDialog } from '../../components/confirm-dialog'
import { FormDialog } from '../../components/form-dialog'
import { PageHeader } from '../../components/page-header'
import { SelectField } from '../../components/select-field'
import { Badge } from '../../components/ui/badge'
import { Button } from '../../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../../components/ui/card'
import { Checkbox } from '../../components/ui/checkbox'
import { FormField } from '../../components/ui/form-field'
import { Input } from '../../components/ui/input'
import { Label } from '../../components/ui/label'
import { Switch } from '../../components/ui/switch'
import { Textarea } from '../../components/ui/textarea'
import { api, apiPage, errorMessage } from '../../lib/api'
import { fieldErrorOf, reportError } from '../../lib/form-errors'
import { can, useSession } from '../../lib/session'
import { cn, formatDateTime, formatNumber, fromLocalInput, toLocalInput } from '../../lib/utils'
import { useDebounced } from '../../lib/use-debounced'
import { useListMenu } from '../audience/shared'
import { usePoolOptions, type SendingDomain } from '../sending-shared'
import type { TemplateSummary } from '../templates'
import { allowedActions, BroadcastStatusBadge, EDITABLE, type Broadcast, type SplitMetric, type Version } from './shared'

const MENU = { per_page: 100 }
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat']
const HOURS = Array.from({ length: 25 }, (_, h) => h)

interface Draft {
  name: string
  fromName: string
  fromLocal: string
  fromDomain: string
  reply_to: string
  subject: string
  content: 'template' | 'inline'
  template_id: string
  html: string
  text: string
  list_ids: number[]
  segment_id: string
  exclude_list_ids: number[]
  exclude_segment_ids: number[]
  track_opens: boolean
  track_clicks: boolean
  archive: boolean
  rate: string
  timezone: string
  windowOn: boolean
  start_hour: number
  end_hour: number
  days: number[]
  contact_timezone_field: string
  version_mode: 'rotation' | 'split_test'
  sample_percent: string
  metric: SplitMetric
  link_url: string
  wait_hours: string
  auto_send_winner: boolean
  /** '' = the sending domain's or the default pool. */
  pool_id: string
  /** Comma-separated, as typed. */
  tags: string
  /** Percentages as typed ('' = the server default); the API takes fractions. */
  max_bounce_pct: string
  max_complaint_pct: string
}

/** A fraction as a percentage field's text: 0.05 -> '5'. */
const pctText = (r: number | null | undefined) => (r == null ? '' : String(Number((r * 100).toFixed(4))))
/** A percentage field's text as the API's fraction, null when empty. */
const fractionOf = (s: string) => (s.trim() === '' ? null : Number(s) / 100)

/** "Name <local@domain>" or "local@domain" into its parts. */
function splitFrom(from: string): Pick<Draft, 'fromName' | 'fromLocal' | 'fromDomain'> {
  const m = /^\s*"?(.*?)"?\s*<([^>]+)>\s*$/.exec(from)
  const address = (m ? m[2]! : from).trim()
  const at = address.lastIndexOf('@')
  return { fromName: m ? m[1]!.trim() : '', fromLocal: at < 0 ? address : address.slice(0, at), fromDomain: at < 0 ? '' : address.slice(at + 1) }
}

function draftOf(b: Broadcast | null): Draft {
  const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone
  return {
    name: b?.name ?? '',
    ...(b ? splitFrom(b.from) : { fromName: '', fromLocal: 'news', fromDomain: '' }),
    reply_to: b?.reply_to ?? '',
    subject: b?.subject ?? '',
    content: b?.template_id != null ? 'template' : 'inline',
    template_id: b?.template_id != null ? String(b.template_id) : '',
    html: b?.html ?? '',
    text: b?.text ?? '',
    list_ids: b?.list_ids ?? [],
    segment_id: b?.segment_id != null ? String(b.segment_id) : '',
    exclude_list_ids: b?.exclude_list_ids ?? [],
    exclude_segment_ids: b?.exclude_segment_ids ?? [],
    track_opens: b?.track_opens ?? true,
    track_clicks: b?.track_clicks ?? true,
    archive: b?.archive ?? false,
    rate: b?.send_rate_per_minute != null ? String(b.send_rate_per_minute) : '',
    timezone: b ? (b.timezone ?? '') : browserZone,
    windowOn: b?.send_window != null,
    start_hour: b?.send_window?.start_hour ?? 9,
    end_hour: b?.send_window?.end_hour ?? 17,
    days: b?.send_window?.days ?? [1, 2, 3, 4, 5],
    contact_timezone_field: b?.send_window?.contact_timezone_field ?? '',
    version_mode: b?.version_mode ?? 'rotation',
    sample_percent: String(b?.split_test?.sample_percent ?? 20),
    metric: b?.split_test?.metric ?? 'open_rate',
    link_url: b?.split_test?.link_url ?? '',
    wait_hours: String((b?.split_test?.wait_seconds ?? 4 * 3600) / 3600),
    auto_send_winner: b?.split_test?.auto_send_winner ?? true,
    pool_id: b?.pool_id != null ? String(b.pool_id) : '',
    tags: (b?.tags ?? []).join(', '),
    max_bounce_pct: pctText(b?.max_bounce_rate),
    max_complaint_pct: pctText(b?.max_complaint_rate),
  }
}

const fromOf = (d: Draft) => {
  const address = `${d.fromLocal.trim()}@${d.fromDomain}`
  return d.fromName.trim() ? `${d.fromName.trim()} <${address}>` : address
}

/** The API body of a draft (docs/api.md "Broadcasts", create body). */
function bodyOf(d: Draft) {
  const rate = d.rate.trim() === '' ? null : Number(d.rate)
  return {
    name: d.name.trim(),
    from: fromOf(d),
    reply_to: d.reply_to.trim() || null,
    subject: d.subject,
    ...(d.content === 'template'
      ? { template_id: d.template_id ? Number(d.template_id) : null, html: null, text: null }
      : { template_id: null, html: d.html || null, text: d.text || null }),
    list_ids: d.list_ids,
    segment_id: d.segment_id ? Number(d.segment_id) : null,
    exclude_list_ids: d.exclude_list_ids,
    exclude_segment_ids: d.exclude_segment_ids,
    track_opens: d.track_opens,
    track_clicks: d.track_clicks,
    archive: d.archive,
    pool_id: d.pool_id ? Number(d.pool_id) : null,
    tags: [
      ...new Set(
        d.tags
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean),
      ),
    ],
    max_bounce_rate: fractionOf(d.max_bounce_pct),
    max_complaint_rate: fractionOf(d.max_complaint_pct),
    send_rate_per_minute: rate,
    timezone: d.timezone.trim() || null,
    send_window: d.windowOn
      ? { start_hour: d.start_hour, end_hour: d.end_hour, days: d.days, contact_timezone_field: d.contact_timezone_field.trim() || null }
      : null,
    version_mode: d.version_mode,
    split_test:
      d.version_mode === 'split_test'
        ? {
            sample_percent: Number(d.sample_percent),
            metric: d.metric,
            link_url: d.metric === 'link_click_rate' ? d.link_url.trim() || null : null,
            wait_seconds: Math.round(Number(d.wait_hours) * 3600),
            auto_send_winner: d.auto_send_winner,
          }
        : null,
  }
}

const audienceOf = (d: Draft) => ({
  list_ids: d.list_ids,
  segment_id: d.segment_id ? Number(d.segment_id) : undefined,
  exclude_list_ids: d.exclude_list_ids,
  exclude_segment_ids: d.exclude_segment_ids,
})

/** The recipient count of an audience as it stands now (debounced while it is being picked). */
function useAudienceCount(d: Draft) {
  const audience = useDebounced(audienceOf(d), 300)
  const some = audience.list_ids.length > 0 || audience.segment_id !== undefined
  return useQuery({
    queryKey: ['broadcasts', 'audience-count', audience],
    queryFn: () => api<{ total: number }>('POST', '/api/v2/broadcasts/audience-count', audience),
    enabled: some,
    placeholderData: keepPreviousData,
  })
}

/** A group of checkboxes, one per option, under a legend (lists and segments to include or exclude). */
function CheckGroup({
  legend,
  options,
  value,
  onChange,
  error,
  empty,
}: {
  legend: string
  options: Array<{ id: number; label: string; hint?: string }>
  value: number[]
  onChange: (ids: number[]) => void
  error?: string
  empty: ReactNode
}) {
  return (
    <fieldset className="grid gap-2" aria-invalid={error ? true : undefined}>
      <legend className="mb-2 text-sm leading-none font-medium">{legend}</legend>
      {options.length === 0 ? (
        <p className="text-sm text-muted-foreground">{empty}</p>
      ) : (
        <div className="grid max-h-48 gap-2 overflow-auto rounded-md border p-3">
          {options.map((o) => {
            const id = `${legend}-${o.id}`.replace(/\W+/g, '-')
            return (
              <div key={o.id} className="flex items-center gap-2">
                <Checkbox
                  id={id}
                  checked={value.includes(o.id)}
                  onCheckedChange={(c) => onChange(c === true ? [...value, o.id] : value.filter((v) => v !== o.id))}
                />
                <Label htmlFor={id} className="font-normal">
                  {o.label}
                </Label>
                {o.hint ? <span className="ml-auto text-xs text-muted-foreground tabular-nums">{o.hint}</span> : null}
              </div>
            )
          })}
        </div>
      )}
      {error ? (
        <p role="alert" className="text-sm text-destructive">
          {error}
        </p>
      ) : null}
    </fieldset>
  )
}

/** An on/off setting: a switch with its label and one line of what it does. */
function SwitchRow({ label, hint, checked, onChange }: { label: string; hint: string; checked: boolean; onChange: (v: boolean) => void }) {
  const id = `switch-${label.replace(/\W+/g, '-').toLowerCase()}`
  return (
    <div className="flex items-start justify-between gap-4">
      <div className="grid gap-1">
        <Label htmlFor={id}>{label}</Label>
        <p className="text-xs text-muted-foreground" id={`${id}-hint`}>
          {hint}
        </p>
      </div>
      <Switch id={id} checked={checked} onCheckedChange={onChange} aria-describedby={`${id}-hint`} />
    </div>
  )
}

/** The chosen template's active version: its subject and HTML in an empty sandbox. */
function TemplatePreview({ id }: { id: string }) {
  const q = useQuery({
    queryKey: ['templates', Number(id)],
    queryFn: () => api<TemplateSummary & { html: string | null; text: string | null }>('GET', `/api/v2/templates/${id}`),
    enabled: id !== '',
  })
  if (!id) return null
  if (q.isPending) return <p className="text-sm text-muted-foreground">Loading the template…</p>
  if (q.isError) return <p className="text-sm text-destructive">{errorMessage(q.error)}</p>
  const t = q.data
  return (
    <div className="grid gap-2" data-testid="template-preview">
      <p className="text-sm">
        <span className="text-muted-foreground">Active version </span>
        <Badge variant="secondary">v{t.active_version}</Badge> <span className="text-muted-foreground">· subject</span>{' '}
        <span className="font-mono text-xs">{t.subject}</span>
      </p>
      {t.html ? (
        <iframe title="Template preview" sandbox="" srcDoc={t.html} className="h-72 w-full rounded-lg border bg-white" />
      ) : (
        <pre className="max-h-72 overflow-auto rounded-lg border p-3 font-mono text-xs whitespace-pre-wrap">{t.text}</pre>
      )}
      <p className="text-xs text-muted-foreground">The version active when the broadcast starts is the one sent.</p>
    </div>
  )
}

/** Schedule now or at a time, after a confirmation showing who it goes to. */
function ScheduleDialog({
  open,
  onOpenChange,
  recipients,
  onSchedule,
  pending,
}: {
  open: boolean
  onOpenChange: (o: boolean) => void
  recipients: number | undefined
  onSchedule: (sendAt: string | undefined) => void
  pending: boolean
}) {
  const [when, setWhen] = useState<'now' | 'later'>('now')
  const [at, setAt] = useState('')
  return (
    <FormDialog
      open={open}
      onOpenChange={onOpenChange}
      title="Schedule this broadcast"
      description={
        <span data-testid="schedule-count">
          It goes to <strong>{recipients === undefined ? 'the' : formatNumber(recipients)}</strong> subscribed recipients the audience reaches now (counted
          again when it starts; suppressed addresses are skipped).
        </span>
      }
      onSubmit={() => onSchedule(when === 'now' ? undefined : new Date(at).toISOString())}
      submitLabel={when === 'now' ? 'Send now' : 'Schedule'}
      submitDisabled={pending || (when === 'later' && !at)}
      busy={pending}
    >
      <fieldset className="grid gap-2">
        <legend className="mb-2 text-sm font-medium">When</legend>
        {(
          [
            ['now', 'Now'],
            ['later', 'At a date and time'],
          ] as const
        ).map(([v, label]) => (
          <label key={v} className="flex items-center gap-2 text-sm">
            <input type="radio" name="when" value={v} checked={when === v} onChange={() => setWhen(v)} className="size-4 accent-primary" />
            {label}
          </label>
        ))}
      </fieldset>
      {when === 'later' ? (
        <FormField label="Send at" hint="In this browser's time zone.">
          <Input type="datetime-local" value={at} onChange={(e) => setAt(e.target.value)} required />
        </FormField>
      ) : null}
    </FormDialog>
  )
}

/** POST /test: a copy each to up to ten addresses, not counted, marked as a test. */
function TestSendDialog({ id, open, onOpenChange }: { id: number; open: boolean; onOpenChange: (o: boolean) => void }) {
  const [to, setTo] = useState('')
  const m = useMutation({
    mutationFn: () =>
      api('POST', `/api/v2/broadcasts/${id}/test`, {
        to: to
          .split(/[\s,;]+/)
          .map((s) => s.trim())
          .filter(Boolean),
      }),
    onSuccess: () => {
      toast.success('Test sent')
      onOpenChange(false)
    },
    onError: (e) => reportError(e, ['to']),
  })
  return (
    <FormDialog
      open={open}
      onOpenChange={onOpenChange}
      title="Send a test"
      description="The saved broadcast goes to these addresses, marked as a test and left out of its statistics."
      onSubmit={() => m.mutate()}
      submitLabel="Send test"
      submitDisabled={m.isPending || !to.trim()}
      busy={m.isPending}
    >
      <FormField label="To" hint="Up to 10 addresses, separated by commas." error={fieldErrorOf(m.error, 'to')}>
        <Input value={to} onChange={(e) => setTo(e.target.value)} placeholder="you@example.com" autoFocus />
      </FormField>
    </FormDialog>
  )
}

/** Add or edit one version: each field left empty falls back to the broadcast's. */
function VersionDialog({ broadcastId, version, onClose }: { broadcastId: number; version: Version | null; onClose: () => void }) {
  const qc = useQueryClient()
  const [v, setV] = useState({
    name: version?.name ?? '',
    subject: version?.subject ?? '',
    from_name: version?.from_name ?? '',
    html: version?.html ?? '',
    text: version?.text ?? '',
    weight: String(version?.weight ?? 1),
    template_id: version?.template_id != null ? String(version.template_id) : '',
    send_at: toLocalInput(version?.send_at),
  })
  const templates = useQuery({ queryKey: ['templates', 'menu'], queryFn: () => apiPage<TemplateSummary>('/api/v2/templates', MENU) })
  const set = (k: keyof typeof v) => (e: { target: { value: string } }) => setV({ ...v, [k]: e.target.value })
  const m = useMutation({
    mutationFn: () => {
      const body = {
        ...(v.name.trim() ? { name: v.name.trim() } : {}),
        subject: v.subject || null,
        from_name: v.from_name || null,
        html: v.html || null,
        text: v.text || null,
        weight: Number(v.weight),
        template_id: v.template_id ? Number(v.template_id) : null,
        send_at: fromLocalInput(v.send_at),
      }
      return version
        ? api<Version>('PATCH', `/api/v2/broadcasts/${broadcastId}/versions/${version.id}`, body)
        : api<Version>('POST', `/api/v2/broadcasts/${broadcastId}/versions`, body)
    },
    onSuccess: async () => {
      toast.success(version ? 'Version saved' : 'Version added')
      onClose()
      await qc.invalidateQueries({ queryKey: ['broadcasts', broadcastId, 'versions'] })
    },
    onError: (e) => reportError(e, ['name', 'subject', 'from_name', 'html', 'text', 'weight', 'template_id', 'send_at']),
  })
  const err = (f: string) => fieldErrorOf(m.error, f)
  return (
    <FormDialog
      open
      onOpenChange={(o) => !o && onClose()}
      title={version ? `Edit “${version.name}”` : 'New version'}
      description="A variant of the broadcast; whatever you leave empty is the broadcast's own."
      onSubmit={() => m.mutate()}
      submitLabel={version ? 'Save version' : 'Add version'}
      submitDisabled={m.isPending}
      busy={m.isPending}
      className="sm:max-w-2xl"
    >
      <div className="grid gap-4 sm:grid-cols-2">
        <FormField label="Name" hint="Default: Version N." error={err('name')}>
          <Input value={v.name} onChange={set('name')} autoFocus />
        </FormField>
        <FormField label="Weight" hint="Its share in rotation (1-1,000)." error={err('weight')}>
          <Input type="number" min={1} max={1000} value={v.weight} onChange={set('weight')} />
        </FormField>
      </div>
      <div className="grid gap-4 sm:grid-cols-2">
        <FormField label="Version template" hint="Its active version, pinned at the start; the HTML and text below win over it." error={err('template_id')}>
          <SelectField
            value={v.template_id || 'none'}
            onValueChange={(x) => setV({ ...v, template_id: x === 'none' ? '' : x })}
            options={[
              { value: 'none', label: 'None: the broadcast’s content' },
              ...(templates.data?.data ?? []).map((t) => ({ value: String(t.id), label: t.name })),
              ...(v.template_id && !templates.data?.data.some((t) => String(t.id) === v.template_id)
                ? [{ value: v.template_id, label: `Template ${v.template_id}` }]
                : []),
            ]}
          />
        </FormField>
        <FormField label="Send at" hint="Its recipients get it then, in this browser’s time zone; empty: with the broadcast." error={err('send_at')}>
          <Input type="datetime-local" value={v.send_at} onChange={set('send_at')} />
        </FormField>
      </div>
      <FormField label="Version subject" error={err('subject')}>
        <Input value={v.subject} onChange={set('subject')} />
      </FormField>
      <FormField label="From name" error={err('from_name')}>
        <Input value={v.from_name} onChange={set('from_name')} />
      </FormField>
      <FormField label="Version HTML" error={err('html')}>
        <Textarea value={v.html} onChange={set('html')} rows={5} className="font-mono text-xs" />
      </FormField>
      <FormField label="Version text" error={err('text')}>
        <Textarea value={v.text} onChange={set('text')} rows={3} className="font-mono text-xs" />
      </FormField>
    </FormDialog>
  )
}

/** The versions of a saved broadcast: add, edit, remove (while it is editable). */
function VersionsPanel({ broadcast, readOnly }: { broadcast: Broadcast; readOnly: boolean }) {
  const qc = useQueryClient()
  const [editing, setEditing] = useState<{ version: Version | null } | null>(null)
  const [removing, setRemoving] = useState<Version | null>(null)
  const q = useQuery({
    queryKey: ['broadcasts', broadcast.id, 'versions'],
    queryFn: () => api<Version[]>('GET', `/api/v2/broadcasts/${broadcast.id}/versions`),
  })
  const remove = useMutation({
    mutationFn: (v: Version) => api('DELETE', `/api/v2/broadcasts/${broadcast.id}/versions/${v.id}`),
    onSuccess: async () => {
      toast.success('Version removed')
      await qc.invalidateQueries({ queryKey: ['broadcasts', broadcast.id, 'versions'] })
    },
    onError: (e) => toast.error(errorMessage(e)),
  })
  const versions = q.data ?? []
  const templates = useQuery({ queryKey: ['templates', 'menu'], queryFn: () => apiPage<TemplateSummary>('/api/v2/templates', MENU) })
  const templateName = (id: number) => templates.data?.data.find((t) => t.id === id)?.name ?? `template ${id}`
  return (
    <div className="grid gap-3">
      {q.isError ? <p className="text-sm text-destructive">{errorMessage(q.error)}</p> : null}
      {versions.length === 0 && q.isSuccess ? (
        <p className="text-sm text-muted-foreground">One version: the broadcast itself. Add versions to rotate subjects or content, or to run a split test.</p>
      ) : (
        <ul className="grid gap-2">
          {versions.map((v) => (
            <li key={v.id} className="flex items-center gap-3 rounded-md border px-3 py-2 text-sm">
              <div className="grid min-w-0 flex-1 gap-0.5">
                <span className="font-medium">{v.name}</span>
                <span className="truncate text-xs text-muted-foreground">
                  {v.subject ?? 'the broadcast’s subject'}
                  {v.template_id != null ? ` · ${templateName(v.template_id)}` : ''}
                  {v.send_at ? ` · sends ${formatDateTime(v.send_at)}` : ''}
                </span>
              </div>
              <Badge variant="outline">weight {v.weight}</Badge>
              {broadcast.winner_version_id === v.id ? <Badge variant="success">winner</Badge> : null}
              {!readOnly ? (
                <>
                  <Button type="button" variant="ghost" size="icon" aria-label={`Edit ${v.name}`} onClick={() => setEditing({ version: v })}>
                    <PencilIcon />
                  </Button>
                  <Button type="button" variant="ghost" size="icon" aria-label={`Remove ${v.name}`} onClick={() => setRemoving(v)}>
                    <Trash2Icon />
                  </Button>
                </>
              ) : null}
            </li>
          ))}
        </ul>
      )}
      {!readOnly ? (
        <Button type="button" variant="outline" size="sm" className="w-fit" onClick={() => setEditing({ version: null })} disabled={versions.length >= 10}>
          <PlusIcon /> Add version
        </Button>
      ) : null}
      {editing ? (
        <VersionDialog key={editing.version?.id ?? 'new'} broadcastId={broadcast.id} version={editing.version} onClose={() => setEditing(null)} />
      ) : null}
      <ConfirmDialog
        open={removing !== null}
        onOpenChange={(o) => !o && setRemoving(null)}
        title={`Remove “${removing?.name ?? ''}”?`}
        description="Its recipients get the broadcast's own content instead."
        confirmLabel="Remove"
        onConfirm={() => removing && remove.mutate(removing)}
      />
    </div>
  )
}

function Section({ title, description, children }: { title: string; description?: ReactNode; children: ReactNode }) {
  return (
    <Card>
      <CardHeader>
        <CardTitle>{title}</CardTitle>
        {description ? <CardDescription>{description}</CardDescription> : null}
      </CardHeader>
      <CardContent className="grid gap-4">{children}</CardContent>
    </Card>
  )
}

function EditorForm({ broadcast }: { broadcast: Broadcast | null }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const { data: session } = useSession()
  const admin = session?.admin
  const [d, setD] = useState<Draft>(() => draftOf(broadcast))
  const [scheduling, setScheduling] = useState(false)
  const [testing, setTesting] = useState(false)
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => setD((x) => ({ ...x, [k]: v }))
  const readOnly = broadcast !== null && (!EDITABLE.includes(broadcast.status) || !can(admin, 'broadcasts.update'))
  const mayCreate = can(admin, 'broadcasts.create')

  const domains = useQuery({ queryKey: ['sending-domains', 'menu'], queryFn: () => apiPage<SendingDomain>('/api/v2/sending-domains', MENU) })
  const templates = useQuery({ queryKey: ['templates', 'menu'], queryFn: () => apiPage<TemplateSummary>('/api/v2/templates', MENU) })
  const segments = useQuery({
    queryKey: ['segments', 'menu'],
    queryFn: () => apiPage<{ id: number; name: string }>('/api/v2/segments', MENU),
  })
  const lists = useListMenu()
  const pools = usePoolOptions()
  const count = useAudienceCount(d)
  const zones = useMemo(() => (typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : []), [])

  // Verified domains first; others are offered (the server may allow them) but say so.
  const domainOptions = [...(domains.data?.data ?? [])]
    .sort((a, b) => Number(b.status === 'verified') - Number(a.status === 'verified') || a.name.localeCompare(b.name))
    .map((s) => ({ value: s.name, label: s.status === 'verified' ? s.name : `${s.name} (not verified)` }))
  if (d.fromDomain && !domainOptions.some((o) => o.value === d.fromDomain)) domainOptions.push({ value: d.fromDomain, label: d.fromDomain })

  const save = useMutation({
    mutationFn: () =>
      broadcast ? api<Broadcast>('PATCH', `/api/v2/broadcasts/${broadcast.id}`, bodyOf(d)) : api<Broadcast>('POST', '/api/v2/broadcasts', bodyOf(d)),
    onSuccess: async (b) => {
      await qc.invalidateQueries({ queryKey: ['broadcasts'] })
      qc.setQueryData(['broadcasts', b.id], b)
      return b
    },
    onError: (e) => reportError(e, FIELDS),
  })
  const schedule = useMutation({
    mutationFn: async (sendAt: string | undefined) => {
      const saved = await save.mutateAsync()
      return api<Broadcast>('POST', `/api/v2/broadcasts/${saved.id}/schedule`, sendAt ? { send_at: sendAt } : {})
    },
    onSuccess: async (b) => {
      toast.success(b.send_at && new Date(b.send_at).getTime() > Date.now() + 60_000 ? 'Broadcast scheduled' : 'Broadcast is starting')
      setScheduling(false)
      await qc.invalidateQueries({ queryKey: ['broadcasts'] })
      navigate(`~/admin/broadcasts/${b.id}`)
    },
    onError: (e) => {
      setScheduling(false)
      reportError(e, FIELDS)
    },
  })
  const err = (f: string) => fieldErrorOf(save.error ?? schedule.error, f)
  const onSave = () =>
    save.mutate(undefined, {
      onSuccess: (b) => {
        toast.success(broadcast ? 'Broadcast saved' : 'Broadcast created')
        if (!broadcast) navigate(`~/admin/broadcasts/${b.id}/edit`, { replace: true })
      },
    })

  const allowed = broadcast ? allowedActions(broadcast) : null
  const listOptions = (lists.data?.data ?? []).map((l) => ({ id: l.id, label: l.name, hint: `${formatNumber(l.counts.subscribed)} subscribed` }))
  const segmentOptions = (segments.data?.data ?? []).map((s) => ({ id: s.id, label: s.name }))

  return (
    <form
      className="grid gap-6"
      onSubmit={(e) => {
        e.preventDefault()
        onSave()
      }}
    >
      <PageHeader
        title={broadcast ? broadcast.name : 'New broadcast'}
        description={
          broadcast ? (
            <span className="inline-flex items-center gap-2">
              <BroadcastStatusBadge status={broadcast.status} /> {broadcast.status_reason ?? null}
            </span>
          ) : (
            'Who it goes to, what it says, and when.'
          )
        }
        actions={
          readOnly ? (
            broadcast ? (
              <Button asChild variant="outline">
                <Link href={`~/admin/broadcasts/${broadcast.id}`}>View progress and results</Link>
              </Button>
            ) : null
          ) : (
            <>
              {broadcast && can(admin, 'broadcasts.send') ? (
                <Button type="button" variant="outline" onClick={() => setTesting(true)}>
                  <SendIcon /> Send test
                </Button>
              ) : null}
              <Button type="submit" variant="outline" disabled={save.isPending || (!broadcast && !mayCreate)}>
                <SaveIcon /> {broadcast ? 'Save' : 'Save draft'}
              </Button>
              {(allowed?.schedule ?? true) && can(admin, 'broadcasts.send') ? (
                <Button type="button" onClick={() => setScheduling(true)} disabled={schedule.isPending}>
                  <CalendarClockIcon /> Schedule…
                </Button>
              ) : null}
            </>
          )
        }
      />
      {readOnly && broadcast ? (
        <div role="note" className="flex items-start gap-2 rounded-lg border bg-muted/40 px-4 py-3 text-sm">
          <LockIcon className="mt-0.5 size-4 shrink-0 text-muted-foreground" aria-hidden="true" />
          <span>
            {EDITABLE.includes(broadcast.status)
              ? 'Your role may not change broadcasts.'
              : `A ${broadcast.status} broadcast cannot be changed; its settings are shown as they were sent. Duplicate it to send something like it again.`}
          </span>
        </div>
      ) : null}
      <fieldset disabled={readOnly} className="grid gap-6 lg:grid-cols-[minmax(0,3fr)_minmax(0,2fr)]">
        <div className="grid content-start gap-6">
          <Section title="Message">
            <FormField label="Name" hint="For you; recipients do not see it." error={err('name')}>
              <Input value={d.name} onChange={(e) => set('name', e.target.value)} required maxLength={200} />
            </FormField>
            <fieldset className="grid gap-2">
              <legend className="mb-2 text-sm font-medium">From</legend>
              <div className="grid gap-3 sm:grid-cols-[minmax(0,1fr)_minmax(0,1fr)_minmax(0,1.3fr)]">
                <FormField label="Sender name">
                  <Input value={d.fromName} onChange={(e) => set('fromName', e.target.value)} placeholder="Acme News" />
                </FormField>
                <FormField label="Local part">
                  <Input value={d.fromLocal} onChange={(e) => set('fromLocal', e.target.value)} placeholder="news" required />
                </FormField>
                <FormField label="Sending domain">
                  <SelectField
                    value={d.fromDomain || undefined}
                    onValueChange={(v) => set('fromDomain', v)}
                    placeholder={domains.isPending ? 'Loading…' : domainOptions.length ? 'Choose a domain' : 'No sending domains'}
                    className="w-full min-w-0"
                    options={domainOptions}
                    disabled={readOnly}
                  />
                </FormField>
              </div>
              {err('from') ? (
                <p role="alert" className="text-sm text-destructive">
                  {err('from')}
                </p>
              ) : d.fromDomain ? (
                <p className="text-xs text-muted-foreground">
                  Sent as <span className="font-mono">{fromOf(d)}</span>
                </p>
              ) : domains.isSuccess && domainOptions.length === 0 ? (
                <p className="text-xs text-muted-foreground">
                  Add and verify a domain under <Link href="~/admin/sending/domains">Sending › Domains</Link> first.
                </p>
              ) : null}
            </fieldset>
            <FormField label="Reply-To" hint="Optional: where replies go." error={err('reply_to')}>
              <Input value={d.reply_to} onChange={(e) => set('reply_to', e.target.value)} placeholder="support@example.com" />
            </FormField>
            <FormField label="Subject" hint="Handlebars: {{first_name}} is replaced for each recipient." error={err('subject')}>
              <Input value={d.subject} onChange={(e) => set('subject', e.target.value)} required maxLength={998} />
            </FormField>
          </Section>

          <Section title="Content" description="A template (its active version is pinned when the broadcast starts), or HTML and text written here.">
            <fieldset className="flex gap-4">
              <legend className="sr-only">Content source</legend>
              {(
                [
                  ['inline', 'Write it here'],
                  ['template', 'Use a template'],
                ] as const
              ).map(([v, label]) => (
                <label key={v} className="flex items-center gap-2 text-sm">
                  <input type="radio" name="content" checked={d.content === v} onChange={() => set('content', v)} className="size-4 accent-primary" />
                  {label}
                </label>
              ))}
            </fieldset>
            {d.content === 'template' ? (
              <>
                <FormField label="Template" error={err('template_id')}>
                  <SelectField
                    value={d.template_id || undefined}
                    onValueChange={(v) => set('template_id', v)}
                    placeholder={templates.isPending ? 'Loading…' : 'Choose a template'}
                    options={(templates.data?.data ?? []).map((t) => ({ value: String(t.id), label: t.name }))}
                    disabled={readOnly}
                  />
                </FormField>
                <TemplatePreview id={d.template_id} />
              </>
            ) : (
              <>
                <FormField label="HTML" error={err('html')}>
                  <Textarea
                    value={d.html}
                    onChange={(e) => set('html', e.target.value)}
                    rows={10}
                    className="font-mono text-xs"
                    placeholder="<p>Hi {{first_name}},</p>"
                  />
                </FormField>
                <FormField label="Text" hint="The plain-text part, for clients that do not show HTML." error={err('text')}>
                  <Textarea value={d.text} onChange={(e) => set('text', e.target.value)} rows={5} className="font-mono text-xs" />
                </FormField>
              </>
            )}
          </Section>

          <Section
            title="Versions"
            description="Variants of subject, sender name or content. Rotation splits the audience by weight; a split test sends a sample first and the winner to the rest."
          >
            <FormField label="Mode" error={err('version_mode')}>
              <SelectField
                value={d.version_mode}
                onValueChange={(v) => set('version_mode', v as Draft['version_mode'])}
                options={[
                  { value: 'rotation', label: 'Rotation' },
                  { value: 'split_test', label: 'Split test' },
                ]}
                disabled={readOnly}
              />
            </FormField>
            {d.version_mode === 'split_test' ? (
              <div className="grid gap-4 rounded-lg border p-4 sm:grid-cols-2">
                <FormField label="Sample (% of the audience)" error={err('split_test.sample_percent') ?? err('split_test')}>
                  <Input type="number" min={1} max={50} value={d.sample_percent} onChange={(e) => set('sample_percent', e.target.value)} />
                </FormField>
                <FormField label="Wait before deciding (hours)" error={err('split_test.wait_seconds')}>
                  <Input type="number" min={0.02} step="any" value={d.wait_hours} onChange={(e) => set('wait_hours', e.target.value)} />
                </FormField>
                <FormField label="Winner by" error={err('split_test.metric')}>
                  <SelectField
                    value={d.metric}
                    onValueChange={(v) => set('metric', v as SplitMetric)}
                    options={[
                      { value: 'open_rate', label: 'Open rate' },
                      { value: 'click_rate', label: 'Click rate' },
                      { value: 'link_click_rate', label: 'Clicks on one link' },
                    ]}
                    disabled={readOnly}
                  />
                </FormField>
                {d.metric === 'link_click_rate' ? (
                  <FormField label="Link URL" error={err('split_test.link_url')}>
                    <Input value={d.link_url} onChange={(e) => set('link_url', e.target.value)} placeholder="https://example.com/offer" />
                  </FormField>
                ) : null}
                <div className="sm:col-span-2">
                  <SwitchRow
                    label="Send the winner automatically"
                    hint="Off: the broadcast pauses with the result, for you to resume."
                    checked={d.auto_send_winner}
                    onChange={(v) => set('auto_send_winner', v)}
                  />
                </div>
              </div>
            ) : null}
            {broadcast ? (
              <VersionsPanel broadcast={broadcast} readOnly={readOnly} />
            ) : (
              <p className="text-sm text-muted-foreground">Save the draft to add versions.</p>
            )}
          </Section>
        </div>

        <div className="grid content-start gap-6">
          <Section title="Audience" description="Subscribed contacts only; one message per address.">
            <CheckGroup
              legend="Lists"
              options={listOptions}
              value={d.list_ids}
              onChange={(v) => set('list_ids', v)}
              error={err('list_ids')}
              empty="No lists yet."
            />
            <FormField label="Segment" hint="With lists, it narrows them; alone, it is the audience." error={err('segment_id')}>
              <SelectField
                value={d.segment_id || '__none'}
                onValueChange={(v) => set('segment_id', v === '__none' ? '' : v)}
                options={[{ value: '__none', label: 'No segment' }, ...segmentOptions.map((s) => ({ value: String(s.id), label: s.label }))]}
                disabled={readOnly}
              />
            </FormField>
            <CheckGroup
              legend="Leave out lists"
              options={listOptions.map((o) => ({ ...o, hint: undefined }))}
              value={d.exclude_list_ids}
              onChange={(v) => set('exclude_list_ids', v)}
              error={err('exclude_list_ids')}
              empty="No lists yet."
            />
            <CheckGroup
              legend="Leave out segments"
              options={segmentOptions}
              value={d.exclude_segment_ids}
              onChange={(v) => set('exclude_segment_ids', v)}
              error={err('exclude_segment_ids')}
              empty="No segments yet."
            />
            <div className="flex items-center gap-2 rounded-lg bg-muted/50 px-3 py-2 text-sm" aria-live="polite" data-testid="audience-count">
              <UsersIcon className="size-4 text-muted-foreground" aria-hidden="true" />
              {d.list_ids.length === 0 && !d.segment_id ? (
                <span className="text-muted-foreground">Choose lists or a segment.</span>
              ) : count.isError ? (
                <span className="text-destructive">{errorMessage(count.error)}</span>
              ) : count.data ? (
                <span className={cn(count.isFetching && 'opacity-60')}>
                  <strong className="tabular-nums">{formatNumber(count.data.total)}</strong> recipients now
                </span>
              ) : (
                <span className="text-muted-foreground">Counting…</span>
              )}
            </div>
          </Section>

          <Section title="Sending">
            <SwitchRow label="Track opens" hint="A tracking pixel in the HTML part." checked={d.track_opens} onChange={(v) => set('track_opens', v)} />
            <SwitchRow label="Track clicks" hint="Links go through this server first." checked={d.track_clicks} onChange={(v) => set('track_clicks', v)} />
            <SwitchRow
              label="Public archive"
              hint="Once sent, publish it on the archive page and RSS feed."
              checked={d.archive}
              onChange={(v) => set('archive', v)}
            />
            <FormField label="IP pool" error={err('pool_id')}>
              <SelectField
                value={d.pool_id || 'usual'}
                onValueChange={(v) => set('pool_id', v === 'usual' ? '' : v)}
                options={[
                  { value: 'usual', label: 'The sending domain’s pool, else the default' },
                  ...(pools.data ?? []).map((x) => ({ value: String(x.id), label: x.name })),
                  ...(d.pool_id && !pools.data?.some((x) => String(x.id) === d.pool_id) ? [{ value: d.pool_id, label: `Pool ${d.pool_id}` }] : []),
                ]}
                disabled={readOnly}
              />
            </FormField>
            <FormField label="Tags" hint="Comma-separated; every message carries them, for search and statistics." error={err('tags')}>
              <Input value={d.tags} onChange={(e) => set('tags', e.target.value)} placeholder="newsletter, november" autoComplete="off" />
            </FormField>
            <fieldset className="grid gap-2" aria-describedby="broadcast-thresholds-hint">
              <legend className="mb-2 text-sm leading-none font-medium">Pause automatically when a rate passes</legend>
              <div className="grid gap-4 sm:grid-cols-2">
                <FormField label="Bounce rate (%)" error={err('max_bounce_rate')}>
                  <Input type="number" min={0} max={100} step="any" value={d.max_bounce_pct} onChange={(e) => set('max_bounce_pct', e.target.value)} />
                </FormField>
                <FormField label="Complaint rate (%)" error={err('max_complaint_rate')}>
                  <Input type="number" min={0} max={100} step="any" value={d.max_complaint_pct} onChange={(e) => set('max_complaint_pct', e.target.value)} />
                </FormField>
              </div>
              <p id="broadcast-thresholds-hint" className="text-xs text-muted-foreground">
                Of the mail sent so far. Empty: the server’s defaults (5% and 0.3% unless configured).
              </p>
            </fieldset>
            <FormField label="Send rate (messages a minute)" hint="Empty: as fast as the server goes." error={err('send_rate_per_minute')}>
              <Input type="number" min={1} value={d.rate} onChange={(e) => set('rate', e.target.value)} />
            </FormField>
            <FormField label="Time zone" hint="For the send window and dates (IANA, such as Europe/Paris)." error={err('timezone')}>
              <Input value={d.timezone} onChange={(e) => set('timezone', e.target.value)} list="broadcast-zones" autoComplete="off" />
            </FormField>
            <datalist id="broadcast-zones">
              {zones.map((z) => (
                <option key={z} value={z} />
              ))}
            </datalist>
            <SwitchRow
              label="Send window"
              hint="Mail leaves only in these hours and days, in each contact's zone or the broadcast's."
              checked={d.windowOn}
              onChange={(v) => set('windowOn', v)}
            />
            {d.windowOn ? (
              <div className="grid gap-3 rounded-lg border p-3">
                <div className="grid grid-cols-2 gap-3">
                  <FormField label="From hour" error={err('send_window.start_hour')}>
                    <SelectField
                      value={String(d.start_hour)}
                      onValueChange={(v) => set('start_hour', Number(v))}
                      options={HOURS.slice(0, 24).map((h) => ({ value: String(h), label: `${String(h).padStart(2, '0')}:00` }))}
                      disabled={readOnly}
                    />
                  </FormField>
                  <FormField label="Until hour" error={err('send_window.end_hour')}>
                    <SelectField
                      value={String(d.end_hour)}
                      onValueChange={(v) => set('end_hour', Number(v))}
                      options={HOURS.slice(1).map((h) => ({ value: String(h), label: `${String(h).padStart(2, '0')}:00` }))}
                      disabled={readOnly}
                    />
                  </FormField>
                </div>
                <fieldset className="grid gap-2">
                  <legend className="mb-2 text-sm font-medium">Days</legend>
                  <div className="flex flex-wrap gap-3">
                    {DAYS.map((name, i) => (
                      <div key={name} className="flex items-center gap-1.5">
                        <Checkbox
                          id={`day-${i}`}
                          checked={d.days.includes(i)}
                          onCheckedChange={(c) => set('days', c === true ? [...d.days, i].sort() : d.days.filter((x) => x !== i))}
                        />
                        <Label htmlFor={`day-${i}`} className="font-normal">
                          {name}
                        </Label>
                      </div>
                    ))}
                  </div>
                </fieldset>
                <FormField
                  label="Contact time zone field"
                  hint="Optional: a custom field key holding each contact's zone."
                  error={err('send_window.contact_timezone_field')}
                >
                  <Input value={d.contact_timezone_field} onChange={(e) => set('contact_timezone_field', e.target.value)} placeholder="timezone" />
                </FormField>
              </div>
            ) : null}
          </Section>
          <p className="flex items-start gap-2 text-xs text-muted-foreground">
            <InfoIcon className="mt-0.5 size-3.5 shrink-0" aria-hidden="true" />
            Unsubscribed and suppressed addresses are checked again as each message goes out.
          </p>
        </div>
      </fieldset>
      <ScheduleDialog
        open={scheduling}
        onOpenChange={setScheduling}
        recipients={count.data?.total}
        pending={schedule.isPending}
        onSchedule={(at) => schedule.mutate(at)}
      />
      {broadcast && testing ? <TestSendDialog id={broadcast.id} open onOpenChange={setTesting} /> : null}
    </form>
  )
}

/** Fields this form shows, for errors beside them rather than in a toast. */
const FIELDS = [
  'name',
  'from',
  'reply_to',
  'subject',
  'html',
  'text',
  'template_id',
  'list_ids',
  'segment_id',
  'exclude_list_ids',
  'exclude_segment_ids',
  'send_rate_per_minute',
  'timezone',
  'send_window',
  'version_mode',
  'split_test',
  'pool_id',
  'tags',
  'max_bounce_rate',
  'max_complaint_rate',
] as const

/** /broadcasts/new and /broadcasts/:id/edit. */
export function BroadcastEditor() {
  const params = useParams<{ id?: string }>()
  const id = params.id === undefined ? null : Number(params.id)
  const q = useQuery({
    queryKey: ['broadcasts', id],
    queryFn: () => api<Broadcast>('GET', `/api/v2/broadcasts/${id}`),
    enabled: id !== null && Number.isInteger(id) && id > 0,
  })
  const back = <BackLink>All broadcasts</BackLink>
  if (id !== null) {
    const state = detailStates(q, {
      back,
      invalid: !Number.isInteger(id) || id <= 0,
      notFound: { title: 'No such broadcast', description: 'It may have been deleted.' },
      loadingLabel: 'Loading the broadcast',
    })
    if (state) return state
  }
  return (
    <div className="grid gap-4">
      {back}
      {/* A fresh form per record (and once more after it loads), never one left from another. */}
      <EditorForm key={id ?? 'new'} broadcast={id === null ? null : (q.data ?? null)} />
    </div>
  )
}
