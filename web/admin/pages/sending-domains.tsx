import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import {
  ArrowLeftIcon,
  CheckCircle2Icon,
  CircleDashedIcon,
  CircleHelpIcon,
  GlobeIcon,
  Loader2Icon,
  PlusIcon,
  RefreshCwIcon,
  Trash2Icon,
  TriangleAlertIcon,
  XCircleIcon,
} from 'lucide-react'
import { useState } from 'react'
import { toast } from 'sonner'
import { Link, Route, Switch, useLocation, useParams } from 'wouter'
import { FormDialog } from '../components/form-dialog'
import { detailStates } from '../components/detail-page'
import { ConfirmDialog } from '../components/confirm-dialog'
import { SelectField } from '../components/select-field'
import { CopyButton } from '../components/copy-field'
import { DataTable } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../components/ui/card'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { Switch as Toggle } from '../components/ui/switch'
import { api } from '../lib/api'
import { can, useSession } from '../lib/session'
import { formatDateTime, timeAgo } from '../lib/utils'
import { fieldErrorOf, reportError, usePoolOptions, WarningNote, type DnsRecord, type RecordState, type SendingDomain } from './sending-shared'

const PURPOSE_LABEL: Record<DnsRecord['purpose'], string> = {
  dkim: 'DKIM key',
  spf: 'SPF',
  dmarc: 'DMARC (suggested)',
  return_path: 'Return path',
}

const PURPOSE_HELP: Record<DnsRecord['purpose'], string> = {
  dkim: 'Lets receivers check the signature Mailroom puts on every message.',
  spf: 'Names the addresses your mail leaves from. If the domain already has an SPF record, merge these mechanisms into it: a domain may have only one.',
  dmarc: 'Tells receivers what to do with mail that fails the checks, and where to send reports. Optional, recommended.',
  return_path: 'The bounce address host, pointed at this server so bounces come back here.',
}

const STATE_VIEW: Record<RecordState, { label: string; variant: 'success' | 'warning' | 'destructive' | 'outline'; icon: typeof CheckCircle2Icon }> = {
  verified: { label: 'Verified', variant: 'success', icon: CheckCircle2Icon },
  missing: { label: 'Missing', variant: 'destructive', icon: XCircleIcon },
  mismatch: { label: 'Mismatch', variant: 'destructive', icon: TriangleAlertIcon },
  error: { label: 'Lookup failed', variant: 'warning', icon: CircleHelpIcon },
  unchecked: { label: 'Not checked', variant: 'outline', icon: CircleDashedIcon },
}

/** A domain's status as a badge. */
function DomainStatus({ status }: { status: SendingDomain['status'] }) {
  if (status === 'verified')
    return (
      <Badge variant="success">
        <CheckCircle2Icon aria-hidden="true" /> Verified
      </Badge>
    )
  if (status === 'failed')
    return (
      <Badge variant="destructive">
        <XCircleIcon aria-hidden="true" /> Failed
      </Badge>
    )
  return (
    <Badge variant="warning">
      <CircleDashedIcon aria-hidden="true" /> Pending
    </Badge>
  )
}

function RecordStateBadge({ state }: { state: RecordState }) {
  const v = STATE_VIEW[state]
  const Icon = v.icon
  return (
    <Badge variant={v.variant} data-state={state}>
      <Icon aria-hidden="true" /> {v.label}
    </Badge>
  )
}

function requiredSummary(d: SendingDomain): string {
  const required = d.dns_records.filter((r) => r.required)
  const ok = required.filter((r) => r.state === 'verified').length
  return `${ok} of ${required.length} required records verified`
}

