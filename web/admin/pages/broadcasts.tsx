/**
 * Broadcasts (issue 15 "UI"): the list at /broadcasts (status, progress while sending,
 * counts, schedule; row actions as the status allows; bulk delete; status filter), the
 * editor at /broadcasts/new and /broadcasts/:id/edit (pages/broadcasts/editor.tsx), and a
 * broadcast's live progress, results and recipients at /broadcasts/:id
 * (pages/broadcasts/report.tsx). Everything goes through /api/v2/broadcasts.
 */
import { CopyIcon, MegaphoneIcon, PauseIcon, PencilIcon, PlayIcon, PlusIcon, SearchIcon, Trash2Icon, XCircleIcon } from 'lucide-react'
import { useState } from 'react'
import { Link, Route, Switch, useLocation } from 'wouter'
import { ConfirmDialog } from '../components/confirm-dialog'
import { DataTable, type Column } from '../components/data-table'
import { ListToolbar, StatusFilter, useRowSelection } from '../components/list-toolbar'
import { PageHeader } from '../components/page-header'
import { actionsColumn, RowActions } from '../components/row-actions'
import { Button } from '../components/ui/button'
import { can, useSession } from '../lib/session'
import { useUrlQuery } from '../lib/url-query'
import { formatDateTime, formatNumber } from '../lib/utils'
import { BroadcastEditor } from './broadcasts/editor'
import { BroadcastReport } from './broadcasts/report'
import { allowedActions, BROADCAST_STATUSES, BroadcastStatusBadge, SendProgress, useTransition, type Broadcast } from './broadcasts/shared'

