import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { ArrowLeftIcon, FilterIcon, LoaderIcon, PencilIcon, PlusIcon, Trash2Icon, UsersIcon } from 'lucide-react'
import { useState } from 'react'
import { toast } from 'sonner'
import { Link, Route, Switch, useLocation, useParams } from 'wouter'
import { actionsColumn, RowActions } from '../../components/row-actions'
import { DataTable, type Column } from '../../components/data-table'
import { PageHeader } from '../../components/page-header'
import { ErrorState, LoadingState } from '../../components/states'
import { Button } from '../../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../../components/ui/card'
import { FormField } from '../../components/ui/form-field'
import { Input } from '../../components/ui/input'
import { Badge } from '../../components/ui/badge'
import { Switch as Toggle } from '../../components/ui/switch'
import { ApiError, api, errorMessage, fieldError } from '../../lib/api'
import { can, useSession } from '../../lib/session'
import { formatDateTime, formatNumber } from '../../lib/utils'
import { countConditions, emptyGroup, fromRules, GroupEditor, toRules, type Group, type SegmentField } from './rule-builder'
import { ConfirmDelete } from '../../components/confirm-dialog'
import { useDebounced } from '../../lib/use-debounced'
import { StatusBadge, useListMenu, useListName, type Contact } from './shared'

interface Segment {
  id: number
  name: string
  description: string
  rules: unknown
  indexed: boolean
  created_at: string
  updated_at: string
}

function useSegmentFields() {
  return useQuery({ queryKey: ['segment-fields'], queryFn: () => api<SegmentField[]>('GET', '/api/v2/segments/fields'), staleTime: 30_000 })
}

/** The rule errors of a 422 (`rules...` paths), for the builder to show beside each condition. */
function ruleErrors(error: unknown): Record<string, string[]> {
  if (!(error instanceof ApiError) || error.status !== 422 || !error.details) return {}
  return Object.fromEntries(
    Object.entries(error.details)
      .filter(([k]) => k === 'rules' || k.startsWith('rules.'))
      .map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : [String(v)]]),
  )
}

/** The live count: the rules, debounced, sent to POST /api/v2/segments/preview. */
function useLiveCount({ rules, empty }: { rules: unknown; empty: boolean }) {
  const body = useDebounced(JSON.stringify(rules), 400)
  const q = useQuery({
    queryKey: ['segment-preview', body],
    queryFn: () => api<{ count: number }>('POST', '/api/v2/segments/preview', { rules: JSON.parse(body) }),
    enabled: !empty,
    placeholderData: keepPreviousData,
    retry: false,
    staleTime: 5_000,
  })
  const invalid = q.error instanceof ApiError && q.error.status === 422
  return {
    errors: ruleErrors(q.error),
    view: (
      <Card className="gap-3">
        <CardHeader>
          <CardTitle className="flex items-center gap-2 text-sm font-medium text-muted-foreground">
            <UsersIcon className="size-4" aria-hidden="true" /> Matching contacts now
            {q.isFetching ? <LoaderIcon className="size-3.5 animate-spin" aria-label="Counting" /> : null}
          </CardTitle>
        </CardHeader>
        <CardContent className="grid gap-1">
          <output data-testid="live-count" aria-live="polite" className="text-4xl font-semibold tracking-tight tabular-nums">
            {empty || invalid || q.isError || !q.data ? '—' : formatNumber(q.data.count)}
          </output>
          <p className="text-xs text-muted-foreground">
            {empty
              ? 'Add a condition to count.'
              : invalid
                ? 'Fix the highlighted rules to count.'
                : q.isError
                  ? errorMessage(q.error)
                  : 'Counted from the contacts as they are now; a segment never goes stale.'}
          </p>
        </CardContent>
      </Card>
    ),
  }
}

