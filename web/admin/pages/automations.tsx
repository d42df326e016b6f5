/**
 * Drips and Triggers (issue 16 "UI"): one list page per kind at /drips and /triggers (status,
 * runs waiting / active / finished, pause and resume, bulk delete, status filter) and the
 * editor at /new and /:id (pages/automations/editor.tsx: the step flow, live counts per step,
 * runs, enrollment). Everything goes through /api/v2/drips and /api/v2/triggers.
 */
import { PauseIcon, PencilIcon, PlayIcon, PlusIcon, SearchIcon, Trash2Icon, WorkflowIcon, XIcon } from 'lucide-react'
import { useState } from 'react'
import { Link, Route, Switch, useLocation } from 'wouter'
import { DataTable, type Column } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { actionsColumn, RowActions } from '../components/row-actions'
import { Button } from '../components/ui/button'
import { Checkbox } from '../components/ui/checkbox'
import { api } from '../lib/api'
import { can, useSession } from '../lib/session'
import { useUrlQuery } from '../lib/url-query'
import { formatDateTime, formatNumber } from '../lib/utils'
import { ConfirmDelete, FilterSelect } from './audience/shared'
import { AutomationEditor } from './automations/editor'
import { AUTOMATION_STATUSES, AutomationStatusBadge, KINDS, type Automation, type AutomationKind, useAutomationTransition } from './automations/shared'

