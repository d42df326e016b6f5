/**
 * The automation editor (issue 16 "UI"), for drips and triggers alike, at /new and /:id: the
 * entry settings (lists for a drip; event name and property filter for a trigger), re-entry,
 * exit conditions and goals, and the graph as a vertical flow of step cards, each with its
 * kind's settings and where each outcome goes (next; yes/no; event_received/timeout). The
 * API's 422 details (`steps.<id>...`, from a save or POST /validate) are shown on the step
 * they name. Saving with a graph makes a new version. An existing automation also shows live
 * counts per step (GET /stats, polled while the page is open), its latest runs, and for a
 * drip an enrollment dialog (POST /enroll).
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { ArrowDownIcon, ArrowUpIcon, CheckCircle2Icon, PauseIcon, PlayIcon, PlusIcon, SaveIcon, Trash2Icon, UserPlusIcon } from 'lucide-react'
import { useMemo, useState, type ReactNode } from 'react'
import { toast } from 'sonner'
import { useLocation, useParams } from 'wouter'
import { BackLink, detailStates } from '../../components/detail-page'
import { FormDialog } from '../../components/form-dialog'
import { PageHeader } from '../../components/page-header'
import { SelectField } from '../../components/select-field'
import { Badge } from '../../components/ui/badge'
import { Button } from '../../components/ui/button'
import { Card, CardContent, CardDescription, CardHeader, CardTitle } from '../../components/ui/card'
import { Checkbox } from '../../components/ui/checkbox'
import { DropdownMenu, DropdownMenuContent, DropdownMenuItem, DropdownMenuTrigger } from '../../components/ui/dropdown-menu'
import { FormField } from '../../components/ui/form-field'
import { Input } from '../../components/ui/input'
import { Label } from '../../components/ui/label'
import { Textarea } from '../../components/ui/textarea'
import { api, ApiError, apiPage, errorMessage } from '../../lib/api'
import { can, useSession } from '../../lib/session'
import { cn, formatNumber } from '../../lib/utils'
import { useListMenu } from '../audience/shared'
import type { TemplateSummary } from '../templates'
import {
  AutomationStatusBadge,
  KINDS,
  RunsTable,
  useAutomationTransition,
  type Automation,
  type AutomationKind,
  type Condition,
  type Goal,
  type Run,
  type Stats,
  type Step,
} from './shared'

const MENU = { per_page: 100 }

/** Every step kind: its label, one line, and the outcomes its edges are labelled with. */
const STEP_KINDS: Record<string, { label: string; edges: string[]; hint: string }> = {
  send: { label: 'Send email', edges: ['next'], hint: 'A template or inline content.' },
  wait: { label: 'Wait', edges: ['next'], hint: 'A duration, until a date, or until a time of day.' },
  wait_for_event: { label: 'Wait for event', edges: ['event_received', 'timeout'], hint: 'Until the contact does something, or a timeout.' },
  condition: { label: 'Condition', edges: ['yes', 'no'], hint: 'Branch on a segment, the event, or engagement.' },
  update_contact: { label: 'Update contact', edges: ['next'], hint: 'Names, status, custom fields.' },
  add_to_list: { label: 'Add to list', edges: ['next'], hint: 'Joins subscribed.' },
  remove_from_list: { label: 'Remove from list', edges: ['next'], hint: 'The contact becomes unsubscribed there.' },
  webhook: { label: 'Call webhook', edges: ['next'], hint: 'POSTs the run and contact to a webhook.' },
  exit: { label: 'Exit', edges: [], hint: 'The run ends exited.' },
}
const EDGE_LABEL: Record<string, string> = { next: 'Then', yes: 'If yes', no: 'If no', event_received: 'When the event comes', timeout: 'On timeout' }
const END = '__end'
const UNITS = [
  { value: '1', label: 'seconds' },
  { value: '60', label: 'minutes' },
  { value: '3600', label: 'hours' },
  { value: '86400', label: 'days' },
]
const OPS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'contains', 'exists', 'not_exists']

/** A step in the editor: the API's step plus a key that survives renaming its id. */
interface EditStep extends Step {
  key: number
  settings: Record<string, unknown>
  edges: Record<string, string>
}

interface Draft {
  name: string
  reentry: Automation['reentry']
  timezone: string
  list_ids: number[]
  event_name: string
  event_filter: string
  exit_conditions: Condition[]
  goals: Goal[]
}

let nextKey = 1
const withKeys = (steps: Step[]): EditStep[] => steps.map((s) => ({ ...s, key: nextKey++, settings: { ...(s.settings ?? {}) }, edges: { ...(s.edges ?? {}) } }))
const json = (v: unknown) => (v == null ? '' : JSON.stringify(v))
/** A JSON object typed in a field; null when empty; undefined when it is not an object. */
function parseObject(text: string): Record<string, unknown> | null | undefined {
  if (!text.trim()) return null
  try {
    const v = JSON.parse(text)
    return v && typeof v === 'object' && !Array.isArray(v) ? v : undefined
  } catch {
    return undefined
  }
}

/** The messages of a 422 under `prefix` (the key itself and every key below it). */
function errorsUnder(error: unknown, prefix: string): string[] {
  if (!(error instanceof ApiError) || !error.details) return []
  return Object.entries(error.details)
    .filter(([k]) => k === prefix || k.startsWith(`${prefix}.`))
    .flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((m) => (k === prefix ? String(m) : `${k.slice(prefix.length + 1)}: ${String(m)}`)))
}

