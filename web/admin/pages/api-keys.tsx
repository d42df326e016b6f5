import { useMutation, useQueryClient } from '@tanstack/react-query'
import { KeyRoundIcon, PencilIcon, PlusIcon, PowerIcon, PowerOffIcon, RotateCcwIcon, Trash2Icon } from 'lucide-react'
import { useMemo, useState, type FormEvent } from 'react'
import { toast } from 'sonner'
import { parseIpRule } from '../../../src/lib/ip-allowlist'
import { SelectField } from '../components/select-field'
import { FormDialog } from '../components/form-dialog'
import { actionsColumn, RowActions } from '../components/row-actions'
import { ConfirmDialog } from '../components/confirm-dialog'
import { DataTable, type Column } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { RoleField } from '../components/role-field'
import { SecretDialog } from '../components/secret-dialog'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { Checkbox } from '../components/ui/checkbox'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { Label } from '../components/ui/label'
import { SelectItem } from '../components/ui/select'
import { Textarea } from '../components/ui/textarea'
import { reportError } from '../lib/form-errors'
import { api, ApiError, errorMessage, fieldError } from '../lib/api'
import { can, useSession } from '../lib/session'
import { useUrlQuery } from '../lib/url-query'
import { formatDateTime, formatNumber, timeAgo } from '../lib/utils'

/** A key as GET /api/v2/api-keys answers. */
interface ApiKey {
  id: number
  name: string
  prefix: string
  role: { id: number; name: string }
  rate_limit: number | null
  allowed_ips: string[]
  status: 'active' | 'inactive'
  last_used_at: string | null
  last_used_ip: string | null
  created_at: string
  deleted_at: string | null
}

/** Allowlist entries from the text area: one per line (commas also separate), blanks ignored. */
export function allowlistEntries(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((e) => e.trim())
    .filter(Boolean)
}

/**
 * What is wrong with the allowlist, checked as the operator types with the same parser the
 * API applies (src/lib/ip-allowlist.ts), one message per bad entry; null when all are good.
 */
export function allowlistProblems(text: string): string[] | null {
  const errors: string[] = []
  for (const entry of allowlistEntries(text)) {
    const r = parseIpRule(entry)
    if (!r.ok) errors.push(r.error)
  }
  return errors.length ? errors : null
}

/** The rate limit field's value: a number of requests per minute, "no limit", or (on create) the server default. */
interface LimitState {
  text: string
  unlimited: boolean
}

function limitError(l: LimitState): string | null {
  if (l.unlimited || l.text.trim() === '') return null
  const n = Number(l.text)
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) return 'Enter a whole number of requests per minute, from 1 to 1,000,000.'
  return null
}

function limitValue(l: LimitState): number | null | undefined {
  if (l.unlimited) return null
  return l.text.trim() === '' ? undefined : Number(l.text)
}

function describeLimit(n: number | null): string {
  return n === null ? 'No limit' : `${formatNumber(n)}/min`
}

/** The fields shared by the create and edit dialogs. */
function KeyFields({
  name,
  setName,
  roleId,
  setRoleId,
  limit,
  setLimit,
  allowlist,
  setAllowlist,
  error,
  creating,
}: {
  name: string
  setName: (v: string) => void
  roleId: string
  setRoleId: (v: string) => void
  limit: LimitState
  setLimit: (v: LimitState) => void
  allowlist: string
  setAllowlist: (v: string) => void
  error: unknown
  creating: boolean
}) {
  const liveAllowlist = useMemo(() => allowlistProblems(allowlist), [allowlist])
  return (
    <div className="grid gap-4">
      <FormField label="Name" hint="What the key is for, e.g. the application that uses it." error={fieldError(error, 'name')}>
        <Input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} autoComplete="off" />
      </FormField>
      <RoleField value={roleId} onChange={setRoleId} hint="What the key may do." error={fieldError(error, 'role_id')} />
      <div className="grid gap-2">
        <FormField
          label="Rate limit (requests per minute)"
          hint={creating ? 'Empty: the server’s default limit.' : 'Requests per minute before the API answers 429.'}
          error={limitError(limit) ?? fieldError(error, 'rate_limit')}
        >
          <Input
            type="number"
            inputMode="numeric"
            min={1}
            max={1_000_000}
            value={limit.unlimited ? '' : limit.text}
            disabled={limit.unlimited}
            placeholder={limit.unlimited ? 'No limit' : creating ? 'Server default' : ''}
            onChange={(e) => setLimit({ ...limit, text: e.target.value })}
          />
        </FormField>
        <div className="flex items-center gap-2">
          <Checkbox id="key-unlimited" checked={limit.unlimited} onCheckedChange={(c) => setLimit({ ...limit, unlimited: c === true })} />
          <Label htmlFor="key-unlimited" className="font-normal">
            No limit
          </Label>
        </div>
      </div>
      <FormField
        label="IP allowlist"
        hint="One address, range (first-last) or CIDR block per line, IPv4 or IPv6. Empty: any address may use the key."
        error={liveAllowlist ?? fieldError(error, 'allowed_ips')}
      >
        <Textarea
          value={allowlist}
          onChange={(e) => setAllowlist(e.target.value)}
          rows={4}
          className="font-mono text-sm"
          spellCheck={false}
          placeholder={'203.0.113.7\n198.51.100.0/24\n2001:db8::/32'}
        />
      </FormField>
    </div>
  )
}

