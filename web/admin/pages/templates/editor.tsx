/**
 * The template editor: subject, HTML, text, from and reply-to, with a live preview rendered
 * by the server (POST /api/v2/templates/:id/render with the unsaved content, debounced) in a
 * sandboxed iframe at desktop and phone widths, the variables the template uses with values
 * to try, the versions (diff, activate) and a test send (POST /api/v2/dynamicTemplate/:id).
 */
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { AlertTriangleIcon, CheckIcon, GitCompareIcon, MonitorIcon, SaveIcon, SendIcon, SmartphoneIcon, Trash2Icon, TypeIcon } from 'lucide-react'
import { useEffect, useMemo, useState } from 'react'
import { toast } from 'sonner'
import { useLocation, useParams } from 'wouter'
import { FormDialog } from '../../components/form-dialog'
import { BackLink, detailStates } from '../../components/detail-page'
import { ConfirmDialog } from '../../components/confirm-dialog'
import { PageHeader } from '../../components/page-header'
import { SelectField } from '../../components/select-field'
import { EmptyState, ErrorState, LoadingState } from '../../components/states'
import { Badge } from '../../components/ui/badge'
import { Button } from '../../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../../components/ui/card'
import { Dialog, DialogContent, DialogDescription, DialogHeader, DialogTitle } from '../../components/ui/dialog'
import { FormField } from '../../components/ui/form-field'
import { Input } from '../../components/ui/input'
import { Pagination } from '../../components/ui/pagination'
import { Tabs, TabsContent, TabsList, TabsTrigger } from '../../components/ui/tabs'
import { Textarea } from '../../components/ui/textarea'
import { reportError } from '../../lib/form-errors'
import { api, apiPage, errorMessage, fieldError } from '../../lib/api'
import { can, useSession } from '../../lib/session'
import { cn, formatDateTime, timeAgo } from '../../lib/utils'
import type { TemplateSummary } from '../templates'
import { diffLines } from './line-diff'

/** A template with its active version's content (GET /api/v2/templates/:id). */
interface TemplateView extends TemplateSummary {
  html: string | null
  text: string | null
  from: string | null
  reply_to: string | null
}

interface VersionSummary {
  id: number
  template_id: number
  version: number
  subject: string
  active: boolean
  created_at: string
}

type VersionView = VersionSummary & Pick<TemplateView, 'html' | 'text' | 'from' | 'reply_to'>

interface Rendered {
  subject: string
  html: string | null
  text: string | null
  from: string | null
  reply_to: string | null
  missing_variables: string[]
  version: number
}

/** The fields the editor changes: a template's name and description, and the content of its next version. */
const FIELDS = ['name', 'description', 'subject', 'html', 'text', 'from', 'reply_to'] as const
type Field = (typeof FIELDS)[number]
type Draft = Record<Field, string>
const CONTENT: Field[] = ['subject', 'html', 'text', 'from', 'reply_to']

const draftOf = (t: TemplateView): Draft => ({
  name: t.name,
  description: t.description,
  subject: t.subject,
  html: t.html ?? '',
  text: t.text ?? '',
  from: t.from ?? '',
  reply_to: t.reply_to ?? '',
})

/** `value`, once it has stopped changing for `ms`. */
function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value)
  useEffect(() => {
    const timer = setTimeout(() => setV(value), ms)
    return () => clearTimeout(timer)
  }, [value, ms])
  return v
}

/** The errors of a failed render or save, by field. */
function errorsOf(error: unknown): Partial<Record<string, string>> {
  const out: Partial<Record<string, string>> = {}
  for (const f of [...FIELDS, 'to']) out[f] = fieldError(error, f)
  return out
}

// ---------------------------------------------------------------------------------------
// Preview
// ---------------------------------------------------------------------------------------

