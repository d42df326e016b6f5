import { useMutation, useQueryClient } from '@tanstack/react-query'
import { CableIcon, KeyRoundIcon, Loader2Icon, PencilIcon, PlusIcon, SendIcon, Trash2Icon, TriangleAlertIcon } from 'lucide-react'
import { useState, type FormEvent } from 'react'
import { toast } from 'sonner'
import { Link } from 'wouter'
import { FormDialog } from '../components/form-dialog'
import { actionsColumn, RowActions } from '../components/row-actions'
import { ConfirmDialog } from '../components/confirm-dialog'
import { SelectField } from '../components/select-field'
import { CopyField } from '../components/copy-field'
import { DataTable } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { Checkbox } from '../components/ui/checkbox'
import { Dialog, DialogContent, DialogDescription, DialogFooter, DialogHeader, DialogTitle } from '../components/ui/dialog'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { Switch as Toggle } from '../components/ui/switch'
import { Textarea } from '../components/ui/textarea'
import { api } from '../lib/api'
import { can, useSession } from '../lib/session'
import { formatNumber } from '../lib/utils'
import {
  fieldErrorOf,
  numOrNull,
  numText,
  reportError,
  usageText,
  UsageBar,
  useDomainOptions,
  useNodeOptions,
  usePoolOptions,
  WarningNote,
  type Bridge,
  type BridgeSecrets,
} from './sending-shared'

const FIELDS = ['name', 'domains', 'pool_id', 'node_id', 'hourly_quota', 'daily_quota', 'allowed_ips', 'track_opens', 'track_clicks', 'active', 'send_dsn']

