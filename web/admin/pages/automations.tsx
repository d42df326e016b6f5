/**
 * Drips and Triggers (issue 16 "UI"): one list page per kind at /drips and /triggers (status,
 * runs waiting / active / finished, pause and resume, bulk delete, status filter) and the
 * editor at /new and /:id (pages/automations/editor.tsx: the step flow, live counts per step,
 * runs, enrollment). Everything goes through /api/v2/drips and /api/v2/triggers.
 */
import { PauseIcon, PencilIcon, PlayIcon, PlusIcon, SearchIcon, Trash2Icon, WorkflowIcon } from 'lucide-react'
import { Link, Route, Switch, useLocation } from 'wouter'
import { DataTable, type Column } from '../components/data-table'
import { ListToolbar, StatusFilter, useRowSelection } from '../components/list-toolbar'
import { PageHeader } from '../components/page-header'
import { actionsColumn, RowActions } from '../components/row-actions'
import { Button } from '../components/ui/button'
import { can, useSession } from '../lib/session'
import { useUrlQuery } from '../lib/url-query'
import { formatDateTime, formatNumber } from '../lib/utils'
import { AutomationEditor } from './automations/editor'
import { AUTOMATION_STATUSES, AutomationStatusBadge, KINDS, type Automation, type AutomationKind, useAutomationTransition } from './automations/shared'

function AutomationList({ kind }: { kind: AutomationKind }) {
  const k = KINDS[kind]
  const admin = useSession().data?.admin
  const [params] = useUrlQuery()
  const [, navigate] = useLocation()
  const transition = useAutomationTransition(kind)
  const mayDelete = can(admin, `${k.group}.delete`)
  const mayUpdate = can(admin, `${k.group}.update`)
  const selection = useRowSelection<Automation>({ enabled: mayDelete, noun: k.noun, name: (a) => a.name })
  const columns: Column<Automation>[] = [
    ...selection.columns,
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
            { label: 'Delete', icon: Trash2Icon, onSelect: () => selection.confirmDelete([a]), hidden: !mayDelete, destructive: true },
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
      <ListToolbar
        filters={['status']}
        selection={selection}
        bulkDelete={{
          path: k.path,
          queryKey: k.queryKey,
          noun: [k.noun, k.plural],
          description: 'Their versions, runs and statistics are deleted with them. Messages already sent stay in Messages. This cannot be undone.',
        }}
      >
        <StatusFilter id={`${kind}-status`} statuses={AUTOMATION_STATUSES} />
      </ListToolbar>
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