function Preview({ rendered, pending, stale }: { rendered: Rendered | undefined; pending: boolean; stale: boolean }) {
  const [device, setDevice] = useState('desktop')
  return (
    <Card className="gap-3 overflow-hidden">
      <CardHeader className="flex-row flex-wrap items-center justify-between gap-2">
        <div className="grid gap-1">
          <CardTitle>Preview</CardTitle>
          <CardDescription aria-live="polite">
            {pending ? 'Rendering…' : stale ? 'Fix the error to update the preview.' : 'Updates as you type.'}
          </CardDescription>
        </div>
        <Tabs value={device} onValueChange={setDevice}>
          <TabsList aria-label="Preview as">
            <TabsTrigger value="desktop" aria-controls="template-preview">
              <MonitorIcon /> Desktop
            </TabsTrigger>
            <TabsTrigger value="mobile" aria-controls="template-preview">
              <SmartphoneIcon /> Mobile
            </TabsTrigger>
            <TabsTrigger value="text" aria-controls="template-preview">
              <TypeIcon /> Text
            </TabsTrigger>
          </TabsList>
        </Tabs>
      </CardHeader>
      {/* The one region the device tabs switch (their aria-controls), as the dashboard's period tabs do. */}
      <CardContent id="template-preview" className="grid gap-3">
        {!rendered ? (
          <LoadingState rows={4} label="Rendering the preview" />
        ) : (
          <>
            <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-1 rounded-lg border bg-muted/30 px-3 py-2 text-sm" data-testid="preview-envelope">
              <dt className="text-muted-foreground">Subject</dt>
              <dd className="font-medium break-words" data-testid="preview-subject">
                {rendered.subject}
              </dd>
              <dt className="text-muted-foreground">From</dt>
              <dd className="break-all">{rendered.from ?? <span className="text-muted-foreground">the default sender</span>}</dd>
              {rendered.reply_to ? (
                <>
                  <dt className="text-muted-foreground">Reply-To</dt>
                  <dd className="break-all">{rendered.reply_to}</dd>
                </>
              ) : null}
            </dl>
            <div className={cn('transition-opacity', (pending || stale) && 'opacity-60')}>
              {device === 'text' ? (
                rendered.text !== null ? (
                  <pre
                    className="max-h-[36rem] min-h-64 overflow-auto rounded-lg border bg-card p-4 font-mono text-xs whitespace-pre-wrap"
                    tabIndex={0}
                    aria-label="Text part"
                  >
                    {rendered.text}
                  </pre>
                ) : (
                  <EmptyState title="No text part" description="Mail clients that do not show HTML get nothing readable; add a text part." />
                )
              ) : rendered.html !== null ? (
                <div className={cn('rounded-lg border bg-muted/40', device === 'mobile' && 'flex justify-center p-4')}>
                  {/* No scripts, forms or navigation from the template's HTML: an empty sandbox. */}
                  <iframe
                    title={device === 'mobile' ? 'HTML preview at phone width' : 'HTML preview'}
                    sandbox=""
                    srcDoc={rendered.html}
                    className={cn(
                      'h-[36rem] bg-white',
                      device === 'mobile' ? 'w-[375px] max-w-full rounded-[1.25rem] border-8 border-foreground/80' : 'w-full rounded-lg',
                    )}
                  />
                </div>
              ) : (
                <EmptyState title="No HTML part" description="This template sends text only." />
              )}
            </div>
          </>
        )}
      </CardContent>
    </Card>
  )
}

function VariablesPanel({
  names,
  values,
  setValue,
  to,
  setTo,
  toError,
  spinMissing,
}: {
  names: string[]
  values: Record<string, string>
  setValue: (name: string, value: string) => void
  to: string
  setTo: (v: string) => void
  toError?: string
  spinMissing: string[]
}) {
  return (
    <Card className="gap-3">
      <CardHeader>
        <CardTitle>Variables</CardTitle>
        <CardDescription>What the template uses; try values to see them in the preview. Nothing here is saved.</CardDescription>
      </CardHeader>
      <CardContent className="grid gap-3">
        {names.length === 0 ? (
          <p className="text-sm text-muted-foreground">
            This template uses no variables. Write <code className="font-mono">{'{{first_name}}'}</code> in the subject or the content to add one.
          </p>
        ) : (
          <div className="grid gap-3 sm:grid-cols-2 lg:grid-cols-1 xl:grid-cols-2">
            {names.map((n) => (
              <FormField key={n} label={<code className="font-mono text-xs">{n}</code>}>
                <Input value={values[n] ?? ''} onChange={(e) => setValue(n, e.target.value)} placeholder="(empty)" />
              </FormField>
            ))}
          </div>
        )}
        <FormField label="Preview for recipient" hint="Spin tags choose per address: see what this one gets." error={toError}>
          <Input type="email" value={to} onChange={(e) => setTo(e.target.value)} placeholder="ada@example.org" />
        </FormField>
        {spinMissing.length ? (
          <p className="flex items-start gap-2 text-sm text-destructive" role="status">
            <AlertTriangleIcon className="mt-0.5 size-4 shrink-0" aria-hidden="true" />
            Spin tags deleted since this was saved: {spinMissing.join(', ')}.
          </p>
        ) : null}
      </CardContent>
    </Card>
  )
}

