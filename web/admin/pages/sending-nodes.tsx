import { useMutation, useQueryClient } from '@tanstack/react-query'
import { PencilIcon, PlusIcon, ServerIcon, StarIcon } from 'lucide-react'
import { useState } from 'react'
import { toast } from 'sonner'
import { FormDialog } from '../components/form-dialog'
import { ConfirmDeleteButton } from '../components/confirm-dialog'
import { SelectField } from '../components/select-field'
import { DataTable } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { Switch as Toggle } from '../components/ui/switch'
import { api } from '../lib/api'
import { can, useSession } from '../lib/session'
import { fieldErrorOf, numOrNull, numText, reportError, usageText, UsageBar, usePoolOptions, type SendingNode } from './sending-shared'

const TLS_LABEL: Record<NonNullable<SendingNode['relay_tls']>, string> = {
  starttls: 'STARTTLS (port 587)',
  tls: 'Implicit TLS (port 465)',
  none: 'None (port 25, not encrypted)',
}
const FIELDS = ['name', 'kind', 'pool_id', 'relay_host', 'relay_port', 'relay_tls', 'relay_username', 'relay_password', 'hourly_cap', 'daily_cap']

function NodeDialog({ node, onClose }: { node: SendingNode | null; onClose: () => void }) {
  const [name, setName] = useState(node?.name ?? '')
  const [kind, setKind] = useState<SendingNode['kind']>(node?.kind ?? 'direct')
  const [poolId, setPoolId] = useState(node?.pool_id == null ? 'message' : String(node.pool_id))
  const [host, setHost] = useState(node?.relay_host ?? '')
  const [port, setPort] = useState(numText(node?.relay_port))
  const [tls, setTls] = useState<NonNullable<SendingNode['relay_tls']>>(node?.relay_tls ?? 'starttls')
  const [username, setUsername] = useState(node?.relay_username ?? '')
  const [password, setPassword] = useState('')
  const [clearPassword, setClearPassword] = useState(false)
  const [hourly, setHourly] = useState(numText(node?.hourly_cap))
  const [daily, setDaily] = useState(numText(node?.daily_cap))
  const [isDefault, setIsDefault] = useState(node?.is_default ?? false)
  const [active, setActive] = useState(node?.active ?? true)
  const pools = usePoolOptions()
  const qc = useQueryClient()
  const save = useMutation({
    mutationFn: () => {
      const body: Record<string, unknown> = {
        name: name.trim(),
        kind,
        hourly_cap: numOrNull(hourly),
        daily_cap: numOrNull(daily),
        is_default: isDefault,
        active,
      }
      if (kind === 'direct') body.pool_id = poolId === 'message' ? null : Number(poolId)
      else {
        body.relay_host = host.trim() || null
        body.relay_port = numOrNull(port)
        body.relay_tls = tls
        body.relay_username = username.trim() || null
        // Write-only: an empty field keeps the stored password; "remove" sends null.
        if (password) body.relay_password = password
        else if (clearPassword) body.relay_password = null
      }
      return node ? api<SendingNode>('PATCH', `/api/v2/sending-nodes/${node.id}`, body) : api<SendingNode>('POST', '/api/v2/sending-nodes', body)
    },
    onSuccess: (saved) => {
      qc.invalidateQueries({ queryKey: ['sending-nodes'] })
      toast.success(node ? `${saved.name} saved` : `${saved.name} created`)
      onClose()
    },
    onError: (e) => reportError(e, FIELDS),
  })
  const err = (f: string) => fieldErrorOf(save.error, f)
  return (
    <FormDialog
      open
      onOpenChange={(o) => !o && onClose()}
      title={node ? `Edit ${node.name}` : 'Create a sending node'}
      description="A route for outgoing mail: straight to each recipient’s mail server, or through a relay (smart host)."
      onSubmit={() => save.mutate()}
      onCancel={onClose}
      submitLabel={node ? 'Save' : 'Create node'}
      busy={save.isPending}
      submitDisabled={save.isPending || !name.trim()}
      className="max-h-[calc(100dvh-2rem)] overflow-y-auto sm:max-w-xl"
      formClassName="grid gap-5"
      noValidate
    >
      <div className="grid gap-4 sm:grid-cols-2">
        <FormField label="Name" error={err('name')}>
          <Input value={name} onChange={(e) => setName(e.target.value)} placeholder="primary" autoComplete="off" />
        </FormField>
        <FormField label="Kind" error={err('kind')}>
          <SelectField
            value={kind}
            onValueChange={(v) => setKind(v as SendingNode['kind'])}
            options={[
              { value: 'direct', label: 'Direct to MX' },
              { value: 'relay', label: 'Relay (smart host)' },
            ]}
          />
        </FormField>
      </div>
      {kind === 'direct' ? (
        <FormField label="IP pool" hint="The pool this node sends over." error={err('pool_id')}>
          <SelectField
            value={poolId}
            onValueChange={setPoolId}
            options={[{ value: 'message', label: 'The pool of each message' }, ...(pools.data ?? []).map((p) => ({ value: String(p.id), label: p.name }))]}
          />
        </FormField>
      ) : (
        <fieldset className="grid gap-4 rounded-lg border p-4">
          <legend className="px-1 text-sm font-medium">Relay</legend>
          <div className="grid gap-4 sm:grid-cols-[1fr_7rem]">
            <FormField label="Relay host" error={err('relay_host')}>
              <Input value={host} onChange={(e) => setHost(e.target.value)} placeholder="smtp.example.org" autoComplete="off" />
            </FormField>
            <FormField label="Port" error={err('relay_port')}>
              <Input type="number" min={1} max={65535} value={port} onChange={(e) => setPort(e.target.value)} placeholder="587" />
            </FormField>
          </div>
          <FormField label="Encryption" error={err('relay_tls')}>
            <SelectField
              value={tls}
              onValueChange={(v) => setTls(v as typeof tls)}
              options={(Object.keys(TLS_LABEL) as Array<keyof typeof TLS_LABEL>).map((k) => ({ value: k, label: TLS_LABEL[k] }))}
            />
          </FormField>
          <div className="grid gap-4 sm:grid-cols-2">
            <FormField label="User name" hint="Leave empty when the relay needs no login." error={err('relay_username')}>
              <Input value={username} onChange={(e) => setUsername(e.target.value)} autoComplete="off" />
            </FormField>
            <FormField
              label="Password"
              hint={node?.has_password ? 'A password is stored. Leave empty to keep it.' : 'Stored encrypted; never shown again.'}
              error={err('relay_password')}
            >
              <Input
                type="password"
                value={password}
                onChange={(e) => setPassword(e.target.value)}
                autoComplete="new-password"
                placeholder={node?.has_password ? '••••••••' : ''}
              />
            </FormField>
          </div>
          {node?.has_password ? (
            <label className="flex items-center gap-2 text-sm">
              <input type="checkbox" checked={clearPassword} onChange={(e) => setClearPassword(e.target.checked)} className="size-4 accent-primary" />
              Remove the stored password
            </label>
          ) : null}
        </fieldset>
      )}
      <div className="grid gap-4 sm:grid-cols-2">
        <FormField label="Hourly cap" hint="Most deliveries per clock hour; empty for none." error={err('hourly_cap')}>
          <Input type="number" min={1} value={hourly} onChange={(e) => setHourly(e.target.value)} />
        </FormField>
        <FormField label="Daily cap" hint="Most deliveries per UTC day; empty for none." error={err('daily_cap')}>
          <Input type="number" min={1} value={daily} onChange={(e) => setDaily(e.target.value)} />
        </FormField>
      </div>
      <div className="grid gap-3">
        <label className="flex items-center justify-between gap-4 text-sm">
          <span className="grid gap-0.5">
            <span className="font-medium">Default route</span>
            <span className="text-xs text-muted-foreground">Mail that names no node takes this one.</span>
          </span>
          <Toggle checked={isDefault} onCheckedChange={setIsDefault} aria-label="Default route" />
        </label>
        <label className="flex items-center justify-between gap-4 text-sm">
          <span className="grid gap-0.5">
            <span className="font-medium">Active</span>
            <span className="text-xs text-muted-foreground">An inactive node delivers nothing until it is turned on again.</span>
          </span>
          <Toggle checked={active} onCheckedChange={setActive} aria-label="Active" />
        </label>
      </div>
    </FormDialog>
  )
}