function BridgeDialog({ bridge, onClose, onCreated }: { bridge: Bridge | null; onClose: () => void; onCreated: (b: Bridge & BridgeSecrets) => void }) {
  const [name, setName] = useState(bridge?.name ?? '')
  const [domains, setDomains] = useState<string[]>(bridge?.domains ?? [])
  const [poolId, setPoolId] = useState(bridge?.pool_id == null ? 'usual' : String(bridge.pool_id))
  const [nodeId, setNodeId] = useState(bridge?.node_id == null ? 'usual' : String(bridge.node_id))
  const [hourly, setHourly] = useState(numText(bridge?.hourly_quota))
  const [daily, setDaily] = useState(numText(bridge?.daily_quota))
  const [allowlist, setAllowlist] = useState((bridge?.allowed_ips ?? []).join('\n'))
  const [opens, setOpens] = useState(bridge?.track_opens ?? false)
  const [clicks, setClicks] = useState(bridge?.track_clicks ?? false)
  const [active, setActive] = useState(bridge?.active ?? true)
  const [sendDsn, setSendDsn] = useState(bridge?.send_dsn ?? true)
  const domainOptions = useDomainOptions()
  const pools = usePoolOptions()
  const nodes = useNodeOptions()
  const qc = useQueryClient()
  const save = useMutation({
    mutationFn: () => {
      const body = {
        name: name.trim(),
        domains,
        pool_id: poolId === 'usual' ? null : Number(poolId),
        node_id: nodeId === 'usual' ? null : Number(nodeId),
        hourly_quota: numOrNull(hourly),
        daily_quota: numOrNull(daily),
        allowed_ips: allowlist
          .split(/[\n,]/)
          .map((s) => s.trim())
          .filter(Boolean),
        track_opens: opens,
        track_clicks: clicks,
        active,
        send_dsn: sendDsn,
      }
      return bridge ? api<Bridge>('PATCH', `/api/v2/bridges/${bridge.id}`, body) : api<Bridge & BridgeSecrets>('POST', '/api/v2/bridges', body)
    },
    onSuccess: (saved) => {
      qc.invalidateQueries({ queryKey: ['bridges'] })
      if (bridge) {
        toast.success(`${saved.name} saved`)
        onClose()
      } else onCreated(saved)
    },
    onError: (e) => reportError(e, FIELDS),
  })
  const err = (f: string) => fieldErrorOf(save.error, f)
  const submit = (e: FormEvent) => {
    e.preventDefault()
    save.mutate()
  }
  const allDomains = [...new Set([...(domainOptions.data ?? []).map((d) => d.name), ...domains])]
  return (
    <FormDialog
      open
      onOpenChange={(o) => !o && onClose()}
      title={bridge ? `Edit ${bridge.name}` : 'Create a bridge'}
      description="One application’s way in: SMTP credentials and an API key, limited to its domains, quotas and addresses."
      onSubmit={submit}
      onCancel={onClose}
      submitLabel={bridge ? 'Save' : 'Create bridge'}
      busy={save.isPending}
      submitDisabled={save.isPending || !name.trim()}
      className="max-h-[calc(100dvh-2rem)] overflow-y-auto sm:max-w-2xl"
      formClassName="grid gap-5"
      noValidate
    >
      <FormField label="Name" hint="The application, such as “shop” or “billing”." error={err('name')}>
        <Input value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" />
      </FormField>
      <fieldset className="grid gap-2" aria-describedby="bridge-domains-help">
        <legend className="mb-1 text-sm font-medium">Domains it may send from</legend>
        {allDomains.length === 0 && domainOptions.isSuccess ? (
          <p className="text-sm text-muted-foreground">
            There are no sending domains yet.{' '}
            <Link href="~/admin/sending/domains" className="text-primary hover:underline">
              Add one first
            </Link>
            .
          </p>
        ) : (
          <div className="grid gap-2 sm:grid-cols-2">
            {allDomains.map((d) => (
              <label key={d} className="flex items-center gap-2 rounded-md border px-3 py-2 text-sm">
                <Checkbox checked={domains.includes(d)} onCheckedChange={(on) => setDomains(on ? [...domains, d] : domains.filter((x) => x !== d))} />
                {d}
              </label>
            ))}
          </div>
        )}
        <p id="bridge-domains-help" className="text-xs text-muted-foreground">
          The From address of its mail must be at one of these.
        </p>
        {err('domains') ? (
          <p role="alert" className="text-sm text-destructive">
            {err('domains')}
          </p>
        ) : null}
      </fieldset>
      <div className="grid gap-4 sm:grid-cols-2">
        <FormField label="IP pool" error={err('pool_id')}>
          <SelectField
            value={poolId}
            onValueChange={setPoolId}
            options={[{ value: 'usual', label: 'The usual choice' }, ...(pools.data ?? []).map((x) => ({ value: String(x.id), label: x.name }))]}
          />
        </FormField>
        <FormField label="Sending node" error={err('node_id')}>
          <SelectField
            value={nodeId}
            onValueChange={setNodeId}
            options={[{ value: 'usual', label: 'The usual choice' }, ...(nodes.data ?? []).map((x) => ({ value: String(x.id), label: x.name }))]}
          />
        </FormField>
        <FormField label="Hourly quota" hint="Most messages per clock hour; empty for none." error={err('hourly_quota')}>
          <Input type="number" min={1} value={hourly} onChange={(e) => setHourly(e.target.value)} />
        </FormField>
        <FormField label="Daily quota" hint="Most messages per UTC day; empty for none." error={err('daily_quota')}>
          <Input type="number" min={1} value={daily} onChange={(e) => setDaily(e.target.value)} />
        </FormField>
      </div>
      <FormField
        label="Allowed addresses"
        hint="One per line: addresses, ranges (first-last) or CIDR blocks, IPv4 or IPv6. Empty: any address."
        error={err('allowed_ips')}
      >
        <Textarea value={allowlist} onChange={(e) => setAllowlist(e.target.value)} rows={3} className="font-mono text-sm" placeholder="203.0.113.0/24" />
      </FormField>
      <div className="grid gap-3">
        <label className="flex items-center justify-between gap-4 text-sm">
          <span className="font-medium">Track opens</span>
          <Toggle checked={opens} onCheckedChange={setOpens} aria-label="Track opens" />
        </label>
        <label className="flex items-center justify-between gap-4 text-sm">
          <span className="font-medium">Track clicks</span>
          <Toggle checked={clicks} onCheckedChange={setClicks} aria-label="Track clicks" />
        </label>
        <label className="flex items-center justify-between gap-4 text-sm">
          <span className="grid gap-0.5">
            <span className="font-medium">Active</span>
            <span className="text-xs text-muted-foreground">An inactive bridge refuses SMTP logins and sends.</span>
          </span>
          <Toggle checked={active} onCheckedChange={setActive} aria-label="Active" />
        </label>
        <label className="flex items-center justify-between gap-4 text-sm">
          <span className="grid gap-0.5">
            <span className="font-medium">Send bounce reports</span>
            <span className="text-xs text-muted-foreground">
              Mail it submits over SMTP that bounces or expires gets a delivery status notification (RFC 3464) to its envelope sender.
            </span>
          </span>
          <Toggle checked={sendDsn} onCheckedChange={setSendDsn} aria-label="Send bounce reports" />
        </label>
      </div>
    </FormDialog>
  )
}