// ---------------------------------------------------------------------------------------
// Versions
// ---------------------------------------------------------------------------------------

const DIFF_PARTS: Array<{ key: 'subject' | 'from' | 'reply_to' | 'html' | 'text'; label: string }> = [
  { key: 'subject', label: 'Subject' },
  { key: 'from', label: 'From' },
  { key: 'reply_to', label: 'Reply-To' },
  { key: 'html', label: 'HTML' },
  { key: 'text', label: 'Text' },
]

function DiffView({ a, b }: { a: VersionView; b: VersionView }) {
  const parts = DIFF_PARTS.map((p) => ({ ...p, lines: diffLines(a[p.key] ?? '', b[p.key] ?? '') })).filter((p) => p.lines.some((l) => l.kind !== 'same'))
  if (!parts.length) return <p className="text-sm text-muted-foreground">These versions have the same content.</p>
  return (
    <div className="grid gap-4" data-testid="version-diff">
      {parts.map((p) => (
        <section key={p.key} className="grid gap-1.5" aria-label={`${p.label} changes`}>
          <h4 className="text-sm font-semibold">{p.label}</h4>
          <div className="max-h-80 overflow-auto rounded-lg border font-mono text-xs">
            {p.lines.map((l, i) => (
              <div
                key={i}
                className={cn(
                  'grid grid-cols-[2.5rem_2.5rem_1.25rem_1fr] px-1',
                  l.kind === 'added' && 'bg-success/12',
                  l.kind === 'removed' && 'bg-destructive/10',
                )}
              >
                <span className="pr-2 text-right text-muted-foreground select-none">{l.oldNo ?? ''}</span>
                <span className="pr-2 text-right text-muted-foreground select-none">{l.newNo ?? ''}</span>
                <span className="text-muted-foreground select-none" aria-label={l.kind === 'same' ? undefined : l.kind}>
                  {l.kind === 'added' ? '+' : l.kind === 'removed' ? '−' : ' '}
                </span>
                <span className="break-all whitespace-pre-wrap">{l.text || ' '}</span>
              </div>
            ))}
          </div>
        </section>
      ))}
    </div>
  )
}

function CompareDialog({
  templateId,
  versions,
  open,
  onOpenChange,
}: {
  templateId: number
  versions: number[]
  open: boolean
  onOpenChange: (o: boolean) => void
}) {
  const sorted = [...versions].sort((x, y) => y - x)
  const [from, setFrom] = useState(String(sorted[1] ?? sorted[0] ?? 1))
  const [to, setTo] = useState(String(sorted[0] ?? 1))
  const fetchVersion = (n: string) => api<VersionView>('GET', `/api/v2/templates/${templateId}/versions/${n}`)
  const a = useQuery({ queryKey: ['template-version', templateId, from], queryFn: () => fetchVersion(from), enabled: open })
  const b = useQuery({ queryKey: ['template-version', templateId, to], queryFn: () => fetchVersion(to), enabled: open })
  const pick = (label: string, value: string, set: (v: string) => void) => (
    <FormField label={label} className="flex-1">
      <SelectField value={value} onValueChange={set} options={sorted.map((n) => ({ value: String(n), label: `Version ${n}` }))} />
    </FormField>
  )
  return (
    <Dialog open={open} onOpenChange={onOpenChange}>
      <DialogContent className="max-h-[90vh] overflow-y-auto sm:max-w-4xl">
        <DialogHeader>
          <DialogTitle>Compare versions</DialogTitle>
          <DialogDescription>Lines removed from the first version are red, lines added in the second are green.</DialogDescription>
        </DialogHeader>
        <div className="flex flex-col gap-3 sm:flex-row">
          {pick('From', from, setFrom)}
          {pick('To', to, setTo)}
        </div>
        {a.isError || b.isError ? (
          <ErrorState error={a.error ?? b.error} />
        ) : !a.data || !b.data ? (
          <LoadingState rows={4} label="Loading the versions" />
        ) : (
          <DiffView a={a.data} b={b.data} />
        )}
      </DialogContent>
    </Dialog>
  )
}

