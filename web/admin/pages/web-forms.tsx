/**
 * Web forms: the list at /web-forms, the form builder at /web-forms/new and /web-forms/:id.
 * The builder edits every setting of a form with a live preview of the hosted page rendered
 * by the server (POST /api/v2/web-forms/preview with the unsaved fields, debounced) in a
 * sandboxed iframe; a saved form shows its hosted link and the embed snippet to copy.
 */
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { ArrowDownIcon, ArrowUpIcon, ExternalLinkIcon, TextCursorInputIcon, PlusIcon, SaveIcon, Trash2Icon } from 'lucide-react'
import { useEffect, useState } from 'react'
import { toast } from 'sonner'
import { Link, Route, Switch, useLocation, useParams } from 'wouter'
import { CopyButton, CopyField } from '../components/copy-field'
import { DataTable, type Column } from '../components/data-table'
import { BackLink, detailStates } from '../components/detail-page'
import { PageHeader } from '../components/page-header'
import { SelectField } from '../components/select-field'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../components/ui/card'
import { Checkbox } from '../components/ui/checkbox'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { Label } from '../components/ui/label'
import { Switch as Toggle } from '../components/ui/switch'
import { Textarea } from '../components/ui/textarea'
import { api, fieldError } from '../lib/api'
import { reportError } from '../lib/form-errors'
import { can, useSession } from '../lib/session'
import { formatDateTime } from '../lib/utils'
import { ConfirmDelete } from '../components/confirm-dialog'
import { useDebounced } from '../lib/use-debounced'
import { useCustomFieldMenu, useListMenu, useListName } from './audience/shared'

interface FormField_ {
  key: string
  label: string
  required: boolean
}

/** A web form as the API shows it (GET /api/v2/web-forms/:id). */
interface WebForm {
  id: number
  public_id: string
  name: string
  list_ids: number[]
  fields: FormField_[]
  consent_text: string
  consent_version: number
  success_message: string
  success_url: string | null
  failure_message: string
  failure_url: string | null
  double_opt_in: boolean
  allowed_origins: string[]
  confirmation_from: string | null
  confirmation_subject: string
  welcome_drip_id: number | null
  hosted_url: string
  embed_html: string
  created_at: string
  updated_at: string
}

/** The builder's state: the API's fields, with the free-text ones as typed. */
interface Draft {
  name: string
  list_ids: number[]
  fields: FormField_[]
  consent_text: string
  success_message: string
  success_url: string
  failure_message: string
  failure_url: string
  double_opt_in: boolean
  allowed_origins: string
  confirmation_from: string
  confirmation_subject: string
  welcome_drip_id: string
}

const EMPTY: Draft = {
  name: '',
  list_ids: [],
  fields: [{ key: 'first_name', label: 'First name', required: false }],
  consent_text: 'I agree to receive email from us. I can unsubscribe at any time.',
  success_message: '',
  success_url: '',
  failure_message: '',
  failure_url: '',
  double_opt_in: true,
  allowed_origins: '',
  confirmation_from: '',
  confirmation_subject: '',
  welcome_drip_id: '',
}

function draftOf(f: WebForm): Draft {
  return {
    name: f.name,
    list_ids: f.list_ids,
    fields: f.fields,
    consent_text: f.consent_text,
    success_message: f.success_message,
    success_url: f.success_url ?? '',
    failure_message: f.failure_message,
    failure_url: f.failure_url ?? '',
    double_opt_in: f.double_opt_in,
    allowed_origins: f.allowed_origins.join('\n'),
    confirmation_from: f.confirmation_from ?? '',
    confirmation_subject: f.confirmation_subject,
    welcome_drip_id: f.welcome_drip_id === null ? '' : String(f.welcome_drip_id),
  }
}