function AddDomainDialog() {
  const [open, setOpen] = useState(false)
  const [name, setName] = useState('')
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const create = useMutation({
    mutationFn: () => api<SendingDomain>('POST', '/api/v2/sending-domains', { name: name.trim() }),
    onSuccess: (d) => {
      qc.invalidateQueries({ queryKey: ['sending-domains'] })
      toast.success(`${d.name} added: publish its DNS records, then check them.`)
      setOpen(false)
      setName('')
      navigate(`/${d.id}`)
    },
    onError: (e) => reportError(e, ['name']),
  })
  return (
    <FormDialog
      open={open}
      onOpenChange={(o) => {
        setOpen(o)
        if (!o) create.reset()
      }}
      trigger={
        <Button>
          <PlusIcon /> Add domain
        </Button>
      }
      title="Add a sending domain"
      description="Mailroom makes a DKIM key for it and shows the DNS records to publish. Mail from the domain can be sent once they are verified."
      onSubmit={() => create.mutate()}
      onCancel={() => setOpen(false)}
      submitLabel="Add domain"
      busy={create.isPending}
      submitDisabled={create.isPending || !name.trim()}
    >
      <FormField label="Domain name" hint="The part after the @ of your From addresses, such as example.com." error={fieldErrorOf(create.error, 'name')}>
        <Input value={name} onChange={(e) => setName(e.target.value)} placeholder="example.com" autoComplete="off" required autoFocus />
      </FormField>
    </FormDialog>
  )
}

function DomainList() {
  const session = useSession()
  const mayCreate = can(session.data?.admin, 'sending_domains.create')
  const [, navigate] = useLocation()
  return (
    <div className="grid gap-8">
      <PageHeader
        title="Sending domains"
        description="The domains your mail is sent from, and the DNS records that prove it is yours."
        actions={mayCreate ? <AddDomainDialog /> : null}
      />
      <DataTable<SendingDomain>
        path="/api/v2/sending-domains"
        queryKey="sending-domains"
        caption="Sending domains"
        rowKey={(d) => d.id}
        onRowClick={(d) => navigate(`/${d.id}`)}
        empty={{
          icon: GlobeIcon,
          title: 'No sending domains yet',
          description: 'Add the domain of your From addresses; Mailroom shows the DNS records to publish for it.',
          action: mayCreate ? <AddDomainDialog /> : undefined,
        }}
        columns={[
          {
            id: 'name',
            header: 'Domain',
            cell: (d) => (
              <Link href={`/${d.id}`} className="font-medium hover:underline" onClick={(e) => e.stopPropagation()}>
                {d.name}
              </Link>
            ),
          },
          { id: 'status', header: 'Status', cell: (d) => <DomainStatus status={d.status} /> },
          {
            id: 'records',
            header: 'DNS records',
            cell: (d) => <span className="text-muted-foreground">{requiredSummary(d)}</span>,
            className: 'hidden md:table-cell',
          },
          {
            id: 'checked',
            header: 'Last checked',
            cell: (d) => <span className="text-muted-foreground">{d.checked_at ? timeAgo(d.checked_at) : 'Never'}</span>,
            className: 'hidden sm:table-cell',
          },
        ]}
      />
    </div>
  )
}