/** The credentials of a create or a rotation, shown this once, each with a copy button. */
function CredentialsDialog({ bridge, onClose }: { bridge: Bridge & BridgeSecrets; onClose: () => void }) {
  const smtp = bridge.smtp
  return (
    <Dialog open onOpenChange={(o) => !o && onClose()}>
      <DialogContent className="max-h-[calc(100dvh-2rem)] overflow-y-auto sm:max-w-xl" onInteractOutside={(e) => e.preventDefault()}>
        <DialogHeader>
          <DialogTitle>Credentials of {bridge.name}</DialogTitle>
          <DialogDescription>Give these to the application. Its mail is held to this bridge’s domains, quotas and addresses.</DialogDescription>
        </DialogHeader>
        <div role="note" className="flex gap-3 rounded-lg border border-warning/40 bg-warning/10 p-3 text-sm">
          <TriangleAlertIcon className="mt-0.5 size-4 shrink-0 text-warning" aria-hidden="true" />
          <p>
            <strong className="font-semibold">Copy them now.</strong> This is the only time the password and the API key are shown: Mailroom keeps only their
            hashes. If they are lost, rotate them.
          </p>
        </div>
        {smtp ? (
          <section className="grid gap-3" aria-labelledby="smtp-heading">
            <h3 id="smtp-heading" className="text-sm font-semibold">
              SMTP
            </h3>
            {smtp.warning ? <WarningNote>{smtp.warning}</WarningNote> : null}
            <div className="grid gap-3 sm:grid-cols-[1fr_12rem]">
              <CopyField label="SMTP host" value={smtp.host} />
              <CopyField label="Port" value={smtp.port == null ? 'SMTP is off' : String(smtp.port)} />
            </div>
            <CopyField label="User name" value={smtp.username} />
            <CopyField label="Password" value={smtp.password} secret />
            <p className="text-xs text-muted-foreground">Connect with STARTTLS (or implicit TLS on its port) and log in with AUTH PLAIN or LOGIN.</p>
          </section>
        ) : null}
        {bridge.api_key ? (
          <section className="grid gap-3" aria-labelledby="key-heading">
            <h3 id="key-heading" className="text-sm font-semibold">
              API
            </h3>
            <CopyField label="API key" value={bridge.api_key} secret />
            <p className="text-xs text-muted-foreground">
              For <code className="font-mono">POST /v1/bridge/emails</code> with <code className="font-mono">Authorization: Bearer …</code>.
            </p>
          </section>
        ) : null}
        <DialogFooter>
          <Button type="button" onClick={onClose}>
            I have stored them
          </Button>
        </DialogFooter>
      </DialogContent>
    </Dialog>
  )
}