const VERSIONS_PER_PAGE = 10

function VersionsCard({ template, mayUpdate }: { template: TemplateView; mayUpdate: boolean }) {
  const qc = useQueryClient()
  const [page, setPage] = useState(1)
  const [comparing, setComparing] = useState(false)
  const q = useQuery({
    queryKey: ['template-versions', template.id, page, template.versions_count],
    queryFn: () => apiPage<VersionSummary>(`/api/v2/templates/${template.id}/versions`, { page, per_page: VERSIONS_PER_PAGE }),
    placeholderData: keepPreviousData,
  })
  const activate = useMutation({
    mutationFn: (n: number) => api<TemplateView>('POST', `/api/v2/templates/${template.id}/versions/${n}/activate`),
    onSuccess: (t) => {
      qc.setQueryData(['template', template.id], t)
      qc.invalidateQueries({ queryKey: ['template-versions', template.id] })
      qc.invalidateQueries({ queryKey: ['templates'] })
      toast.success(`Version ${t.active_version} is now active: sends use it.`)
    },
    onError: (e) => toast.error(errorMessage(e)),
  })
  const allNumbers = Array.from({ length: template.versions_count }, (_, i) => i + 1)
  return (
    <Card className="gap-3">
      <CardHeader className="flex-row flex-wrap items-center justify-between gap-2">
        <div className="grid gap-1">
          <CardTitle>Versions</CardTitle>
          <CardDescription>Each save is a new version; sends use the active one. Activate an older one to roll back.</CardDescription>
        </div>
        <Button variant="outline" size="sm" onClick={() => setComparing(true)} disabled={template.versions_count < 2}>
          <GitCompareIcon /> Compare versions
        </Button>
      </CardHeader>
      <CardContent className="grid gap-3">
        {q.isPending ? (
          <LoadingState rows={3} label="Loading the versions" />
        ) : q.isError ? (
          <ErrorState error={q.error} onRetry={() => q.refetch()} />
        ) : (
          <>
            <ol className="divide-y rounded-lg border" aria-label="Versions">
              {q.data.data.map((v) => (
                <li key={v.id} className="flex flex-wrap items-center gap-x-3 gap-y-1 px-3 py-2.5 text-sm">
                  <Badge variant={v.active ? 'success' : 'secondary'}>v{v.version}</Badge>
                  <span className="min-w-0 flex-1 truncate font-mono text-xs" title={v.subject}>
                    {v.subject}
                  </span>
                  <time dateTime={v.created_at} title={formatDateTime(v.created_at)} className="text-xs text-muted-foreground">
                    {timeAgo(v.created_at)}
                  </time>
                  {v.active ? (
                    <span className="inline-flex w-24 items-center justify-end gap-1 text-xs font-medium text-success">
                      <CheckIcon className="size-3.5" aria-hidden="true" /> Active
                    </span>
                  ) : mayUpdate ? (
                    <Button
                      variant="outline"
                      size="sm"
                      className="w-24"
                      disabled={activate.isPending}
                      onClick={() => activate.mutate(v.version)}
                      aria-label={`Activate version ${v.version}`}
                    >
                      Activate
                    </Button>
                  ) : (
                    <span className="w-24" />
                  )}
                </li>
              ))}
            </ol>
            {q.data.meta.last_page > 1 ? (
              <Pagination
                page={q.data.meta.current_page}
                perPage={q.data.meta.per_page}
                total={q.data.meta.total}
                lastPage={q.data.meta.last_page}
                onPage={setPage}
              />
            ) : null}
          </>
        )}
      </CardContent>
      {comparing ? <CompareDialog templateId={template.id} versions={allNumbers} open onOpenChange={setComparing} /> : null}
    </Card>
  )
}

