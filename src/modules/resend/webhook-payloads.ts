import type { Deps } from '../../deps'
import { AppError } from '../../lib/errors'
import { getContact } from '../contacts/service'
import { getMessage } from '../messages/service'
import { encodeId } from './ids'

/**
 * Webhook payloads in Resend's format (https://resend.com/docs/dashboard/webhooks/event-types),
 * for webhooks whose `format` is `resend`. Each native event kind that has a Resend
 * counterpart is renamed and its `data` rebuilt with Resend's fields; the body is
 * `{ type, created_at, data }`. The signature is the same HMAC as natively (Svix and Standard
 * Webhooks are one scheme); only the header names differ (`svix-id`, `svix-timestamp`,
 * `svix-signature`), so `resend.webhooks.verify` accepts it unchanged.
 */

/** Native kind -> Resend event type. Kinds not listed have no Resend form and are not sent to `resend` webhooks. */
export const RESEND_EVENT_OF: Readonly<Record<string, string>> = {
  'message.queued': 'email.sent',
  'message.sent': 'email.delivered',
  'message.deferred': 'email.delivery_delayed',
  'message.bounced': 'email.bounced',
  'message.failed': 'email.failed',
  'message.suppressed': 'email.suppressed',
  'message.complained': 'email.complained',
  'message.opened': 'email.opened',
  'message.clicked': 'email.clicked',
  'contact.subscribed': 'contact.created',
  'contact.unsubscribed': 'contact.updated',
  'domain.created': 'domain.created',
  'domain.updated': 'domain.updated',
  'domain.deleted': 'domain.deleted',
}

/** Resend event type -> the native kinds a webhook subscribes to for it. */
export const NATIVE_KINDS_OF: Readonly<Record<string, string[]>> = Object.entries(RESEND_EVENT_OF).reduce(
  (acc, [native, resend]) => ({ ...acc, [resend]: [...(acc[resend] ?? []), native] }),
  {} as Record<string, string[]>,
)

/** True when events of this native kind are sent to `resend` webhooks. */
export function hasResendForm(kind: string): boolean {
  return kind in RESEND_EVENT_OF
}

/** The event as the dispatcher reads it (src/modules/webhooks/service.ts EventRow). */
export interface ResendSourceEvent {
  kind: string
  created_at: number
  contact_id: number | null
  list_id: number | null
  message_id: string | null
  recipient: string | null
  data: Record<string, unknown>
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null)

/** Resend's record status for a stored record check state (same table as the domains group). */
const RECORD_STATUS: Record<string, string> = {
  unchecked: 'not_started',
  verified: 'verified',
  missing: 'failed',
  mismatch: 'failed',
  error: 'temporary_failure',
}

function emailData(deps: Deps, e: ResendSourceEvent): Record<string, unknown> {
  let base: Record<string, unknown>
  try {
    const m = getMessage(deps, e.message_id!)
    base = {
      email_id: m.id,
      created_at: m.created_at,
      message_id: m.message_id_header,
      from: m.from,
      to: m.recipients.filter((r) => r.kind === 'to').map((r) => r.address),
      subject: m.subject,
      tags: Object.fromEntries(
        m.tags.map((tag) => {
          const i = tag.indexOf(':')
          return i < 0 ? [tag, ''] : [tag.slice(0, i), tag.slice(i + 1)]
        }),
      ),
      ...(m.template_id !== null && { template_id: String(m.template_id) }),
    }
  } catch (err) {
    if (!(err instanceof AppError)) throw err
    // The message was pruned: what the event itself knows.
    base = {
      email_id: e.message_id,
      created_at: new Date(e.created_at).toISOString(),
      message_id: '',
      from: '',
      to: e.recipient ? [e.recipient] : [],
      subject: '',
    }
  }
  const d = e.data
  switch (e.kind) {
    case 'message.bounced':
      return { ...base, bounce: { type: 'Permanent', subType: 'General', message: str(d.response) ?? str(d.text) ?? 'The message bounced.' } }
    case 'message.clicked':
      return {
        ...base,
        click: { ipAddress: str(d.ip) ?? '', link: str(d.url) ?? '', timestamp: new Date(e.created_at).toISOString(), userAgent: str(d.user_agent) ?? '' },
      }
    case 'message.failed':
      return { ...base, failed: { reason: str(d.reason) ?? 'failed' } }
    case 'message.suppressed':
      return { ...base, suppressed: { type: 'Suppressed', message: `${e.recipient ?? 'The recipient'} is on the suppression list.` } }
    default:
      return base
  }
}

function contactData(deps: Deps, e: ResendSourceEvent): Record<string, unknown> {
  const at = new Date(e.created_at).toISOString()
  let c: {
    id: number
    email: string
    first_name: string | null
    last_name: string | null
    list_id: number
    status: string
    created_at: string
    updated_at: string
  } | null = null
  try {
    if (e.contact_id !== null) c = getContact(deps, e.contact_id)
  } catch (err) {
    if (!(err instanceof AppError)) throw err
  }
  const listId = c?.list_id ?? e.list_id
  const segment = listId === null ? null : encodeId('segment', listId)
  return {
    id: e.contact_id === null ? '' : encodeId('contact', e.contact_id),
    audience_id: segment ?? '',
    segment_ids: segment ? [segment] : [],
    created_at: c?.created_at ?? at,
    updated_at: c?.updated_at ?? at,
    email: c?.email ?? e.recipient ?? str(e.data.email) ?? '',
    first_name: c?.first_name ?? null,
    last_name: c?.last_name ?? null,
    unsubscribed: e.kind === 'contact.unsubscribed' || c?.status === 'unsubscribed',
  }
}

function domainData(e: ResendSourceEvent): Record<string, unknown> {
  const d = e.data as { domain_id: number; name: string; status: string; created_at: string; dns_records?: Array<Record<string, string>> }
  return {
    id: encodeId('domain', d.domain_id),
    name: d.name,
    status: d.status,
    created_at: d.created_at,
    region: 'us-east-1',
    records: (d.dns_records ?? [])
      .filter((r) => r.purpose !== 'dmarc')
      .map((r) => ({
        record: r.purpose === 'dkim' ? 'DKIM' : 'SPF',
        name: r.name!,
        type: r.type!,
        ttl: 'Auto',
        status: RECORD_STATUS[r.state!] ?? 'pending',
        value: r.value!,
      })),
  }
}

/** The JSON body of a Resend-format webhook request for one event; null when the kind has no Resend form. */
export function resendPayloadOf(deps: Deps, e: ResendSourceEvent): string | null {
  const type = RESEND_EVENT_OF[e.kind]
  if (!type) return null
  const [group] = e.kind.split('.')
  const data = group === 'message' ? emailData(deps, e) : group === 'contact' ? contactData(deps, e) : domainData(e)
  return JSON.stringify({ type, created_at: new Date(e.created_at).toISOString(), data })
}

/** Standard Webhooks headers renamed to Svix's, which Resend sends. */
export function svixHeaders(h: Record<string, string>): Record<string, string> {
  return { 'svix-id': h['webhook-id']!, 'svix-timestamp': h['webhook-timestamp']!, 'svix-signature': h['webhook-signature']! }
}