/** The editor page: loads the automation (on /:id) and shows the form. */
export function AutomationEditor({ kind }: { kind: AutomationKind }) {
  const k = KINDS[kind]
  const params = useParams<{ id?: string }>()
  const id = params.id ? Number(params.id) : null
  const q = useQuery({ queryKey: ['automation', kind, id], queryFn: () => api<Automation>('GET', `${k.path}/${id}`), enabled: id != null && id > 0 })
  const back = <BackLink>All {k.plural}</BackLink>
  if (id != null) {
    const state = detailStates(q, {
      back,
      invalid: !(id > 0),
      notFound: { title: `No such ${k.noun}`, description: `It may have been deleted. Go back to the ${k.plural}.` },
      loadingLabel: `Loading the ${k.noun}`,
    })
    if (state) return state
  }
  return <EditorForm key={q.data ? `${q.data.id}-${q.data.version_id}` : 'new'} kind={kind} automation={q.data ?? null} back={back} />
}

function EditorForm({ kind, automation, back }: { kind: AutomationKind; automation: Automation | null; back: ReactNode }) {
  const k = KINDS[kind]
  const admin = useSession().data?.admin
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const mayEdit = can(admin, automation ? `${k.group}.update` : `${k.group}.create`)
  const [draft, setDraft] = useState<Draft>(() => ({
    name: automation?.name ?? '',
    reentry: automation?.reentry ?? 'once',
    timezone: automation?.timezone ?? '',
    list_ids: automation?.list_ids ?? [],
    event_name: automation?.event_name ?? '',
    event_filter: json(automation?.event_filter),
    exit_conditions: automation?.exit_conditions ?? [],
    goals: automation?.goals ?? [],
  }))
  const [steps, setSteps] = useState<EditStep[]>(() => withKeys(automation?.graph.steps ?? [{ id: 'welcome', kind: 'send', settings: {}, edges: {} }]))
  const [error, setError] = useState<unknown>(null)
  const [enrolling, setEnrolling] = useState(false)
  const set = (patch: Partial<Draft>) => setDraft((d) => ({ ...d, ...patch }))
  const transition = useAutomationTransition(kind)
  const lists = useListMenu()
  const stats = useQuery({
    queryKey: ['automation-stats', kind, automation?.id],
    queryFn: () => api<Stats>('GET', `${k.path}/${automation!.id}/stats`),
    enabled: automation != null,
    // Live counts while the page is open.
    refetchInterval: 2000,
  })
  const statsOf = useMemo(() => new Map((stats.data?.steps ?? []).map((s) => [s.step_id, s])), [stats.data])

  const graph = () => ({ steps: steps.map(({ key: _key, ...s }) => ({ ...s, edges: Object.fromEntries(Object.entries(s.edges).filter(([, v]) => v)) })) })
  const body = () => {
    const filter = parseObject(draft.event_filter)
    return {
      name: draft.name.trim(),
      reentry: draft.reentry,
      timezone: draft.timezone.trim() || null,
      exit_conditions: draft.exit_conditions,
      goals: draft.goals,
      graph: graph(),
      ...(kind === 'drip'
        ? { list_ids: draft.list_ids }
        : { event_name: draft.event_name.trim(), event_filter: filter === undefined ? draft.event_filter : filter }),
    }
  }
  const save = useMutation({
    mutationFn: () => (automation ? api<Automation>('PATCH', `${k.path}/${automation.id}`, body()) : api<Automation>('POST', k.path, body())),
    onSuccess: async (a) => {
      setError(null)
      toast.success(automation ? `Saved as version ${a.version}` : `${k.noun[0]!.toUpperCase()}${k.noun.slice(1)} created`)
      await qc.invalidateQueries({ queryKey: [k.queryKey] })
      if (automation) await qc.invalidateQueries({ queryKey: ['automation', kind, a.id] })
      else navigate(`/${a.id}`)
    },
    onError: (e) => {
      setError(e)
      if (!(e instanceof ApiError && e.details)) toast.error(errorMessage(e))
      else toast.error('Some steps need attention: see the messages on them.')
    },
  })
  const validate = useMutation({
    mutationFn: () => api<{ valid: true; steps: number }>('POST', `${k.path}/validate`, { graph: graph() }),
    onSuccess: (r) => {
      setError(null)
      toast.success(`The flow is valid (${formatNumber(r.steps)} steps)`)
    },
    onError: (e) => {
      setError(e)
      if (!(e instanceof ApiError && e.details)) toast.error(errorMessage(e))
    },
  })

  const renameStep = (key: number, id: string) =>
    setSteps((all) => {
      const old = all.find((s) => s.key === key)!.id
      return all.map((s) => ({
        ...(s.key === key ? { ...s, id } : s),
        edges: Object.fromEntries(Object.entries(s.edges).map(([l, t]) => [l, t === old ? id : t])),
      }))
    })
  const updateStep = (key: number, patch: Partial<EditStep>) => setSteps((all) => all.map((s) => (s.key === key ? { ...s, ...patch } : s)))
  const addStep = (kindOf: string) =>
    setSteps((all) => {
      let n = all.length + 1
      while (all.some((s) => s.id === `${kindOf}_${n}`)) n++
      const id = `${kindOf}_${n}`
      const last = all[all.length - 1]
      // A new step follows the last one when that one's way on is still open.
      const linked =
        last && STEP_KINDS[last.kind]?.edges.includes('next') && !last.edges.next ? [...all.slice(0, -1), { ...last, edges: { ...last.edges, next: id } }] : all
      return [...linked, { id, kind: kindOf, key: nextKey++, settings: {}, edges: {} }]
    })
  const removeStep = (key: number) =>
    setSteps((all) => {
      const gone = all.find((s) => s.key === key)!.id
      return all.filter((s) => s.key !== key).map((s) => ({ ...s, edges: Object.fromEntries(Object.entries(s.edges).filter(([, t]) => t !== gone)) }))
    })
  const moveStep = (key: number, by: number) =>
    setSteps((all) => {
      const i = all.findIndex((s) => s.key === key)
      const j = i + by
      if (j < 0 || j >= all.length) return all
      const next = [...all]
      ;[next[i], next[j]] = [next[j]!, next[i]!]
      return next
    })

  const fieldErrors = (field: string) => errorsUnder(error, field)
  const title = automation ? automation.name : `New ${k.noun}`
  const orphanErrors =
    error instanceof ApiError && error.details
      ? Object.keys(error.details).filter(
          (f) => (f.startsWith('graph') || f.startsWith('steps.')) && !steps.some((s) => f === `steps.${s.id}` || f.startsWith(`steps.${s.id}.`)),
        )
      : []

  return (
    <div className="grid gap-6">
      {back}
      <PageHeader
        title={title}
        description={
          automation ? (
            <span className="flex flex-wrap items-center gap-2">
              <AutomationStatusBadge status={automation.status} /> Version {automation.version} · {formatNumber(automation.runs.waiting)} waiting ·{' '}
              {formatNumber(automation.runs.active)} active · {formatNumber(automation.runs.finished)} finished
            </span>
          ) : (
            `Build the flow, save it as a draft, then activate it.`
          )
        }
        actions={
          <>
            {automation && mayEdit && automation.status !== 'active' ? (
              <Button variant="outline" onClick={() => transition.mutate({ id: automation.id, action: 'resume' })}>
                <PlayIcon /> {automation.status === 'draft' ? 'Activate' : 'Resume'}
              </Button>
            ) : null}
            {automation && mayEdit && automation.status === 'active' ? (
              <Button variant="outline" onClick={() => transition.mutate({ id: automation.id, action: 'pause' })}>
                <PauseIcon /> Pause
              </Button>
            ) : null}
            {automation && kind === 'drip' && mayEdit ? (
              <Button variant="outline" onClick={() => setEnrolling(true)}>
                <UserPlusIcon /> Enroll contacts
              </Button>
            ) : null}
          </>
        }
      />
      {automation?.status === 'paused' && automation.status_reason ? (
        <div role="status" data-testid="status-reason" className="rounded-lg border border-warning/40 bg-warning/10 px-4 py-3 text-sm">
          <strong className="font-medium">Paused:</strong> {automation.status_reason}
        </div>
      ) : null}
      <form
        className="grid gap-6"
        noValidate
        onSubmit={(e) => {
          e.preventDefault()
          save.mutate()
        }}
      >
        <fieldset disabled={!mayEdit} className="grid gap-6">
          <Card>
            <CardHeader>
              <CardTitle>Settings</CardTitle>
              <CardDescription>
                {kind === 'drip' ? 'Who enters: new subscribers of these lists, or contacts you enroll.' : 'Which tracked event starts a run.'}
              </CardDescription>
            </CardHeader>
            <CardContent className="grid gap-4 md:grid-cols-2">
              <FormField label="Name" error={fieldErrors('name')}>
                <Input value={draft.name} onChange={(e) => set({ name: e.target.value })} />
              </FormField>
              <FormField label="Re-entry" hint="Whether a contact may go through it again." error={fieldErrors('reentry')}>
                <SelectField
                  value={draft.reentry}
                  onValueChange={(v) => set({ reentry: v as Draft['reentry'] })}
                  options={[
                    { value: 'once', label: 'Once per address, ever' },
                    { value: 'after_finish', label: 'Again after the last run ended' },
                    { value: 'always', label: 'Every time' },
                  ]}
                />
              </FormField>
              {kind === 'drip' ? (
                <fieldset className="grid gap-2 md:col-span-2">
                  <legend className="mb-2 text-sm font-medium">Lists</legend>
                  <div className="flex flex-wrap gap-4">
                    {(lists.data?.data ?? []).map((l) => (
                      <div key={l.id} className="flex items-center gap-2">
                        <Checkbox
                          id={`entry-list-${l.id}`}
                          checked={draft.list_ids.includes(l.id)}
                          onCheckedChange={(c) => set({ list_ids: c === true ? [...draft.list_ids, l.id] : draft.list_ids.filter((x) => x !== l.id) })}
                        />
                        <Label htmlFor={`entry-list-${l.id}`}>{l.name}</Label>
                      </div>
                    ))}
                    {lists.data?.data.length === 0 ? <p className="text-sm text-muted-foreground">No lists yet: enroll contacts by hand.</p> : null}
                  </div>
                  {fieldErrors('list_ids').length ? (
                    <p role="alert" className="text-sm text-destructive">
                      {fieldErrors('list_ids').join(' ')}
                    </p>
                  ) : null}
                </fieldset>
              ) : (
                <>
                  <FormField label="Event name" hint="As sent to POST /api/v2/track, e.g. order.completed." error={fieldErrors('event_name')}>
                    <Input value={draft.event_name} onChange={(e) => set({ event_name: e.target.value })} />
                  </FormField>
                  <FormField
                    label="Property filter"
                    hint='JSON: each dotted path must equal the value (an array means one of), e.g. {"currency":"EUR"}.'
                    error={parseObject(draft.event_filter) === undefined ? 'Not a JSON object.' : fieldErrors('event_filter')}
                  >
                    <Input value={draft.event_filter} onChange={(e) => set({ event_filter: e.target.value })} className="font-mono" />
                  </FormField>
                </>
              )}
              <FormField label="Time zone" hint="For time-of-day waits of contacts without one (IANA, e.g. Europe/Paris)." error={fieldErrors('timezone')}>
                <Input value={draft.timezone} onChange={(e) => set({ timezone: e.target.value })} />
              </FormField>
            </CardContent>
          </Card>

          <section aria-labelledby="flow-heading" className="grid gap-3">
            <div className="flex items-center justify-between gap-2">
              <h2 id="flow-heading" className="text-lg font-semibold">
                Flow
              </h2>
              {stats.data ? <span className="text-xs text-muted-foreground">Live counts, refreshed every 2 seconds</span> : null}
            </div>
            {orphanErrors.length ? (
              <p role="alert" className="text-sm text-destructive">
                {orphanErrors.map((f) => `${f}: ${errorsUnder(error, f).join(' ')}`).join(' ')}
              </p>
            ) : null}
            <ol className="grid gap-0">
              {steps.map((s, i) => (
                <li key={s.key} className="grid justify-items-center">
                  {i > 0 ? <ArrowDownIcon className="my-1 size-4 text-muted-foreground" aria-hidden="true" /> : null}
                  <StepCard
                    step={s}
                    index={i}
                    count={steps.length}
                    steps={steps}
                    errors={errorsUnder(error, `steps.${s.id}`)}
                    stats={statsOf.get(s.id)}
                    onRename={(id) => renameStep(s.key, id)}
                    onChange={(patch) => updateStep(s.key, patch)}
                    onRemove={() => removeStep(s.key)}
                    onMove={(by) => moveStep(s.key, by)}
                  />
                </li>
              ))}
            </ol>
            <DropdownMenu>
              <DropdownMenuTrigger asChild>
                <Button type="button" variant="outline" className="w-fit justify-self-center">
                  <PlusIcon /> Add step
                </Button>
              </DropdownMenuTrigger>
              <DropdownMenuContent align="center">
                {Object.entries(STEP_KINDS).map(([kindOf, d]) => (
                  <DropdownMenuItem key={kindOf} onSelect={() => addStep(kindOf)}>
                    {d.label}
                  </DropdownMenuItem>
                ))}
              </DropdownMenuContent>
            </DropdownMenu>
          </section>

          <Card>
            <CardHeader>
              <CardTitle>Exit conditions and goals</CardTitle>
              <CardDescription>An exit condition ends a run wherever it is; a goal moves it to a step.</CardDescription>
            </CardHeader>
            <CardContent className="grid gap-6">
              <ConditionRows
                label="Exit condition"
                rows={draft.exit_conditions}
                onChange={(rows) => set({ exit_conditions: rows })}
                errors={(i) => errorsUnder(error, `exit_conditions.${i}`)}
              />
              <ConditionRows
                label="Goal"
                rows={draft.goals}
                steps={steps}
                onChange={(rows) => set({ goals: rows as Goal[] })}
                errors={(i) => errorsUnder(error, `goals.${i}`)}
              />
            </CardContent>
          </Card>
        </fieldset>
        {mayEdit ? (
          <div className="flex flex-wrap gap-2">
            <Button type="submit" disabled={save.isPending}>
              <SaveIcon /> {save.isPending ? 'Saving…' : automation ? 'Save new version' : `Create ${k.noun}`}
            </Button>
            <Button type="button" variant="outline" disabled={validate.isPending} onClick={() => validate.mutate()}>
              <CheckCircle2Icon /> Check the flow
            </Button>
          </div>
        ) : null}
      </form>
      {automation ? <RunsCard kind={kind} id={automation.id} /> : null}
      {automation && kind === 'drip' ? <EnrollDialog id={automation.id} open={enrolling} onOpenChange={setEnrolling} /> : null}
    </div>
  )
}