// ---------------------------------------------------------------------------------------
// Test send
// ---------------------------------------------------------------------------------------

function TestSendDialog({
  template,
  variables,
  dirty,
  open,
  onOpenChange,
}: {
  template: TemplateView
  variables: Record<string, string>
  dirty: boolean
  open: boolean
  onOpenChange: (o: boolean) => void
}) {
  const [to, setTo] = useState('')
  const send = useMutation({
    mutationFn: () => api<{ id: string }>('POST', `/api/v2/dynamicTemplate/${template.id}`, { to: to.trim(), variables }),
    onSuccess: (r) => {
      onOpenChange(false)
      toast.success(`Test queued for ${to.trim()}`, {
        action: { label: 'Follow it', onClick: () => window.location.assign(`/admin/messages/${encodeURIComponent(r.id)}`) },
      })
    },
    onError: (e) => {
      reportError(e, ['to', 'from'], fieldError)
    },
  })
  const fromError = fieldError(send.error, 'from')
  return (
    <FormDialog
      open={open}
      onOpenChange={onOpenChange}
      title="Send a test"
      description={<>Sends version {template.active_version} (the active one) with the variables you tried, as a real message that shows up under Messages.</>}
      onSubmit={() => send.mutate()}
      submitLabel={
        <>
          <SendIcon /> Send test
        </>
      }
      submitDisabled={send.isPending}
    >
      {dirty ? (
        <p className="flex items-start gap-2 rounded-md border border-warning/40 bg-warning/10 px-3 py-2 text-sm" role="note">
          <AlertTriangleIcon className="mt-0.5 size-4 shrink-0" aria-hidden="true" />
          You have unsaved changes; the test uses the saved version. Save first to test them.
        </p>
      ) : null}
      <FormField label="Send to" error={fieldError(send.error, 'to')}>
        <Input type="email" value={to} onChange={(e) => setTo(e.target.value)} placeholder="you@example.com" required autoFocus />
      </FormField>
      {fromError ? (
        <p className="text-sm text-destructive" role="alert">
          Sender: {fromError}
        </p>
      ) : null}
    </FormDialog>
  )
}

// ---------------------------------------------------------------------------------------
// The editor
// ---------------------------------------------------------------------------------------