function RecordRow({ record }: { record: DnsRecord }) {
  return (
    <li className="grid gap-3 border-b px-4 py-4 last:border-b-0 sm:px-6" data-record={record.purpose}>
      <div className="flex flex-wrap items-center justify-between gap-2">
        <div className="flex flex-wrap items-center gap-2">
          <h3 className="font-medium">{PURPOSE_LABEL[record.purpose]}</h3>
          <Badge variant="secondary" className="font-mono">
            {record.type}
          </Badge>
          {!record.required ? <Badge variant="outline">Optional</Badge> : null}
        </div>
        <RecordStateBadge state={record.state} />
      </div>
      <p className="text-sm text-muted-foreground">{PURPOSE_HELP[record.purpose]}</p>
      <dl className="grid gap-2 text-sm">
        <div className="grid gap-1 sm:grid-cols-[7rem_1fr] sm:items-start">
          <dt className="pt-1.5 text-xs font-medium text-muted-foreground">Name</dt>
          <dd className="flex min-w-0 items-start gap-2">
            <code className="min-w-0 flex-1 rounded-md bg-muted px-2.5 py-1.5 font-mono text-xs break-all">{record.name}</code>
            <CopyButton value={record.name} label={`${PURPOSE_LABEL[record.purpose]} record name`} />
          </dd>
        </div>
        <div className="grid gap-1 sm:grid-cols-[7rem_1fr] sm:items-start">
          <dt className="pt-1.5 text-xs font-medium text-muted-foreground">{record.type === 'CNAME' ? 'Points to' : 'Value'}</dt>
          <dd className="flex min-w-0 items-start gap-2">
            <code className="min-w-0 flex-1 rounded-md bg-muted px-2.5 py-1.5 font-mono text-xs break-all">{record.value}</code>
            <CopyButton value={record.value} label={`${PURPOSE_LABEL[record.purpose]} record value`} />
          </dd>
        </div>
      </dl>
      {record.warning ? (
        <WarningNote>
          <p>
            Do not publish this value as it is: it holds <code className="font-mono text-xs">&lt;public-host-name&gt;</code> because the server has no public
            host name yet (see the warning above).
          </p>
        </WarningNote>
      ) : null}
      {record.state === 'mismatch' ? (
        <div className="grid gap-1.5 rounded-lg border border-destructive/30 bg-destructive/5 p-3 text-sm">
          <p>{record.message ?? 'DNS has a different value.'}</p>
          {record.found?.length ? (
            <>
              <p className="text-xs font-medium text-muted-foreground">Found instead:</p>
              <ul className="grid gap-1">
                {record.found.map((f, i) => (
                  <li key={i}>
                    <code className="font-mono text-xs break-all">{f}</code>
                  </li>
                ))}
              </ul>
            </>
          ) : null}
        </div>
      ) : null}
      {record.state === 'missing' ? (
        <p className={record.required ? 'text-sm text-destructive' : 'text-sm text-muted-foreground'}>
          No such record was found. Publish it at your DNS provider; changes can take a while to appear.
        </p>
      ) : null}
      {record.state === 'error' ? (
        <p className="text-sm text-muted-foreground">The lookup failed{record.message ? `: ${record.message}` : ''}. Try again in a moment.</p>
      ) : null}
    </li>
  )
}

