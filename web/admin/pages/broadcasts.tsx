/**
 * Broadcasts (issue 15 "UI"): the list at /broadcasts (status, progress while sending,
 * counts, schedule; row actions as the status allows; bulk delete; status filter), the
 * editor at /broadcasts/new and /broadcasts/:id/edit (pages/broadcasts/editor.tsx), and a
 * broadcast's live progress, results and recipients at /broadcasts/:id
 * (pages/broadcasts/report.tsx). Everything goes through /api/v2/broadcasts.
 */
import { CopyIcon, MegaphoneIcon, PauseIcon, PencilIcon, PlayIcon, PlusIcon, SearchIcon, Trash2Icon, XCircleIcon, XIcon } from 'lucide-react'
import { useState } from 'react'
import { Link, Route, Switch, useLocation } from 'wouter'
import { ConfirmDialog } from '../components/confirm-dialog'
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
import { BroadcastEditor } from './broadcasts/editor'
import { BroadcastReport } from './broadcasts/report'
import { allowedActions, BROADCAST_STATUSES, BroadcastStatusBadge, SendProgress, useTransition, type Broadcast } from './broadcasts/shared'

function BroadcastList() {
  const session = useSession()
  const admin = session.data?.admin
  const [params, setParams] = useUrlQuery()
  const [, navigate] = useLocation()
  const [selected, setSelected] = useState<Set<number>>(new Set())
  const [deleting, setDeleting] = useState<Broadcast[] | null>(null)
  const [cancelling, setCancelling] = useState<Broadcast | null>(null)
  const transition = useTransition((b, action) => {
    if (action === 'duplicate') navigate(`/${b.id}/edit`)
  })
  const mayDelete = can(admin, 'broadcasts.delete')
  const maySend = can(admin, 'broadcasts.send')
  const mayUpdate = can(admin, 'broadcasts.update')
  const toggle = (id: number, on: boolean) =>
    setSelected((s) => {
      const next = new Set(s)
      if (on) next.add(id)
      else next.delete(id)
      return next
    })

  const columns: Column<Broadcast>[] = [
    ...(mayDelete
      ? [
          {
            id: 'select',
            className: 'w-10',
            header: (rows: Broadcast[]) => {
              const on = rows.filter((r) => selected.has(r.id)).length
              return (
                <Checkbox
                  aria-label="Select every broadcast on this page"
                  checked={on === 0 ? false : on === rows.length ? true : 'indeterminate'}
                  onCheckedChange={(c) => setSelected(c === true ? new Set([...selected, ...rows.map((r) => r.id)]) : new Set())}
                />
              )
            },
            cell: (b: Broadcast) => (
              <Checkbox
                aria-label={`Select ${b.name}`}
                checked={selected.has(b.id)}
                onClick={(e) => e.stopPropagation()}
                onCheckedChange={(c) => toggle(b.id, c === true)}
              />
            ),
          } satisfies Column<Broadcast>,
        ]
      : []),
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
              { label: 'Delete', icon: Trash2Icon, onSelect: () => setDeleting([b]), hidden: !mayDelete || !a.delete, destructive: true },
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
  const count = deleting?.length ?? 0

  return (
    <div className="grid gap-6">
      <PageHeader title="Broadcasts" description="One mailing to a list or a segment: schedule it, watch it send, read its results." actions={newButton} />
      <div className="flex flex-col flex-wrap gap-2 sm:flex-row sm:items-center">
        <FilterSelect
          id="broadcast-status"
          label="Status"
          value={status}
          onChange={(v) => setParams({ status: v, page: null })}
          allLabel="Any status"
          options={BROADCAST_STATUSES.map((s) => ({ value: s, label: s[0]!.toUpperCase() + s.slice(1) }))}
          className="w-full sm:w-44"
        />
        {status ? (
          <Button variant="ghost" size="sm" onClick={() => setParams({ status: null, page: null })}>
            <XIcon /> Clear filter
          </Button>
        ) : null}
        {selected.size ? (
          <Button variant="destructive" size="sm" className="sm:ml-auto" onClick={() => setDeleting([...selected].map((id) => ({ id }) as Broadcast))}>
            <Trash2Icon /> Delete {formatNumber(selected.size)} selected
          </Button>
        ) : null}
      </div>
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
      <ConfirmDelete
        open={deleting !== null}
        onOpenChange={(o) => !o && setDeleting(null)}
        title={count === 1 && deleting?.[0]?.name ? `Delete “${deleting[0].name}”?` : `Delete ${formatNumber(count)} broadcasts?`}
        description="Their versions, recipient records and statistics are deleted with them. Messages already sent stay in Messages. This cannot be undone."
        confirmLabel="Delete"
        action={async () => {
          await api('POST', '/api/v2/broadcasts/bulk-delete', { ids: deleting!.map((b) => b.id) })
          setSelected((s) => new Set([...s].filter((id) => !deleting!.some((d) => d.id === id))))
        }}
        invalidate={['broadcasts']}
        done={count === 1 ? 'Broadcast deleted' : `${formatNumber(count)} broadcasts deleted`}
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
