/**
 * What the Drips and Triggers pages share (issue 16 "UI"): the API's shapes
 * (docs/api.md "Automations and custom events"), the kind's words and routes, the status and
 * run-state badges, and a contact's run history (GET /api/v2/contacts/{id}/automations).
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { toast } from 'sonner'
import { ErrorState, LoadingState } from '../../components/states'
import { Badge } from '../../components/ui/badge'
import { api, apiPage, errorMessage } from '../../lib/api'
import { formatDateTime } from '../../lib/utils'

export type AutomationKind = 'drip' | 'trigger'
export const AUTOMATION_STATUSES = ['draft', 'active', 'paused'] as const
export type AutomationStatus = (typeof AUTOMATION_STATUSES)[number]
export const RUN_STATES = ['active', 'waiting', 'finished', 'exited', 'failed'] as const
export type RunState = (typeof RUN_STATES)[number]

export interface Step {
  id: string
  kind: string
  name?: string
  settings?: Record<string, unknown>
  edges?: Record<string, string>
}
export interface Condition {
  event?: string | null
  filter?: Record<string, unknown> | null
  segment_id?: number | null
}
export interface Goal extends Condition {
  step_id: string
}
export type RunCounts = Record<RunState, number>
export interface Automation {
  id: number
  kind: AutomationKind
  name: string
  status: AutomationStatus
  /** Why it was paused by a guardrail (bounce or complaint rate, a listed IP); null otherwise. */
  status_reason: string | null
  list_ids: number[]
  event_name: string | null
  event_filter: Record<string, unknown> | null
  reentry: 'once' | 'after_finish' | 'always'
  exit_conditions: Condition[]
  goals: Goal[]
  timezone: string | null
  version: number
  version_id: number
  graph: { steps: Step[] }
  runs: RunCounts
  created_at: string
  updated_at: string
}
export interface StepStats {
  step_id: string
  kind: string
  entered: number
  completed: number
  waiting: number
  sent: number
  opened: number
  clicked: number
  exited: number
}
export interface Stats {
  automation_id: number
  runs: RunCounts
  steps: StepStats[]
}
export interface Run {
  id: number
  automation_id: number
  automation_kind: AutomationKind
  automation_name: string
  version: number
  contact_id: number
  email: string
  state: RunState
  step_id: string | null
  reason: string | null
  next_wake_at: string | null
  started_at: string
  finished_at: string | null
  steps: Array<{ step_id: string; attempt: number; outcome: string | null; message_id: string | null; detail: string | null; at: string }>
}

/** The words and routes of one kind. */
export const KINDS = {
  drip: { noun: 'drip', plural: 'drips', title: 'Drips', path: '/api/v2/drips', group: 'drips', queryKey: 'drips' },
  trigger: { noun: 'trigger', plural: 'triggers', title: 'Triggers', path: '/api/v2/triggers', group: 'triggers', queryKey: 'triggers' },
} as const

const STATUS_DOT = { draft: 'bg-muted-foreground', active: 'bg-success', paused: 'bg-warning' } as const
/** An automation's status as a badge. */
export function AutomationStatusBadge({ status }: { status: AutomationStatus }) {
  return (
    <Badge variant="outline" className="text-foreground">
      <span aria-hidden="true" className={`size-2 rounded-full ${STATUS_DOT[status]}`} />
      {status[0]!.toUpperCase() + status.slice(1)}
    </Badge>
  )
}

const RUN_DOT = { active: 'bg-primary', waiting: 'bg-warning', finished: 'bg-success', exited: 'bg-muted-foreground', failed: 'bg-destructive' } as const
/** A run's state as a badge. */
export function RunStateBadge({ state }: { state: RunState }) {
  return (
    <Badge variant="outline" className="text-foreground">
      <span aria-hidden="true" className={`size-2 rounded-full ${RUN_DOT[state]}`} />
      {state}
    </Badge>
  )
}

/** A table of runs: automation (optional), contact (optional), state, step, started, ended. */
export function RunsTable({ runs, showAutomation, showContact, caption }: { runs: Run[]; showAutomation?: boolean; showContact?: boolean; caption: string }) {
  return (
    <div className="overflow-x-auto">
      <table className="w-full text-sm">
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr className="border-b text-left text-muted-foreground">
            {showAutomation ? <th className="py-2 pr-3 font-medium">Automation</th> : null}
            {showContact ? <th className="py-2 pr-3 font-medium">Contact</th> : null}
            <th className="py-2 pr-3 font-medium">State</th>
            <th className="py-2 pr-3 font-medium">Step</th>
            <th className="py-2 pr-3 font-medium">Started</th>
            <th className="py-2 font-medium">Ended / wakes</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.id} className="border-b last:border-0">
              {showAutomation ? (
                <td className="py-2 pr-3">
                  {r.automation_name} <span className="text-xs text-muted-foreground">({r.automation_kind})</span>
                </td>
              ) : null}
              {showContact ? <td className="py-2 pr-3">{r.email}</td> : null}
              <td className="py-2 pr-3">
                <RunStateBadge state={r.state} />
              </td>
              <td className="py-2 pr-3 font-mono text-xs" title={r.reason ?? undefined}>
                {r.step_id ?? '—'}
                {r.reason ? <span className="block font-sans text-muted-foreground">{r.reason}</span> : null}
              </td>
              <td className="py-2 pr-3 text-muted-foreground">{formatDateTime(r.started_at)}</td>
              <td className="py-2 text-muted-foreground">{formatDateTime(r.finished_at ?? r.next_wake_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

/** A contact's run history across drips and triggers (the contact sheet's "Automations" section). */
export function ContactRuns({ contactId }: { contactId: number }) {
  const q = useQuery({
    queryKey: ['contact-automations', contactId],
    queryFn: () => apiPage<Run>(`/api/v2/contacts/${contactId}/automations`, { per_page: 50 }),
  })
  return (
    <section aria-labelledby={`contact-runs-${contactId}`} className="grid gap-2 border-t pt-4">
      <h3 id={`contact-runs-${contactId}`} className="font-medium">
        Automations
      </h3>
      {q.isPending ? (
        <LoadingState rows={2} label="Loading the contact's automation runs" />
      ) : q.isError ? (
        <ErrorState error={q.error} onRetry={() => q.refetch()} />
      ) : q.data.data.length === 0 ? (
        <p className="text-sm text-muted-foreground">No drip or trigger has run for this contact.</p>
      ) : (
        <RunsTable runs={q.data.data} showAutomation caption="This contact's automation runs" />
      )}
    </section>
  )
}

/** Pause or resume (resume also activates a draft), refreshing the lists and the record. */
export function useAutomationTransition(kind: AutomationKind) {
  const qc = useQueryClient()
  const k = KINDS[kind]
  return useMutation({
    mutationFn: ({ id, action }: { id: number; action: 'pause' | 'resume' }) => api<Automation>('POST', `${k.path}/${id}/${action}`),
    onSuccess: async (a, { action }) => {
      toast.success(action === 'pause' ? `“${a.name}” paused` : `“${a.name}” is active`)
      await Promise.all([qc.invalidateQueries({ queryKey: [k.queryKey] }), qc.invalidateQueries({ queryKey: ['automation', kind, a.id] })])
    },
    onError: (e) => toast.error(errorMessage(e)),
  })
}
