/**
 * What an inbound report changes. One function for the inbound listener and the
 * feedback-loop mailboxes: classify the message (src/smtp/reports), then apply it and log it
 * in inbound_messages in ONE transaction, so a 250 (or a \Seen flag) means both are on disk.
 *
 * Trust: a DSN or a complaint changes something only when it carries a return-path token
 * that verifies with the server secret (src/lib/return-path-token.ts). Anyone can send us
 * mail that looks like a bounce; without the token it could suppress any address.
 */
import type { Deps } from '../../deps'
import type { Db } from '../../db/client'
import { preparedFor } from '../../db/prepared'
import { countBridge } from '../../modules/bridges/quotas'
import { storeDmarcReport } from '../../modules/dmarc/service'
import { emit, emitPrepared } from '../../modules/events/service'
import { suppressForFeedback } from '../../modules/suppressions/feedback'
import { classifyInbound, type ArfReport, type DsnRecipient, type DsnReport, type InboundEnvelope, type InboundReport } from '../reports'

export const INBOUND_OUTCOMES = ['applied', 'ignored', 'forged', 'duplicate', 'unparsed'] as const
export type InboundOutcome = (typeof INBOUND_OUTCOMES)[number]

export interface InboundInput {
  raw: Buffer
  envelope: InboundEnvelope
  /** The SMTP client's address; null for mail read from an IMAP mailbox. */
  remoteIp: string | null
  /** Where the message came from, for the log: the listener, or a feedback-loop account. */
  source: { kind: 'smtp' } | { kind: 'imap'; account_id: number }
}

export interface InboundResult {
  id: number
  kind: InboundReport['kind']
  outcome: InboundOutcome
  message_id: string | null
  recipient: string | null
  detail: Record<string, unknown>
}

interface RecipientRow {
  id: number
  address: string
  state: string
}