function Editor({ template }: { template: TemplateView }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const { data: session } = useSession()
  const admin = session?.admin
  const mayUpdate = can(admin, 'templates.update')
  // Compared by value: a refetch of the same template must not wipe what is being typed.
  const savedKey = JSON.stringify(draftOf(template))
  const saved = useMemo(() => JSON.parse(savedKey) as Draft, [savedKey])
  const [draft, setDraft] = useState<Draft>(saved)
  const [values, setValues] = useState<Record<string, string>>({})
  const [to, setTo] = useState('')
  const [testing, setTesting] = useState(false)
  const [deleting, setDeleting] = useState(false)
  const [bodyTab, setBodyTab] = useState('html')
  // A new active version (saved, or activated) replaces what is in the fields.
  useEffect(() => setDraft(saved), [saved])
  const dirty = FIELDS.some((f) => draft[f] !== saved[f])
  const set = (f: Field) => (e: { target: { value: string } }) => setDraft((d) => ({ ...d, [f]: e.target.value }))

  const given = useMemo(() => Object.fromEntries(Object.entries(values).filter(([, v]) => v !== '')), [values])
  const input = useDebounced({ content: Object.fromEntries(CONTENT.map((f) => [f, draft[f]])), variables: given, to: to.trim() }, 350)
  const render = useQuery({
    queryKey: ['template-render', template.id, template.active_version_id, input],
    queryFn: () =>
      api<Rendered>('POST', `/api/v2/templates/${template.id}/render`, {
        ...input.content,
        variables: input.variables,
        ...(input.to && /@/.test(input.to) ? { to: input.to } : {}),
      }),
    placeholderData: keepPreviousData,
    retry: false,
    staleTime: Infinity,
  })
  const renderErrors = render.isError ? errorsOf(render.error) : {}
  // The names the panel lists: what the last render found missing, and what has a value.
  const [known, setKnown] = useState<string[]>([])
  useEffect(() => {
    if (!render.data) return
    const missing = render.data.missing_variables.filter((m) => !m.startsWith('spin:'))
    setKnown((k) => {
      const keep = k.filter((n) => missing.includes(n) || given[n] !== undefined)
      const next = [...keep, ...missing.filter((m) => !keep.includes(m))]
      return next.length === k.length && next.every((n, i) => n === k[i]) ? k : next
    })
  }, [render.data, given])
  const spinMissing = (render.data?.missing_variables ?? []).filter((m) => m.startsWith('spin:')).map((m) => m.slice(5))

  const save = useMutation({
    mutationFn: () => {
      const body: Record<string, string | null> = {}
      for (const f of FIELDS) if (draft[f] !== saved[f]) body[f] = draft[f]
      return api<TemplateView>('PATCH', `/api/v2/templates/${template.id}`, body)
    },
    onSuccess: (t) => {
      qc.setQueryData(['template', template.id], t)
      qc.invalidateQueries({ queryKey: ['templates'] })
      qc.invalidateQueries({ queryKey: ['template-versions', template.id] })
      toast.success(t.active_version !== template.active_version ? `Saved as version ${t.active_version}` : 'Saved')
    },
    onError: (e) => {
      reportError(e, FIELDS, fieldError)
    },
  })
  const saveErrors = save.isError ? errorsOf(save.error) : {}
  const errorFor = (f: Field) => saveErrors[f] ?? renderErrors[f]
  // The HTML and the text tab: the same monospace source box.
  const sourceField = (label: string, f: 'html' | 'text') => (
    <FormField label={label} error={errorFor(f)}>
      <Textarea value={draft[f]} onChange={set(f)} readOnly={!mayUpdate} rows={20} spellCheck={false} className="font-mono text-xs leading-relaxed" />
    </FormField>
  )

  const remove = useMutation({
    mutationFn: () => api('DELETE', `/api/v2/templates/${template.id}`),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ['templates'] })
      toast.success(`Template “${template.name}” deleted`)
      navigate('/')
    },
    onError: (e) => toast.error(errorMessage(e)),
  })

  // Ctrl/Cmd+S saves, as in every editor.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 's') {
        e.preventDefault()
        if (dirty && mayUpdate && !save.isPending) save.mutate()
      }
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [dirty, mayUpdate, save])

  return (
    <div className="grid gap-6">
      <BackLink>All templates</BackLink>
      <PageHeader
        title={template.name}
        description={
          <span className="flex flex-wrap items-center gap-2">
            <Badge variant="success">v{template.active_version} active</Badge>
            <span>
              {template.versions_count} version{template.versions_count === 1 ? '' : 's'} · updated {timeAgo(template.updated_at)}
            </span>
            {dirty ? <Badge variant="warning">Unsaved changes</Badge> : null}
          </span>
        }
        actions={
          <>
            {can(admin, 'templates.delete') ? (
              <Button variant="ghost" onClick={() => setDeleting(true)}>
                <Trash2Icon /> Delete
              </Button>
            ) : null}
            {can(admin, 'transactional.send') ? (
              <Button variant="outline" onClick={() => setTesting(true)}>
                <SendIcon /> Send a test
              </Button>
            ) : null}
            {mayUpdate ? (
              <>
                {dirty ? (
                  <Button variant="outline" onClick={() => setDraft(saved)}>
                    Discard
                  </Button>
                ) : null}
                <Button onClick={() => save.mutate()} disabled={!dirty || save.isPending} aria-keyshortcuts="Control+S">
                  <SaveIcon /> {save.isPending ? 'Saving…' : 'Save'}
                </Button>
              </>
            ) : null}
          </>
        }
      />
      <div className="grid gap-6 lg:grid-cols-2">
        <div className="grid min-w-0 content-start gap-6">
          <Card className="gap-4">
            <CardHeader>
              <CardTitle>Message</CardTitle>
              <CardDescription>
                Handlebars: {'{{name}}'} inserts a variable, {'{{#if vip}}…{{/if}}'} shows a part only when it is set.
              </CardDescription>
            </CardHeader>
            <CardContent className="grid gap-4">
              <div className="grid gap-4 sm:grid-cols-2">
                <FormField label="Name" error={errorFor('name')}>
                  <Input value={draft.name} onChange={set('name')} readOnly={!mayUpdate} />
                </FormField>
                <FormField label="Description" error={errorFor('description')}>
                  <Input value={draft.description} onChange={set('description')} readOnly={!mayUpdate} placeholder="What it is for" />
                </FormField>
              </div>
              <FormField label="Subject" error={errorFor('subject')}>
                <Input value={draft.subject} onChange={set('subject')} readOnly={!mayUpdate} className="font-mono" />
              </FormField>
              <div className="grid gap-4 sm:grid-cols-2">
                <FormField label="From" hint="Used when a send names no sender." error={errorFor('from')} className="content-start">
                  <Input value={draft.from} onChange={set('from')} readOnly={!mayUpdate} placeholder="Acme <hello@acme.com>" />
                </FormField>
                <FormField label="Reply-To" error={errorFor('reply_to')} className="content-start">
                  <Input value={draft.reply_to} onChange={set('reply_to')} readOnly={!mayUpdate} placeholder="support@acme.com" />
                </FormField>
              </div>
              <Tabs value={bodyTab} onValueChange={setBodyTab} className="grid gap-2">
                <TabsList aria-label="Content part">
                  <TabsTrigger value="html">
                    HTML{errorFor('html') ? <AlertTriangleIcon className="size-3.5 text-destructive" aria-label="has an error" /> : null}
                  </TabsTrigger>
                  <TabsTrigger value="text">
                    Text{errorFor('text') ? <AlertTriangleIcon className="size-3.5 text-destructive" aria-label="has an error" /> : null}
                  </TabsTrigger>
                </TabsList>
                <TabsContent value="html" forceMount hidden={bodyTab !== 'html'}>
                  {sourceField('HTML source', 'html')}
                </TabsContent>
                <TabsContent value="text" forceMount hidden={bodyTab !== 'text'}>
                  {sourceField('Plain-text version', 'text')}
                </TabsContent>
              </Tabs>
            </CardContent>
          </Card>
        </div>
        <div className="grid min-w-0 content-start gap-6">
          <Preview rendered={render.data} pending={render.isFetching} stale={render.isError} />
          <VariablesPanel
            names={known}
            values={values}
            setValue={(n, v) => setValues((x) => ({ ...x, [n]: v }))}
            to={to}
            setTo={setTo}
            toError={renderErrors.to}
            spinMissing={spinMissing}
          />
        </div>
      </div>
      <VersionsCard template={template} mayUpdate={mayUpdate} />
      {testing ? <TestSendDialog template={template} variables={given} dirty={dirty} open onOpenChange={setTesting} /> : null}
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={<>Delete “{template.name}”?</>}
        description={
          <>
            The template and its {template.versions_count} version{template.versions_count === 1 ? '' : 's'} are deleted; sends that name it fail from now on.
            Messages already queued are not changed.
          </>
        }
        confirmLabel="Delete template"
        onConfirm={() => remove.mutate()}
      />
    </div>
  )
}

/** /templates/:id: loads the template, then the editor. */
export function TemplateEditor() {
  const { id } = useParams<{ id: string }>()
  const tid = Number(id)
  const q = useQuery({
    queryKey: ['template', tid],
    queryFn: () => api<TemplateView>('GET', `/api/v2/templates/${tid}`),
    enabled: Number.isInteger(tid) && tid > 0,
  })
  const states = detailStates(q, {
    back: <BackLink>All templates</BackLink>,
    invalid: !Number.isInteger(tid) || tid <= 0,
    notFound: { title: 'There is no such template', description: 'It may have been deleted.' },
    loadingLabel: 'Loading the template',
    rows: 10,
  })
  if (states || !q.data) return states
  return <Editor key={q.data.id} template={q.data} />
}
