/**
 * What the broadcast pages share (issue 15 "UI"): the API's record shapes (docs/api.md
 * "Broadcasts"), the status badge, which actions a status allows, and the status changes
 * (schedule, pause, resume, cancel, duplicate) as one mutation.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query'
import { toast } from 'sonner'
import { Badge } from '../../components/ui/badge'
import { Progress } from '../../components/ui/progress'
import { api, errorMessage } from '../../lib/api'
import { cn, formatNumber } from '../../lib/utils'

export const BROADCAST_STATUSES = ['draft', 'scheduled', 'preparing', 'sending', 'paused', 'sent', 'cancelled', 'failed'] as const
export type BroadcastStatus = (typeof BROADCAST_STATUSES)[number]
export const RECIPIENT_STATES = ['pending', 'queued', 'sent', 'skipped', 'failed', 'bounced'] as const
export type RecipientState = (typeof RECIPIENT_STATES)[number]
export type SplitMetric = 'open_rate' | 'click_rate' | 'link_click_rate'

export interface Counts {
  total: number
  pending: number
  sent: number
  skipped: number
  failed: number
  bounced: number
  opened: number
  clicked: number
}

export interface SendWindow {
  start_hour: number
  end_hour: number
  days?: number[]
  timezone?: string | null
  contact_timezone_field?: string | null
}

export interface SplitTest {
  sample_percent: number
  metric: SplitMetric
  link_url?: string | null
  wait_seconds: number
  auto_send_winner: boolean
}

/** GET /api/v2/broadcasts/{id} (the list leaves out html and text). */
export interface Broadcast {
  id: number
  name: string
  status: BroadcastStatus
  status_reason: string | null
  from: string
  reply_to: string | null
  subject: string
  html?: string | null
  text?: string | null
  template_id: number | null
  template_version_id: number | null
  list_ids: number[]
  segment_id: number | null
  exclude_list_ids: number[]
  exclude_segment_ids: number[]
  track_opens: boolean
  track_clicks: boolean
  pool_id: number | null
  tags: string[]
  send_rate_per_minute: number | null
  send_window: SendWindow | null
  timezone: string | null
  version_mode: 'rotation' | 'split_test'
  split_test: SplitTest | null
  split_phase: string | null
  winner_version_id: number | null
  max_bounce_rate: number | null
  max_complaint_rate: number | null
  archive: boolean
  archive_id: string
  source_broadcast_id: number | null
  send_at: string | null
  started_at: string | null
  finished_at: string | null
  counts: Counts
  progress: number
  created_at: string
  updated_at: string
}

export interface Version {
  id: number
  broadcast_id: number
  name: string
  subject: string | null
  from_name: string | null
  html: string | null
  text: string | null
  template_id: number | null
  template_version_id: number | null
  send_at: string | null
  weight: number
  created_at: string
  updated_at: string
}

export interface Recipient {
  id: number
  contact_id: number
  list_id: number
  email: string
  version_id: number | null
  state: RecipientState
  reason: string | null
  message_id: string | null
  opened_at: string | null
  clicked_at: string | null
  updated_at: string
}

export interface StatsBlock {
  recipients: number
  sent: number
  delivered: number
  bounced: number
  complained: number
  unsubscribed: number
  unique_opens: number
  unique_clicks: number
  open_rate: number | null
  click_rate: number | null
  bounce_rate: number | null
  complaint_rate: number | null
  unsubscribe_rate: number | null
}

export interface Stats {
  broadcast_id: number
  totals: StatsBlock
  versions: Array<StatsBlock & { version_id: number; name: string }>
  links: Array<{ url: string; clicks: number; unique_clicks: number }>
  split_test: { metric: SplitMetric; phase: string | null; winner_version_id: number | null } | null
}

/** Where the content and settings may still change (PATCH answers 409 elsewhere). */
export const EDITABLE: readonly BroadcastStatus[] = ['draft', 'scheduled', 'paused']
/** States the engine is working in (or may resume): the live progress view polls these. */
export const LIVE: readonly BroadcastStatus[] = ['scheduled', 'preparing', 'sending', 'paused']

