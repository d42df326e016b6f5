import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { KeyRoundIcon, PlusIcon, ShieldIcon, TrashIcon, TriangleAlertIcon, UserCheckIcon, UserXIcon, UsersIcon } from 'lucide-react'
import { useState, type ReactNode } from 'react'
import { toast } from 'sonner'
import { FormDialog } from '../components/form-dialog'
import { actionsColumn, RowActions } from '../components/row-actions'
import { ConfirmDialog } from '../components/confirm-dialog'
import { DataTable, type Column } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { RoleField } from '../components/role-field'
import { ErrorState, LoadingState } from '../components/states'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../components/ui/card'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { reportError } from '../lib/form-errors'
import { api, errorMessage, fieldError } from '../lib/api'
import { can, useSession } from '../lib/session'
import { formatDateTime, formatNumber, timeAgo } from '../lib/utils'

/** An administrator as GET /api/v2/admins answers. */
interface AdminRow {
  id: number
  email: string
  role: { id: number; name: string }
  status: 'active' | 'disabled'
  last_sign_in_at: string | null
  created_at: string
}

/** GET /api/v2/system/settings. */
interface Settings {
  version: string
  hostname: string
  hostname_is_public: boolean
  public_url: string
  tracking_base_url: string
  listeners: { http: string; smtp: string | null; smtp_tls: string | null; mx: string | null }
  defaults: {
    from: string | null
    rate_limit: number | null
    max_message_age_seconds: number
    delivery_concurrency: number
    destination_concurrency: number
    allow_unverified_domains: boolean
    max_body_bytes: number
    smtp_max_message_bytes: number
  }
  console: { session_idle_minutes: number; session_max_hours: number; trust_proxy: boolean }
  sources: Record<string, { env: string; flag: string; description: string }>
}

const MIN_PASSWORD = 10

function passwordError(p: string): string | null {
  if (p && p.length < MIN_PASSWORD) return `At least ${MIN_PASSWORD} characters (${p.length} so far).`
  return null
}

function AddAdminDialog({ open, onOpenChange }: { open: boolean; onOpenChange: (o: boolean) => void }) {
  const qc = useQueryClient()
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [roleId, setRoleId] = useState('')
  const create = useMutation({
    mutationFn: () => api<AdminRow>('POST', '/api/v2/admins', { email: email.trim(), password, role_id: Number(roleId) }),
    onSuccess: (a) => {
      qc.invalidateQueries({ queryKey: ['admins'] })
      toast.success(`${a.email} can now sign in`)
      close()
    },
    onError: (e) => reportError(e),
  })
  const close = () => {
    setEmail('')
    setPassword('')
    setRoleId('')
    create.reset()
    onOpenChange(false)
  }
  const invalid = !email.trim() || password.length < MIN_PASSWORD || !roleId
  return (
    <FormDialog
      open={open}
      onOpenChange={(o) => (o ? onOpenChange(true) : close())}
      title="Add an administrator"
      description="Give the person their first password by a safe channel; they sign in at /admin."
      onSubmit={() => {
        if (!invalid) create.mutate()
      }}
      onCancel={close}
      submitLabel={create.isPending ? 'Adding…' : 'Add administrator'}
      submitDisabled={invalid || create.isPending}
      formClassName="grid gap-5"
    >
      <FormField label="Email" error={fieldError(create.error, 'email')}>
        <Input type="email" value={email} onChange={(e) => setEmail(e.target.value)} autoComplete="off" required />
      </FormField>
      <FormField label="Password" hint={`At least ${MIN_PASSWORD} characters.`} error={passwordError(password) ?? fieldError(create.error, 'password')}>
        <Input type="password" value={password} onChange={(e) => setPassword(e.target.value)} autoComplete="new-password" required />
      </FormField>
      <RoleField value={roleId} onChange={setRoleId} hint="What the person may do in the console." error={fieldError(create.error, 'role_id')} />
    </FormDialog>
  )
}

