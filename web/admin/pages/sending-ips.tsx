import { useMutation, useQueryClient } from '@tanstack/react-query'
import { NetworkIcon, PencilIcon, PlusIcon, StarIcon, XIcon } from 'lucide-react'
import { useState } from 'react'
import { toast } from 'sonner'
import { FormDialog } from '../components/form-dialog'
import { ConfirmDeleteButton } from '../components/confirm-dialog'
import { DataTable } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { Select, SelectContent, SelectItem, SelectTrigger, SelectValue } from '../components/ui/select'
import { Switch as Toggle } from '../components/ui/switch'
import { Tabs, TabsContent, TabsList, TabsTrigger } from '../components/ui/tabs'
import { api } from '../lib/api'
import { can, useSession } from '../lib/session'
import { useUrlQuery } from '../lib/url-query'
import { fieldErrorOf, reportError, useIpOptions, type Pool, type SourceIp } from './sending-shared'

function IpDialog({ ip, open, onOpenChange }: { ip: SourceIp | null; open: boolean; onOpenChange: (o: boolean) => void }) {
  const [address, setAddress] = useState(ip?.address ?? '')
  const [hostname, setHostname] = useState(ip?.hostname ?? '')
  const qc = useQueryClient()
  const save = useMutation({
    mutationFn: () =>
      ip
        ? api<SourceIp>('PATCH', `/api/v2/ips/${ip.id}`, { address: address.trim(), hostname: hostname.trim() })
        : api<SourceIp>('POST', '/api/v2/ips', { address: address.trim(), hostname: hostname.trim() }),
    onSuccess: (saved) => {
      qc.invalidateQueries({ queryKey: ['ips'] })
      qc.invalidateQueries({ queryKey: ['ip-pools'] })
      toast.success(ip ? `${saved.address} saved` : `${saved.address} added`)
      onOpenChange(false)
    },
    onError: (e) => reportError(e, ['address', 'hostname']),
  })
  return (
    <FormDialog
      open={open}
      onOpenChange={onOpenChange}
      title={ip ? `Edit ${ip.address}` : 'Add a source IP'}
      description="An address configured on this host that mail may leave from, with the name it greets receivers by."
      onSubmit={() => save.mutate()}
      submitLabel={ip ? 'Save' : 'Add IP'}
      busy={save.isPending}
      submitDisabled={save.isPending || !address.trim() || !hostname.trim()}
      noValidate
    >
      <FormField label="Address" hint="IPv4 or IPv6. It must be configured on one of this host's interfaces." error={fieldErrorOf(save.error, 'address')}>
        <Input value={address} onChange={(e) => setAddress(e.target.value)} placeholder="203.0.113.10" autoComplete="off" className="font-mono" />
      </FormField>
      <FormField
        label="EHLO host name"
        hint="A fully qualified name whose PTR record matches this address, such as mail1.example.com."
        error={fieldErrorOf(save.error, 'hostname')}
      >
        <Input value={hostname} onChange={(e) => setHostname(e.target.value)} placeholder="mail1.example.com" autoComplete="off" />
      </FormField>
    </FormDialog>
  )
}