function StepCard({
  step,
  index,
  count,
  steps,
  errors,
  stats,
  onRename,
  onChange,
  onRemove,
  onMove,
}: {
  step: EditStep
  index: number
  count: number
  steps: EditStep[]
  errors: string[]
  stats?: { entered: number; waiting: number; completed: number; sent: number; opened: number; clicked: number; exited: number }
  onRename: (id: string) => void
  onChange: (patch: Partial<EditStep>) => void
  onRemove: () => void
  onMove: (by: number) => void
}) {
  const def = STEP_KINDS[step.kind]
  const setting = (key: string, value: unknown) => {
    const next = { ...step.settings }
    if (value === undefined || value === '') delete next[key]
    else next[key] = value
    onChange({ settings: next })
  }
  const label = `Step ${step.id}`
  return (
    <section aria-label={label} className={cn('grid w-full max-w-3xl gap-4 rounded-xl border bg-card p-4', errors.length && 'border-destructive')}>
      <div className="flex flex-wrap items-center gap-2">
        <Badge variant="secondary">{index === 0 ? 'Start' : `#${index + 1}`}</Badge>
        <span className="font-medium">{def?.label ?? step.kind}</span>
        <span className="font-mono text-xs text-muted-foreground">{step.id}</span>
        {stats ? (
          <span className="ml-auto flex flex-wrap gap-1 text-xs" data-testid="step-stats">
            <Badge variant="outline">entered {formatNumber(stats.entered)}</Badge>
            <Badge variant="outline">waiting {formatNumber(stats.waiting)}</Badge>
            <Badge variant="outline">completed {formatNumber(stats.completed)}</Badge>
            {step.kind === 'send' ? (
              <Badge variant="outline">
                sent {formatNumber(stats.sent)} · opened {formatNumber(stats.opened)} · clicked {formatNumber(stats.clicked)}
              </Badge>
            ) : null}
            {stats.exited ? <Badge variant="outline">exited {formatNumber(stats.exited)}</Badge> : null}
          </span>
        ) : null}
        <span className={cn('flex gap-1', !stats && 'ml-auto')}>
          <Button type="button" variant="ghost" size="icon" aria-label={`Move ${step.id} up`} disabled={index === 0} onClick={() => onMove(-1)}>
            <ArrowUpIcon />
          </Button>
          <Button type="button" variant="ghost" size="icon" aria-label={`Move ${step.id} down`} disabled={index === count - 1} onClick={() => onMove(1)}>
            <ArrowDownIcon />
          </Button>
          <Button type="button" variant="ghost" size="icon" aria-label={`Remove ${step.id}`} disabled={count === 1} onClick={onRemove}>
            <Trash2Icon />
          </Button>
        </span>
      </div>
      {errors.length ? (
        <ul role="alert" className="grid gap-1 text-sm text-destructive">
          {errors.map((m, i) => (
            <li key={i}>{m}</li>
          ))}
        </ul>
      ) : null}
      <div className="grid gap-4 sm:grid-cols-2">
        <FormField label="Step id" hint="Letters, digits, _ and -.">
          <Input value={step.id} onChange={(e) => onRename(e.target.value)} className="font-mono" />
        </FormField>
        <FormField label="Kind">
          <SelectField
            value={step.kind}
            onValueChange={(v) =>
              onChange({ kind: v, settings: {}, edges: STEP_KINDS[v]?.edges.includes('next') && step.edges.next ? { next: step.edges.next } : {} })
            }
            options={Object.entries(STEP_KINDS).map(([value, d]) => ({ value, label: d.label }))}
          />
        </FormField>
      </div>
      <StepSettings step={step} steps={steps} setting={setting} />
      {def?.edges.length ? (
        <div className="grid gap-4 sm:grid-cols-2">
          {def.edges.map((edge) => (
            <FormField key={edge} label={EDGE_LABEL[edge] ?? edge}>
              <SelectField
                value={step.edges[edge] || END}
                onValueChange={(v) => onChange({ edges: { ...step.edges, [edge]: v === END ? '' : v } })}
                options={[
                  { value: END, label: 'End the run' },
                  // A removed target stays visible so the mistake can be seen and fixed.
                  ...(step.edges[edge] && !steps.some((s) => s.id === step.edges[edge])
                    ? [{ value: step.edges[edge]!, label: `${step.edges[edge]} (missing)` }]
                    : []),
                  ...steps.filter((s) => s.id).map((s) => ({ value: s.id, label: `Go to ${s.id}` })),
                ]}
              />
            </FormField>
          ))}
        </div>
      ) : null}
    </section>
  )
}

