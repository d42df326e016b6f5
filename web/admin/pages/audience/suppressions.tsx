import { useMutation, useQueryClient } from '@tanstack/react-query'
import { BanIcon, CheckCircle2Icon, PlusIcon, SearchIcon, Trash2Icon } from 'lucide-react'
import { useState } from 'react'
import { SelectField } from '../../components/select-field'
import { DataTable, type Column } from '../../components/data-table'
import { ListToolbar, QueryFilter, useFiltered, useRowSelection } from '../../components/list-toolbar'
import { PageHeader } from '../../components/page-header'
import { Badge } from '../../components/ui/badge'
import { Button } from '../../components/ui/button'
import { Dialog, DialogContent, DialogDescription, DialogFooter, DialogHeader, DialogTitle } from '../../components/ui/dialog'
import { FormField } from '../../components/ui/form-field'
import { Label } from '../../components/ui/label'
import { SelectItem } from '../../components/ui/select'
import { Tabs, TabsContent, TabsList, TabsTrigger } from '../../components/ui/tabs'
import { Textarea } from '../../components/ui/textarea'
import { reportError } from '../../lib/form-errors'
import { api, fieldError } from '../../lib/api'
import { can, useSession } from '../../lib/session'
import { formatDateTime, formatNumber } from '../../lib/utils'
import { useListName, ListField } from './shared'

interface Suppression {
  id: number
  scope: 'global' | 'list' | 'program'
  list_id: number | null
  program_type: string | null
  program_id: number | null
  type: 'email' | 'domain'
  value: string
  reason: string
  created_at: string
}

interface AddResult {
  added: number
  skipped: number
  invalid: Array<{ entry: string; reason: string }>
}

const REASONS: Array<{ value: string; label: string }> = [
  { value: 'manual', label: 'Added by hand' },
  { value: 'hard_bounce', label: 'Hard bounce' },
  { value: 'complaint', label: 'Complaint' },
  { value: 'unsubscribe', label: 'Unsubscribed' },
  { value: 'import', label: 'Imported from elsewhere' },
]
const FILTERS = ['search', 'scope', 'type', 'reason', 'list_id']
/** Entries per request (the API's limit). */
const MAX_ENTRIES = 10_000

/** Pasted text as entries: one per line, comma, semicolon or space. */
function entriesOf(text: string): string[] {
  return text
    .split(/[\s,;]+/)
    .map((e) => e.trim())
    .filter(Boolean)
}