function IpsTab() {
  const session = useSession()
  const admin = session.data?.admin
  const [editing, setEditing] = useState<SourceIp | null | 'new'>(null)
  const qc = useQueryClient()
  const remove = useMutation({
    mutationFn: (ip: SourceIp) => api('DELETE', `/api/v2/ips/${ip.id}`),
    onSuccess: (_, ip) => {
      qc.invalidateQueries({ queryKey: ['ips'] })
      qc.invalidateQueries({ queryKey: ['ip-pools'] })
      toast.success(`${ip.address} deleted`)
    },
    onError: (e) => reportError(e, []),
  })
  const addButton = can(admin, 'ips.create') ? (
    <Button onClick={() => setEditing('new')}>
      <PlusIcon /> Add IP
    </Button>
  ) : null
  return (
    <div className="grid gap-4">
      <div className="flex flex-wrap items-center justify-between gap-3">
        <p className="text-sm text-muted-foreground">Addresses of this host that mail leaves from. Group them in pools to share the load.</p>
        {addButton}
      </div>
      <DataTable<SourceIp>
        path="/api/v2/ips"
        queryKey="ips"
        caption="Source IPs"
        rowKey={(ip) => ip.id}
        empty={{
          icon: NetworkIcon,
          title: 'No source IPs',
          description: 'Mail leaves from the host’s default address. Add the addresses configured on this host to choose between them.',
          action: addButton ?? undefined,
        }}
        columns={[
          { id: 'address', header: 'Address', cell: (ip) => <span className="font-mono font-medium">{ip.address}</span> },
          { id: 'hostname', header: 'EHLO name', cell: (ip) => ip.hostname, className: 'hidden sm:table-cell' },
          {
            id: 'pools',
            header: 'Pools',
            className: 'hidden md:table-cell',
            cell: (ip) =>
              ip.pools.length ? (
                <div className="flex flex-wrap gap-1">
                  {ip.pools.map((p) => (
                    <Badge key={p.id} variant="secondary">
                      {p.name} · {p.weight}
                    </Badge>
                  ))}
                </div>
              ) : (
                <span className="text-muted-foreground">None</span>
              ),
          },
          {
            id: 'actions',
            header: <span className="sr-only">Actions</span>,
            className: 'w-24 text-right',
            cell: (ip) => (
              <div className="flex justify-end gap-1">
                {can(admin, 'ips.update') ? (
                  <Button variant="ghost" size="icon" className="size-8" aria-label={`Edit ${ip.address}`} title="Edit" onClick={() => setEditing(ip)}>
                    <PencilIcon />
                  </Button>
                ) : null}
                {can(admin, 'ips.delete') ? (
                  <ConfirmDeleteButton
                    label={`Delete ${ip.address}`}
                    title={`Delete ${ip.address}?`}
                    description="It leaves its pools. A pool left without addresses sends from the host's default address."
                    onConfirm={() => remove.mutate(ip)}
                  />
                ) : null}
              </div>
            ),
          },
        ]}
      />
      {editing !== null ? (
        <IpDialog key={editing === 'new' ? 'new' : editing.id} ip={editing === 'new' ? null : editing} open onOpenChange={(o) => !o && setEditing(null)} />
      ) : null}
    </div>
  )
}

interface MemberDraft {
  ip_id: number
  weight: string
}