function bodyOf(d: Draft) {
  return {
    name: d.name,
    list_ids: d.list_ids,
    fields: d.fields,
    consent_text: d.consent_text,
    success_message: d.success_message || undefined,
    success_url: d.success_url.trim() || null,
    failure_message: d.failure_message || undefined,
    failure_url: d.failure_url.trim() || null,
    double_opt_in: d.double_opt_in,
    allowed_origins: d.allowed_origins
      .split(/\s+/)
      .map((o) => o.trim())
      .filter(Boolean),
    confirmation_from: d.confirmation_from.trim() || null,
    confirmation_subject: d.confirmation_subject.trim() || undefined,
    welcome_drip_id: d.welcome_drip_id.trim() ? Number(d.welcome_drip_id) : null,
  }
}

const NAME_KEYS = [
  { value: 'first_name', label: 'First name' },
  { value: 'last_name', label: 'Last name' },
]

/** The fields a form asks, in order: which, its label, required; add, move, remove. */
function FieldsEditor({ fields, onChange, error }: { fields: FormField_[]; onChange: (f: FormField_[]) => void; error?: string }) {
  const custom = useCustomFieldMenu()
  const options = [...NAME_KEYS, ...(custom.data?.data ?? []).map((c) => ({ value: c.key, label: c.name }))]
  const labelOf = (key: string) => options.find((o) => o.value === key)?.label ?? key
  const set = (i: number, patch: Partial<FormField_>) => onChange(fields.map((f, j) => (j === i ? { ...f, ...patch } : f)))
  const move = (i: number, by: number) => {
    const next = [...fields]
    const [f] = next.splice(i, 1)
    next.splice(i + by, 0, f!)
    onChange(next)
  }
  const unused = options.filter((o) => !fields.some((f) => f.key === o.value))
  return (
    <fieldset className="grid gap-3">
      <legend className="mb-2 text-sm font-medium">Fields</legend>
      <p className="text-xs text-muted-foreground">The email address is always asked, first. Custom fields get the input of their type.</p>
      {fields.map((f, i) => (
        <div key={f.key} className="grid grid-cols-[1fr_1fr_auto] items-end gap-2 rounded-md border p-3" data-field-row={f.key}>
          <FormField label={`Field ${i + 1}`}>
            <SelectField
              value={f.key}
              onValueChange={(key) => set(i, { key, label: labelOf(key) })}
              options={[{ value: f.key, label: labelOf(f.key) }, ...unused]}
            />
          </FormField>
          <FormField label={`Label of field ${i + 1}`}>
            <Input value={f.label} onChange={(e) => set(i, { label: e.target.value })} maxLength={200} />
          </FormField>
          <div className="flex items-center gap-1 pb-1">
            <Button type="button" variant="ghost" size="icon" aria-label={`Move ${f.label} up`} disabled={i === 0} onClick={() => move(i, -1)}>
              <ArrowUpIcon />
            </Button>
            <Button type="button" variant="ghost" size="icon" aria-label={`Move ${f.label} down`} disabled={i === fields.length - 1} onClick={() => move(i, 1)}>
              <ArrowDownIcon />
            </Button>
            <Button type="button" variant="ghost" size="icon" aria-label={`Remove ${f.label}`} onClick={() => onChange(fields.filter((_, j) => j !== i))}>
              <Trash2Icon />
            </Button>
          </div>
          <div className="col-span-3 flex items-center gap-2">
            <Checkbox id={`required-${f.key}`} checked={f.required} onCheckedChange={(v) => set(i, { required: v === true })} />
            <Label htmlFor={`required-${f.key}`}>Required</Label>
          </div>
        </div>
      ))}
      {error ? (
        <p role="alert" className="text-sm text-destructive">
          {error}
        </p>
      ) : null}
      {unused.length ? (
        <Button
          type="button"
          variant="outline"
          className="w-fit"
          onClick={() => onChange([...fields, { key: unused[0]!.value, label: unused[0]!.label, required: false }])}
        >
          <PlusIcon /> Add field
        </Button>
      ) : null}
    </fieldset>
  )
}