/** Paste addresses or domains, choose the scope and reason, and see what was added, skipped or refused. */
function AddDialog({ onClose }: { onClose: () => void }) {
  const qc = useQueryClient()
  const [type, setType] = useState<'email' | 'domain'>('email')
  const [text, setText] = useState('')
  const [scope, setScope] = useState<'global' | 'list'>('global')
  const [listId, setListId] = useState<string | undefined>(undefined)
  const [reason, setReason] = useState('manual')
  const entries = entriesOf(text)
  const m = useMutation({
    mutationFn: () =>
      api<AddResult>('POST', '/api/v2/suppressions/batch', {
        type,
        reason,
        entries,
        scope,
        ...(scope === 'list' ? { list_id: listId ? Number(listId) : null } : {}),
      }),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ['suppressions'] })
    },
    onError: (e) => {
      reportError(e, ['entries', 'type', 'reason', 'scope', 'list_id'], fieldError)
    },
  })
  const result = m.data
  return (
    <Dialog open onOpenChange={(o) => !o && onClose()}>
      <DialogContent className="max-h-[calc(100dvh-2rem)] overflow-y-auto sm:max-w-xl">
        <DialogHeader>
          <DialogTitle>Add suppressions</DialogTitle>
          <DialogDescription>Paste addresses or domains: one per line, or separated by commas or spaces. Nothing is sent to them afterwards.</DialogDescription>
        </DialogHeader>
        {result ? (
          <div className="grid gap-4" role="status" aria-live="polite">
            <div className="grid grid-cols-3 gap-3">
              {[
                ['Added', result.added, 'text-success'],
                ['Already there', result.skipped, ''],
                ['Invalid', result.invalid.length, result.invalid.length ? 'text-destructive' : ''],
              ].map(([label, n, tone]) => (
                <div key={label as string} className="grid gap-1 rounded-lg border px-3 py-2">
                  <span className="text-xs text-muted-foreground">{label}</span>
                  <span className={`text-2xl font-semibold tabular-nums ${tone}`}>{formatNumber(n as number)}</span>
                </div>
              ))}
            </div>
            {result.invalid.length ? (
              <div className="grid gap-2">
                <h3 className="text-sm font-semibold">Not added</h3>
                <ul className="grid max-h-48 gap-1 overflow-y-auto rounded-md border p-2 text-sm">
                  {result.invalid.map((i, n) => (
                    <li key={n} className="flex flex-wrap gap-x-2">
                      <code className="font-mono">{i.entry}</code>
                      <span className="text-muted-foreground">— {i.reason}</span>
                    </li>
                  ))}
                </ul>
              </div>
            ) : (
              <p className="flex items-center gap-2 text-sm text-muted-foreground">
                <CheckCircle2Icon className="size-4 text-success" aria-hidden="true" /> Every entry was valid.
              </p>
            )}
            <DialogFooter>
              <Button type="button" variant="outline" onClick={() => m.reset()}>
                Add more
              </Button>
              <Button type="button" onClick={onClose}>
                Done
              </Button>
            </DialogFooter>
          </div>
        ) : (
          <form
            className="grid gap-4"
            onSubmit={(e) => {
              e.preventDefault()
              m.mutate()
            }}
          >
            <div className="grid gap-2">
              <Label id="suppress-type-label">What you paste</Label>
              <Tabs value={type} onValueChange={(v) => setType(v as 'email' | 'domain')}>
                <TabsList aria-labelledby="suppress-type-label">
                  <TabsTrigger value="email">Addresses</TabsTrigger>
                  <TabsTrigger value="domain">Domains</TabsTrigger>
                </TabsList>
                {/* Each tab needs its panel (its aria-controls names it). Labelled by the group's label, not
                    the tab: the pasting field below already answers to "Addresses" / "Domains". */}
                <TabsContent value="email" aria-labelledby="suppress-type-label" className="pt-1 text-xs text-muted-foreground">
                  Each entry is one address; letter case does not matter.
                </TabsContent>
                <TabsContent value="domain" aria-labelledby="suppress-type-label" className="pt-1 text-xs text-muted-foreground">
                  A domain covers every address at exactly that domain, not its subdomains.
                </TabsContent>
              </Tabs>
            </div>
            <FormField
              label={type === 'email' ? 'Addresses' : 'Domains'}
              hint={`${formatNumber(entries.length)} ${entries.length === 1 ? 'entry' : 'entries'}${entries.length > MAX_ENTRIES ? ` — at most ${formatNumber(MAX_ENTRIES)} at a time` : ''}.`}
              error={fieldError(m.error, 'entries')}
            >
              <Textarea
                value={text}
                onChange={(e) => setText(e.target.value)}
                rows={7}
                className="font-mono text-xs"
                placeholder={type === 'email' ? 'jane@example.com\nbob@example.org' : 'example.net\nspam.example'}
                autoFocus
              />
            </FormField>
            <div className="grid gap-4 sm:grid-cols-2">
              <FormField label="Applies to" error={fieldError(m.error, 'scope')}>
                <SelectField value={scope} onValueChange={(v) => setScope(v as 'global' | 'list')}>
                  <SelectItem value="global">Every send (global)</SelectItem>
                  <SelectItem value="list">One list</SelectItem>
                </SelectField>
              </FormField>
              <FormField label="Reason" error={fieldError(m.error, 'reason')}>
                <SelectField value={reason} onValueChange={setReason}>
                  {REASONS.map((r) => (
                    <SelectItem key={r.value} value={r.value}>
                      {r.label}
                    </SelectItem>
                  ))}
                </SelectField>
              </FormField>
            </div>
            {scope === 'list' ? <ListField value={listId} onValueChange={setListId} error={fieldError(m.error, 'list_id')} /> : null}
            <DialogFooter>
              <Button type="button" variant="outline" onClick={onClose}>
                Cancel
              </Button>
              <Button type="submit" disabled={m.isPending || entries.length === 0}>
                {m.isPending ? 'Adding…' : `Suppress ${formatNumber(entries.length)}`}
              </Button>
            </DialogFooter>
          </form>
        )}
      </DialogContent>
    </Dialog>
  )
}