function SettingsCard({ domain }: { domain: SendingDomain }) {
  const session = useSession()
  const mayUpdate = can(session.data?.admin, 'sending_domains.update')
  const pools = usePoolOptions()
  const [poolId, setPoolId] = useState(domain.pool_id == null ? 'default' : String(domain.pool_id))
  const [returnPath, setReturnPath] = useState(domain.return_path_host)
  const [opens, setOpens] = useState(domain.track_opens)
  const [clicks, setClicks] = useState(domain.track_clicks)
  const qc = useQueryClient()
  const save = useMutation({
    mutationFn: () =>
      api<SendingDomain>('PATCH', `/api/v2/sending-domains/${domain.id}`, {
        pool_id: poolId === 'default' ? null : Number(poolId),
        return_path_host: returnPath.trim(),
        track_opens: opens,
        track_clicks: clicks,
      }),
    onSuccess: (d) => {
      qc.setQueryData(['sending-domain', domain.id], d)
      qc.invalidateQueries({ queryKey: ['sending-domains'] })
      toast.success('Settings saved')
    },
    onError: (e) => reportError(e, ['pool_id', 'return_path_host', 'track_opens', 'track_clicks']),
  })
  const changed =
    poolId !== (domain.pool_id == null ? 'default' : String(domain.pool_id)) ||
    returnPath.trim() !== domain.return_path_host ||
    opens !== domain.track_opens ||
    clicks !== domain.track_clicks
  return (
    <Card>
      <CardHeader>
        <CardTitle>Settings</CardTitle>
        <CardDescription>How mail from this domain leaves, and what API sends track unless they say otherwise.</CardDescription>
      </CardHeader>
      <CardContent>
        <form
          className="grid gap-5"
          onSubmit={(e) => {
            e.preventDefault()
            save.mutate()
          }}
        >
          <FormField label="IP pool" hint="The pool of mail from this domain when the send names none." error={fieldErrorOf(save.error, 'pool_id')}>
            <SelectField
              value={poolId}
              onValueChange={setPoolId}
              disabled={!mayUpdate}
              options={[
                { value: 'default', label: 'The default pool' },
                ...(pools.data ?? []).map((p) => ({ value: String(p.id), label: p.is_default ? `${p.name} (default)` : p.name })),
              ]}
            />
          </FormField>
          <FormField
            label="Return-path host"
            hint="The host of the bounce address; it must be under the domain. Changing it changes the CNAME record to publish."
            error={fieldErrorOf(save.error, 'return_path_host')}
          >
            <Input value={returnPath} onChange={(e) => setReturnPath(e.target.value)} disabled={!mayUpdate} autoComplete="off" />
          </FormField>
          <div className="grid gap-3">
            <label className="flex items-center justify-between gap-4 text-sm">
              <span className="grid gap-0.5">
                <span className="font-medium">Track opens</span>
                <span className="text-xs text-muted-foreground">Adds an invisible image to HTML messages.</span>
              </span>
              <Toggle checked={opens} onCheckedChange={setOpens} disabled={!mayUpdate} aria-label="Track opens" />
            </label>
            <label className="flex items-center justify-between gap-4 text-sm">
              <span className="grid gap-0.5">
                <span className="font-medium">Track clicks</span>
                <span className="text-xs text-muted-foreground">Rewrites links in HTML messages to count clicks.</span>
              </span>
              <Toggle checked={clicks} onCheckedChange={setClicks} disabled={!mayUpdate} aria-label="Track clicks" />
            </label>
          </div>
          {mayUpdate ? (
            <div className="flex justify-end">
              <Button type="submit" disabled={!changed || save.isPending}>
                {save.isPending ? <Loader2Icon className="animate-spin" /> : null} Save settings
              </Button>
            </div>
          ) : null}
        </form>
      </CardContent>
    </Card>
  )
}

function DeleteDomain({ domain }: { domain: SendingDomain }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const remove = useMutation({
    mutationFn: () => api('DELETE', `/api/v2/sending-domains/${domain.id}`),
    onSuccess: () => {
      qc.invalidateQueries({ queryKey: ['sending-domains'] })
      toast.success(`${domain.name} deleted`)
      navigate('/')
    },
    onError: (e) => reportError(e, []),
  })
  return (
    <ConfirmDialog
      trigger={
        <Button variant="outline">
          <Trash2Icon /> Delete
        </Button>
      }
      title={`Delete ${domain.name}?`}
      description={
        <>
          Its DKIM key is deleted with it, and mail from {domain.name} can no longer be sent. Adding it again makes a new key, with new DNS records to publish.
        </>
      }
      confirmLabel="Delete domain"
      onConfirm={() => remove.mutate()}
    />
  )
}

/** The outcome of the last "Check DNS", in words, announced to screen readers. */
function CheckResult({ domain }: { domain: SendingDomain }) {
  const required = domain.dns_records.filter((r) => r.required)
  const failing = required.filter((r) => r.state !== 'verified')
  if (domain.status === 'verified' && failing.length === 0)
    return (
      <p role="status" className="flex items-center gap-2 text-sm text-success">
        <CheckCircle2Icon className="size-4" aria-hidden="true" /> All required records are verified: mail from {domain.name} can be sent.
      </p>
    )
  return (
    <p role="status" className="flex items-center gap-2 text-sm text-destructive">
      <XCircleIcon className="size-4" aria-hidden="true" />
      Not verified yet: {failing.length} of {required.length} required records need attention ({failing.map((r) => PURPOSE_LABEL[r.purpose]).join(', ')}).
    </p>
  )
}