/** Change an administrator's role, or set a new password. */
function EditAdminDialog({ admin, mode, onClose }: { admin: AdminRow; mode: 'role' | 'password'; onClose: () => void }) {
  const qc = useQueryClient()
  const [roleId, setRoleId] = useState(String(admin.role.id))
  const [password, setPassword] = useState('')
  const save = useMutation({
    mutationFn: () => api<AdminRow>('PATCH', `/api/v2/admins/${admin.id}`, mode === 'role' ? { role_id: Number(roleId) } : { password }),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ['admins'] })
      qc.invalidateQueries({ queryKey: ['admin-session'] })
      toast.success(mode === 'role' ? `${admin.email}’s role changed` : `${admin.email}’s password changed; their other sessions ended`)
      onClose()
    },
    onError: (e) => reportError(e),
  })
  const invalid = mode === 'role' ? !roleId : password.length < MIN_PASSWORD
  return (
    <FormDialog
      open
      onOpenChange={(o) => !o && onClose()}
      title={mode === 'role' ? 'Change role' : 'Reset password'}
      description={
        <>
          {mode === 'role'
            ? `The new role applies to ${admin.email} at their next request.`
            : `${admin.email} is signed out everywhere and signs in with the new password.`}
        </>
      }
      onSubmit={() => {
        if (!invalid) save.mutate()
      }}
      onCancel={onClose}
      submitLabel={save.isPending ? 'Saving…' : mode === 'role' ? 'Change role' : 'Set password'}
      submitDisabled={invalid || save.isPending}
      formClassName="grid gap-5"
    >
      {mode === 'role' ? (
        <RoleField value={roleId} onChange={setRoleId} hint="What the person may do in the console." error={fieldError(save.error, 'role_id')} />
      ) : (
        <FormField label="New password" hint={`At least ${MIN_PASSWORD} characters.`} error={passwordError(password) ?? fieldError(save.error, 'password')}>
          <Input type="password" value={password} onChange={(e) => setPassword(e.target.value)} autoComplete="new-password" required />
        </FormField>
      )}
    </FormDialog>
  )
}

function Administrators() {
  const qc = useQueryClient()
  const { data: session } = useSession()
  const me = session?.admin
  const [adding, setAdding] = useState(false)
  const [editing, setEditing] = useState<{ admin: AdminRow; mode: 'role' | 'password' } | null>(null)
  const [confirm, setConfirm] = useState<{ admin: AdminRow; kind: 'disable' | 'delete' } | null>(null)
  const change = useMutation({
    mutationFn: ({ admin, kind }: { admin: AdminRow; kind: 'enable' | 'disable' | 'delete' }) =>
      kind === 'delete'
        ? api('DELETE', `/api/v2/admins/${admin.id}`)
        : api('PATCH', `/api/v2/admins/${admin.id}`, { status: kind === 'enable' ? 'active' : 'disabled' }),
    onSuccess: (_, { admin, kind }) => {
      qc.invalidateQueries({ queryKey: ['admins'] })
      toast.success(`${admin.email} ${{ enable: 'enabled', disable: 'disabled', delete: 'deleted' }[kind]}`)
    },
    onError: (e) => toast.error(errorMessage(e)),
  })
  const mayUpdate = can(me, 'admins.update')
  const mayDelete = can(me, 'admins.delete')
  const columns: Column<AdminRow>[] = [
    {
      id: 'email',
      header: 'Email',
      cell: (a) => (
        <span className="font-medium">
          {a.email}
          {String(a.id) === String(me?.id) ? <span className="ml-2 text-xs font-normal text-muted-foreground">(you)</span> : null}
        </span>
      ),
    },
    { id: 'role', header: 'Role', cell: (a) => a.role.name },
    {
      id: 'status',
      header: 'Status',
      cell: (a) => (a.status === 'active' ? <Badge variant="success">Active</Badge> : <Badge variant="secondary">Disabled</Badge>),
    },
    {
      id: 'last',
      header: 'Last sign-in',
      cell: (a) =>
        a.last_sign_in_at ? (
          <time dateTime={a.last_sign_in_at} title={formatDateTime(a.last_sign_in_at)}>
            {timeAgo(a.last_sign_in_at)}
          </time>
        ) : (
          <span className="text-muted-foreground">Never</span>
        ),
    },
    actionsColumn((a) => (
      <RowActions
        name={a.email}
        actions={[
          { label: 'Change role', icon: ShieldIcon, onSelect: () => setEditing({ admin: a, mode: 'role' }), hidden: !mayUpdate },
          { label: 'Reset password', icon: KeyRoundIcon, onSelect: () => setEditing({ admin: a, mode: 'password' }), hidden: !mayUpdate },
          a.status === 'active'
            ? { label: 'Disable', icon: UserXIcon, onSelect: () => setConfirm({ admin: a, kind: 'disable' }), hidden: !mayUpdate }
            : { label: 'Enable', icon: UserCheckIcon, onSelect: () => change.mutate({ admin: a, kind: 'enable' }), hidden: !mayUpdate },
          { label: 'Delete', icon: TrashIcon, onSelect: () => setConfirm({ admin: a, kind: 'delete' }), hidden: !mayDelete, destructive: true },
        ]}
      />
    )),
  ]
  const addButton = can(me, 'admins.create') ? (
    <Button onClick={() => setAdding(true)}>
      <PlusIcon /> Add administrator
    </Button>
  ) : null
  return (
    <section aria-labelledby="admins-heading" className="grid gap-4">
      <div className="flex flex-col gap-3 sm:flex-row sm:items-end sm:justify-between">
        <div className="grid gap-1">
          <h2 id="admins-heading" className="text-lg font-semibold">
            Administrators
          </h2>
          <p className="text-sm text-muted-foreground">The people who sign in to this console. Each has a role, as API keys do.</p>
        </div>
        {addButton}
      </div>
      <DataTable<AdminRow>
        path="/api/v2/admins"
        queryKey="admins"
        columns={columns}
        rowKey={(a) => a.id}
        caption="Administrators"
        empty={{ icon: UsersIcon, title: 'No administrators', description: 'Add the people who run this server.', action: addButton }}
      />
      <AddAdminDialog open={adding} onOpenChange={setAdding} />
      {editing ? (
        <EditAdminDialog key={`${editing.admin.id}-${editing.mode}`} admin={editing.admin} mode={editing.mode} onClose={() => setEditing(null)} />
      ) : null}
      <ConfirmDialog
        open={confirm !== null}
        onOpenChange={(o) => !o && setConfirm(null)}
        title={
          <>
            {confirm?.kind === 'delete' ? 'Delete' : 'Disable'} {confirm?.admin.email}?
          </>
        }
        description={
          confirm?.kind === 'delete'
            ? 'Their account is removed and their sessions end at once. Their past actions stay in the activity log.'
            : 'They are signed out at once and cannot sign in until enabled again.'
        }
        confirmLabel={confirm?.kind === 'delete' ? 'Delete administrator' : 'Disable administrator'}
        onConfirm={() => confirm && change.mutate({ admin: confirm.admin, kind: confirm.kind })}
      />
    </section>
  )
}