function BroadcastList() {
  const session = useSession()
  const admin = session.data?.admin
  const [params] = useUrlQuery()
  const [, navigate] = useLocation()
  const [cancelling, setCancelling] = useState<Broadcast | null>(null)
  const transition = useTransition((b, action) => {
    if (action === 'duplicate') navigate(`/${b.id}/edit`)
  })
  const mayDelete = can(admin, 'broadcasts.delete')
  const maySend = can(admin, 'broadcasts.send')
  const mayUpdate = can(admin, 'broadcasts.update')
  const selection = useRowSelection<Broadcast>({ enabled: mayDelete, noun: 'broadcast', name: (b) => b.name })

  const columns: Column<Broadcast>[] = [
    ...selection.columns,
    {
      id: 'name',
      header: 'Broadcast',
      cell: (b) => (
        <div className="grid max-w-md min-w-40 gap-0.5">
          <Link href={`/${b.id}`} className="font-medium hover:underline" onClick={(e) => e.stopPropagation()}>
            {b.name}
          </Link>
          <span className="truncate text-xs text-muted-foreground">{b.subject}</span>
        </div>
      ),
    },
    { id: 'status', header: 'Status', cell: (b) => <BroadcastStatusBadge status={b.status} /> },
    {
      id: 'progress',
      header: 'Progress',
      className: 'hidden w-48 md:table-cell',
      cell: (b) => {
        // Nothing to show until the engine has taken the recipient list.
        if (b.counts.total === 0 && b.status !== 'preparing' && b.status !== 'sending') return <span className="text-muted-foreground">—</span>
        return <SendProgress b={b} />
      },
    },
    {
      id: 'counts',
      header: 'Recipients',
      className: 'hidden text-right tabular-nums lg:table-cell',
      cell: (b) => {
        const c = b.counts
        return c.total === 0 ? (
          <span className="text-muted-foreground">—</span>
        ) : (
          <span title={`${c.sent} sent, ${c.skipped} skipped, ${c.failed} failed, ${c.opened} opened, ${c.clicked} clicked`}>{formatNumber(c.total)}</span>
        )
      },
    },
    {
      id: 'opens',
      header: 'Opened / clicked',
      className: 'hidden text-right tabular-nums xl:table-cell',
      cell: (b) => {
        const c = b.counts
        return c.sent === 0 ? <span className="text-muted-foreground">—</span> : `${formatNumber(c.opened)} / ${formatNumber(c.clicked)}`
      },
    },
    {
      id: 'when',
      header: 'Scheduled / sent',
      className: 'hidden text-muted-foreground sm:table-cell',
      cell: (b) => formatDateTime(b.finished_at ?? b.started_at ?? b.send_at),
    },
    actionsColumn((b) => {
      const a = allowedActions(b)
      return (
        // The row opens the broadcast on a click: the menu's clicks (they bubble through its portal) must not.
        <span onClick={(e) => e.stopPropagation()} className="inline-flex">
          <RowActions
            name={b.name}
            actions={[
              { label: a.edit ? 'Edit' : 'View settings', icon: PencilIcon, onSelect: () => navigate(`/${b.id}/edit`), hidden: !mayUpdate && a.edit },
              { label: 'Pause', icon: PauseIcon, onSelect: () => transition.mutate({ id: b.id, action: 'pause' }), hidden: !maySend || !a.pause },
              { label: 'Resume', icon: PlayIcon, onSelect: () => transition.mutate({ id: b.id, action: 'resume' }), hidden: !maySend || !a.resume },
              {
                label: 'Duplicate',
                icon: CopyIcon,
                onSelect: () => transition.mutate({ id: b.id, action: 'duplicate' }),
                hidden: !can(admin, 'broadcasts.create'),
              },
              { label: 'Cancel', icon: XCircleIcon, onSelect: () => setCancelling(b), hidden: !maySend || !a.cancel, destructive: true },
              { label: 'Delete', icon: Trash2Icon, onSelect: () => selection.confirmDelete([b]), hidden: !mayDelete || !a.delete, destructive: true },
            ]}
          />
        </span>
      )
    }),
  ]

  const newButton = can(admin, 'broadcasts.create') ? (
    <Button onClick={() => navigate('/new')}>
      <PlusIcon /> New broadcast
    </Button>
  ) : null
  const status = params.get('status')

  return (
    <div className="grid gap-6">
      <PageHeader title="Broadcasts" description="One mailing to a list or a segment: schedule it, watch it send, read its results." actions={newButton} />
      <ListToolbar
        filters={['status']}
        selection={selection}
        bulkDelete={{
          path: '/api/v2/broadcasts',
          queryKey: 'broadcasts',
          noun: ['broadcast', 'broadcasts'],
          description: 'Their versions, recipient records and statistics are deleted with them. Messages already sent stay in Messages. This cannot be undone.',
        }}
      >
        <StatusFilter id="broadcast-status" statuses={BROADCAST_STATUSES} />
      </ListToolbar>
      <DataTable
        path="/api/v2/broadcasts"
        queryKey="broadcasts"
        columns={columns}
        rowKey={(b) => b.id}
        filters={['status']}
        caption="Broadcasts"
        onRowClick={(b) => navigate(`/${b.id}`)}
        // The bars move while anything on screen is sending.
        refetchInterval={(rows) => (rows.some((b) => b.status === 'preparing' || b.status === 'sending') ? 2000 : false)}
        empty={
          status
            ? { icon: SearchIcon, title: `No ${status} broadcasts`, description: 'Choose another status or clear the filter.' }
            : {
                icon: MegaphoneIcon,
                title: 'No broadcasts yet',
                description: 'A broadcast sends one message to a list or a segment, with a live view while it goes out.',
                action: newButton,
              }
        }
      />
      <ConfirmDialog
        open={cancelling !== null}
        onOpenChange={(o) => !o && setCancelling(null)}
        title={`Cancel “${cancelling?.name ?? ''}”?`}
        description="No more messages of it are sent; those not yet sent stay on record as pending. A cancelled broadcast cannot be resumed."
        confirmLabel="Cancel broadcast"
        onConfirm={() => cancelling && transition.mutate({ id: cancelling.id, action: 'cancel' })}
      />
    </div>
  )
}

/** The Broadcasts page: the list, the editor (new and :id/edit) and a broadcast's report. */
export function BroadcastsPage() {
  return (
    <Switch>
      <Route path="/" component={BroadcastList} />
      <Route path="/new" component={BroadcastEditor} />
      <Route path="/:id/edit" component={BroadcastEditor} />
      <Route path="/:id" component={BroadcastReport} />
    </Switch>
  )
}