function RouteCell({ node, poolName }: { node: SendingNode; poolName: Map<number, string> }) {
  if (node.kind === 'relay')
    return (
      <span className="font-mono text-xs">
        {node.relay_host}:{node.relay_port ?? '—'} <span className="text-muted-foreground">({node.relay_tls ?? 'starttls'})</span>
      </span>
    )
  if (node.pool_id == null) return <span className="text-muted-foreground">Pool of each message</span>
  return <span>Pool {poolName.get(node.pool_id) ?? `#${node.pool_id}`}</span>
}

/** Sending nodes: the routes mail takes (direct or relay), with caps, usage and the default route. */
export function SendingNodesPage() {
  const session = useSession()
  const admin = session.data?.admin
  const [editing, setEditing] = useState<SendingNode | null | 'new'>(null)
  const pools = usePoolOptions()
  const poolName = new Map((pools.data ?? []).map((p) => [p.id, p.name]))
  const qc = useQueryClient()
  const remove = useMutation({
    mutationFn: (n: SendingNode) => api('DELETE', `/api/v2/sending-nodes/${n.id}`),
    onSuccess: (_, n) => {
      qc.invalidateQueries({ queryKey: ['sending-nodes'] })
      toast.success(`${n.name} deleted`)
    },
    onError: (e) => reportError(e, []),
  })
  const toggle = useMutation({
    mutationFn: (n: SendingNode) => api<SendingNode>('PATCH', `/api/v2/sending-nodes/${n.id}`, { active: !n.active }),
    onSuccess: (n) => {
      qc.invalidateQueries({ queryKey: ['sending-nodes'] })
      toast.success(n.active ? `${n.name} is active` : `${n.name} is paused`)
    },
    onError: (e) => reportError(e, []),
  })
  const addButton = can(admin, 'sending_nodes.create') ? (
    <Button onClick={() => setEditing('new')}>
      <PlusIcon /> Create node
    </Button>
  ) : null
  const mayUpdate = can(admin, 'sending_nodes.update')
  return (
    <div className="grid gap-8">
      <PageHeader
        title="Sending nodes"
        description="The routes mail leaves by: straight to recipients’ servers over an IP pool, or through a relay."
        actions={addButton}
      />
      <DataTable<SendingNode>
        path="/api/v2/sending-nodes"
        queryKey="sending-nodes"
        caption="Sending nodes"
        rowKey={(n) => n.id}
        empty={{
          icon: ServerIcon,
          title: 'No sending nodes',
          description: 'Mail goes straight to each recipient’s mail server from this host. Create a node to relay through a smart host or to cap a route.',
          action: addButton ?? undefined,
        }}
        columns={[
          {
            id: 'name',
            header: 'Node',
            cell: (n) => (
              <span className="flex flex-wrap items-center gap-2 font-medium">
                {n.name}
                {n.is_default ? (
                  <Badge>
                    <StarIcon aria-hidden="true" /> Default
                  </Badge>
                ) : null}
              </span>
            ),
          },
          { id: 'kind', header: 'Kind', cell: (n) => <Badge variant="secondary">{n.kind === 'relay' ? 'Relay' : 'Direct'}</Badge> },
          {
            id: 'route',
            header: 'Route',
            className: 'hidden md:table-cell',
            cell: (n) => <RouteCell node={n} poolName={poolName} />,
          },
          {
            id: 'usage',
            header: 'Usage',
            className: 'hidden lg:table-cell',
            cell: (n) => (
              <div className="grid gap-1 text-xs text-muted-foreground">
                <span>{usageText(n.usage.this_hour, n.hourly_cap, 'this hour')}</span>
                <UsageBar used={n.usage.this_hour} cap={n.hourly_cap} label={`${n.name} usage this hour`} />
                <span>{usageText(n.usage.today, n.daily_cap, 'today')}</span>
                <UsageBar used={n.usage.today} cap={n.daily_cap} label={`${n.name} usage today`} />
              </div>
            ),
          },
          {
            id: 'active',
            header: 'Active',
            cell: (n) => (
              <Toggle checked={n.active} disabled={!mayUpdate || toggle.isPending} onCheckedChange={() => toggle.mutate(n)} aria-label={`${n.name} active`} />
            ),
          },
          {
            id: 'actions',
            header: <span className="sr-only">Actions</span>,
            className: 'w-24 text-right',
            cell: (n) => (
              <div className="flex justify-end gap-1">
                {mayUpdate ? (
                  <Button variant="ghost" size="icon" className="size-8" aria-label={`Edit ${n.name}`} title="Edit" onClick={() => setEditing(n)}>
                    <PencilIcon />
                  </Button>
                ) : null}
                {can(admin, 'sending_nodes.delete') ? (
                  <ConfirmDeleteButton
                    label={`Delete ${n.name}`}
                    title={`Delete the node ${n.name}?`}
                    description="Queued mail that named it takes the default route instead."
                    onConfirm={() => remove.mutate(n)}
                  />
                ) : null}
              </div>
            ),
          },
        ]}
      />
      {editing !== null ? (
        <NodeDialog key={editing === 'new' ? 'new' : editing.id} node={editing === 'new' ? null : editing} onClose={() => setEditing(null)} />
      ) : null}
    </div>
  )
}
