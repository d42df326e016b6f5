/**
 * Templates (issue 14 page 8): the list of templates and the spin tags they use
 * (/api/v2/templates, /api/v2/spin-tags), and the editor of one template at /templates/:id
 * (pages/templates/editor.tsx).
 */
import { useMutation, useQueryClient } from '@tanstack/react-query'
import { FileTextIcon, PencilIcon, PlusIcon, ShuffleIcon, Trash2Icon } from 'lucide-react'
import { useState } from 'react'
import { toast } from 'sonner'
import { Link, Route, Switch, useLocation } from 'wouter'
import { FormDialog } from '../components/form-dialog'
import { ConfirmDialog } from '../components/confirm-dialog'
import { DataTable, type Column } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { Tabs, TabsContent, TabsList, TabsTrigger } from '../components/ui/tabs'
import { Textarea } from '../components/ui/textarea'
import { ApiError, api, errorMessage, fieldError } from '../lib/api'
import { can, useSession } from '../lib/session'
import { reportError } from '../lib/form-errors'
import { useUrlQuery } from '../lib/url-query'
import { formatDateTime, timeAgo } from '../lib/utils'
import { TemplateEditor } from './templates/editor'

export interface TemplateSummary {
  id: number
  name: string
  description: string
  active_version: number
  active_version_id: number
  versions_count: number
  subject: string
  created_at: string
  updated_at: string
}

interface SpinTag {
  id: number
  name: string
  alternatives: string[]
  created_at: string
  updated_at: string
}

function NewTemplateDialog({ open, onOpenChange }: { open: boolean; onOpenChange: (o: boolean) => void }) {
  const [, navigate] = useLocation()
  const qc = useQueryClient()
  const [name, setName] = useState('')
  const [subject, setSubject] = useState('')
  const create = useMutation({
    mutationFn: () =>
      api<{ id: number }>('POST', '/api/v2/templates', {
        name,
        subject,
        html: '<p>Hello {{first_name}},</p>\n\n<p>…</p>',
        text: 'Hello {{first_name}},\n\n…',
      }),
    onSuccess: (t) => {
      qc.invalidateQueries({ queryKey: ['templates'] })
      onOpenChange(false)
      toast.success('Template created')
      navigate(`/${t.id}`)
    },
    onError: (e) => reportError(e, ['name', 'subject']),
  })
  return (
    <FormDialog
      open={open}
      onOpenChange={onOpenChange}
      title="New template"
      description="Start with a name and a subject; you write the content in the editor, with a live preview."
      onSubmit={() => create.mutate()}
      submitLabel="Create and edit"
      submitDisabled={create.isPending}
    >
      <FormField label="Name" error={fieldError(create.error, 'name')}>
        <Input value={name} onChange={(e) => setName(e.target.value)} placeholder="Welcome email" required autoFocus />
      </FormField>
      <FormField label="Subject" hint="Handlebars: {{first_name}} is replaced for each recipient." error={fieldError(create.error, 'subject')}>
        <Input value={subject} onChange={(e) => setSubject(e.target.value)} placeholder="Welcome, {{first_name}}!" required />
      </FormField>
    </FormDialog>
  )
}

function TemplateList() {
  const [, navigate] = useLocation()
  const { data: session } = useSession()
  const [creating, setCreating] = useState(false)
  const mayCreate = can(session?.admin, 'templates.create')
  const columns: Column<TemplateSummary>[] = [
    {
      id: 'name',
      header: 'Name',
      cell: (t) => (
        <div className="grid min-w-40 gap-0.5">
          <Link
            href={`/${t.id}`}
            className="font-medium hover:underline focus-visible:underline focus-visible:outline-none"
            onClick={(e) => e.stopPropagation()}
          >
            {t.name}
          </Link>
          {t.description ? <span className="max-w-72 truncate text-xs text-muted-foreground">{t.description}</span> : null}
        </div>
      ),
    },
    { id: 'subject', header: 'Subject', className: 'max-w-[24rem]', cell: (t) => <span className="block truncate font-mono text-xs">{t.subject}</span> },
    {
      id: 'version',
      header: 'Version',
      cell: (t) => (
        <span className="inline-flex items-center gap-2">
          <Badge variant="secondary">v{t.active_version}</Badge>
          <span className="text-xs text-muted-foreground">of {t.versions_count}</span>
        </span>
      ),
    },
    {
      id: 'updated',
      header: 'Updated',
      cell: (t) => (
        <time dateTime={t.updated_at} title={formatDateTime(t.updated_at)} className="text-muted-foreground">
          {timeAgo(t.updated_at)}
        </time>
      ),
    },
  ]
  return (
    <>
      <DataTable<TemplateSummary>
        path="/api/v2/templates"
        queryKey="templates"
        columns={columns}
        rowKey={(t) => t.id}
        caption="Templates"
        onRowClick={(t) => navigate(`/${t.id}`)}
        empty={{
          icon: FileTextIcon,
          title: 'No templates yet',
          description: 'A template is a subject, HTML and text with {{variables}}, versioned each time you save.',
          action: mayCreate ? (
            <Button onClick={() => setCreating(true)}>
              <PlusIcon /> New template
            </Button>
          ) : undefined,
        }}
      />
      <NewTemplateDialog open={creating} onOpenChange={setCreating} />
    </>
  )
}