/** The lists a form subscribes to, as checkboxes. */
function ListsPicker({ value, onChange, error }: { value: number[]; onChange: (v: number[]) => void; error?: string }) {
  const lists = useListMenu()
  return (
    <fieldset className="grid gap-2">
      <legend className="mb-1 text-sm font-medium">Lists</legend>
      {(lists.data?.data ?? []).map((l) => (
        <div key={l.id} className="flex items-center gap-2">
          <Checkbox
            id={`list-${l.id}`}
            checked={value.includes(l.id)}
            onCheckedChange={(v) => onChange(v === true ? [...value, l.id] : value.filter((x) => x !== l.id))}
          />
          <Label htmlFor={`list-${l.id}`}>{l.name}</Label>
        </div>
      ))}
      {lists.data && lists.data.data.length === 0 ? <p className="text-sm text-muted-foreground">Create a list first (Audience › Lists).</p> : null}
      {error ? (
        <p role="alert" className="text-sm text-destructive">
          {error}
        </p>
      ) : null}
    </fieldset>
  )
}

/** The hosted page as the server renders it for the unsaved draft, in an empty sandbox. */
function Preview({ draft }: { draft: Draft }) {
  const input = useDebounced({ name: draft.name, fields: draft.fields, consent_text: draft.consent_text || ' ' }, 300)
  const q = useQuery({
    queryKey: ['web-forms', 'preview', input],
    queryFn: () => api<{ html: string }>('POST', '/api/v2/web-forms/preview', input),
    placeholderData: keepPreviousData,
  })
  return (
    <Card>
      <CardHeader>
        <CardTitle>Preview</CardTitle>
        <CardDescription>The hosted page as visitors will see it.</CardDescription>
      </CardHeader>
      <CardContent>
        {q.data ? (
          <iframe title="Preview of the hosted form" sandbox="" srcDoc={q.data.html} className="h-[34rem] w-full rounded-lg border bg-white" />
        ) : (
          <div className="h-[34rem] animate-pulse rounded-lg bg-muted" role="status" aria-label="Loading the preview" />
        )}
      </CardContent>
    </Card>
  )
}

