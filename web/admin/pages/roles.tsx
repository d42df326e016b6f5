import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { ArrowLeftIcon, LockIcon, PlusIcon, ShieldCheckIcon, Trash2Icon } from 'lucide-react'
import { useMemo, useState, type FormEvent } from 'react'
import { toast } from 'sonner'
import { Link, Route, Switch, useLocation, useParams } from 'wouter'
import { ConfirmDialog } from '../components/confirm-dialog'
import { DataTable, type Column } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { ErrorState, LoadingState } from '../components/states'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../components/ui/card'
import { Checkbox } from '../components/ui/checkbox'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { Label } from '../components/ui/label'
import { Switch as Toggle } from '../components/ui/switch'
import { Textarea } from '../components/ui/textarea'
import { reportError } from '../lib/form-errors'
import { api, errorMessage, fieldError } from '../lib/api'
import { usePermissionTree, type PermissionGroup, type Role } from '../lib/roles'
import { can, useSession } from '../lib/session'
import { formatNumber } from '../lib/utils'

const ALL = '*'

function permissionSummary(role: Role, total: number | undefined): string {
  if (role.permissions.includes(ALL)) return 'Every permission'
  const n = role.permissions.length
  return total ? `${formatNumber(n)} of ${formatNumber(total)}` : formatNumber(n)
}

function RolesList() {
  const [, navigate] = useLocation()
  const { data: session } = useSession()
  const tree = usePermissionTree()
  const total = tree.data?.reduce((n, g) => n + g.permissions.length, 0)
  const newButton = can(session?.admin, 'roles.create') ? (
    <Button asChild>
      <Link href="/new">
        <PlusIcon /> New role
      </Link>
    </Button>
  ) : null
  const columns: Column<Role>[] = [
    {
      id: 'name',
      header: 'Name',
      cell: (r) => (
        <div className="grid gap-0.5">
          <Link href={`/${r.id}`} className="font-medium hover:underline focus-visible:underline" onClick={(e) => e.stopPropagation()}>
            {r.name}
          </Link>
          {r.description ? <span className="line-clamp-1 text-xs text-muted-foreground">{r.description}</span> : null}
        </div>
      ),
    },
    {
      id: 'kind',
      header: 'Kind',
      cell: (r) =>
        r.builtin ? (
          <Badge variant="secondary">
            <LockIcon aria-hidden="true" /> Built-in
          </Badge>
        ) : (
          <Badge variant="outline">Custom</Badge>
        ),
    },
    { id: 'permissions', header: 'Permissions', cell: (r) => <span className="tabular-nums">{permissionSummary(r, total)}</span> },
    { id: 'keys', header: 'API keys', className: 'text-right', cell: (r) => <span className="tabular-nums">{formatNumber(r.key_count)}</span> },
  ]
  return (
    <div className="grid gap-6">
      <PageHeader
        title="Roles"
        description="What each API key and administrator may do. A change applies to every key of the role at its next request."
        actions={newButton}
      />
      <DataTable<Role>
        path="/api/v2/roles"
        queryKey="roles"
        columns={columns}
        rowKey={(r) => r.id}
        caption="Roles"
        onRowClick={(r) => navigate(`/${r.id}`)}
        empty={{
          icon: ShieldCheckIcon,
          title: 'No roles yet',
          description: 'A role is a set of permissions given to keys and administrators.',
          action: newButton,
        }}
      />
    </div>
  )
}