function PoolDialog({ pool, open, onOpenChange }: { pool: Pool | null; open: boolean; onOpenChange: (o: boolean) => void }) {
  const [name, setName] = useState(pool?.name ?? '')
  const [isDefault, setIsDefault] = useState(pool?.is_default ?? false)
  const [members, setMembers] = useState<MemberDraft[]>(pool?.members.map((m) => ({ ip_id: m.ip_id, weight: String(m.weight) })) ?? [])
  const [adding, setAdding] = useState('')
  const ips = useIpOptions(open)
  const qc = useQueryClient()
  const save = useMutation({
    mutationFn: () => {
      const body = { name: name.trim(), is_default: isDefault, members: members.map((m) => ({ ip_id: m.ip_id, weight: Number(m.weight) })) }
      return pool ? api<Pool>('PATCH', `/api/v2/ip-pools/${pool.id}`, body) : api<Pool>('POST', '/api/v2/ip-pools', body)
    },
    onSuccess: (saved) => {
      qc.invalidateQueries({ queryKey: ['ip-pools'] })
      qc.invalidateQueries({ queryKey: ['ips'] })
      toast.success(pool ? `${saved.name} saved` : `${saved.name} created`)
      onOpenChange(false)
    },
    onError: (e) => reportError(e, ['name', 'is_default', 'members']),
  })
  const byId = new Map((ips.data ?? []).map((ip) => [ip.id, ip]))
  const free = (ips.data ?? []).filter((ip) => !members.some((m) => m.ip_id === ip.id))
  const memberError = (i: number) => fieldErrorOf(save.error, `members.${i}`)
  return (
    <FormDialog
      open={open}
      onOpenChange={onOpenChange}
      title={pool ? `Edit ${pool.name}` : 'Create an IP pool'}
      description="Connections of the pool are spread over its addresses in proportion to their weights."
      onSubmit={() => save.mutate()}
      submitLabel={pool ? 'Save' : 'Create pool'}
      busy={save.isPending}
      submitDisabled={save.isPending || !name.trim()}
      className="sm:max-w-xl"
      formClassName="grid gap-5"
      noValidate
    >
      <FormField label="Name" error={fieldErrorOf(save.error, 'name')}>
        <Input value={name} onChange={(e) => setName(e.target.value)} placeholder="transactional" autoComplete="off" />
      </FormField>
      <label className="flex items-center justify-between gap-4 text-sm">
        <span className="grid gap-0.5">
          <span className="font-medium">Default pool</span>
          <span className="text-xs text-muted-foreground">Mail that names no pool, and whose domain names none, uses it.</span>
        </span>
        <Toggle checked={isDefault} onCheckedChange={setIsDefault} aria-label="Default pool" />
      </label>
      <fieldset className="grid gap-3">
        <legend className="mb-2 text-sm font-medium">Members</legend>
        {members.length === 0 ? <p className="text-sm text-muted-foreground">No addresses yet: the pool sends from the host’s default address.</p> : null}
        <ul className="grid gap-2">
          {members.map((m, i) => {
            const ip = byId.get(m.ip_id)
            const label = ip?.address ?? `IP ${m.ip_id}`
            return (
              <li key={m.ip_id} className="grid gap-1">
                <div className="flex items-center gap-2 rounded-lg border px-3 py-2">
                  <div className="grid min-w-0 flex-1">
                    <span className="truncate font-mono text-sm">{label}</span>
                    {ip ? <span className="truncate text-xs text-muted-foreground">{ip.hostname}</span> : null}
                  </div>
                  <label className="flex items-center gap-2 text-xs text-muted-foreground">
                    Weight
                    <Input
                      type="number"
                      min={1}
                      max={1000}
                      value={m.weight}
                      aria-label={`Weight of ${label}`}
                      aria-invalid={memberError(i) ? true : undefined}
                      onChange={(e) => setMembers(members.map((x, j) => (j === i ? { ...x, weight: e.target.value } : x)))}
                      className="h-8 w-20"
                    />
                  </label>
                  <Button
                    type="button"
                    variant="ghost"
                    size="icon"
                    className="size-8"
                    aria-label={`Remove ${label}`}
                    onClick={() => setMembers(members.filter((_, j) => j !== i))}
                  >
                    <XIcon />
                  </Button>
                </div>
                {memberError(i) ? (
                  <p role="alert" className="text-sm text-destructive">
                    {memberError(i)}
                  </p>
                ) : null}
              </li>
            )
          })}
        </ul>
        {free.length ? (
          <div className="flex gap-2">
            <Select value={adding} onValueChange={setAdding}>
              <SelectTrigger aria-label="Address to add" className="flex-1">
                <SelectValue placeholder="Choose an address to add" />
              </SelectTrigger>
              <SelectContent>
                {free.map((ip) => (
                  <SelectItem key={ip.id} value={String(ip.id)}>
                    {ip.address} ({ip.hostname})
                  </SelectItem>
                ))}
              </SelectContent>
            </Select>
            <Button
              type="button"
              variant="outline"
              disabled={!adding}
              onClick={() => {
                setMembers([...members, { ip_id: Number(adding), weight: '1' }])
                setAdding('')
              }}
            >
              <PlusIcon /> Add
            </Button>
          </div>
        ) : ips.data && ips.data.length === 0 ? (
          <p className="text-xs text-muted-foreground">Add source IPs first (the Source IPs tab).</p>
        ) : null}
      </fieldset>
    </FormDialog>
  )
}