/** The status changes a status allows, as docs/api.md "States" draws them. */
export function allowedActions(b: Pick<Broadcast, 'status' | 'counts'>) {
  const s = b.status
  return {
    schedule: s === 'draft' || (s === 'paused' && b.counts.total === 0),
    pause: s === 'scheduled' || s === 'preparing' || s === 'sending',
    resume: s === 'paused',
    cancel: LIVE.includes(s),
    // The API refuses to delete while the engine writes rows.
    delete: s !== 'preparing' && s !== 'sending',
    edit: EDITABLE.includes(s),
  }
}

/** The dot beside each status (the word carries the meaning; the colour only helps). */
const STATUS_DOT: Record<BroadcastStatus, string> = {
  draft: 'bg-muted-foreground',
  scheduled: 'bg-primary',
  preparing: 'bg-primary',
  sending: 'bg-primary',
  paused: 'bg-warning',
  sent: 'bg-success',
  cancelled: 'bg-muted-foreground',
  failed: 'bg-destructive',
}

/**
 * A broadcast status as a label with a coloured dot. The text stays in the foreground colour:
 * tinted text on the page background (not a card) falls under WCAG's 4.5:1 contrast.
 */
export function BroadcastStatusBadge({ status }: { status: BroadcastStatus }) {
  return (
    <Badge variant="outline" className="text-foreground" data-testid="broadcast-status">
      <span aria-hidden="true" className={cn('size-2 rounded-full', STATUS_DOT[status] ?? 'bg-muted-foreground')} />
      {status}
    </Badge>
  )
}

/** Sent (and skipped or failed: no longer pending) of the total, as a bar with its figures. */
export function SendProgress({ b, className }: { b: Pick<Broadcast, 'counts' | 'progress' | 'name' | 'status'>; className?: string }) {
  const done = b.counts.total - b.counts.pending
  return (
    <div className={className}>
      <Progress
        // Indeterminate (a pulsing bar) only while the engine is taking the recipient list.
        value={b.counts.total > 0 ? Math.round(b.progress * 100) : b.status === 'preparing' || b.status === 'sending' ? null : 0}
        aria-label={`Progress of ${b.name}`}
        aria-valuetext={`${formatNumber(done)} of ${formatNumber(b.counts.total)} done`}
      />
      <p className="mt-1 text-xs text-muted-foreground tabular-nums">
        {b.counts.total === 0
          ? b.status === 'preparing' || b.status === 'sending'
            ? 'Preparing the recipients…'
            : 'Not started'
          : `${formatNumber(b.counts.sent)} sent of ${formatNumber(b.counts.total)}`}
      </p>
    </div>
  )
}

export type Transition = 'schedule' | 'pause' | 'resume' | 'cancel' | 'duplicate' | 'resend-to-non-openers'

const DONE: Record<Transition, string> = {
  schedule: 'Broadcast scheduled',
  pause: 'Broadcast paused',
  resume: 'Broadcast resumed',
  cancel: 'Broadcast cancelled',
  duplicate: 'Broadcast duplicated',
  'resend-to-non-openers': 'Draft for the non-openers created',
}

/**
 * One status change of a broadcast (POST /api/v2/broadcasts/{id}/<action>): toasts the
 * outcome and refreshes the broadcast queries. `onDone` gets the answer (the new draft for
 * duplicate and resend).
 */
export function useTransition(onDone?: (b: Broadcast, action: Transition) => void) {
  const qc = useQueryClient()
  return useMutation({
    mutationFn: ({ id, action, body }: { id: number; action: Transition; body?: unknown }) =>
      api<Broadcast>('POST', `/api/v2/broadcasts/${id}/${action}`, body ?? (action === 'schedule' ? {} : undefined)),
    onSuccess: async (b, { action }) => {
      toast.success(DONE[action])
      await qc.invalidateQueries({ queryKey: ['broadcasts'] })
      onDone?.(b, action)
    },
    onError: (e) => toast.error(errorMessage(e)),
  })
}
