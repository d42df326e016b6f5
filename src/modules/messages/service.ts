import { packMessage } from '../../lib/stored-message'
import { preparedFor } from '../../db/prepared'
import type { RecipientState } from '../../db/schema'
import type { Deps } from '../../deps'
import { toIso } from '../../lib/clock'
import { domainOf } from '../../lib/email'
import { AppError, invalidField, notFound } from '../../lib/errors'
import { bridgeForApiKey, checkBridgeActive, checkBridgeSender, type BridgeIdentity } from '../bridges/identity'
import { countBridge, takeBridgeQuotaOrThrow } from '../bridges/quotas'
import { emitPrepared } from '../events/service'
import { findSendingDomain } from '../sending-domains/service'
import { checkRecipients, type SuppressionMatch } from '../suppressions/service'
import { applyTracking, trackingChoice } from '../tracking/service'
import { checkMessage, htmlNeedingText, senderDomain, type CheckedMessage, type SendInput } from './compose'
import { beginIdempotent, type StoredResponse } from './idempotency'
import { buildMessage } from './mime'

export type MessageSource = 'api' | 'template' | 'resend' | 'smtp' | 'broadcast' | 'dsn' | 'web_form' | 'automation'

export interface AcceptContext {
  source: MessageSource
  apiKeyId: number | null
  /** A pool chosen by the request; else the sending domain's, else the default pool. */
  poolId?: number | null
  nodeId?: number | null
  /**
   * The bridge (issue 5) the message came through: its From domains are checked, its
   * tracking defaults apply, its quotas are taken and its counters kept in the commit.
   */
  bridge?: BridgeIdentity | null
  /** The broadcast (issue 15) these messages are recipients' copies of (messages.broadcast_id). */
  broadcastId?: number | null
}

export interface AcceptedMessage {
  id: string
  /** `scheduled`: its recipients wait for scheduled_at (schedule.ts). */
  status: 'queued' | 'scheduled'
  /** ISO 8601; null when sent at once. */
  scheduled_at: string | null
  /** Recipients that will be delivered / that a suppression stopped. */
  queued: number
  suppressed: Array<{ address: string; suppression: SuppressionMatch }>
}