/** The builder: every setting on the left, the preview (and, once saved, the links) on the right. */
function Builder({ form }: { form: WebForm | null }) {
  const qc = useQueryClient()
  const session = useSession()
  const [, navigate] = useLocation()
  const [draft, setDraft] = useState<Draft>(form ? draftOf(form) : EMPTY)
  useEffect(() => {
    if (form) setDraft(draftOf(form))
  }, [form])
  const set = (patch: Partial<Draft>) => setDraft((d) => ({ ...d, ...patch }))
  const mayWrite = can(session.data?.admin, form ? 'web_forms.update' : 'web_forms.create')
  const save = useMutation({
    mutationFn: () => (form ? api<WebForm>('PATCH', `/api/v2/web-forms/${form.id}`, bodyOf(draft)) : api<WebForm>('POST', '/api/v2/web-forms', bodyOf(draft))),
    onSuccess: async (saved) => {
      toast.success(form ? `Form “${saved.name}” saved` : `Form “${saved.name}” created`)
      await qc.invalidateQueries({ queryKey: ['web-forms'] })
      if (!form) navigate(`/${saved.id}`)
    },
    onError: (e) =>
      reportError(e, ['name', 'list_ids', 'fields', 'consent_text', 'confirmation_from', 'success_url', 'failure_url', 'allowed_origins'], fieldError),
  })
  const err = (f: string) => {
    const direct = fieldError(save.error, f)
    if (direct) return direct
    // Entry errors (fields.0.key, allowed_origins.1) shown on their group.
    const e = save.error as { details?: Record<string, string[]> } | null
    const found = Object.entries(e?.details ?? {}).filter(([k]) => k.startsWith(`${f}.`))
    return found.length ? found.map(([, v]) => v.join(' ')).join(' ') : undefined
  }
  return (
    <div className="grid gap-6">
      <BackLink>All web forms</BackLink>
      <PageHeader
        title={form ? form.name : 'New web form'}
        description={
          form
            ? `Consent wording version ${form.consent_version}. Updated ${formatDateTime(form.updated_at)}.`
            : 'A sign-up form for your site, hosted here or embedded.'
        }
        actions={
          mayWrite ? (
            <Button onClick={() => save.mutate()} disabled={save.isPending}>
              <SaveIcon /> {save.isPending ? 'Saving…' : form ? 'Save' : 'Create form'}
            </Button>
          ) : null
        }
      />
      <div className="grid gap-6 xl:grid-cols-2">
        <form
          className="grid content-start gap-5"
          onSubmit={(e) => {
            e.preventDefault()
            save.mutate()
          }}
        >
          <FormField label="Name" hint="The page's heading and the confirmation mail's wording." error={err('name')}>
            <Input value={draft.name} onChange={(e) => set({ name: e.target.value })} required maxLength={200} />
          </FormField>
          <ListsPicker value={draft.list_ids} onChange={(list_ids) => set({ list_ids })} error={err('list_ids')} />
          <FieldsEditor fields={draft.fields} onChange={(fields) => set({ fields })} error={err('fields')} />
          <FormField
            label="Consent text"
            hint="Shown beside the consent checkbox, which starts unchecked. Changing it starts a new version."
            error={err('consent_text')}
          >
            <Textarea value={draft.consent_text} onChange={(e) => set({ consent_text: e.target.value })} rows={2} maxLength={2000} />
          </FormField>
          <div className="flex items-center gap-3">
            <Toggle id="double-opt-in" checked={draft.double_opt_in} onCheckedChange={(double_opt_in) => set({ double_opt_in })} />
            <Label htmlFor="double-opt-in">Double opt-in: subscribe only after the address confirms by mail</Label>
          </div>
          {draft.double_opt_in ? (
            <div className="grid gap-4 sm:grid-cols-2">
              <FormField label="Confirmation sender" hint="Empty: the server's default_from." error={err('confirmation_from')}>
                <Input value={draft.confirmation_from} onChange={(e) => set({ confirmation_from: e.target.value })} placeholder="Acme <news@acme.com>" />
              </FormField>
              <FormField label="Confirmation subject" error={err('confirmation_subject')}>
                <Input
                  value={draft.confirmation_subject}
                  onChange={(e) => set({ confirmation_subject: e.target.value })}
                  placeholder="Confirm your subscription"
                />
              </FormField>
            </div>
          ) : null}
          <div className="grid gap-4 sm:grid-cols-2">
            <FormField label="Success message" hint="Empty: a default message." error={err('success_message')}>
              <Textarea value={draft.success_message} onChange={(e) => set({ success_message: e.target.value })} rows={2} />
            </FormField>
            <FormField label="Success URL" hint="Optional: send the visitor here instead." error={err('success_url')}>
              <Input value={draft.success_url} onChange={(e) => set({ success_url: e.target.value })} placeholder="https://" />
            </FormField>
            <FormField label="Failure message" error={err('failure_message')}>
              <Textarea value={draft.failure_message} onChange={(e) => set({ failure_message: e.target.value })} rows={2} />
            </FormField>
            <FormField label="Failure URL" hint="Optional." error={err('failure_url')}>
              <Input value={draft.failure_url} onChange={(e) => set({ failure_url: e.target.value })} placeholder="https://" />
            </FormField>
          </div>
          <FormField label="Allowed origins" hint="Sites that embed the form, one per line (https://www.example.com)." error={err('allowed_origins')}>
            <Textarea value={draft.allowed_origins} onChange={(e) => set({ allowed_origins: e.target.value })} rows={2} />
          </FormField>
          <FormField label="Welcome automation (drip id)" hint="Optional: the drip new subscribers start." error={err('welcome_drip_id')}>
            <Input value={draft.welcome_drip_id} onChange={(e) => set({ welcome_drip_id: e.target.value.replace(/\D/g, '') })} inputMode="numeric" />
          </FormField>
        </form>
        <div className="grid content-start gap-6">
          <Preview draft={draft} />
          {form ? (
            <Card>
              <CardHeader>
                <CardTitle>Publish</CardTitle>
                <CardDescription>Link to the hosted page, or paste the snippet into your site (list its origin above).</CardDescription>
              </CardHeader>
              <CardContent className="grid gap-4">
                <CopyField label="Hosted link" value={form.hosted_url} />
                <Button asChild variant="outline" size="sm" className="w-fit">
                  <a href={form.hosted_url} target="_blank" rel="noreferrer">
                    <ExternalLinkIcon /> Open the hosted page
                  </a>
                </Button>
                <div className="grid gap-1.5">
                  <div className="flex items-center justify-between">
                    <Label htmlFor="embed-snippet">Embed snippet</Label>
                    <CopyButton value={form.embed_html} label="Embed snippet" size="sm" />
                  </div>
                  <Textarea id="embed-snippet" readOnly value={form.embed_html} rows={8} className="font-mono text-xs" />
                </div>
              </CardContent>
            </Card>
          ) : null}
        </div>
      </div>
    </div>
  )
}