/** The create dialog; on success hands the new key (shown once) to the page. */
function CreateKeyDialog({
  open,
  onOpenChange,
  onCreated,
}: {
  open: boolean
  onOpenChange: (o: boolean) => void
  onCreated: (key: string, name: string) => void
}) {
  const qc = useQueryClient()
  const [name, setName] = useState('')
  const [roleId, setRoleId] = useState('')
  const [limit, setLimit] = useState<LimitState>({ text: '', unlimited: false })
  const [allowlist, setAllowlist] = useState('')
  const create = useMutation({
    mutationFn: () =>
      api<ApiKey & { key: string }>('POST', '/api/v2/api-keys', {
        name: name.trim(),
        role_id: Number(roleId),
        ...(limitValue(limit) !== undefined ? { rate_limit: limitValue(limit) } : {}),
        allowed_ips: allowlistEntries(allowlist),
      }),
    onSuccess: (k) => {
      qc.invalidateQueries({ queryKey: ['api-keys'] })
      qc.invalidateQueries({ queryKey: ['roles'] })
      reset()
      onCreated(k.key, k.name)
    },
    onError: (e) => {
      reportError(e)
    },
  })
  const reset = () => {
    setName('')
    setRoleId('')
    setLimit({ text: '', unlimited: false })
    setAllowlist('')
    create.reset()
  }
  const invalid = !name.trim() || !roleId || limitError(limit) !== null || allowlistProblems(allowlist) !== null
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (!invalid) create.mutate()
  }
  return (
    <FormDialog
      open={open}
      onOpenChange={(o) => {
        if (!o) reset()
        onOpenChange(o)
      }}
      title="New API key"
      description="The key is shown once, right after it is made."
      onSubmit={submit}
      onCancel={() => (reset(), onOpenChange(false))}
      submitLabel={create.isPending ? 'Creating…' : 'Create key'}
      submitDisabled={invalid || create.isPending}
      formClassName="grid gap-5"
    >
      <KeyFields
        name={name}
        setName={setName}
        roleId={roleId}
        setRoleId={setRoleId}
        limit={limit}
        setLimit={setLimit}
        allowlist={allowlist}
        setAllowlist={setAllowlist}
        error={create.error}
        creating
      />
      {create.error && !(create.error instanceof ApiError && create.error.details) ? (
        <p role="alert" className="text-sm text-destructive">
          {errorMessage(create.error)}
        </p>
      ) : null}
    </FormDialog>
  )
}

/** The edit dialog: name, role, rate limit and allowlist (the key value never changes). */
function EditKeyDialog({ apiKey, onClose }: { apiKey: ApiKey; onClose: () => void }) {
  const qc = useQueryClient()
  const [name, setName] = useState(apiKey.name)
  const [roleId, setRoleId] = useState(String(apiKey.role.id))
  const [limit, setLimit] = useState<LimitState>({ text: apiKey.rate_limit === null ? '' : String(apiKey.rate_limit), unlimited: apiKey.rate_limit === null })
  const [allowlist, setAllowlist] = useState(apiKey.allowed_ips.join('\n'))
  const save = useMutation({
    mutationFn: () =>
      api<ApiKey>('PATCH', `/api/v2/api-keys/${apiKey.id}`, {
        name: name.trim(),
        role_id: Number(roleId),
        rate_limit: limit.unlimited ? null : Number(limit.text),
        allowed_ips: allowlistEntries(allowlist),
      }),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ['api-keys'] })
      qc.invalidateQueries({ queryKey: ['roles'] })
      toast.success(`“${name.trim()}” saved`)
      onClose()
    },
    onError: (e) => {
      reportError(e)
    },
  })
  const needsNumber = !limit.unlimited && limit.text.trim() === ''
  const invalid = !name.trim() || !roleId || needsNumber || limitError(limit) !== null || allowlistProblems(allowlist) !== null
  return (
    <FormDialog
      open
      onOpenChange={(o) => !o && onClose()}
      title={<>Edit “{apiKey.name}”</>}
      description={
        <>
          Changes apply to the key’s next request. The key itself (<code className="font-mono">{apiKey.prefix}…</code>) stays the same.
        </>
      }
      onSubmit={() => {
        if (!invalid) save.mutate()
      }}
      onCancel={onClose}
      submitLabel={save.isPending ? 'Saving…' : 'Save changes'}
      submitDisabled={invalid || save.isPending}
      formClassName="grid gap-5"
    >
      <KeyFields
        name={name}
        setName={setName}
        roleId={roleId}
        setRoleId={setRoleId}
        limit={limit}
        setLimit={setLimit}
        allowlist={allowlist}
        setAllowlist={setAllowlist}
        error={save.error}
        creating={false}
      />
    </FormDialog>
  )
}