function DurationField({ label, seconds, onChange }: { label: string; seconds: unknown; onChange: (s: number | undefined) => void }) {
  const n = typeof seconds === 'number' ? seconds : undefined
  const initial = n == null ? '86400' : ([...UNITS].reverse().find((u) => n % Number(u.value) === 0)?.value ?? '60')
  const [unit, setUnit] = useState(initial)
  const amount = n == null ? '' : String(n / Number(unit))
  return (
    <div className="grid grid-cols-[1fr_8rem] items-end gap-2">
      <FormField label={label}>
        <Input
          type="number"
          min={0}
          value={amount}
          onChange={(e) => onChange(e.target.value === '' ? undefined : Math.round(Number(e.target.value) * Number(unit)))}
        />
      </FormField>
      <SelectField
        aria-label={`${label} unit`}
        value={unit}
        onValueChange={(u) => {
          setUnit(u)
          if (n != null) onChange(Math.round((n / Number(unit)) * Number(u)))
        }}
        options={UNITS}
      />
    </div>
  )
}

/** A JSON-object input kept as text until it parses. */
function JsonField({
  label,
  hint,
  value,
  onChange,
}: {
  label: string
  hint?: string
  value: unknown
  onChange: (v: Record<string, unknown> | undefined) => void
}) {
  const [text, setText] = useState(json(value))
  const parsed = parseObject(text)
  return (
    <FormField label={label} hint={hint} error={parsed === undefined ? 'Not a JSON object.' : undefined}>
      <Input
        className="font-mono"
        value={text}
        onChange={(e) => {
          setText(e.target.value)
          const v = parseObject(e.target.value)
          if (v !== undefined) onChange(v ?? undefined)
        }}
      />
    </FormField>
  )
}