function AutomationList({ kind }: { kind: AutomationKind }) {
  const k = KINDS[kind]
  const admin = useSession().data?.admin
  const [params, setParams] = useUrlQuery()
  const [, navigate] = useLocation()
  const [selected, setSelected] = useState<Set<number>>(new Set())
  const [deleting, setDeleting] = useState<Automation[] | null>(null)
  const transition = useAutomationTransition(kind)
  const mayDelete = can(admin, `${k.group}.delete`)
  const mayUpdate = can(admin, `${k.group}.update`)
  const toggle = (id: number, on: boolean) =>
    setSelected((s) => {
      const next = new Set(s)
      if (on) next.add(id)
      else next.delete(id)
      return next
    })
  const columns: Column<Automation>[] = [
    ...(mayDelete
      ? [
          {
            id: 'select',
            className: 'w-10',
            header: (rows: Automation[]) => {
              const on = rows.filter((r) => selected.has(r.id)).length
              return (
                <Checkbox
                  aria-label={`Select every ${k.noun} on this page`}
                  checked={on === 0 ? false : on === rows.length ? true : 'indeterminate'}
                  onCheckedChange={(c) => setSelected(c === true ? new Set([...selected, ...rows.map((r) => r.id)]) : new Set())}
                />
              )
            },
            cell: (a: Automation) => (
              <Checkbox
                aria-label={`Select ${a.name}`}
                checked={selected.has(a.id)}
                onClick={(e) => e.stopPropagation()}
                onCheckedChange={(c) => toggle(a.id, c === true)}
              />
            ),
          } satisfies Column<Automation>,
        ]
      : []),
    {
      id: 'name',
      header: kind === 'drip' ? 'Drip' : 'Trigger',
      cell: (a) => (
        <div className="grid max-w-md min-w-40 gap-0.5">
          <Link href={`/${a.id}`} className="font-medium hover:underline" onClick={(e) => e.stopPropagation()}>
            {a.name}
          </Link>
          <span className="truncate text-xs text-muted-foreground">
            {kind === 'trigger' ? `on ${a.event_name}` : a.list_ids.length ? `${a.list_ids.length} list(s)` : 'enrolled by hand'} · version {a.version}
          </span>
        </div>
      ),
    },
    { id: 'status', header: 'Status', cell: (a) => <AutomationStatusBadge status={a.status} /> },
    { id: 'waiting', header: 'Waiting', className: 'text-right tabular-nums', cell: (a) => formatNumber(a.runs.waiting) },
    { id: 'active', header: 'Active', className: 'text-right tabular-nums', cell: (a) => formatNumber(a.runs.active) },
    {
      id: 'finished',
      header: 'Finished',
      className: 'text-right tabular-nums',
      cell: (a) => (
        <span title={`${a.runs.finished} finished, ${a.runs.exited} exited, ${a.runs.failed} failed`}>
          {formatNumber(a.runs.finished + a.runs.exited + a.runs.failed)}
        </span>
      ),
    },
    { id: 'updated', header: 'Changed', className: 'hidden text-muted-foreground md:table-cell', cell: (a) => formatDateTime(a.updated_at) },
    actionsColumn((a) => (
      <span onClick={(e) => e.stopPropagation()} className="inline-flex">
        <RowActions
          name={a.name}
          actions={[
            { label: 'Edit', icon: PencilIcon, onSelect: () => navigate(`/${a.id}`) },
            { label: 'Pause', icon: PauseIcon, onSelect: () => transition.mutate({ id: a.id, action: 'pause' }), hidden: !mayUpdate || a.status !== 'active' },
            {
              label: a.status === 'draft' ? 'Activate' : 'Resume',
              icon: PlayIcon,
              onSelect: () => transition.mutate({ id: a.id, action: 'resume' }),
              hidden: !mayUpdate || a.status === 'active',
            },
            { label: 'Delete', icon: Trash2Icon, onSelect: () => setDeleting([a]), hidden: !mayDelete, destructive: true },
          ]}
        />
      </span>
    )),
  ]
  const newButton = can(admin, `${k.group}.create`) ? (
    <Button onClick={() => navigate('/new')}>
      <PlusIcon /> New {k.noun}
    </Button>
  ) : null
  const status = params.get('status')
  const count = deleting?.length ?? 0
  return (
    <div className="grid gap-6">
      <PageHeader
        title={k.title}
        description={
          kind === 'drip'
            ? 'Step-by-step series that start when a contact joins a list, or when you enroll them.'
            : 'Step-by-step flows that start when your application tracks a custom event.'
        }
        actions={newButton}
      />
      <div className="flex flex-col flex-wrap gap-2 sm:flex-row sm:items-center">
        <FilterSelect
          id={`${kind}-status`}
          label="Status"
          value={status}
          onChange={(v) => setParams({ status: v, page: null })}
          allLabel="Any status"
          options={AUTOMATION_STATUSES.map((s) => ({ value: s, label: s[0]!.toUpperCase() + s.slice(1) }))}
          className="w-full sm:w-44"
        />
        {status ? (
          <Button variant="ghost" size="sm" onClick={() => setParams({ status: null, page: null })}>
            <XIcon /> Clear filter
          </Button>
        ) : null}
        {selected.size ? (
          <Button variant="destructive" size="sm" className="sm:ml-auto" onClick={() => setDeleting([...selected].map((id) => ({ id }) as Automation))}>
            <Trash2Icon /> Delete {formatNumber(selected.size)} selected
          </Button>
        ) : null}
      </div>
      <DataTable
        path={k.path}
        queryKey={k.queryKey}
        columns={columns}
        rowKey={(a) => a.id}
        filters={['status']}
        caption={k.title}
        onRowClick={(a) => navigate(`/${a.id}`)}
        // Run counts move while anything on screen is active.
        refetchInterval={(rows) => (rows.some((a) => a.status === 'active') ? 3000 : false)}
        empty={
          status
            ? { icon: SearchIcon, title: `No ${status} ${k.plural}`, description: 'Choose another status or clear the filter.' }
            : {
                icon: WorkflowIcon,
                title: `No ${k.plural} yet`,
                description:
                  kind === 'drip'
                    ? 'A drip sends a series of messages, waits and branches to each new subscriber of a list.'
                    : 'A trigger runs a flow of steps for a contact each time your application tracks an event.',
                action: newButton,
              }
        }
      />
      <ConfirmDelete
        open={deleting !== null}
        onOpenChange={(o) => !o && setDeleting(null)}
        title={count === 1 && deleting?.[0]?.name ? `Delete “${deleting[0].name}”?` : `Delete ${formatNumber(count)} ${k.plural}?`}
        description="Their versions, runs and statistics are deleted with them. Messages already sent stay in Messages. This cannot be undone."
        action={async () => {
          await api('POST', `${k.path}/bulk-delete`, { ids: deleting!.map((a) => a.id) })
          setSelected((s) => new Set([...s].filter((id) => !deleting!.some((d) => d.id === id))))
        }}
        invalidate={[k.queryKey]}
        done={count === 1 ? `${k.noun[0]!.toUpperCase()}${k.noun.slice(1)} deleted` : `${formatNumber(count)} ${k.plural} deleted`}
      />
    </div>
  )
}

function pageOf(kind: AutomationKind) {
  const List = () => <AutomationList kind={kind} />
  const Editor = () => <AutomationEditor kind={kind} />
  return function AutomationPage() {
    return (
      <Switch>
        <Route path="/" component={List} />
        <Route path="/new" component={Editor} />
        <Route path="/:id" component={Editor} />
      </Switch>
    )
  }
}

/** The Drips page: the list and the editor (new and :id). */
export const DripsPage = pageOf('drip')
/** The Triggers page: the list and the editor (new and :id). */
export const TriggersPage = pageOf('trigger')
