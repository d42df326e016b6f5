import { useQuery } from '@tanstack/react-query'
import { HistoryIcon, KeyRoundIcon, TerminalIcon, UserIcon } from 'lucide-react'
import { useState, type FormEvent } from 'react'
import { SelectField } from '../components/select-field'
import { DataTable, type Column } from '../components/data-table'
import { PageHeader } from '../components/page-header'
import { Badge } from '../components/ui/badge'
import { Button } from '../components/ui/button'
import { Card, CardContent } from '../components/ui/card'
import { FormField } from '../components/ui/form-field'
import { Input } from '../components/ui/input'
import { SelectGroup, SelectItem } from '../components/ui/select'
import { apiPage } from '../lib/api'
import { usePermissionTree } from '../lib/roles'
import { can, useSession } from '../lib/session'
import { useUrlQuery } from '../lib/url-query'
import { formatDateTime, fromLocalInput, toLocalInput } from '../lib/utils'

/** An entry as GET /api/v2/activity-logs answers. */
interface Activity {
  id: number
  created_at: string
  actor: { type: 'api_key' | 'admin' | 'cli'; key_id: number | null; admin_id: number | null; name: string }
  action: string
  target: { type: string; id: string | null } | null
  method: string | null
  path: string | null
  ip: string | null
  status: number
  outcome: 'success' | 'failure'
}

const FILTERS = ['key_id', 'admin_id', 'action', 'target_type', 'target_id', 'outcome', 'since', 'until']
const ANY = 'any'

function ActorCell({ actor }: { actor: Activity['actor'] }) {
  const Icon = actor.type === 'api_key' ? KeyRoundIcon : actor.type === 'admin' ? UserIcon : TerminalIcon
  const kind = actor.type === 'api_key' ? 'API key' : actor.type === 'admin' ? 'Administrator' : 'Command line'
  return (
    <div className="flex items-center gap-2">
      <Icon className="size-4 shrink-0 text-muted-foreground" aria-label={kind} role="img" />
      <span className="max-w-56 truncate" title={`${kind}: ${actor.name}`}>
        {actor.name}
      </span>
    </div>
  )
}

/** The filter form: actor, action, target, outcome and time range; applied to the URL query on submit. */
function Filters() {
  const { data: session } = useSession()
  const [params, setParams] = useUrlQuery()
  const admin = session?.admin
  const tree = usePermissionTree()
  const keys = useQuery({
    queryKey: ['api-keys', 'actors'],
    queryFn: () => apiPage<{ id: number; name: string }>('/api/v2/api-keys', { state: 'all', per_page: 100 }),
    enabled: can(admin, 'api_keys.read'),
  })
  const admins = useQuery({
    queryKey: ['admins', 'actors'],
    queryFn: () => apiPage<{ id: number; email: string }>('/api/v2/admins', { per_page: 100 }),
    enabled: can(admin, 'admins.read'),
  })
  const actorOf = () => (params.get('key_id') ? `key:${params.get('key_id')}` : params.get('admin_id') ? `admin:${params.get('admin_id')}` : ANY)
  const [actor, setActor] = useState(actorOf)
  const [action, setAction] = useState(params.get('action') ?? ANY)
  const [targetType, setTargetType] = useState(params.get('target_type') ?? '')
  const [targetId, setTargetId] = useState(params.get('target_id') ?? '')
  const [outcome, setOutcome] = useState(params.get('outcome') ?? ANY)
  const [since, setSince] = useState(toLocalInput(params.get('since')))
  const [until, setUntil] = useState(toLocalInput(params.get('until')))
  const rangeError = since && until && new Date(since) >= new Date(until) ? 'The end must be after the start.' : null

  const apply = (e: FormEvent) => {
    e.preventDefault()
    if (rangeError) return
    const [kind, id] = actor.split(':')
    setParams({
      key_id: kind === 'key' ? id : null,
      admin_id: kind === 'admin' ? id : null,
      action: action === ANY ? null : action,
      target_type: targetType.trim() || null,
      target_id: targetId.trim() || null,
      outcome: outcome === ANY ? null : outcome,
      since: fromLocalInput(since),
      until: fromLocalInput(until),
      page: null,
    })
  }
  const clear = () => {
    setActor(ANY)
    setAction(ANY)
    setTargetType('')
    setTargetId('')
    setOutcome(ANY)
    setSince('')
    setUntil('')
    setParams(Object.fromEntries([...FILTERS, 'page'].map((f) => [f, null])))
  }

  return (
    <Card className="py-4">
      <CardContent className="px-4">
        <form onSubmit={apply} className="grid gap-4 sm:grid-cols-2 lg:grid-cols-4" aria-label="Filter the activity log">
          <FormField label="Actor">
            <SelectField value={actor} onValueChange={setActor}>
              <SelectItem value={ANY}>Anyone</SelectItem>
              {keys.data?.data.length ? (
                <SelectGroup>
                  {keys.data.data.map((k) => (
                    <SelectItem key={`k${k.id}`} value={`key:${k.id}`}>
                      Key: {k.name}
                    </SelectItem>
                  ))}
                </SelectGroup>
              ) : null}
              {admins.data?.data.length ? (
                <SelectGroup>
                  {admins.data.data.map((a) => (
                    <SelectItem key={`a${a.id}`} value={`admin:${a.id}`}>
                      Administrator: {a.email}
                    </SelectItem>
                  ))}
                </SelectGroup>
              ) : null}
            </SelectField>
          </FormField>
          <FormField label="Action">
            <SelectField value={action} onValueChange={setAction}>
              <SelectItem value={ANY}>Any action</SelectItem>
              {(tree.data ?? []).flatMap((g) =>
                g.permissions.map((p) => (
                  <SelectItem key={p.id} value={p.id}>
                    {p.description}
                  </SelectItem>
                )),
              )}
            </SelectField>
          </FormField>
          <FormField label="Target type" hint="e.g. api_key, role, contact">
            <Input value={targetType} onChange={(e) => setTargetType(e.target.value)} autoComplete="off" />
          </FormField>
          <FormField label="Target id">
            <Input value={targetId} onChange={(e) => setTargetId(e.target.value)} autoComplete="off" />
          </FormField>
          <FormField label="From">
            <Input type="datetime-local" value={since} onChange={(e) => setSince(e.target.value)} />
          </FormField>
          <FormField label="Until" error={rangeError}>
            <Input type="datetime-local" value={until} onChange={(e) => setUntil(e.target.value)} />
          </FormField>
          <FormField label="Result">
            <SelectField value={outcome} onValueChange={setOutcome}>
              <SelectItem value={ANY}>Any result</SelectItem>
              <SelectItem value="success">Succeeded</SelectItem>
              <SelectItem value="failure">Failed</SelectItem>
            </SelectField>
          </FormField>
          <div className="flex items-end gap-2">
            <Button type="submit">Apply filters</Button>
            <Button type="button" variant="ghost" onClick={clear}>
              Clear
            </Button>
          </div>
        </form>
      </CardContent>
    </Card>
  )
}