/** One setting: its name, value, and the flag and environment variable that change it. */
function SettingRow({ label, value, source }: { label: string; value: ReactNode; source?: { env: string; flag: string; description: string } }) {
  return (
    <div className="grid gap-1 py-3 first:pt-0 last:pb-0 sm:grid-cols-[minmax(10rem,14rem)_1fr] sm:gap-4">
      <dt className="text-sm font-medium">{label}</dt>
      <dd className="grid min-w-0 gap-1">
        <div className="text-sm break-words">{value}</div>
        {source ? (
          <div className="flex flex-wrap gap-x-3 gap-y-1 text-xs text-muted-foreground" title={source.description}>
            <span>
              Flag <code className="rounded bg-muted px-1 py-0.5 font-mono">{source.flag}</code>
            </span>
            <span>
              Env <code className="rounded bg-muted px-1 py-0.5 font-mono">{source.env}</code>
            </span>
          </div>
        ) : null}
      </dd>
    </div>
  )
}

const mono = (v: string | null, off = 'Off') => (v ? <code className="font-mono">{v}</code> : <span className="text-muted-foreground">{off}</span>)
const bytes = (n: number) => (n >= 1024 * 1024 ? `${formatNumber(Math.round((n / 1024 / 1024) * 10) / 10)} MiB` : `${formatNumber(n)} bytes`)
const duration = (s: number) => (s % 86400 === 0 ? `${s / 86400} days` : s % 3600 === 0 ? `${s / 3600} hours` : `${formatNumber(s)} seconds`)

function SettingsCard({ title, description, children }: { title: string; description: string; children: ReactNode }) {
  return (
    <Card>
      <CardHeader>
        <CardTitle as="h3">{title}</CardTitle>
        <CardDescription>{description}</CardDescription>
      </CardHeader>
      <CardContent>
        <dl className="divide-y">{children}</dl>
      </CardContent>
    </Card>
  )
}