/** One group of the tree: a checkbox for the whole group (indeterminate when some are granted) and one per action. */
function PermissionGroupBox({
  group,
  granted,
  onChange,
  disabled,
}: {
  group: PermissionGroup
  granted: Set<string>
  onChange: (ids: string[], grant: boolean) => void
  disabled: boolean
}) {
  const ids = group.permissions.map((p) => p.id)
  const count = ids.filter((id) => granted.has(id)).length
  const state = count === 0 ? false : count === ids.length ? true : 'indeterminate'
  const groupId = `perm-group-${group.id}`
  return (
    <fieldset className="grid content-start gap-3 rounded-lg border bg-card p-4" data-group={group.id}>
      <legend className="sr-only">{group.name}</legend>
      <div className="flex items-center gap-2">
        <Checkbox id={groupId} checked={state} disabled={disabled} onCheckedChange={(c) => onChange(ids, c === true)} />
        <Label htmlFor={groupId} className="font-semibold">
          {group.name}
        </Label>
        <span className="ml-auto text-xs text-muted-foreground tabular-nums" aria-hidden="true">
          {count}/{ids.length}
        </span>
      </div>
      <div className="grid gap-2 pl-6">
        {group.permissions.map((p) => {
          const id = `perm-${p.id}`
          return (
            <div key={p.id} className="flex items-center gap-2">
              <Checkbox id={id} checked={granted.has(p.id)} disabled={disabled} onCheckedChange={(c) => onChange([p.id], c === true)} />
              <Label htmlFor={id} className="font-normal" title={p.id}>
                {p.description}
              </Label>
            </div>
          )
        })}
      </div>
    </fieldset>
  )
}