function TestDialog({ bridge, onClose }: { bridge: Bridge; onClose: () => void }) {
  const [to, setTo] = useState('')
  const qc = useQueryClient()
  const send = useMutation({
    mutationFn: () =>
      api<{ id: string; from: string; to: string; queued: number; suppressed: string[] }>('POST', `/api/v2/bridges/${bridge.id}/test`, { to: to.trim() }),
    // The bridge's counts and quota use just changed.
    onSuccess: () => qc.invalidateQueries({ queryKey: ['bridges'] }),
    onError: (e) => reportError(e, ['to', 'from']),
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    send.mutate()
  }
  const done = send.data
  return (
    <Dialog open onOpenChange={(o) => !o && onClose()}>
      <DialogContent>
        <form onSubmit={submit} className="grid gap-4" noValidate>
          <DialogHeader>
            <DialogTitle>Send a test through {bridge.name}</DialogTitle>
            <DialogDescription>
              One short message, sent the way the application’s mail is: from {`mailroom-test@${bridge.domains[0] ?? '…'}`}, under the bridge’s quotas and
              routing.
            </DialogDescription>
          </DialogHeader>
          <FormField label="Send to" error={fieldErrorOf(send.error, 'to') ?? fieldErrorOf(send.error, 'from')}>
            <Input type="email" value={to} onChange={(e) => setTo(e.target.value)} placeholder="you@example.net" autoComplete="email" autoFocus />
          </FormField>
          {done ? (
            <p role="status" className="rounded-lg border border-success/40 bg-success/8 p-3 text-sm">
              {done.queued ? `Queued for ${done.to}. ` : `${done.to} is suppressed, so nothing was sent to it. `}
              <Link href={`~/admin/messages?id=${encodeURIComponent(done.id)}`} className="font-medium text-primary hover:underline">
                Follow message {done.id}
              </Link>
            </p>
          ) : null}
          <DialogFooter>
            <Button type="button" variant="outline" onClick={onClose}>
              Close
            </Button>
            <Button type="submit" disabled={send.isPending || !to.trim()}>
              {send.isPending ? <Loader2Icon className="animate-spin" /> : <SendIcon />} Send test
            </Button>
          </DialogFooter>
        </form>
      </DialogContent>
    </Dialog>
  )
}

type Action = { kind: 'new' } | { kind: 'edit' | 'test' | 'rotate' | 'delete'; bridge: Bridge } | { kind: 'secrets'; bridge: Bridge & BridgeSecrets }

/** Bridges: applications' SMTP credentials and API keys, with their domains, quotas, usage and counts. */
export function SendingBridgesPage() {
  const session = useSession()
  const admin = session.data?.admin
  const [action, setAction] = useState<Action | null>(null)
  const close = () => setAction(null)
  const qc = useQueryClient()
  const rotate = useMutation({
    mutationFn: (b: Bridge) => api<Bridge & BridgeSecrets>('POST', `/api/v2/bridges/${b.id}/rotate-credentials`, { smtp: true, api_key: true }),
    onSuccess: (b) => {
      qc.invalidateQueries({ queryKey: ['bridges'] })
      setAction({ kind: 'secrets', bridge: b })
    },
    onError: (e) => reportError(e, []),
  })
  const remove = useMutation({
    mutationFn: (b: Bridge) => api('DELETE', `/api/v2/bridges/${b.id}`),
    onSuccess: (_, b) => {
      qc.invalidateQueries({ queryKey: ['bridges'] })
      toast.success(`${b.name} deleted: its credentials no longer work`)
    },
    onError: (e) => reportError(e, []),
  })
  const addButton = can(admin, 'bridges.create') ? (
    <Button onClick={() => setAction({ kind: 'new' })}>
      <PlusIcon /> Create bridge
    </Button>
  ) : null
  return (
    <div className="grid gap-8">
      <PageHeader
        title="Bridges"
        description="SMTP credentials and an API key for each application that cannot call the API, held to its own domains and quotas."
        actions={addButton}
      />
      <DataTable<Bridge>
        path="/api/v2/bridges"
        queryKey="bridges"
        caption="Bridges"
        rowKey={(b) => b.id}
        empty={{
          icon: CableIcon,
          title: 'No bridges yet',
          description: 'Create one for each application that sends mail over SMTP: it gets its own credentials, domains and quotas.',
          action: addButton ?? undefined,
        }}
        columns={[
          {
            id: 'name',
            header: 'Bridge',
            cell: (b) => (
              <div className="grid gap-0.5">
                <span className="flex items-center gap-2 font-medium">
                  {b.name}
                  {!b.active ? <Badge variant="outline">Inactive</Badge> : null}
                  {b.send_dsn === false ? (
                    <Badge variant="outline" title="Bounces of its SMTP mail are not reported to the sender">
                      No bounce reports
                    </Badge>
                  ) : null}
                </span>
                <span className="font-mono text-xs text-muted-foreground">{b.smtp_username}</span>
              </div>
            ),
          },
          {
            id: 'domains',
            header: 'Domains',
            className: 'hidden md:table-cell',
            cell: (b) => (
              <div className="flex flex-wrap gap-1">
                {b.domains.map((d) => (
                  <Badge key={d} variant="secondary">
                    {d}
                  </Badge>
                ))}
              </div>
            ),
          },
          {
            id: 'counts',
            header: 'Sent',
            className: 'hidden sm:table-cell',
            cell: (b) => (
              <div className="grid gap-0.5 text-xs tabular-nums">
                <span>
                  <span className="font-medium text-foreground">{formatNumber(b.counts.accepted)}</span> <span className="text-muted-foreground">accepted</span>
                </span>
                <span className="text-muted-foreground">
                  {formatNumber(b.counts.delivered)} delivered · {formatNumber(b.counts.bounced)} bounced · {formatNumber(b.counts.complained)} complaints
                </span>
              </div>
            ),
          },
          {
            id: 'usage',
            header: 'Quota use',
            className: 'hidden lg:table-cell',
            cell: (b) => (
              <div className="grid gap-1 text-xs text-muted-foreground">
                <span>{usageText(b.usage.this_hour, b.hourly_quota, 'this hour')}</span>
                <UsageBar used={b.usage.this_hour} cap={b.hourly_quota} label={`${b.name} quota use this hour`} />
                <span>{usageText(b.usage.today, b.daily_quota, 'today')}</span>
                <UsageBar used={b.usage.today} cap={b.daily_quota} label={`${b.name} quota use today`} />
              </div>
            ),
          },
          actionsColumn((b) => (
            <RowActions
              name={b.name}
              className="size-8"
              actions={[
                { label: 'Edit', icon: PencilIcon, onSelect: () => setAction({ kind: 'edit', bridge: b }), hidden: !can(admin, 'bridges.update') },
                { label: 'Send test', icon: SendIcon, onSelect: () => setAction({ kind: 'test', bridge: b }), hidden: !can(admin, 'bridges.test') },
                {
                  label: 'Rotate credentials',
                  icon: KeyRoundIcon,
                  onSelect: () => setAction({ kind: 'rotate', bridge: b }),
                  hidden: !can(admin, 'bridges.update'),
                },
                {
                  label: 'Delete',
                  icon: Trash2Icon,
                  onSelect: () => setAction({ kind: 'delete', bridge: b }),
                  hidden: !can(admin, 'bridges.delete'),
                  destructive: true,
                },
              ]}
            />
          )),
        ]}
      />
      {action?.kind === 'new' || action?.kind === 'edit' ? (
        <BridgeDialog
          key={action.kind === 'edit' ? action.bridge.id : 'new'}
          bridge={action.kind === 'edit' ? action.bridge : null}
          onClose={close}
          onCreated={(b) => setAction({ kind: 'secrets', bridge: b })}
        />
      ) : null}
      {action?.kind === 'secrets' ? <CredentialsDialog bridge={action.bridge} onClose={close} /> : null}
      {action?.kind === 'test' ? <TestDialog bridge={action.bridge} onClose={close} /> : null}
      <ConfirmDialog
        open={action?.kind === 'rotate'}
        onOpenChange={(o) => !o && close()}
        title={action?.kind === 'rotate' ? `Rotate the credentials of ${action.bridge.name}?` : null}
        description="A new SMTP password and a new API key are made and shown once. The old ones stop working at once: the application fails until it has the new ones."
        confirmLabel="Rotate credentials"
        onConfirm={() => action?.kind === 'rotate' && rotate.mutate(action.bridge)}
      />
      <ConfirmDialog
        open={action?.kind === 'delete'}
        onOpenChange={(o) => !o && close()}
        title={action?.kind === 'delete' ? `Delete the bridge ${action.bridge.name}?` : null}
        description="Its SMTP credentials and API key stop working at once, and its counts are deleted. Messages it sent stay."
        confirmLabel="Delete bridge"
        onConfirm={() => action?.kind === 'delete' && remove.mutate(action.bridge)}
      />
    </div>
  )
}