function PoolsTab() {
  const session = useSession()
  const admin = session.data?.admin
  const [editing, setEditing] = useState<Pool | null | 'new'>(null)
  const qc = useQueryClient()
  const remove = useMutation({
    mutationFn: (p: Pool) => api('DELETE', `/api/v2/ip-pools/${p.id}`),
    onSuccess: (_, p) => {
      qc.invalidateQueries({ queryKey: ['ip-pools'] })
      qc.invalidateQueries({ queryKey: ['ips'] })
      toast.success(`${p.name} deleted`)
    },
    onError: (e) => reportError(e, []),
  })
  const makeDefault = useMutation({
    mutationFn: (p: Pool) => api<Pool>('PATCH', `/api/v2/ip-pools/${p.id}`, { is_default: true }),
    onSuccess: (p) => {
      qc.invalidateQueries({ queryKey: ['ip-pools'] })
      toast.success(`${p.name} is now the default pool`)
    },
    onError: (e) => reportError(e, []),
  })
  const addButton = can(admin, 'ips.create') ? (
    <Button onClick={() => setEditing('new')}>
      <PlusIcon /> Create pool
    </Button>
  ) : null
  return (
    <div className="grid gap-4">
      <div className="flex flex-wrap items-center justify-between gap-3">
        <p className="text-sm text-muted-foreground">Named groups of addresses with weights. Domains, nodes, bridges and sends choose a pool.</p>
        {addButton}
      </div>
      <DataTable<Pool>
        path="/api/v2/ip-pools"
        queryKey="ip-pools"
        caption="IP pools"
        rowKey={(p) => p.id}
        empty={{
          icon: NetworkIcon,
          title: 'No IP pools',
          description: 'Without pools, all mail leaves from the host’s default address.',
          action: addButton ?? undefined,
        }}
        columns={[
          {
            id: 'name',
            header: 'Pool',
            cell: (p) => (
              <span className="flex items-center gap-2 font-medium">
                {p.name}
                {p.is_default ? (
                  <Badge variant="default">
                    <StarIcon aria-hidden="true" /> Default
                  </Badge>
                ) : null}
              </span>
            ),
          },
          {
            id: 'members',
            header: 'Members and weights',
            cell: (p) =>
              p.members.length ? (
                <ul className="flex flex-wrap gap-1">
                  {p.members.map((m) => (
                    <li key={m.ip_id}>
                      <Badge variant="secondary" className="font-mono">
                        {m.address} · {m.weight}
                      </Badge>
                    </li>
                  ))}
                </ul>
              ) : (
                <span className="text-muted-foreground">No addresses</span>
              ),
          },
          {
            id: 'actions',
            header: <span className="sr-only">Actions</span>,
            className: 'w-40 text-right',
            cell: (p) => (
              <div className="flex justify-end gap-1">
                {can(admin, 'ips.update') && !p.is_default ? (
                  <Button variant="ghost" size="sm" onClick={() => makeDefault.mutate(p)} aria-label={`Make ${p.name} the default pool`}>
                    Make default
                  </Button>
                ) : null}
                {can(admin, 'ips.update') ? (
                  <Button variant="ghost" size="icon" className="size-8" aria-label={`Edit ${p.name}`} title="Edit" onClick={() => setEditing(p)}>
                    <PencilIcon />
                  </Button>
                ) : null}
                {can(admin, 'ips.delete') ? (
                  <ConfirmDeleteButton
                    label={`Delete ${p.name}`}
                    title={`Delete the pool ${p.name}?`}
                    description="Sending domains, nodes and queued messages that named it use the default pool from then on. Its addresses stay."
                    onConfirm={() => remove.mutate(p)}
                  />
                ) : null}
              </div>
            ),
          },
        ]}
      />
      {editing !== null ? (
        <PoolDialog key={editing === 'new' ? 'new' : editing.id} pool={editing === 'new' ? null : editing} open onOpenChange={(o) => !o && setEditing(null)} />
      ) : null}
    </div>
  )
}

/** IPs and pools: the host's source addresses, and the weighted pools that group them. */
export function SendingIpsPage() {
  const [params, setParams] = useUrlQuery()
  const tab = params.get('tab') === 'pools' ? 'pools' : 'ips'
  return (
    <div className="grid gap-6">
      <PageHeader title="IPs & pools" description="Where your mail leaves from: this host’s addresses, and the pools that share connections between them." />
      <Tabs value={tab} onValueChange={(v) => setParams({ tab: v === 'ips' ? null : v, page: null, per_page: null })}>
        <TabsList>
          <TabsTrigger value="ips">Source IPs</TabsTrigger>
          <TabsTrigger value="pools">Pools</TabsTrigger>
        </TabsList>
        <TabsContent value="ips" className="mt-4">
          <IpsTab />
        </TabsContent>
        <TabsContent value="pools" className="mt-4">
          <PoolsTab />
        </TabsContent>
      </Tabs>
    </div>
  )
}