const statements = preparedFor((db) => {
  const c = db.$client
  return {
    insertMessage: c.prepare<
      never,
      [
        string,
        number | null,
        string,
        string,
        string,
        string,
        string,
        string,
        number | null,
        number | null,
        number | null,
        number | null,
        number | null,
        Buffer,
        number,
        number,
        number | null,
        string | null,
        number | null,
        number | null,
        string | null,
      ]
    >(
      `INSERT INTO messages (id, api_key_id, source, mail_from, from_address, subject, tags, message_id_header, domain_id, pool_id, node_id, template_id, template_version_id, raw, size, created_at, bridge_id, envelope_from, broadcast_id, scheduled_at, sent_html)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertRecipient: c.prepare<never, [string, string, string, string, RecipientState, number | null, string | null, number, number, number | null]>(
      `INSERT INTO message_recipients (message_id, address, domain, kind, state, next_attempt_at, suppression, created_at, updated_at, finished_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    poolExists: c.prepare<{ id: number }, [number]>('SELECT id FROM ip_pools WHERE id = ?'),
    nodeExists: c.prepare<{ id: number }, [number]>('SELECT id FROM sending_nodes WHERE id = ?'),
    message: c.prepare<MessageRow, [string]>(
      'SELECT id, source, from_address, subject, tags, message_id_header, domain_id, template_id, template_version_id, size, created_at, scheduled_at FROM messages WHERE id = ?',
    ),
    recipients: c.prepare<RecipientRow, [string]>('SELECT * FROM message_recipients WHERE message_id = ? ORDER BY id'),
    events: c.prepare<{ id: number; kind: string; recipient: string | null; created_at: number; data: string }, [string]>(
      'SELECT id, kind, recipient, created_at, data FROM events WHERE message_id = ? ORDER BY id',
    ),
  }
})

/** A message ready to be written in a group commit, whatever the way in (API, template, SMTP). */
export interface PreparedMessage {
  id: string
  raw: Buffer
  mailFrom: string
  messageIdHeader: string
  fromAddress: string
  subject: string
  tags: string[]
  /** Envelope recipients, each once, already validated and normalised. */
  recipients: Array<{ address: string; kind: 'to' | 'cc' | 'bcc' }>
  domainId: number | null
  poolId: number | null
  template: { id: number; version_id: number } | null
  /** SMTP submission: the client's MAIL FROM, where DSNs go. */
  envelopeFrom?: string | null
  /** When to send (ms); absent or null: at once. */
  scheduledAt?: number | null
  /** The HTML as the caller sent it, kept only when tracking rewrote it (the raw holds the tracked one). */
  sentHtml?: string | null
}

/** The sending domain that signs mail from `fromDomain`, or null when unsigned mail is allowed; else 403. */
export function signingDomain(deps: Deps, fromDomain: string) {
  const domain = findSendingDomain(deps, fromDomain)
  if (domain?.status === 'verified') return domain
  if (deps.config.allow_unverified_domains) return null
  throw new AppError(
    'domain_not_verified',
    `The domain ${fromDomain} is not a verified sending domain. Add it under /api/v2/sending-domains, publish its DNS records and verify it.`,
  )
}

/** A new message id (UUIDv7: time-ordered, so the primary key index takes inserts at its end). */
export const newMessageId = (): string => Bun.randomUUIDv7()

/**
 * The return path: a verified domain gets a per-message address on its bounce host
 * (VERP-style), so a bounce names the message it is about; unsigned mail keeps the sender's.
 */
export function returnPath(id: string, domain: { return_path_host: string } | null, sender: string): string {
  return domain ? `bounces+${id}@${domain.return_path_host}` : sender
}

/** Checks the routing choices of a request: the pool and node must exist. */
export function checkRouting(deps: Deps, ctx: { poolId?: number | null; nodeId?: number | null }): void {
  if (ctx.poolId != null && !statements(deps.db).poolExists.get(ctx.poolId)) throw invalidField('ip_pool_id', `no IP pool with id ${ctx.poolId}`)
  if (ctx.nodeId != null && !statements(deps.db).nodeExists.get(ctx.nodeId)) throw invalidField('sending_node_id', `no sending node with id ${ctx.nodeId}`)
}

/** Validation, the sending-domain rule and MIME building: everything that can happen before the transaction. */
function prepare(deps: Deps, input: SendInput, ctx: AcceptContext): PreparedMessage {
  const checked = checkMessage(input)
  const fromDomain = senderDomain(checked)
  const domain = signingDomain(deps, fromDomain)
  checkRouting(deps, ctx)
  const id = newMessageId()
  const html = checked.html
  applyTracking(deps, checked, id, trackingChoice(input, [domain, ctx.bridge?.tracking]))
  return {
    ...builtMessage(deps, checked, id, fromDomain, domain),
    poolId: ctx.poolId ?? domain?.pool_id ?? null,
    template: input.template ?? null,
    scheduledAt: input.scheduled_at ?? null,
    sentHtml: checked.html !== html ? html : null,
  }
}

/**
 * A checked message (tracking applied) under its id: the MIME text, the return path and the
 * fields its rows keep. Routing, template and schedule are the caller's (an API send, a
 * broadcast recipient's copy).
 */
export function builtMessage(
  deps: Deps,
  checked: CheckedMessage,
  id: string,
  fromDomain: string,
  domain: { id: number; return_path_host: string } | null,
): Omit<PreparedMessage, 'poolId' | 'template'> {
  const messageIdHeader = `${id}@${fromDomain}`
  return {
    id,
    raw: buildMessage(checked, { messageIdHeader, date: new Date(deps.clock.now()) }),
    mailFrom: returnPath(id, domain, checked.from.address),
    messageIdHeader,
    fromAddress: checked.from.address,
    subject: checked.subject,
    tags: checked.tags,
    recipients: checked.recipients,
    domainId: domain?.id ?? null,
  }
}

/** Writes one prepared message and its recipients; runs inside the group commit's transaction. */
function write(deps: Deps, p: PreparedMessage, ctx: AcceptContext, now: number): AcceptedMessage {
  const st = statements(deps.db)
  // In the commit's savepoint: a refused or failed write rolls its quota use and count back too.
  const bridgeId = ctx.bridge?.id ?? null
  if (bridgeId !== null) {
    takeBridgeQuotaOrThrow(deps, bridgeId, 1)
    countBridge(deps.db, bridgeId, 'accepted')
  }
  // A time that has come by the commit sends at once.
  const scheduled = p.scheduledAt != null && p.scheduledAt > now
  st.insertMessage.run(
    p.id,
    ctx.apiKeyId,
    ctx.source,
    p.mailFrom,
    p.fromAddress,
    p.subject,
    JSON.stringify(p.tags),
    p.messageIdHeader,
    p.domainId,
    p.poolId,
    ctx.nodeId ?? null,
    p.template?.id ?? null,
    p.template?.version_id ?? null,
    packMessage(p.raw),
    p.raw.length,
    now,
    bridgeId,
    p.envelopeFrom ?? null,
    ctx.broadcastId ?? null,
    scheduled ? p.scheduledAt! : null,
    p.sentHtml ?? null,
  )
  // Inside the transaction: a suppression added a moment ago is seen, and the decision is stored with the rows.
  const decisions = checkRecipients(
    deps,
    p.recipients.map((r) => ({ email: r.address })),
  )
  const suppressed: AcceptedMessage['suppressed'] = []
  p.recipients.forEach((r, i) => {
    const d = decisions[i]!
    if (d.allowed) {
      if (scheduled) {
        st.insertRecipient.run(p.id, r.address, domainOf(r.address), r.kind, 'scheduled', p.scheduledAt!, null, now, now, null)
        const data = { kind: r.kind, scheduled_at: toIso(p.scheduledAt) }
        emitPrepared(deps.db, now, { kind: 'message.scheduled', message_id: p.id, recipient: r.address, bridge_id: bridgeId, data })
      } else {
        st.insertRecipient.run(p.id, r.address, domainOf(r.address), r.kind, 'queued', now, null, now, now, null)
        emitPrepared(deps.db, now, { kind: 'message.queued', message_id: p.id, recipient: r.address, bridge_id: bridgeId, data: { kind: r.kind } })
      }
    } else {
      st.insertRecipient.run(p.id, r.address, domainOf(r.address), r.kind, 'suppressed', null, JSON.stringify(d.suppression), now, now, now)
      emitPrepared(deps.db, now, {
        kind: 'message.suppressed',
        message_id: p.id,
        recipient: r.address,
        bridge_id: bridgeId,
        data: { kind: r.kind, suppression: d.suppression },
      })
      suppressed.push({ address: r.address, suppression: d.suppression })
    }
  })
  return {
    id: p.id,
    status: scheduled ? 'scheduled' : 'queued',
    scheduled_at: scheduled ? toIso(p.scheduledAt) : null,
    queued: p.recipients.length - suppressed.length,
    suppressed,
  }
}

/**
 * Queues a message the server itself writes (a DSN): the same rows, events and suppression
 * check as accepted mail, written inside the caller's transaction (no bridge, no API key).
 */
export function queueOwnMessage(deps: Deps, p: PreparedMessage, source: MessageSource, now: number): AcceptedMessage {
  return write(deps, p, { source, apiKeyId: null }, now)
}

/**
 * The inputs with the text part of each HTML-only one made on the server's text worker
 * (lib/html-text-pool.ts, decision 74) instead of inline by checkMessage, which would hold
 * the server's thread for each; the inputs as they are without a worker (tests, CLI).
 * Call before prepareMessages.
 */
export async function withTextParts(deps: Pick<Deps, 'textPool'>, inputs: SendInput[]): Promise<SendInput[]> {
  const pool = deps.textPool
  if (!pool) return inputs
  return Promise.all(
    inputs.map(async (input) => {
      const html = htmlNeedingText(input)
      return html === null ? input : { ...input, text: await pool.toText(html) }
    }),
  )
}

/**
 * Checks and builds messages sent through the API (every input a SendInput): the bridge's
 * From domains first, then each message. A batch is all-or-nothing; an error names the
 * entry it is about.
 */
export function prepareMessages(deps: Deps, inputs: SendInput[], ctx: AcceptContext): PreparedMessage[] {
  if (ctx.bridge) for (const input of inputs) checkBridgeSender(ctx.bridge, input.from)
  return inputs.map((input, i) => {
    try {
      return prepare(deps, input, ctx)
    } catch (e) {
      // In a batch, say which entry failed.
      if (inputs.length > 1 && e instanceof AppError && e.details) {
        throw new AppError(e.code, e.message, Object.fromEntries(Object.entries(e.details).map(([k, v]) => [`${i}.${k}`, v])))
      }
      throw e
    }
  })
}

/**
 * The accept context of a send through the HTTP API (every send endpoint, the Resend surface
 * too). A bridge's API key is held to its bridge on all of them: the bridge must be active,
 * its pool and node win over the request's (docs/api.md "Bridges"), and its From domains and
 * quotas are checked on accepting, so a bridge key cannot escape its rules by calling
 * /v1/emails instead of /v1/bridge/emails.
 */
export function apiSendContext(
  deps: Deps,
  apiKeyId: number,
  requested: Pick<AcceptContext, 'source' | 'poolId' | 'nodeId'>,
  bridgeOnly = false,
): AcceptContext {
  const bridge = bridgeForApiKey(deps, apiKeyId)
  if (bridgeOnly && !bridge)
    throw new AppError('forbidden', 'This endpoint is for bridge API keys; this key belongs to no bridge. Use POST /v1/emails, or the API key of a bridge.')
  if (!bridge) return { ...requested, apiKeyId }
  checkBridgeActive(bridge)
  return { ...requested, apiKeyId, bridge, poolId: bridge.pool_id ?? requested.poolId, nodeId: bridge.node_id ?? requested.nodeId }
}

/** A request's Idempotency-Key and what makes a retry the same request (docs/api.md "Idempotency"). */
export interface IdempotencyRequest {
  /** The client's key (the HTTP header, or the header of a message submitted over SMTP); null: none. */
  key: string | null
  /** Whose keys these are: an API key's id (a bridge that has none: minus the bridge's id). */
  scope: number
  /** Part of the fingerprint: the same key on two endpoints is two requests. */
  endpoint: string
  /** What a retry repeats: the HTTP body; for SMTP the envelope, content and control headers. */
  fingerprint: unknown
}

/** One way in's request to queue mail. */
export interface AcceptRequest {
  ctx: AcceptContext
  /**
   * Checks and builds the messages (prepareMessages, or prepareRawMessage for SMTP). Called
   * after the idempotency check, so a replay answers without validating or rendering again.
   */
  prepare: () => PreparedMessage[] | Promise<PreparedMessage[]>
  /** The answer for the accepted messages; stored with them when there is a key, for replays. */
  respond: (accepted: AcceptedMessage[]) => StoredResponse
  idempotency?: IdempotencyRequest
  /**
   * More writes in the same transaction as the messages (a broadcast marks its recipient
   * rows queued with them); throwing rolls the whole request back.
   */
  within?: (accepted: AcceptedMessage[], now: number) => void
}

export type AcceptResult =
  | { replayed: false; response: StoredResponse; accepted: AcceptedMessage[] }
  /** The key was seen before: `response` is the first request's, nothing new was queued. */
  | { replayed: true; response: StoredResponse }

/**
 * The one accept service: every way a message comes in (/v1/send, /v1/emails, templates,
 * the Resend surface, bridges, SMTP submission) queues it here. In order: the idempotency
 * check (a replay answers the stored response; a key in flight is refused), the messages are
 * prepared, then every message, recipient row, `message.queued`/`message.suppressed` event
 * and the idempotency record are written in one transaction (shared with concurrent requests
 * by the group committer), the delivery engine is woken, and the key is released. The promise
 * resolves only after the commit, so the caller's 202 or 250 means "on disk". A batch is
 * all-or-nothing.
 */
export async function acceptMessages(deps: Deps, request: AcceptRequest): Promise<AcceptResult> {
  const idem = request.idempotency
  const start = idem ? beginIdempotent(deps, idem.key, idem.scope, idem.endpoint, idem.fingerprint) : null
  if (start?.kind === 'replay') return { replayed: true, response: start.response }
  const claim = start?.kind === 'claimed' ? start.claim : null
  try {
    const prepared = await request.prepare()
    const result = await deps.commits.run(() => {
      const now = deps.clock.now()
      const accepted = prepared.map((p) => write(deps, p, request.ctx, now))
      request.within?.(accepted, now)
      const response = request.respond(accepted)
      claim?.record(deps.db, response, now)
      return { replayed: false as const, response, accepted }
    })
    if (result.accepted.some((a) => a.queued > 0)) deps.doorbell.ring()
    return result
  } finally {
    // Failed requests store nothing: the same key may be retried at once.
    claim?.release()
  }
}

interface MessageRow {
  id: string
  source: string
  from_address: string
  subject: string
  tags: string
  message_id_header: string
  domain_id: number | null
  template_id: number | null
  template_version_id: number | null
  size: number
  created_at: number
  scheduled_at: number | null
}

export interface RecipientRow {
  id: number
  message_id: string
  address: string
  domain: string
  kind: 'to' | 'cc' | 'bcc'
  state: RecipientState
  attempts: number
  next_attempt_at: number | null
  lease_until: number | null
  last_code: number | null
  last_enhanced: string | null
  last_response: string | null
  last_class: string | null
  last_reason: string | null
  last_ip: string | null
  last_mx: string | null
  last_tls: string | null
  suppression: string | null
  created_at: number
  updated_at: number
  finished_at: number | null
}

/** What the view says of an attempt's TLS (delivery/smtp-client.ts TlsInfo). */
interface TlsView {
  version: string | null
  cipher: string | null
  verified: boolean
  verify_error: string | null
}

/** The message's state as one word: the least advanced of its recipients' states. */
export function summaryState(states: RecipientState[]): RecipientState {
  const order: RecipientState[] = ['sending', 'queued', 'deferred', 'scheduled', 'sent', 'bounced', 'failed', 'canceled', 'suppressed']
  for (const s of order) if (states.includes(s)) return s
  return 'suppressed'
}

export function getMessage(deps: Deps, id: string) {
  const st = statements(deps.db)
  const m = st.message.get(id)
  if (!m) throw notFound('message', id)
  const recipients = st.recipients.all(id)
  return {
    id: m.id,
    source: m.source,
    from: m.from_address,
    subject: m.subject,
    tags: JSON.parse(m.tags) as string[],
    message_id_header: `<${m.message_id_header}>`,
    signed: m.domain_id !== null,
    template_id: m.template_id,
    template_version_id: m.template_version_id,
    size: m.size,
    status: summaryState(recipients.map((r) => r.state)),
    created_at: toIso(m.created_at)!,
    scheduled_at: toIso(m.scheduled_at),
    recipients: recipients.map((r) => ({
      address: r.address,
      kind: r.kind,
      state: r.state,
      attempts: r.attempts,
      next_attempt_at: toIso(r.next_attempt_at),
      last_response:
        r.last_code === null && r.last_response === null
          ? null
          : { code: r.last_code, enhanced_code: r.last_enhanced, text: r.last_response, rule: r.last_class },
      reason: r.last_reason,
      mx: r.last_mx,
      source_ip: r.last_ip,
      tls: r.last_tls ? (JSON.parse(r.last_tls) as TlsView) : null,
      suppression: r.suppression ? (JSON.parse(r.suppression) as Record<string, unknown>) : null,
      updated_at: toIso(r.updated_at)!,
      finished_at: toIso(r.finished_at),
    })),
    events: st.events.all(id).map((e) => ({
      id: e.id,
      kind: e.kind,
      recipient: e.recipient,
      created_at: toIso(e.created_at)!,
      data: JSON.parse(e.data) as Record<string, unknown>,
    })),
  }
}

export type MessageView = ReturnType<typeof getMessage>