/** Alternatives as the textarea shows them: one a line. */
const linesOf = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)

/** The first error of `alternatives` or of any `alternatives.N`. */
function alternativesError(error: unknown): string | undefined {
  if (!(error instanceof ApiError) || !error.details) return undefined
  const entries = Object.entries(error.details).filter(([k]) => k === 'alternatives' || k.startsWith('alternatives.'))
  return entries.length
    ? entries.map(([k, v]) => `${k === 'alternatives' ? '' : `Line ${Number(k.split('.')[1]) + 1}: `}${Array.isArray(v) ? v.join(' ') : String(v)}`).join(' ')
    : undefined
}

function SpinTagDialog({ tag, open, onOpenChange }: { tag: SpinTag | null; open: boolean; onOpenChange: (o: boolean) => void }) {
  const qc = useQueryClient()
  const [name, setName] = useState(tag?.name ?? '')
  const [text, setText] = useState(tag?.alternatives.join('\n') ?? '')
  const save = useMutation({
    mutationFn: () =>
      tag
        ? api('PATCH', `/api/v2/spin-tags/${tag.id}`, { alternatives: linesOf(text) })
        : api('POST', '/api/v2/spin-tags', { name: name.trim(), alternatives: linesOf(text) }),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ['spin-tags'] })
      onOpenChange(false)
      toast.success(tag ? 'Spin tag saved' : 'Spin tag created')
    },
    onError: (e) => reportError(e, ['name', 'alternatives']),
  })
  return (
    <FormDialog
      open={open}
      onOpenChange={onOpenChange}
      title={tag ? `Edit “${tag.name}”` : 'New spin tag'}
      description={
        <>
          Each recipient gets one of the alternatives, always the same one for the same address. Use it in a template as{' '}
          <code className="font-mono">{`{{spin "${name || 'name'}"}}`}</code>.
        </>
      }
      onSubmit={() => save.mutate()}
      submitLabel={tag ? 'Save' : 'Create'}
      submitDisabled={save.isPending}
    >
      <FormField label="Name" hint="Lower-case letters, digits and _; it cannot change later." error={fieldError(save.error, 'name')}>
        <Input value={name} onChange={(e) => setName(e.target.value)} disabled={!!tag} placeholder="greeting" required={!tag} autoFocus={!tag} />
      </FormField>
      <FormField label="Alternatives" hint="One a line." error={alternativesError(save.error)}>
        <Textarea value={text} onChange={(e) => setText(e.target.value)} rows={6} placeholder={'Hi\nHello\nHey there'} autoFocus={!!tag} />
      </FormField>
    </FormDialog>
  )
}