function StepSettings({ step, steps, setting }: { step: EditStep; steps: EditStep[]; setting: (key: string, value: unknown) => void }) {
  const s = step.settings
  const str = (key: string) => (typeof s[key] === 'string' ? (s[key] as string) : s[key] == null ? '' : String(s[key]))
  const num = (v: string) => (v === '' ? undefined : Number(v))
  const text = (key: string, label: string, hint?: string) => (
    <FormField label={label} hint={hint}>
      <Input value={str(key)} onChange={(e) => setting(key, e.target.value)} />
    </FormField>
  )
  const templates = useQuery({
    queryKey: ['templates', 'menu'],
    queryFn: () => apiPage<TemplateSummary>('/api/v2/templates', MENU),
    enabled: step.kind === 'send',
  })
  const segments = useQuery({
    queryKey: ['segments', 'menu'],
    queryFn: () => apiPage<{ id: number; name: string }>('/api/v2/segments', MENU),
    enabled: step.kind === 'condition',
  })
  const webhooks = useQuery({
    queryKey: ['webhooks', 'menu'],
    queryFn: () => apiPage<{ id: number; endpoint: string; description: string }>('/api/v2/webhooks', MENU),
    enabled: step.kind === 'webhook',
  })
  const lists = useListMenu()
  const [sendMode, setSendMode] = useState<'template' | 'inline'>(
    s.template_id != null ? 'template' : s.subject != null || s.html != null ? 'inline' : 'template',
  )
  const [waitMode, setWaitMode] = useState(s.until != null ? 'until' : s.time_of_day != null ? 'time_of_day' : 'duration_seconds')

  switch (step.kind) {
    case 'send':
      return (
        <div className="grid gap-4 sm:grid-cols-2">
          <FormField label="Content">
            <SelectField
              value={sendMode}
              onValueChange={(v) => {
                setSendMode(v as 'template' | 'inline')
                for (const key of v === 'template' ? ['subject', 'html', 'text'] : ['template_id', 'template_version']) setting(key, undefined)
              }}
              options={[
                { value: 'template', label: 'A template' },
                { value: 'inline', label: 'Written here' },
              ]}
            />
          </FormField>
          {sendMode === 'template' ? (
            <>
              <FormField label="Template">
                <SelectField
                  value={s.template_id != null ? String(s.template_id) : undefined}
                  placeholder="Choose a template"
                  onValueChange={(v) => setting('template_id', Number(v))}
                  options={(templates.data?.data ?? []).map((t) => ({ value: String(t.id), label: t.name }))}
                />
              </FormField>
              <FormField label="Template version" hint="Empty: the active version, pinned on save.">
                <Input type="number" min={1} value={str('template_version')} onChange={(e) => setting('template_version', num(e.target.value))} />
              </FormField>
            </>
          ) : (
            <>
              {text('subject', 'Subject', 'Variables: {{first_name}}, {{fields.x}}, {{event.path}}.')}
              <FormField label="HTML" className="sm:col-span-2">
                <Textarea rows={4} className="font-mono" value={str('html')} onChange={(e) => setting('html', e.target.value)} />
              </FormField>
              <FormField label="Text" className="sm:col-span-2">
                <Textarea rows={3} value={str('text')} onChange={(e) => setting('text', e.target.value)} />
              </FormField>
            </>
          )}
          {text('from', 'From', 'Empty: the template’s, else the default sender.')}
          {text('reply_to', 'Reply-to')}
        </div>
      )
    case 'wait':
      return (
        <div className="grid gap-4 sm:grid-cols-2">
          <FormField label="Wait">
            <SelectField
              value={waitMode}
              onValueChange={(v) => {
                setWaitMode(v)
                for (const key of ['duration_seconds', 'until', 'time_of_day']) if (key !== v) setting(key, undefined)
              }}
              options={[
                { value: 'duration_seconds', label: 'For a while' },
                { value: 'until', label: 'Until a date' },
                { value: 'time_of_day', label: 'Until a time of day' },
              ]}
            />
          </FormField>
          {waitMode === 'duration_seconds' ? (
            <DurationField label="Duration" seconds={s.duration_seconds} onChange={(v) => setting('duration_seconds', v)} />
          ) : null}
          {waitMode === 'until' ? text('until', 'Until', 'ISO 8601, e.g. 2026-12-01T09:00:00Z.') : null}
          {waitMode === 'time_of_day' ? (
            <>
              {text('time_of_day', 'Time of day', 'HH:MM in the contact’s zone.')}
              {text('timezone_field', 'Time zone field', 'The custom field with the zone (default timezone).')}
            </>
          ) : null}
        </div>
      )
    case 'wait_for_event':
      return (
        <div className="grid gap-4 sm:grid-cols-2">
          {text('event', 'Event')}
          <DurationField label="Timeout" seconds={s.timeout_seconds} onChange={(v) => setting('timeout_seconds', v)} />
          <JsonField label="Event filter" hint="JSON object of dotted paths and values." value={s.filter} onChange={(v) => setting('filter', v)} />
        </div>
      )
    case 'condition': {
      const type = str('type') || undefined
      return (
        <div className="grid gap-4 sm:grid-cols-2">
          <FormField label="Condition type">
            <SelectField
              value={type}
              placeholder="Choose what to test"
              onValueChange={(v) => {
                for (const key of ['segment_id', 'rules', 'property', 'op', 'value', 'step_id', 'activity']) setting(key, undefined)
                setting('type', v)
              }}
              options={[
                { value: 'engagement', label: 'Opened or clicked a send step' },
                { value: 'segment', label: 'Is in a segment' },
                { value: 'event', label: 'A property of the triggering event' },
              ]}
            />
          </FormField>
          {type === 'segment' ? (
            <FormField label="Segment">
              <SelectField
                value={s.segment_id != null ? String(s.segment_id) : undefined}
                placeholder="Choose a segment"
                onValueChange={(v) => setting('segment_id', Number(v))}
                options={(segments.data?.data ?? []).map((x) => ({ value: String(x.id), label: x.name }))}
              />
            </FormField>
          ) : null}
          {type === 'event' ? (
            <>
              {text('property', 'Property', 'A dotted path, e.g. order.total.')}
              <FormField label="Operator">
                <SelectField
                  value={str('op') || undefined}
                  placeholder="Choose"
                  onValueChange={(v) => setting('op', v)}
                  options={OPS.map((o) => ({ value: o, label: o }))}
                />
              </FormField>
              <FormField label="Value" hint='JSON (100, true, "EUR") or plain text.'>
                <Input
                  value={s.value === undefined ? '' : typeof s.value === 'string' ? s.value : JSON.stringify(s.value)}
                  onChange={(e) => {
                    let v: unknown = e.target.value
                    try {
                      v = JSON.parse(e.target.value)
                    } catch {
                      // Plain text is a string value.
                    }
                    setting('value', e.target.value === '' ? undefined : v)
                  }}
                />
              </FormField>
            </>
          ) : null}
          {type === 'engagement' ? (
            <>
              <FormField label="Send step">
                <SelectField
                  value={str('step_id') || undefined}
                  placeholder="Choose a send step"
                  onValueChange={(v) => setting('step_id', v)}
                  options={steps.filter((x) => x.kind === 'send').map((x) => ({ value: x.id, label: x.id }))}
                />
              </FormField>
              <FormField label="Activity">
                <SelectField
                  value={str('activity') || undefined}
                  placeholder="Choose"
                  onValueChange={(v) => setting('activity', v)}
                  options={[
                    { value: 'opened', label: 'Opened' },
                    { value: 'clicked', label: 'Clicked' },
                  ]}
                />
              </FormField>
            </>
          ) : null}
        </div>
      )
    }
    case 'update_contact':
      return (
        <div className="grid gap-4 sm:grid-cols-2">
          {text('first_name', 'First name')}
          {text('last_name', 'Last name')}
          <FormField label="Status">
            <SelectField
              value={str('status') || 'unchanged'}
              onValueChange={(v) => setting('status', v === 'unchanged' ? undefined : v)}
              options={[
                { value: 'unchanged', label: 'Unchanged' },
                { value: 'subscribed', label: 'Subscribed' },
                { value: 'unsubscribed', label: 'Unsubscribed' },
              ]}
            />
          </FormField>
          <JsonField label="Custom fields" hint='JSON, e.g. {"plan":"pro"}.' value={s.fields} onChange={(v) => setting('fields', v)} />
        </div>
      )
    case 'add_to_list':
    case 'remove_from_list':
      return (
        <FormField label="List">
          <SelectField
            value={s.list_id != null ? String(s.list_id) : undefined}
            placeholder="Choose a list"
            onValueChange={(v) => setting('list_id', Number(v))}
            options={(lists.data?.data ?? []).map((l) => ({ value: String(l.id), label: l.name }))}
          />
        </FormField>
      )
    case 'webhook':
      return (
        <FormField label="Webhook">
          <SelectField
            value={s.webhook_id != null ? String(s.webhook_id) : undefined}
            placeholder="Choose a webhook"
            onValueChange={(v) => setting('webhook_id', Number(v))}
            options={(webhooks.data?.data ?? []).map((w) => ({ value: String(w.id), label: w.description || w.endpoint }))}
          />
        </FormField>
      )
    default:
      return <p className="text-sm text-muted-foreground">{STEP_KINDS[step.kind]?.hint ?? 'No settings.'}</p>
  }
}