function Members({ id }: { id: number }) {
  const listName = useListName()
  const columns: Column<Contact>[] = [
    {
      id: 'email',
      header: 'Email',
      cell: (c) => (
        <Link href={`~/admin/audience/contacts?contact=${c.id}`} className="font-medium hover:underline">
          {c.email}
        </Link>
      ),
    },
    { id: 'list', header: 'List', className: 'hidden sm:table-cell', cell: (c) => listName(c.list_id) },
    { id: 'status', header: 'Status', cell: (c) => <StatusBadge status={c.status} /> },
    { id: 'added', header: 'Added', className: 'hidden md:table-cell text-muted-foreground', cell: (c) => formatDateTime(c.created_at) },
  ]
  return (
    <section className="grid gap-3" aria-labelledby="segment-members">
      <h2 id="segment-members" className="text-lg font-semibold">
        Members
      </h2>
      <DataTable
        path={`/api/v2/segments/${id}/contacts`}
        queryKey={`segment-members-${id}`}
        columns={columns}
        rowKey={(c) => c.id}
        caption="Segment members"
        empty={{ icon: UsersIcon, title: 'Nobody matches these rules now' }}
      />
    </section>
  )
}

/** Name, description, the rule builder and the live count; saves with POST or PATCH. */
function SegmentEditor({ segment }: { segment: Segment | null }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const session = useSession()
  const fields = useSegmentFields()
  const lists = useListMenu()
  const [name, setName] = useState(segment?.name ?? '')
  const [description, setDescription] = useState(segment?.description ?? '')
  const [root, setRoot] = useState<Group>(() => (segment ? fromRules(segment.rules) : emptyGroup()))
  const [indexed, setIndexed] = useState(segment?.indexed ?? false)
  const editable = can(session.data?.admin, segment ? 'segments.update' : 'segments.create')
  const rules = toRules(root)
  const live = useLiveCount({ rules, empty: countConditions(root) === 0 })
  const save = useMutation({
    mutationFn: () =>
      segment
        ? api<Segment>('PATCH', `/api/v2/segments/${segment.id}`, { name, description, rules, indexed })
        : api<Segment>('POST', '/api/v2/segments', { name, description, rules, indexed }),
    onSuccess: async (saved) => {
      toast.success(`Segment “${saved.name}” saved`)
      qc.setQueryData(['segment', saved.id], saved)
      await qc.invalidateQueries({ queryKey: ['segments'] })
      await qc.invalidateQueries({ queryKey: [`segment-members-${saved.id}`] })
      if (!segment) navigate(`/${saved.id}`, { replace: true })
    },
    onError: (e) => {
      const shown = ['name', 'description', 'indexed'].some((f) => fieldError(e, f)) || Object.keys(ruleErrors(e)).length > 0
      if (!shown) toast.error(errorMessage(e))
    },
  })
  if (fields.isPending || lists.isPending) return <LoadingState rows={5} label="Loading the fields" />
  if (fields.isError) return <ErrorState error={fields.error} onRetry={() => fields.refetch()} />
  const errors = { ...live.errors, ...ruleErrors(save.error) }
  return (
    <form
      className="grid items-start gap-6 lg:grid-cols-[1fr_18rem]"
      onSubmit={(e) => {
        e.preventDefault()
        save.mutate()
      }}
    >
      <div className="grid gap-6">
        <Card>
          <CardContent className="grid gap-4 sm:grid-cols-2">
            <FormField label="Name" error={fieldError(save.error, 'name')}>
              <Input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} disabled={!editable} />
            </FormField>
            <FormField label="Description (optional)" error={fieldError(save.error, 'description')}>
              <Input value={description} onChange={(e) => setDescription(e.target.value)} maxLength={2000} disabled={!editable} />
            </FormField>
          </CardContent>
        </Card>
        <Card>
          <CardHeader>
            <CardTitle>Rules</CardTitle>
            <CardDescription>Conditions on a contact’s fields, status, list and custom fields. Groups mix “all” and “any”.</CardDescription>
          </CardHeader>
          <CardContent>
            <GroupEditor
              node={root}
              path="rules"
              ctx={{ fields: fields.data, lists: lists.data?.data ?? [], errors, disabled: !editable }}
              onChange={setRoot}
            />
          </CardContent>
        </Card>
      </div>
      <div className="grid gap-4 lg:sticky lg:top-6">
        {live.view}
        <Card>
          <CardContent>
            <FormField
              label="Indexed"
              hint="Keeps the members in an index of their own: counts and member pages stay fast on a large audience, and every contact write does a little more. Not for relative dates or list conditions."
              error={fieldError(save.error, 'indexed')}
            >
              <Toggle checked={indexed} onCheckedChange={setIndexed} disabled={!editable} />
            </FormField>
          </CardContent>
        </Card>
        {editable ? (
          <Button type="submit" disabled={save.isPending || countConditions(root) === 0}>
            {save.isPending ? 'Saving…' : segment ? 'Save changes' : 'Save segment'}
          </Button>
        ) : null}
      </div>
    </form>
  )
}