function SpinTagList({ creating, setCreating }: { creating: boolean; setCreating: (o: boolean) => void }) {
  const qc = useQueryClient()
  const { data: session } = useSession()
  const [editing, setEditing] = useState<SpinTag | null>(null)
  const [deleting, setDeleting] = useState<SpinTag | null>(null)
  const remove = useMutation({
    mutationFn: (t: SpinTag) => api('DELETE', `/api/v2/spin-tags/${t.id}`),
    onSuccess: (_, t) => {
      qc.invalidateQueries({ queryKey: ['spin-tags'] })
      toast.success(`Spin tag “${t.name}” deleted`)
    },
    onError: (e) => toast.error(errorMessage(e)),
  })
  const mayUpdate = can(session?.admin, 'spin_tags.update')
  const mayDelete = can(session?.admin, 'spin_tags.delete')
  const columns: Column<SpinTag>[] = [
    { id: 'name', header: 'Name', cell: (t) => <code className="font-mono text-sm font-medium">{t.name}</code> },
    {
      id: 'alternatives',
      header: 'Alternatives',
      className: 'whitespace-normal',
      cell: (t) => (
        <span className="flex max-w-2xl flex-wrap gap-1">
          {t.alternatives.slice(0, 6).map((a, i) => (
            <Badge key={i} variant="outline" className="max-w-60 truncate text-foreground">
              {a}
            </Badge>
          ))}
          {t.alternatives.length > 6 ? <span className="text-xs text-muted-foreground">+{t.alternatives.length - 6} more</span> : null}
        </span>
      ),
    },
    {
      id: 'actions',
      header: <span className="sr-only">Actions</span>,
      className: 'w-0 text-right',
      cell: (t) => (
        <span className="inline-flex gap-1">
          {mayUpdate ? (
            <Button variant="ghost" size="icon" aria-label={`Edit ${t.name}`} onClick={() => setEditing(t)}>
              <PencilIcon />
            </Button>
          ) : null}
          {mayDelete ? (
            <Button variant="ghost" size="icon" aria-label={`Delete ${t.name}`} onClick={() => setDeleting(t)}>
              <Trash2Icon />
            </Button>
          ) : null}
        </span>
      ),
    },
  ]
  return (
    <>
      <DataTable<SpinTag>
        path="/api/v2/spin-tags"
        queryKey="spin-tags"
        columns={columns}
        rowKey={(t) => t.id}
        caption="Spin tags"
        empty={{
          icon: ShuffleIcon,
          title: 'No spin tags yet',
          description: 'A spin tag varies a word or a sentence between recipients, such as the greeting.',
          action: can(session?.admin, 'spin_tags.create') ? (
            <Button onClick={() => setCreating(true)}>
              <PlusIcon /> New spin tag
            </Button>
          ) : undefined,
        }}
      />
      {creating ? <SpinTagDialog tag={null} open onOpenChange={setCreating} /> : null}
      {editing ? <SpinTagDialog key={editing.id} tag={editing} open onOpenChange={(o) => !o && setEditing(null)} /> : null}
      <ConfirmDialog
        open={!!deleting}
        onOpenChange={(o) => !o && setDeleting(null)}
        title={<>Delete the spin tag “{deleting?.name}”?</>}
        description="Templates that use it render it as empty text and report it as missing. Messages already queued are not changed."
        onConfirm={() => deleting && remove.mutate(deleting)}
      />
    </>
  )
}

function TemplatesIndex() {
  const [params, setParams] = useUrlQuery()
  const { data: session } = useSession()
  const tab = params.get('tab') === 'spin-tags' ? 'spin-tags' : 'templates'
  const [creating, setCreating] = useState(false)
  const [creatingTag, setCreatingTag] = useState(false)
  const mayReadTags = can(session?.admin, 'spin_tags.read')
  return (
    <div className="grid gap-6">
      <PageHeader
        title="Templates"
        description="Message templates with versions and previews, and the spin tags that vary them."
        actions={
          tab === 'templates' ? (
            can(session?.admin, 'templates.create') ? (
              <Button onClick={() => setCreating(true)}>
                <PlusIcon /> New template
              </Button>
            ) : null
          ) : can(session?.admin, 'spin_tags.create') ? (
            <Button onClick={() => setCreatingTag(true)}>
              <PlusIcon /> New spin tag
            </Button>
          ) : null
        }
      />
      {mayReadTags ? (
        // Each tab has its panel (the tabs pattern: a tab's aria-controls must name an element).
        <Tabs value={tab} onValueChange={(v) => setParams({ tab: v === 'templates' ? null : v, page: null })}>
          <TabsList aria-label="Templates or spin tags">
            <TabsTrigger value="templates">Templates</TabsTrigger>
            <TabsTrigger value="spin-tags">Spin tags</TabsTrigger>
          </TabsList>
          <TabsContent value="templates" className="mt-6">
            <TemplateList />
          </TabsContent>
          <TabsContent value="spin-tags" className="mt-6">
            <SpinTagList creating={creatingTag} setCreating={setCreatingTag} />
          </TabsContent>
        </Tabs>
      ) : (
        <TemplateList />
      )}
      <NewTemplateDialog open={creating} onOpenChange={setCreating} />
    </div>
  )
}

/** The Templates page: the list at /templates, the editor at /templates/:id. */
export function TemplatesPage() {
  return (
    <Switch>
      <Route path="/" component={TemplatesIndex} />
      <Route path="/:id" component={TemplateEditor} />
    </Switch>
  )
}