function BuilderPage() {
  const { id } = useParams<{ id: string }>()
  const valid = /^[1-9]\d*$/.test(id ?? '')
  const q = useQuery({ queryKey: ['web-forms', Number(id)], queryFn: () => api<WebForm>('GET', `/api/v2/web-forms/${id}`), enabled: valid })
  const states = detailStates(q, {
    back: <BackLink>All web forms</BackLink>,
    invalid: !valid,
    notFound: { title: 'No such web form', description: 'It may have been deleted.' },
    loadingLabel: 'Loading the web form',
  })
  return states ?? <Builder form={q.data!} />
}

function WebFormsIndex() {
  const session = useSession()
  const admin = session.data?.admin
  const [, navigate] = useLocation()
  const listName = useListName()
  const [deleting, setDeleting] = useState<WebForm | null>(null)
  const columns: Column<WebForm>[] = [
    {
      id: 'name',
      header: 'Form',
      cell: (f) => (
        <Link href={`/${f.id}`} className="font-medium hover:underline">
          {f.name}
        </Link>
      ),
    },
    { id: 'lists', header: 'Lists', className: 'hidden md:table-cell', cell: (f) => f.list_ids.map(listName).join(', ') },
    {
      id: 'opt-in',
      header: 'Opt-in',
      cell: (f) => <Badge variant={f.double_opt_in ? 'secondary' : 'outline'}>{f.double_opt_in ? 'Double' : 'Single'}</Badge>,
    },
    { id: 'created', header: 'Created', className: 'hidden lg:table-cell text-muted-foreground', cell: (f) => formatDateTime(f.created_at) },
    {
      id: 'actions',
      header: <span className="sr-only">Actions</span>,
      className: 'text-right',
      cell: (f) =>
        can(admin, 'web_forms.delete') ? (
          <Button variant="ghost" size="icon" aria-label={`Delete ${f.name}`} onClick={(e) => (e.stopPropagation(), setDeleting(f))}>
            <Trash2Icon />
          </Button>
        ) : null,
    },
  ]
  const newButton = can(admin, 'web_forms.create') ? (
    <Button asChild>
      <Link href="/new">
        <PlusIcon /> New web form
      </Link>
    </Button>
  ) : null
  return (
    <div className="grid gap-6">
      <PageHeader title="Web forms" description="Sign-up forms: hosted here or embedded in your site, with double opt-in." actions={newButton} />
      <DataTable
        path="/api/v2/web-forms"
        queryKey="web-forms"
        columns={columns}
        rowKey={(f) => f.id}
        caption="Web forms"
        onRowClick={(f) => navigate(`/${f.id}`)}
        empty={{ icon: TextCursorInputIcon, title: 'No web forms yet', description: 'Create a form, then link to its page or embed it.', action: newButton }}
      />
      <ConfirmDelete
        open={deleting !== null}
        onOpenChange={(o) => !o && setDeleting(null)}
        title={`Delete “${deleting?.name ?? ''}”?`}
        description={<>Its page stops working and pending confirmations expire. Contacts and their recorded consents stay.</>}
        confirmLabel="Delete form"
        action={() => api('DELETE', `/api/v2/web-forms/${deleting!.id}`)}
        invalidate={['web-forms']}
        done="Web form deleted"
      />
    </div>
  )
}

/** The Web forms page: the list at /web-forms, the builder at /web-forms/new and /web-forms/:id. */
export function WebFormsPage() {
  return (
    <Switch>
      <Route path="/" component={WebFormsIndex} />
      <Route path="/new">{() => <Builder form={null} />}</Route>
      <Route path="/:id" component={BuilderPage} />
    </Switch>
  )
}