/** The activity log: every change made through the API or the console, newest first, filtered on the server. */
export function ActivityPage() {
  const [params] = useUrlQuery()
  const filtered = FILTERS.some((f) => params.get(f))
  const columns: Column<Activity>[] = [
    {
      id: 'time',
      header: 'Time',
      className: 'whitespace-nowrap',
      cell: (a) => <time dateTime={a.created_at}>{formatDateTime(a.created_at)}</time>,
    },
    { id: 'actor', header: 'Actor', cell: (a) => <ActorCell actor={a.actor} /> },
    { id: 'action', header: 'Action', cell: (a) => <code className="font-mono text-xs">{a.action}</code> },
    {
      id: 'target',
      header: 'Target',
      cell: (a) =>
        a.target ? (
          <span className="font-mono text-xs">
            {a.target.type}
            {a.target.id ? ` #${a.target.id}` : ''}
          </span>
        ) : (
          <span className="text-muted-foreground">—</span>
        ),
    },
    {
      id: 'request',
      header: 'Request',
      cell: (a) =>
        a.method ? (
          <span className="font-mono text-xs" title={a.ip ? `from ${a.ip}` : undefined}>
            {a.method} {a.path}
          </span>
        ) : (
          <span className="text-muted-foreground">—</span>
        ),
    },
    { id: 'ip', header: 'IP', cell: (a) => <span className="font-mono text-xs">{a.ip ?? '—'}</span> },
    {
      id: 'result',
      header: 'Result',
      cell: (a) => <Badge variant={a.outcome === 'success' ? 'success' : 'destructive'}>{a.status}</Badge>,
    },
  ]
  return (
    <div className="grid gap-6">
      <PageHeader title="Activity log" description="Who changed what, and when: every change through the API or the console, newest first." />
      <Filters key={params.toString() === '' ? 'clear' : 'set'} />
      <DataTable<Activity>
        path="/api/v2/activity-logs"
        queryKey="activity-logs"
        columns={columns}
        rowKey={(a) => a.id}
        filters={FILTERS}
        caption="Activity log entries"
        empty={
          filtered
            ? { icon: HistoryIcon, title: 'Nothing matches these filters', description: 'Widen the time range or clear a filter.' }
            : { icon: HistoryIcon, title: 'No activity yet', description: 'Changes made with an API key or in the console appear here.' }
        }
      />
    </div>
  )
}