function ConditionRows({
  label,
  rows,
  steps,
  onChange,
  errors,
}: {
  label: string
  rows: Array<Condition | Goal>
  steps?: EditStep[]
  onChange: (rows: Array<Condition | Goal>) => void
  errors: (i: number) => string[]
}) {
  const segments = useQuery({ queryKey: ['segments', 'menu'], queryFn: () => apiPage<{ id: number; name: string }>('/api/v2/segments', MENU) })
  const put = (i: number, patch: Partial<Goal>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)))
  return (
    <div className="grid gap-3">
      {rows.map((r, i) => (
        <fieldset key={i} className="grid gap-3 rounded-lg border p-3 sm:grid-cols-3">
          <legend className="px-1 text-sm font-medium">
            {label} {i + 1}
          </legend>
          <FormField label="Event" hint="Or choose a segment.">
            <Input value={r.event ?? ''} onChange={(e) => put(i, { event: e.target.value || null, segment_id: e.target.value ? null : r.segment_id })} />
          </FormField>
          <FormField label="Segment">
            <SelectField
              value={r.segment_id != null ? String(r.segment_id) : 'none'}
              onValueChange={(v) => put(i, v === 'none' ? { segment_id: null } : { segment_id: Number(v), event: null, filter: null })}
              options={[{ value: 'none', label: 'None' }, ...(segments.data?.data ?? []).map((x) => ({ value: String(x.id), label: x.name }))]}
            />
          </FormField>
          {steps ? (
            <FormField label="Move to step">
              <SelectField
                value={(r as Goal).step_id || undefined}
                placeholder="Choose a step"
                onValueChange={(v) => put(i, { step_id: v })}
                options={steps.map((s) => ({ value: s.id, label: s.id }))}
              />
            </FormField>
          ) : null}
          <JsonField label="Event filter" value={r.filter} onChange={(v) => put(i, { filter: v ?? null })} />
          <Button type="button" variant="ghost" size="sm" className="self-end justify-self-start" onClick={() => onChange(rows.filter((_, j) => j !== i))}>
            <Trash2Icon /> Remove
          </Button>
          {errors(i).length ? (
            <p role="alert" className="text-sm text-destructive sm:col-span-3">
              {errors(i).join(' ')}
            </p>
          ) : null}
        </fieldset>
      ))}
      <Button
        type="button"
        variant="outline"
        size="sm"
        className="w-fit"
        onClick={() => onChange([...rows, steps ? { event: null, step_id: '' } : { event: null }])}
      >
        <PlusIcon /> Add {label.toLowerCase()}
      </Button>
    </div>
  )
}

