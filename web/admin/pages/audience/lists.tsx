import { useMutation, useQueryClient } from '@tanstack/react-query'
import { ContactIcon, ListIcon, PencilIcon, PlusIcon, Trash2Icon, UploadIcon } from 'lucide-react'
import { useState } from 'react'
import { toast } from 'sonner'
import { Link, useLocation } from 'wouter'
import { FormDialog } from '../../components/form-dialog'
import { actionsColumn, RowActions } from '../../components/row-actions'
import { DataTable, type Column } from '../../components/data-table'
import { PageHeader } from '../../components/page-header'
import { Button } from '../../components/ui/button'
import { FormField } from '../../components/ui/form-field'
import { Input } from '../../components/ui/input'
import { Textarea } from '../../components/ui/textarea'
import { reportError } from '../../lib/form-errors'
import { api, fieldError } from '../../lib/api'
import { can, useSession } from '../../lib/session'
import { formatDateTime, formatNumber } from '../../lib/utils'
import { ConfirmDelete } from '../../components/confirm-dialog'
import { type MailingList } from './shared'

/** Create or rename a list (name and description). */
function ListDialog({ open, onOpenChange, list }: { open: boolean; onOpenChange: (o: boolean) => void; list: MailingList | null }) {
  const qc = useQueryClient()
  const [name, setName] = useState(list?.name ?? '')
  const [description, setDescription] = useState(list?.description ?? '')
  const m = useMutation({
    mutationFn: () =>
      list
        ? api<MailingList>('PATCH', `/api/v2/lists/${list.id}`, { name, description })
        : api<MailingList>('POST', '/api/v2/lists', { name, description: description || undefined }),
    onSuccess: async (saved) => {
      toast.success(list ? `List “${saved.name}” saved` : `List “${saved.name}” created`)
      onOpenChange(false)
      await qc.invalidateQueries({ queryKey: ['lists'] })
    },
    onError: (e) => {
      reportError(e, ['name', 'description'], fieldError)
    },
  })
  return (
    <FormDialog
      open={open}
      onOpenChange={onOpenChange}
      title={list ? 'Rename list' : 'New list'}
      description={
        list ? 'The name is what people see in the console; contacts and imports keep the list id.' : 'A list holds contacts; add them by hand or import a CSV.'
      }
      onSubmit={() => m.mutate()}
      submitLabel={m.isPending ? 'Saving…' : list ? 'Save' : 'Create list'}
      submitDisabled={m.isPending}
    >
      <FormField label="Name" error={fieldError(m.error, 'name')}>
        <Input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} autoFocus />
      </FormField>
      <FormField label="Description" hint="Optional: what the list is for." error={fieldError(m.error, 'description')}>
        <Textarea value={description} onChange={(e) => setDescription(e.target.value)} maxLength={2000} rows={3} />
      </FormField>
    </FormDialog>
  )
}

/** A count with its label underneath, muted when zero. */
function Count({ n, tone }: { n: number; tone?: 'danger' }) {
  return <span className={n === 0 ? 'text-muted-foreground' : tone === 'danger' ? 'text-destructive' : undefined}>{formatNumber(n)}</span>
}

/** Audience › Lists: every list with its contacts by status; create, rename, delete. */
export function ListsPage() {
  const session = useSession()
  const admin = session.data?.admin
  const [, navigate] = useLocation()
  const [editing, setEditing] = useState<{ list: MailingList | null } | null>(null)
  const [deleting, setDeleting] = useState<MailingList | null>(null)

  const columns: Column<MailingList>[] = [
    {
      id: 'name',
      header: 'List',
      cell: (l) => (
        <div className="grid max-w-md gap-0.5">
          <Link href={`~/admin/audience/contacts?list_id=${l.id}`} className="font-medium hover:underline">
            {l.name}
          </Link>
          {l.description ? <span className="truncate text-xs text-muted-foreground">{l.description}</span> : null}
        </div>
      ),
    },
    { id: 'subscribed', header: 'Subscribed', className: 'text-right tabular-nums', cell: (l) => <Count n={l.counts.subscribed} /> },
    { id: 'unconfirmed', header: 'Unconfirmed', className: 'hidden text-right tabular-nums lg:table-cell', cell: (l) => <Count n={l.counts.unconfirmed} /> },
    { id: 'unsubscribed', header: 'Unsubscribed', className: 'hidden text-right tabular-nums md:table-cell', cell: (l) => <Count n={l.counts.unsubscribed} /> },
    {
      id: 'bounced',
      header: 'Bounced / complained',
      className: 'hidden text-right tabular-nums lg:table-cell',
      cell: (l) => <Count n={l.counts.bounced + l.counts.complained} tone="danger" />,
    },
    { id: 'total', header: 'Total', className: 'text-right font-medium tabular-nums', cell: (l) => formatNumber(l.counts.total) },
    { id: 'created', header: 'Created', className: 'hidden xl:table-cell text-muted-foreground', cell: (l) => formatDateTime(l.created_at) },
    actionsColumn((l) => (
      <RowActions
        name={l.name}
        actions={[
          { label: 'View contacts', icon: ContactIcon, onSelect: () => navigate(`~/admin/audience/contacts?list_id=${l.id}`) },
          {
            label: 'Import contacts',
            icon: UploadIcon,
            onSelect: () => navigate(`~/admin/audience/imports?list_id=${l.id}`),
            hidden: !can(admin, 'contacts.import'),
          },
          { label: 'Rename', icon: PencilIcon, onSelect: () => setEditing({ list: l }), hidden: !can(admin, 'lists.update') },
          { label: 'Delete', icon: Trash2Icon, onSelect: () => setDeleting(l), hidden: !can(admin, 'lists.delete'), destructive: true },
        ]}
      />
    )),
  ]

  const newButton = can(admin, 'lists.create') ? (
    <Button onClick={() => setEditing({ list: null })}>
      <PlusIcon /> New list
    </Button>
  ) : null

  return (
    <div className="grid gap-6">
      <PageHeader title="Lists" description="Mailing lists and their contacts by status." actions={newButton} />
      <DataTable
        path="/api/v2/lists"
        queryKey="lists"
        columns={columns}
        rowKey={(l) => l.id}
        caption="Lists"
        empty={{ icon: ListIcon, title: 'No lists yet', description: 'Create a list, then add contacts to it or import a CSV.', action: newButton }}
      />
      {editing ? <ListDialog key={editing.list?.id ?? 'new'} open onOpenChange={(o) => !o && setEditing(null)} list={editing.list} /> : null}
      <ConfirmDelete
        open={deleting !== null}
        onOpenChange={(o) => !o && setDeleting(null)}
        title={`Delete “${deleting?.name ?? ''}”?`}
        description={
          <>Its {formatNumber(deleting?.counts.total ?? 0)} contacts, its list suppressions and its imports are deleted with it. This cannot be undone.</>
        }
        confirmLabel="Delete list"
        action={() => api('DELETE', `/api/v2/lists/${deleting!.id}`)}
        invalidate={['lists', 'contacts']}
        done="List deleted"
      />
    </div>
  )
}