/** Audience › Suppressions: search, paste a list to add, remove one or several. */
export function SuppressionsPage() {
  const session = useSession()
  const admin = session.data?.admin
  const listName = useListName()
  const [adding, setAdding] = useState(false)
  const mayDelete = can(admin, 'suppressions.delete')
  const filtered = useFiltered(FILTERS)
  const selection = useRowSelection<Suppression>({ enabled: mayDelete, noun: 'suppression', name: (s) => s.value })

  const columns: Column<Suppression>[] = [
    ...selection.columns,
    { id: 'value', header: 'Address or domain', cell: (s) => <span className="font-medium break-all">{s.value}</span> },
    {
      id: 'type',
      header: 'Type',
      className: 'hidden sm:table-cell',
      cell: (s) => <Badge variant="outline">{s.type === 'email' ? 'address' : 'domain'}</Badge>,
    },
    {
      id: 'scope',
      header: 'Applies to',
      className: 'hidden md:table-cell',
      cell: (s) =>
        s.scope === 'global' ? (
          <Badge variant="secondary">every send</Badge>
        ) : s.scope === 'list' ? (
          <span>list {listName(s.list_id)}</span>
        ) : (
          <span>
            {s.program_type} #{s.program_id}
          </span>
        ),
    },
    { id: 'reason', header: 'Reason', cell: (s) => REASONS.find((r) => r.value === s.reason)?.label ?? s.reason },
    { id: 'added', header: 'Added', className: 'hidden lg:table-cell text-muted-foreground', cell: (s) => formatDateTime(s.created_at) },
    ...(mayDelete
      ? [
          {
            id: 'remove',
            header: <span className="sr-only">Remove</span>,
            className: 'w-12 text-right',
            cell: (s: Suppression) => (
              <Button variant="ghost" size="icon" aria-label={`Remove ${s.value}`} onClick={() => selection.confirmDelete([s])}>
                <Trash2Icon />
              </Button>
            ),
          } satisfies Column<Suppression>,
        ]
      : []),
  ]

  const addButton = can(admin, 'suppressions.create') ? (
    <Button onClick={() => setAdding(true)}>
      <PlusIcon /> Add suppressions
    </Button>
  ) : null

  return (
    <div className="grid gap-6">
      <PageHeader title="Suppressions" description="Addresses and domains that are never mailed, everywhere or for one list." actions={addButton} />
      <ListToolbar
        search={{ id: 'suppression-search', label: 'Search suppressions', placeholder: 'Address or domain starts with…' }}
        filters={FILTERS}
        selection={selection}
        bulkDelete={{
          path: '/api/v2/suppressions',
          queryKey: 'suppressions',
          noun: ['suppression', 'suppressions'],
          title: (s) => s.value,
          description:
            'Mail can reach these addresses again (unless another suppression still covers them). Bounces and complaints are usually suppressed for a reason.',
          verb: ['Remove', 'removed'],
        }}
      >
        <QueryFilter
          name="scope"
          label="Applies to"
          allLabel="Any scope"
          options={[
            { value: 'global', label: 'Every send' },
            { value: 'list', label: 'One list' },
            { value: 'program', label: 'One program' },
          ]}
          className="w-full sm:w-36"
        />
        <QueryFilter
          name="type"
          label="Type"
          allLabel="Addresses and domains"
          options={[
            { value: 'email', label: 'Addresses' },
            { value: 'domain', label: 'Domains' },
          ]}
          className="w-full sm:w-52"
        />
        <QueryFilter name="reason" label="Reason" allLabel="Any reason" options={REASONS} className="w-full sm:w-48" />
      </ListToolbar>
      <DataTable
        path="/api/v2/suppressions"
        queryKey="suppressions"
        columns={columns}
        rowKey={(s) => s.id}
        filters={FILTERS}
        caption="Suppressions"
        empty={
          filtered
            ? { icon: SearchIcon, title: 'No suppressions match', description: 'Try the start of another address or domain, or clear the filters.' }
            : {
                icon: BanIcon,
                title: 'Nothing is suppressed',
                description: 'Bounces, complaints and unsubscribes land here; you can also paste a list.',
                action: addButton,
              }
        }
      />
      {adding ? <AddDialog onClose={() => setAdding(false)} /> : null}
    </div>
  )
}