/** Creates (no role) or edits a role: name, description and the permission tree. */
function RoleForm({ role }: { role: Role | null }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const { data: session } = useSession()
  const tree = usePermissionTree()
  const [name, setName] = useState(role?.name ?? '')
  const [description, setDescription] = useState(role?.description ?? '')
  const [everything, setEverything] = useState(role?.permissions.includes(ALL) ?? false)
  const [granted, setGranted] = useState(() => new Set((role?.permissions ?? []).filter((p) => p !== ALL)))
  const [confirmDelete, setConfirmDelete] = useState(false)
  const readOnly = role?.builtin === true || !can(session?.admin, role ? 'roles.update' : 'roles.create')
  const allIds = useMemo(() => tree.data?.flatMap((g) => g.permissions.map((p) => p.id)) ?? [], [tree.data])

  const save = useMutation({
    mutationFn: () => {
      const body = { name: name.trim(), description: description.trim(), permissions: everything ? [ALL] : allIds.filter((id) => granted.has(id)) }
      return role ? api<Role>('PATCH', `/api/v2/roles/${role.id}`, body) : api<Role>('POST', '/api/v2/roles', body)
    },
    onSuccess: (saved) => {
      qc.invalidateQueries({ queryKey: ['roles'] })
      qc.invalidateQueries({ queryKey: ['admin-session'] })
      toast.success(role ? `“${saved.name}” saved` : `“${saved.name}” created`)
      if (!role) navigate(`/${saved.id}`, { replace: true })
    },
    onError: (e) => {
      reportError(e)
    },
  })
  const remove = useMutation({
    mutationFn: () => api('DELETE', `/api/v2/roles/${role!.id}`),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ['roles'] })
      toast.success(`“${role!.name}” deleted`)
      navigate('/')
    },
    onError: (e) => toast.error(errorMessage(e)),
  })

  const change = (ids: string[], grant: boolean) =>
    setGranted((prev) => {
      const next = new Set(prev)
      for (const id of ids) grant ? next.add(id) : next.delete(id)
      return next
    })

  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (!readOnly && name.trim()) save.mutate()
  }

  if (tree.isPending) return <LoadingState rows={8} label="Loading permissions" />
  if (tree.isError) return <ErrorState error={tree.error} onRetry={() => tree.refetch()} />
  const grantedCount = everything ? allIds.length : allIds.filter((id) => granted.has(id)).length

  return (
    <form onSubmit={submit} className="grid gap-6">
      <div>
        <Button asChild variant="ghost" size="sm" className="-ml-2">
          <Link href="/">
            <ArrowLeftIcon /> Roles
          </Link>
        </Button>
      </div>
      <PageHeader
        title={role ? role.name : 'New role'}
        description={
          role?.builtin
            ? 'A built-in role: it cannot be changed or deleted. Make a new role to grant a different set.'
            : 'Tick what the role may do; everything left unticked is denied.'
        }
        actions={
          readOnly ? (
            role?.builtin ? (
              <Badge variant="secondary">
                <LockIcon aria-hidden="true" /> Built-in, read-only
              </Badge>
            ) : null
          ) : (
            <>
              {role && can(session?.admin, 'roles.delete') ? (
                <Button type="button" variant="outline" onClick={() => setConfirmDelete(true)}>
                  <Trash2Icon /> Delete
                </Button>
              ) : null}
              <Button type="submit" disabled={!name.trim() || save.isPending}>
                {save.isPending ? 'Saving…' : role ? 'Save role' : 'Create role'}
              </Button>
            </>
          )
        }
      />
      <Card>
        <CardContent className="grid items-start gap-4 md:grid-cols-2">
          <FormField label="Name" error={fieldError(save.error, 'name')}>
            <Input value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} disabled={readOnly} autoComplete="off" />
          </FormField>
          <FormField label="Description" hint="Optional: who the role is for." error={fieldError(save.error, 'description')}>
            <Textarea value={description} onChange={(e) => setDescription(e.target.value)} rows={1} maxLength={1000} disabled={readOnly} className="min-h-9" />
          </FormField>
        </CardContent>
      </Card>
      <Card>
        <CardHeader className="flex flex-col gap-3 sm:flex-row sm:items-start sm:justify-between">
          <div className="grid gap-1.5">
            <CardTitle>Permissions</CardTitle>
            <CardDescription>
              <span className="tabular-nums">{formatNumber(grantedCount)}</span> of <span className="tabular-nums">{formatNumber(allIds.length)}</span> granted.
              A key or administrator may only give a role what it holds itself.
            </CardDescription>
          </div>
          {!readOnly && !everything ? (
            <div className="flex gap-2">
              <Button type="button" variant="outline" size="sm" onClick={() => change(allIds, true)}>
                Grant all
              </Button>
              <Button type="button" variant="outline" size="sm" onClick={() => change(allIds, false)}>
                Deny all
              </Button>
            </div>
          ) : null}
        </CardHeader>
        <CardContent className="grid gap-4">
          <div className="flex items-start gap-3 rounded-lg border bg-muted/40 p-3">
            <Toggle id="perm-everything" checked={everything} onCheckedChange={setEverything} disabled={readOnly} />
            <div className="grid gap-0.5">
              <Label htmlFor="perm-everything">Full access</Label>
              <p className="text-xs text-muted-foreground">Every permission, including those added by later versions of Mailroom.</p>
            </div>
          </div>
          {fieldError(save.error, 'permissions') ? (
            <p role="alert" className="text-sm text-destructive">
              {fieldError(save.error, 'permissions')}
            </p>
          ) : null}
          <div className="grid gap-3 sm:grid-cols-2 xl:grid-cols-3 2xl:grid-cols-4" aria-label="Permission groups" role="group">
            {tree.data.map((g) => (
              <PermissionGroupBox key={g.id} group={g} granted={everything ? new Set(allIds) : granted} onChange={change} disabled={readOnly || everything} />
            ))}
          </div>
        </CardContent>
      </Card>
      {role ? (
        <ConfirmDialog
          open={confirmDelete}
          onOpenChange={setConfirmDelete}
          title={<>Delete “{role.name}”?</>}
          description={
            role.key_count > 0
              ? `${formatNumber(role.key_count)} API key${role.key_count === 1 ? ' is' : 's are'} bound to this role: move them to another role first.`
              : 'The role is removed for good. A role still bound to a key (deleted ones included) or an administrator cannot be deleted.'
          }
          confirmLabel="Delete role"
          onConfirm={() => remove.mutate()}
        />
      ) : null}
    </form>
  )
}

function RoleEditor() {
  const { id } = useParams<{ id: string }>()
  const role = useQuery({ queryKey: ['roles', 'one', id], queryFn: () => api<Role>('GET', `/api/v2/roles/${id}`) })
  if (role.isPending) return <LoadingState rows={8} label="Loading role" />
  if (role.isError) return <ErrorState error={role.error} onRetry={() => role.refetch()} />
  return <RoleForm key={role.data.id + role.data.updated_at} role={role.data} />
}

/** Roles: the list with key counts, and an editor over the whole permission tree. */
export function RolesPage() {
  return (
    <Switch>
      <Route path="/">
        <RolesList />
      </Route>
      <Route path="/new">
        <RoleForm role={null} />
      </Route>
      <Route path="/:id">
        <RoleEditor />
      </Route>
    </Switch>
  )
}