function DomainDetail() {
  const { id } = useParams<{ id: string }>()
  const domainId = Number(id)
  const session = useSession()
  const admin = session.data?.admin
  const qc = useQueryClient()
  const [checked, setChecked] = useState(false)
  const domain = useQuery({ queryKey: ['sending-domain', domainId], queryFn: () => api<SendingDomain>('GET', `/api/v2/sending-domains/${domainId}`) })
  const verify = useMutation({
    mutationFn: () => api<SendingDomain>('POST', `/api/v2/sending-domains/${domainId}/verify`),
    onSuccess: (d) => {
      qc.setQueryData(['sending-domain', domainId], d)
      qc.invalidateQueries({ queryKey: ['sending-domains'] })
      setChecked(true)
      if (d.status === 'verified') toast.success(`${d.name} is verified`)
      else toast.error(`${d.name} is not verified yet`, { description: requiredSummary(d) })
    },
    onError: (e) => reportError(e, []),
  })

  const back = (
    <Link href="/" className="inline-flex w-fit items-center gap-1 text-sm text-muted-foreground hover:text-foreground">
      <ArrowLeftIcon className="size-4" aria-hidden="true" /> Sending domains
    </Link>
  )
  const states = detailStates(domain, { back, loadingLabel: 'Loading the domain', errorTitle: 'This domain could not be loaded' })
  if (states || !domain.data) return states
  const d = domain.data
  return (
    <div className="grid gap-6">
      {back}
      <PageHeader
        title={d.name}
        description={
          <span className="flex flex-wrap items-center gap-2">
            <DomainStatus status={d.status} />
            <span>
              {d.checked_at ? (
                <>
                  Last checked <time dateTime={d.checked_at}>{formatDateTime(d.checked_at)}</time>
                </>
              ) : (
                'Not checked yet'
              )}
              {d.verified_at ? (
                <>
                  {' · '}verified <time dateTime={d.verified_at}>{formatDateTime(d.verified_at)}</time>
                </>
              ) : null}
            </span>
          </span>
        }
        actions={
          <>
            {can(admin, 'sending_domains.verify') ? (
              <Button onClick={() => verify.mutate()} disabled={verify.isPending}>
                {verify.isPending ? <Loader2Icon className="animate-spin" /> : <RefreshCwIcon />} {verify.isPending ? 'Checking…' : 'Check DNS'}
              </Button>
            ) : null}
            {can(admin, 'sending_domains.delete') ? <DeleteDomain domain={d} /> : null}
          </>
        }
      />
      {d.warnings.length ? (
        <WarningNote>
          {d.warnings.map((w, i) => (
            <p key={i}>{w}</p>
          ))}
        </WarningNote>
      ) : null}
      {checked ? <CheckResult domain={d} /> : null}
      <div className="grid items-start gap-6 xl:grid-cols-[minmax(0,1fr)_22rem]">
        <Card className="gap-0 pb-0">
          <CardHeader className="pb-4">
            <CardTitle>DNS records</CardTitle>
            <CardDescription>Publish these at your DNS provider, exactly as shown, then press Check DNS. {requiredSummary(d)}.</CardDescription>
          </CardHeader>
          <ul className="border-t">
            {d.dns_records.map((r) => (
              <RecordRow key={`${r.purpose}-${r.name}`} record={r} />
            ))}
          </ul>
        </Card>
        <SettingsCard key={d.updated_at} domain={d} />
      </div>
    </div>
  )
}

/** Sending domains: the list, and each domain's page with its DNS records and settings. */
export function SendingDomainsPage() {
  return (
    <Switch>
      <Route path="/">
        <DomainList />
      </Route>
      <Route path="/:id">
        <DomainDetail />
      </Route>
    </Switch>
  )
}