function EditRoute() {
  const { id } = useParams<{ id: string }>()
  const isNew = id === 'new'
  const q = useQuery({ queryKey: ['segment', Number(id)], queryFn: () => api<Segment>('GET', `/api/v2/segments/${id}`), enabled: !isNew })
  const back = (
    <Button asChild variant="outline">
      <Link href="/">
        <ArrowLeftIcon /> All segments
      </Link>
    </Button>
  )
  return (
    <div className="grid gap-6">
      <PageHeader
        title={isNew ? 'New segment' : (q.data?.name ?? 'Segment')}
        description={isNew ? 'Describe who belongs; the count follows as you edit.' : q.data?.description || 'Edit the rules; the count follows as you edit.'}
        actions={back}
      />
      {isNew ? (
        <SegmentEditor segment={null} />
      ) : q.isPending ? (
        <LoadingState rows={6} label="Loading the segment" />
      ) : q.isError ? (
        <ErrorState error={q.error} onRetry={() => q.refetch()} />
      ) : (
        <>
          <SegmentEditor key={q.data.updated_at} segment={q.data} />
          <Members id={q.data.id} />
        </>
      )}
    </div>
  )
}

function SegmentList() {
  const session = useSession()
  const admin = session.data?.admin
  const [, navigate] = useLocation()
  const [deleting, setDeleting] = useState<Segment | null>(null)
  const columns: Column<Segment>[] = [
    {
      id: 'name',
      header: 'Segment',
      cell: (s) => (
        <div className="grid max-w-md gap-0.5">
          <span className="flex items-center gap-2">
            <Link href={`/${s.id}`} className="font-medium hover:underline">
              {s.name}
            </Link>
            {s.indexed ? <Badge variant="secondary">Indexed</Badge> : null}
          </span>
          {s.description ? <span className="truncate text-xs text-muted-foreground">{s.description}</span> : null}
        </div>
      ),
    },
    { id: 'rules', header: 'Conditions', className: 'text-right tabular-nums', cell: (s) => formatNumber(countConditions(fromRules(s.rules))) },
    { id: 'updated', header: 'Changed', className: 'hidden md:table-cell text-muted-foreground', cell: (s) => formatDateTime(s.updated_at) },
    actionsColumn((s) => (
      <RowActions
        name={s.name}
        actions={[
          { label: can(admin, 'segments.update') ? 'Edit and view members' : 'View members', icon: PencilIcon, onSelect: () => navigate(`/${s.id}`) },
          { label: 'Delete', icon: Trash2Icon, onSelect: () => setDeleting(s), hidden: !can(admin, 'segments.delete'), destructive: true },
        ]}
      />
    )),
  ]
  const newButton = can(admin, 'segments.create') ? (
    <Button asChild>
      <Link href="/new">
        <PlusIcon /> New segment
      </Link>
    </Button>
  ) : null
  return (
    <div className="grid gap-6">
      <PageHeader title="Segments" description="Audiences defined by rules, counted live." actions={newButton} />
      <DataTable
        path="/api/v2/segments"
        queryKey="segments"
        columns={columns}
        rowKey={(s) => s.id}
        caption="Segments"
        empty={{
          icon: FilterIcon,
          title: 'No segments yet',
          description: 'A segment picks contacts by rules, such as subscribers on the pro plan.',
          action: newButton,
        }}
      />
      <ConfirmDelete
        open={deleting !== null}
        onOpenChange={(o) => !o && setDeleting(null)}
        title={`Delete “${deleting?.name ?? ''}”?`}
        description="Only the rules are deleted; the contacts stay as they are."
        confirmLabel="Delete segment"
        action={() => api('DELETE', `/api/v2/segments/${deleting!.id}`)}
        invalidate={['segments']}
        done="Segment deleted"
      />
    </div>
  )
}

/** Audience › Segments: the saved segments, and the builder with its live count. */
export function SegmentsPage() {
  return (
    <Switch>
      <Route path="/:id">
        <EditRoute />
      </Route>
      <Route>
        <SegmentList />
      </Route>
    </Switch>
  )
}