function ServerSettings() {
  const q = useQuery({ queryKey: ['system-settings'], queryFn: () => api<Settings>('GET', '/api/v2/system/settings') })
  if (q.isPending) return <LoadingState rows={6} label="Loading settings" />
  if (q.isError) return <ErrorState error={q.error} onRetry={() => q.refetch()} />
  const s = q.data
  const src = (path: string) => s.sources[path]
  return (
    <section aria-labelledby="server-heading" className="grid gap-4">
      <div className="grid gap-1">
        <h2 id="server-heading" className="text-lg font-semibold">
          Server
        </h2>
        <p className="text-sm text-muted-foreground">
          Read at start from flags, <code className="font-mono">MAILROOM_*</code> environment variables or the config file: change one there and restart.
          Mailroom {s.version}.
        </p>
      </div>
      {!s.hostname_is_public ? (
        <div role="alert" className="flex gap-3 rounded-lg border border-warning/50 bg-warning/10 p-4 text-sm">
          <TriangleAlertIcon className="mt-0.5 size-4 shrink-0 text-warning" aria-hidden="true" />
          <div className="grid gap-1">
            <p className="font-semibold">The host name “{s.hostname}” is not a public name</p>
            <p className="text-muted-foreground">
              Receiving servers check the name this server greets them with; mail from a private or unqualified name is often refused or marked as spam. Set a
              fully qualified name that resolves to this server’s address, e.g. <code className="font-mono">--hostname mail.example.com</code>.
            </p>
          </div>
        </div>
      ) : null}
      <div className="grid gap-4 xl:grid-cols-2">
        <SettingsCard title="Names and addresses" description="How this server names itself and where people and links reach it.">
          <SettingRow
            label="Public host name"
            value={
              <span className="flex flex-wrap items-center gap-2">
                <code className="font-mono">{s.hostname}</code>
                {s.hostname_is_public ? <Badge variant="success">Public</Badge> : <Badge variant="warning">Not public</Badge>}
              </span>
            }
            source={src('hostname')}
          />
          <SettingRow label="Public URL" value={mono(s.public_url)} source={src('public_url')} />
          <SettingRow label="Tracking base URL" value={mono(s.tracking_base_url)} source={src('tracking_base_url')} />
        </SettingsCard>
        <SettingsCard title="Listeners" description="The sockets this server accepts connections on.">
          <SettingRow label="HTTP (API and console)" value={mono(s.listeners.http)} source={src('listeners.http')} />
          <SettingRow label="SMTP submission" value={mono(s.listeners.smtp)} source={src('listeners.smtp')} />
          <SettingRow label="SMTP over TLS" value={mono(s.listeners.smtp_tls)} source={src('listeners.smtp_tls')} />
          <SettingRow label="Inbound MX" value={mono(s.listeners.mx)} source={src('listeners.mx')} />
        </SettingsCard>
        <SettingsCard title="Sending defaults" description="What applies when a request does not say.">
          <SettingRow label="Default From" value={s.defaults.from ?? <span className="text-muted-foreground">None</span>} source={src('defaults.from')} />
          <SettingRow
            label="Rate limit of new keys"
            value={s.defaults.rate_limit === null ? 'No limit' : `${formatNumber(s.defaults.rate_limit)} requests per minute`}
            source={src('defaults.rate_limit')}
          />
          <SettingRow
            label="Give up on a message after"
            value={duration(s.defaults.max_message_age_seconds)}
            source={src('defaults.max_message_age_seconds')}
          />
          <SettingRow label="Delivery concurrency" value={formatNumber(s.defaults.delivery_concurrency)} source={src('defaults.delivery_concurrency')} />
          <SettingRow label="Per destination" value={formatNumber(s.defaults.destination_concurrency)} source={src('defaults.destination_concurrency')} />
          <SettingRow
            label="Unverified domains"
            value={s.defaults.allow_unverified_domains ? 'Allowed' : 'Refused'}
            source={src('defaults.allow_unverified_domains')}
          />
        </SettingsCard>
        <SettingsCard title="Limits and console" description="Request sizes and console sessions.">
          <SettingRow label="Largest API request" value={bytes(s.defaults.max_body_bytes)} source={src('defaults.max_body_bytes')} />
          <SettingRow label="Largest SMTP message" value={bytes(s.defaults.smtp_max_message_bytes)} source={src('defaults.smtp_max_message_bytes')} />
          <SettingRow
            label="Session idle expiry"
            value={`${formatNumber(s.console.session_idle_minutes)} minutes`}
            source={src('console.session_idle_minutes')}
          />
          <SettingRow label="Session absolute expiry" value={`${formatNumber(s.console.session_max_hours)} hours`} source={src('console.session_max_hours')} />
          <SettingRow label="Behind a proxy" value={s.console.trust_proxy ? 'Yes (X-Forwarded-* trusted)' : 'No'} source={src('console.trust_proxy')} />
        </SettingsCard>
      </div>
    </section>
  )
}

/** Settings: the administrators, and the server's effective settings (read-only, with how to change each). */
export function SettingsPage() {
  const { data: session } = useSession()
  return (
    <div className="grid gap-10">
      <PageHeader title="Settings" description="Administrators, host names, listeners and defaults." />
      {can(session?.admin, 'admins.read') ? <Administrators /> : null}
      <ServerSettings />
    </div>
  )
}