type Confirm = { kind: 'deactivate' | 'delete'; key: ApiKey } | null

/** The row's menu: edit, activate or deactivate, delete; restore for a deleted key. */
function KeyActions({
  apiKey,
  onEdit,
  onConfirm,
  onActivate,
  onRestore,
}: {
  apiKey: ApiKey
  onEdit: () => void
  onConfirm: (c: Confirm) => void
  onActivate: () => void
  onRestore: () => void
}) {
  const { data: session } = useSession()
  const admin = session?.admin
  if (apiKey.deleted_at) {
    return can(admin, 'api_keys.restore') ? (
      <Button variant="outline" size="sm" onClick={onRestore}>
        <RotateCcwIcon /> Restore
      </Button>
    ) : null
  }
  const mayUpdate = can(admin, 'api_keys.update')
  const mayDelete = can(admin, 'api_keys.delete')
  return (
    <RowActions
      name={apiKey.name}
      actions={[
        { label: 'Edit', icon: PencilIcon, onSelect: onEdit, hidden: !mayUpdate },
        apiKey.status === 'active'
          ? { label: 'Deactivate', icon: PowerOffIcon, onSelect: () => onConfirm({ kind: 'deactivate', key: apiKey }), hidden: !mayUpdate }
          : { label: 'Activate', icon: PowerIcon, onSelect: onActivate, hidden: !mayUpdate },
        { label: 'Delete', icon: Trash2Icon, onSelect: () => onConfirm({ kind: 'delete', key: apiKey }), hidden: !mayDelete, destructive: true },
      ]}
    />
  )
}