const statements = preparedFor((db: Db) => {
  const c = db.$client
  return {
    message: c.prepare<{ id: string; bridge_id: number | null }, [string]>('SELECT id, bridge_id FROM messages WHERE id = ?'),
    recipientById: c.prepare<RecipientRow, [number, string]>('SELECT id, address, state FROM message_recipients WHERE id = ? AND message_id = ?'),
    recipientByAddress: c.prepare<RecipientRow, [string, string]>(
      'SELECT id, address, state FROM message_recipients WHERE message_id = ? AND address = ? ORDER BY id LIMIT 1',
    ),
    recipientsOf: c.prepare<RecipientRow, [string]>('SELECT id, address, state FROM message_recipients WHERE message_id = ? ORDER BY id LIMIT 2'),
    bounce: c.prepare<never, [number | null, string, string | null, string, number, number, string | null]>(
      `UPDATE message_recipients SET state = 'bounced', last_code = ?1, last_enhanced = ?2, last_response = ?3, last_class = ?4, last_reason = ?7,
         lease_until = NULL, next_attempt_at = NULL, updated_at = ?5, finished_at = ?5 WHERE id = ?6`,
    ),
    complainedBefore: c.prepare<{ id: number }, [string, string]>(
      `SELECT id FROM events WHERE message_id = ? AND kind = 'message.complained' AND recipient = ? LIMIT 1`,
    ),
    log: c.prepare<{ id: number }, [number, string | null, string, string, string, string, string | null, string | null, string]>(
      `INSERT INTO inbound_messages (received_at, remote_ip, mail_from, rcpt_to, kind, outcome, message_id, recipient, detail)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    ),
  }
})

type Applied = Omit<InboundResult, 'id' | 'kind'>

/** The row a token names, or for a token with recipient 0 (several recipients in one transaction), the row with this address. */
function findRecipient(db: Db, messageId: string, recipientId: number, address: string | null): RecipientRow | null {
  const st = statements(db)
  if (recipientId > 0) return st.recipientById.get(recipientId, messageId) ?? null
  return address ? (st.recipientByAddress.get(messageId, address.toLowerCase()) ?? null) : null
}

function applyDsn(deps: Deps, report: DsnReport, now: number): Applied {
  const base = { heuristic: report.heuristic, reporting_mta: report.reportingMta }
  if (!report.returnPath) {
    return report.returnPathToken
      ? { outcome: 'forged', message_id: null, recipient: null, detail: { ...base, reason: 'the return-path token does not verify' } }
      : { outcome: 'ignored', message_id: null, recipient: null, detail: { ...base, reason: 'no return-path token' } }
  }
  const { messageId, recipientId } = report.returnPath
  const st = statements(deps.db)
  const message = st.message.get(messageId)
  if (!message) return { outcome: 'ignored', message_id: messageId, recipient: null, detail: { ...base, reason: 'the message no longer exists' } }

  // Which report entries apply to which rows: with a recipient in the token, the entry about
  // that address (or the first failure/delay, as the address may have been rewritten by
  // forwarding); without one, every entry is matched by address within the message.
  const pairs: Array<{ row: RecipientRow; entry: DsnRecipient }> = []
  if (recipientId > 0) {
    const row = findRecipient(deps.db, messageId, recipientId, null)
    const names = (e: DsnRecipient) => [e.recipient, e.originalRecipient, e.finalRecipient].some((a) => a?.toLowerCase() === row?.address)
    const entry = report.recipients.find(names) ?? report.recipients.find((e) => e.action === 'failed' || e.action === 'delayed')
    if (row && entry) pairs.push({ row, entry })
  } else {
    for (const entry of report.recipients) {
      const row =
        findRecipient(deps.db, messageId, 0, entry.recipient) ??
        findRecipient(deps.db, messageId, 0, entry.finalRecipient) ??
        findRecipient(deps.db, messageId, 0, entry.originalRecipient)
      if (row && !pairs.some((p) => p.row.id === row.id)) pairs.push({ row, entry })
    }
  }
  if (pairs.length === 0) {
    return { outcome: 'ignored', message_id: messageId, recipient: null, detail: { ...base, reason: 'no recipient of the message matches the report' } }
  }

  const results: Array<Record<string, unknown>> = []
  for (const { row, entry } of pairs) {
    const data = {
      source: 'dsn',
      action: entry.action,
      status: entry.status,
      class: entry.class,
      rule: entry.rule,
      reason: entry.reason,
      diagnostic: entry.diagnostic,
      code: entry.smtpCode,
      remote_mta: entry.remoteMta,
      reporting_mta: report.reportingMta,
    }
    const result = { recipient: row.address, action: entry.action, status: entry.status, reason: entry.reason }
    if (entry.action === 'failed') {
      if (row.state === 'suppressed') {
        results.push({ ...result, applied: 'ignored', reason: 'the recipient was suppressed, never sent' })
        continue
      }
      // A failure report after the receiving MX accepted the message (state sent) wins:
      // the mail was not delivered after all (RFC 3464 section 2.3.3, action failed).
      const already = row.state === 'bounced'
      if (!already) st.bounce.run(entry.smtpCode, entry.status, entry.diagnostic, `dsn:${entry.rule}`, now, row.id, entry.reason)
      const marked = entry.suppress ? suppressForFeedback(deps.db, now, { address: row.address, cause: 'hard_bounce', messageId, data }) : []
      if (already && marked.length === 0) {
        results.push({ ...result, applied: 'duplicate', reason: 'the recipient was already bounced' })
        continue
      }
      if (!already) {
        emitPrepared(deps.db, now, {
          kind: 'message.bounced',
          message_id: messageId,
          recipient: row.address,
          bridge_id: message.bridge_id,
          data: { ...data, suppressed: entry.suppress, previous_state: row.state },
        })
        if (message.bridge_id !== null) countBridge(deps.db, message.bridge_id, 'bounced')
      }
      results.push({ ...result, applied: 'bounced', suppressed: entry.suppress, contacts_marked: marked.length })
    } else if (entry.action === 'delayed') {
      // A remote MTA still retrying (RFC 3464 action delayed): news, not an outcome; the state stays.
      emitPrepared(deps.db, now, { kind: 'message.delayed', message_id: messageId, recipient: row.address, bridge_id: message.bridge_id, data })
      results.push({ ...result, applied: 'delayed' })
    } else {
      results.push({ ...result, applied: 'ignored', reason: `action ${entry.action} is not a failure` })
    }
  }
  const changed = results.some((r) => r.applied === 'bounced' || r.applied === 'delayed')
  const duplicate = !changed && results.some((r) => r.applied === 'duplicate')
  return {
    outcome: changed ? 'applied' : duplicate ? 'duplicate' : 'ignored',
    message_id: messageId,
    recipient: pairs[0]!.row.address,
    detail: { ...base, recipient_id: recipientId, results },
  }
}

function applyArf(deps: Deps, report: ArfReport, now: number): Applied {
  const base = { format: report.format, feedback_type: report.feedbackType, user_agent: report.userAgent, source_ip: report.sourceIp }
  if (!report.complaint) {
    return {
      outcome: 'ignored',
      message_id: report.returnPath?.messageId ?? null,
      recipient: null,
      detail: { ...base, reason: `feedback type ${report.feedbackType} is not a complaint` },
    }
  }
  if (!report.returnPath) {
    return report.returnPathToken
      ? { outcome: 'forged', message_id: null, recipient: report.recipient, detail: { ...base, reason: 'the return-path token does not verify' } }
      : { outcome: 'ignored', message_id: null, recipient: report.recipient, detail: { ...base, reason: 'no return-path token' } }
  }
  const { messageId, recipientId } = report.returnPath
  const st = statements(deps.db)
  const message = st.message.get(messageId)
  if (!message) return { outcome: 'ignored', message_id: messageId, recipient: null, detail: { ...base, reason: 'the message no longer exists' } }
  let row = findRecipient(deps.db, messageId, recipientId, report.recipient)
  if (!row && recipientId === 0) {
    // Providers often redact the complainant; a message with one recipient names it anyway.
    const rows = st.recipientsOf.all(messageId)
    if (rows.length === 1) row = rows[0]!
  }
  if (!row)
    return { outcome: 'ignored', message_id: messageId, recipient: report.recipient, detail: { ...base, reason: 'cannot tell which recipient complained' } }
  const address = row.address
  if (st.complainedBefore.get(messageId, address)) {
    return { outcome: 'duplicate', message_id: messageId, recipient: address, detail: { ...base, reason: 'this complaint was already recorded' } }
  }
  // A complaint is about the sender as a whole: messages carry no list yet, so the
  // suppression is global and the address's contacts on every list are marked.
  const data = { source: 'arf', ...base }
  const marked = suppressForFeedback(deps.db, now, { address, cause: 'complaint', messageId, data })
  emit(deps.db, now, {
    kind: 'message.complained',
    message_id: messageId,
    recipient: address,
    bridge_id: message.bridge_id,
    data: { ...data, contacts_marked: marked.length },
  })
  if (message.bridge_id !== null) countBridge(deps.db, message.bridge_id, 'complained')
  return { outcome: 'applied', message_id: messageId, recipient: address, detail: { ...base, recipient_id: recipientId, contacts_marked: marked.length } }
}

function applyReport(deps: Deps, report: InboundReport, now: number): Applied {
  switch (report.kind) {
    case 'dsn':
      return applyDsn(deps, report, now)
    case 'arf':
      return applyArf(deps, report, now)
    case 'dmarc': {
      const id = storeDmarcReport(deps.db, report, now)
      const detail = { org_name: report.orgName, report_id: report.reportId, domain: report.policy.domain.toLowerCase(), records: report.records.length }
      return id === null
        ? { outcome: 'duplicate', message_id: null, recipient: null, detail: { ...detail, reason: 'this report was already stored' } }
        : { outcome: 'applied', message_id: null, recipient: null, detail: { ...detail, dmarc_report_id: id } }
    }
    default:
      return { outcome: 'unparsed', message_id: null, recipient: null, detail: { reason: report.reason } }
  }
}

/**
 * Classifies one inbound message, applies it and records it in inbound_messages, all in one
 * transaction. Throws only when the database does (the caller answers 451 and the sender
 * retries); anything wrong with the message itself is an outcome, never an exception.
 */
export async function processInbound(deps: Deps, input: InboundInput, options: { secret: Buffer; maxBytes?: number }): Promise<InboundResult> {
  const report = await classifyInbound(input.raw, input.envelope, { secret: options.secret, maxBytes: options.maxBytes })
  const client = deps.db.$client
  const result = client
    .transaction(() => {
      const now = deps.clock.now()
      const applied = applyReport(deps, report, now)
      const detail: Record<string, unknown> = { ...applied.detail, via: input.source, size: input.raw.length }
      const row = statements(deps.db).log.get(
        now,
        input.remoteIp,
        input.envelope.mailFrom,
        input.envelope.rcptTo.join(', '),
        report.kind,
        applied.outcome,
        applied.message_id,
        applied.recipient,
        JSON.stringify(detail),
      )!
      return { id: row.id, kind: report.kind, ...applied, detail }
    })
    .immediate()
  const fields = { inbound_id: result.id, kind: result.kind, outcome: result.outcome, message_id: result.message_id, recipient: result.recipient }
  if (result.outcome === 'forged' || result.outcome === 'unparsed')
    deps.log.warn('inbound message changed nothing', { ...fields, reason: result.detail.reason })
  else deps.log.info('inbound message', fields)
  return result
}