function RunsCard({ kind, id }: { kind: AutomationKind; id: number }) {
  const k = KINDS[kind]
  const runs = useQuery({
    queryKey: ['automation-runs', kind, id],
    queryFn: () => apiPage<Run>(`${k.path}/${id}/runs`, { per_page: 25 }),
    refetchInterval: 5000,
  })
  return (
    <Card>
      <CardHeader>
        <CardTitle>Latest runs</CardTitle>
        <CardDescription>{runs.data ? `${formatNumber(runs.data.meta.total)} in all, newest first.` : 'Newest first.'}</CardDescription>
      </CardHeader>
      <CardContent>
        {runs.data?.data.length ? (
          <RunsTable runs={runs.data.data} showContact caption={`Runs of this ${k.noun}`} />
        ) : (
          <p className="text-sm text-muted-foreground">No runs yet.</p>
        )}
      </CardContent>
    </Card>
  )
}

function EnrollDialog({ id, open, onOpenChange }: { id: number; open: boolean; onOpenChange: (o: boolean) => void }) {
  const qc = useQueryClient()
  const lists = useListMenu()
  const [listId, setListId] = useState<string | undefined>(undefined)
  const [ids, setIds] = useState('')
  const [error, setError] = useState<unknown>(null)
  const enroll = useMutation({
    mutationFn: () => {
      const contact_ids = ids
        .split(/[\s,]+/)
        .filter(Boolean)
        .map(Number)
      return api<{ enrolled: number; skipped: number; not_found: number[] }>('POST', `/api/v2/drips/${id}/enroll`, {
        ...(contact_ids.length ? { contact_ids } : {}),
        ...(listId ? { list_id: Number(listId) } : {}),
      })
    },
    onSuccess: async (r) => {
      toast.success(
        `${formatNumber(r.enrolled)} enrolled, ${formatNumber(r.skipped)} skipped${r.not_found.length ? `, not found: ${r.not_found.join(', ')}` : ''}`,
      )
      setError(null)
      onOpenChange(false)
      await Promise.all(['drips', 'automation-stats', 'automation-runs', 'automation'].map((key) => qc.invalidateQueries({ queryKey: [key] })))
    },
    onError: (e) => {
      setError(e)
      toast.error(errorMessage(e))
    },
  })
  return (
    <FormDialog
      open={open}
      onOpenChange={onOpenChange}
      title="Enroll contacts"
      description="Start runs for a whole list (its subscribed contacts) or for contacts by id. The re-entry policy applies."
      submitLabel={enroll.isPending ? 'Enrolling…' : 'Enroll'}
      busy={enroll.isPending}
      submitDisabled={!listId && !ids.trim()}
      onSubmit={() => {
        enroll.mutate()
      }}
    >
      <FormField label="List" error={errorsUnder(error, 'list_id')}>
        <SelectField
          value={listId ?? 'none'}
          onValueChange={(v) => setListId(v === 'none' ? undefined : v)}
          options={[{ value: 'none', label: 'No list' }, ...(lists.data?.data ?? []).map((l) => ({ value: String(l.id), label: l.name }))]}
        />
      </FormField>
      <FormField label="Contact ids" hint="Separated by commas or spaces, up to 1,000." error={errorsUnder(error, 'contact_ids')}>
        <Input value={ids} onChange={(e) => setIds(e.target.value)} />
      </FormField>
    </FormDialog>
  )
}