/** API keys: list with filters, create (shown once), edit, activate / deactivate, delete and restore. */
export function ApiKeysPage() {
  const qc = useQueryClient()
  const { data: session } = useSession()
  const [params, setParams] = useUrlQuery()
  const [creating, setCreating] = useState(false)
  const [secret, setSecret] = useState<{ key: string; name: string } | null>(null)
  const [editing, setEditing] = useState<ApiKey | null>(null)
  const [confirm, setConfirm] = useState<Confirm>(null)
  const state = params.get('state') ?? 'live'
  const status = params.get('status') ?? 'any'

  const change = useMutation({
    mutationFn: ({ key, action }: { key: ApiKey; action: 'activate' | 'deactivate' | 'delete' | 'restore' }) => {
      if (action === 'delete') return api('DELETE', `/api/v2/api-keys/${key.id}`)
      if (action === 'restore') return api('POST', `/api/v2/api-keys/${key.id}/restore`)
      return api('PATCH', `/api/v2/api-keys/${key.id}`, { status: action === 'activate' ? 'active' : 'inactive' })
    },
    onSuccess: (_, { key, action }) => {
      qc.invalidateQueries({ queryKey: ['api-keys'] })
      qc.invalidateQueries({ queryKey: ['roles'] })
      const done = { activate: 'activated', deactivate: 'deactivated', delete: 'deleted', restore: 'restored' }[action]
      toast.success(`“${key.name}” ${done}`)
    },
    onError: (e) => toast.error(errorMessage(e)),
  })

  const columns: Column<ApiKey>[] = [
    {
      id: 'name',
      header: 'Name',
      cell: (k) => (
        <div className="grid gap-0.5">
          <span className="font-medium">{k.name}</span>
          <code className="font-mono text-xs text-muted-foreground">{k.prefix}…</code>
          <span className="text-xs text-muted-foreground sm:hidden">{k.role.name}</span>
        </div>
      ),
    },
    { id: 'role', header: 'Role', className: 'hidden sm:table-cell', cell: (k) => k.role.name },
    {
      id: 'status',
      header: 'Status',
      cell: (k) =>
        k.deleted_at ? (
          <Badge variant="destructive">Deleted</Badge>
        ) : k.status === 'active' ? (
          <Badge variant="success">Active</Badge>
        ) : (
          <Badge variant="secondary">Inactive</Badge>
        ),
    },
    { id: 'limit', header: 'Rate limit', className: 'hidden md:table-cell', cell: (k) => <span className="tabular-nums">{describeLimit(k.rate_limit)}</span> },
    {
      id: 'allowlist',
      header: 'Allowlist',
      className: 'hidden lg:table-cell',
      cell: (k) =>
        k.allowed_ips.length === 0 ? (
          <span className="text-muted-foreground">Any address</span>
        ) : (
          <span className="font-mono text-xs" title={k.allowed_ips.join('\n')}>
            {k.allowed_ips[0]}
            {k.allowed_ips.length > 1 ? <span className="text-muted-foreground"> +{k.allowed_ips.length - 1} more</span> : null}
          </span>
        ),
    },
    {
      id: 'last',
      header: 'Last access',
      className: 'hidden md:table-cell',
      cell: (k) =>
        k.last_used_at ? (
          <div className="grid gap-0.5">
            <time dateTime={k.last_used_at} title={formatDateTime(k.last_used_at)}>
              {timeAgo(k.last_used_at)}
            </time>
            {k.last_used_ip ? <span className="font-mono text-xs text-muted-foreground">{k.last_used_ip}</span> : null}
          </div>
        ) : (
          <span className="text-muted-foreground">Never used</span>
        ),
    },
    actionsColumn((k) => (
      <KeyActions
        apiKey={k}
        onEdit={() => setEditing(k)}
        onConfirm={setConfirm}
        onActivate={() => change.mutate({ key: k, action: 'activate' })}
        onRestore={() => change.mutate({ key: k, action: 'restore' })}
      />
    )),
  ]

  const newButton = can(session?.admin, 'api_keys.create') ? (
    <Button onClick={() => setCreating(true)}>
      <PlusIcon /> New API key
    </Button>
  ) : null

  return (
    <div className="grid gap-6">
      <PageHeader title="API keys" description="Keys for the REST API, their roles, limits and allowlists." actions={newButton} />
      <div className="flex flex-wrap items-end gap-3">
        <div className="grid gap-1.5">
          <Label htmlFor="keys-state">Show</Label>
          <SelectField id="keys-state" className="w-40" value={state} onValueChange={(v) => setParams({ state: v === 'live' ? null : v, page: null })}>
            <SelectItem value="live">Current keys</SelectItem>
            <SelectItem value="deleted">Deleted keys</SelectItem>
            <SelectItem value="all">All keys</SelectItem>
          </SelectField>
        </div>
        <div className="grid gap-1.5">
          <Label htmlFor="keys-status">Status</Label>
          <SelectField id="keys-status" className="w-36" value={status} onValueChange={(v) => setParams({ status: v === 'any' ? null : v, page: null })}>
            <SelectItem value="any">Any status</SelectItem>
            <SelectItem value="active">Active</SelectItem>
            <SelectItem value="inactive">Inactive</SelectItem>
          </SelectField>
        </div>
      </div>
      <DataTable<ApiKey>
        path="/api/v2/api-keys"
        queryKey="api-keys"
        columns={columns}
        rowKey={(k) => k.id}
        filters={['state', 'status']}
        caption="API keys"
        empty={
          state === 'deleted'
            ? { icon: Trash2Icon, title: 'No deleted keys', description: 'Deleted keys stay here and can be restored.' }
            : { icon: KeyRoundIcon, title: 'No keys yet', description: 'Make a key for each application that calls the API.', action: newButton }
        }
      />
      <CreateKeyDialog open={creating} onOpenChange={setCreating} onCreated={(key, name) => (setCreating(false), setSecret({ key, name }))} />
      {editing ? <EditKeyDialog key={editing.id} apiKey={editing} onClose={() => setEditing(null)} /> : null}
      <SecretDialog
        open={secret !== null}
        title={`“${secret?.name ?? ''}” is ready`}
        description={
          <>
            Send it in the <code className="font-mono">Authorization: Bearer …</code> header. Mailroom keeps only a hash of it.
          </>
        }
        label="API key"
        value={secret?.key ?? ''}
        onClose={() => setSecret(null)}
      />
      <ConfirmDialog
        open={confirm !== null}
        onOpenChange={(o) => !o && setConfirm(null)}
        title={
          <>
            {confirm?.kind === 'delete' ? 'Delete' : 'Deactivate'} “{confirm?.key.name}”?
          </>
        }
        description={
          confirm?.kind === 'delete'
            ? 'The key stops working at once. A deleted key can be restored from the deleted keys list.'
            : 'The key is refused from its next request until it is activated again.'
        }
        confirmLabel={confirm?.kind === 'delete' ? 'Delete key' : 'Deactivate key'}
        onConfirm={() => confirm && change.mutate({ key: confirm.key, action: confirm.kind })}
      />
    </div>
  )
}
