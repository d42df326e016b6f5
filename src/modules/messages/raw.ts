import addressparser from 'nodemailer/lib/addressparser'
import libmime from 'libmime'
import type { Deps } from '../../deps'
import { checkEmail, domainOf } from '../../lib/email'
import { AppError } from '../../lib/errors'
import { headerFields, type HeaderField } from '../../lib/header-fields'
import { rewriteRawHtml } from '../tracking/raw-mime'
import { htmlTrackingFor, trackingChoice } from '../tracking/service'
import { rfc5322Date } from './mime'
import { checkRouting, newMessageId, returnPath, signingDomain, type PreparedMessage } from './service'

/**
 * Messages that arrive whole (SMTP submission, issue 5): the client built the MIME, so
 * Mailroom only checks it, adds what RFC 5322 requires and a submission agent supplies
 * (Message-ID, Date: RFC 6409 section 8), takes out its own control headers and Bcc,
 * rewrites its HTML parts for open and click tracking when that is on, and queues it like an
 * API message.
 */

/** Headers a client may add to steer Mailroom; removed before the message is stored. */
export const CONTROL_HEADERS = {
  /** Comma-separated tags, as `tags` of /v1/emails. */
  tags: 'x-mailroom-tags',
  /** An IP pool id, as `ip_pool_id`. */
  pool: 'x-mailroom-pool',
  /** As the HTTP header of the same name: a resubmission with the same key is a no-op. */
  idempotency: 'idempotency-key',
  /** `true` or `false`, as `track_opens`: overrides the bridge's and the domain's default. */
  trackOpens: 'x-mailroom-track-opens',
  /** `true` or `false`, as `track_clicks`. */
  trackClicks: 'x-mailroom-track-clicks',
} as const

export interface RawSubmission {
  raw: Buffer
  /** The envelope: MAIL FROM and RCPT TO as the listener accepted them. */
  mailFrom: string
  recipients: string[]
  /** Domains the sender may use in From (a bridge's domains), lower-case ASCII. */
  allowedDomains: readonly string[]
  poolId?: number | null
  nodeId?: number | null
  /** The bridge's tracking defaults (BridgeIdentity.tracking), applied like the verified sending domain's. */
  tracking?: { track_opens: boolean | number; track_clicks: boolean | number } | null
}

export interface PreparedRaw {
  prepared: PreparedMessage
  idempotencyKey: string | null
  nodeId: number | null
  /** The tracking the client's control headers asked for (undefined: not given), part of what a resubmission must repeat. */
  requestedTracking: { track_opens?: boolean; track_clicks?: boolean }
}

/** The header block's fields; a line that is not a field refuses the message. */
function fields(head: string): HeaderField[] {
  const all = headerFields(head)
  const bad = all.find((f) => f.name === '')
  if (bad) throw new AppError('validation_failed', 'The message header is malformed.', { header: [`"${bad.raw.slice(0, 40)}" is not a header field`] })
  return all
}

function addresses(value: string | undefined): string[] {
  if (!value) return []
  return addressparser(value, { flatten: true })
    .map((a) => checkEmail(a.address))
    .filter((c) => c.ok)
    .map((c) => (c as { email: string }).email)
}

/**
 * An unstructured header value as a reader sees it, for storing and showing (the message's
 * bytes are not changed): raw UTF-8 (RFC 6532) read as UTF-8, encoded words (RFC 2047)
 * decoded. `value` holds the header's bytes as latin1 code units.
 */
export function headerText(value: string): string {
  const text = Buffer.from(value, 'latin1').toString('utf8')
  try {
    return libmime.decodeWords(text)
  } catch {
    return text
  }
}

/** Checks a submitted message and turns it into a queueable one; errors are AppErrors the listener turns into SMTP replies. */
export function prepareRawMessage(deps: Deps, sub: RawSubmission): PreparedRaw {
  const text = sub.raw.toString('latin1')
  const split = text.indexOf('\r\n\r\n')
  if (split < 0) throw new AppError('validation_failed', 'The message has no header/body separator.', { message: ['needs an empty line after the header'] })
  const head = fields(text.slice(0, split + 2))
  const body = text.slice(split + 4)
  const one = (name: string) => {
    const found = head.filter((f) => f.name === name)
    if (found.length > 1)
      throw new AppError('validation_failed', `The message has ${found.length} ${name} fields.`, { [name]: ['must appear once (RFC 5322 section 3.6)'] })
    return found[0]
  }

  const fromField = one('from')
  const from = addresses(fromField?.value)
  if (from.length !== 1) throw new AppError('validation_failed', 'The From header must hold exactly one valid address.', { from: ['needs one valid address'] })
  const fromDomain = domainOf(from[0]!)
  if (!sub.allowedDomains.includes(fromDomain)) {
    throw new AppError('forbidden', `This sender may not send from ${fromDomain}.`, { from: [`${fromDomain} is not one of the bridge's domains`] })
  }
  const domain = signingDomain(deps, fromDomain)

  const pool = one(CONTROL_HEADERS.pool)?.value
  if (pool !== undefined && !/^\d+$/.test(pool))
    throw new AppError('validation_failed', 'X-Mailroom-Pool must be an IP pool id.', { [CONTROL_HEADERS.pool]: ['must be a number'] })
  const poolId = pool !== undefined ? Number(pool) : (sub.poolId ?? null)
  checkRouting(deps, { poolId, nodeId: sub.nodeId })
  const tags = (one(CONTROL_HEADERS.tags)?.value ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)
  if (tags.length > 20 || tags.some((t) => t.length > 256))
    throw new AppError('validation_failed', 'Too many or too long tags.', { tags: ['at most 20 tags of 256 characters'] })
  const idempotencyKey = one(CONTROL_HEADERS.idempotency)?.value ?? null
  const flag = (name: string, label: string): boolean | undefined => {
    const value = one(name)?.value.toLowerCase()
    if (value === undefined) return undefined
    if (value === 'true' || value === 'false') return value === 'true'
    throw new AppError('validation_failed', `${label} must be true or false.`, { [name]: ['must be true or false'] })
  }
  const requestedTracking = {
    track_opens: flag(CONTROL_HEADERS.trackOpens, 'X-Mailroom-Track-Opens'),
    track_clicks: flag(CONTROL_HEADERS.trackClicks, 'X-Mailroom-Track-Clicks'),
  }
  const choice = trackingChoice(requestedTracking, [domain, sub.tracking])

  const id = newMessageId()
  const existingId = one('message-id')?.value.replace(/^<|>$/g, '')
  const messageIdHeader = existingId || `${id}@${fromDomain}`
  // Kept: every field but Bcc (RFC 5322 3.6.3: recipients must not see it) and our control headers.
  const dropped = new Set<string>(['bcc', ...Object.values(CONTROL_HEADERS)])
  let out = head
    .filter((f) => !dropped.has(f.name))
    .map((f) => `${f.raw}\r\n`)
    .join('')
  if (!existingId) out += `Message-ID: <${messageIdHeader}>\r\n`
  if (!one('date')) out += `Date: ${rfc5322Date(new Date(deps.clock.now()))}\r\n`
  const built = Buffer.from(`${out}\r\n${body}`, 'latin1')
  // The client's HTML parts get the links (tracking/raw-mime.ts); no List-Unsubscribe is
  // added: a client that wants one writes its own.
  const tracking = htmlTrackingFor(deps, id, choice)
  const raw = tracking ? rewriteRawHtml(built, tracking) : built

  const to = new Set(addresses(one('to')?.value))
  const cc = new Set(addresses(one('cc')?.value))
  const seen = new Set<string>()
  const recipients: PreparedMessage['recipients'] = []
  for (const r of sub.recipients) {
    const c = checkEmail(r)
    if (!c.ok || seen.has(c.email)) continue
    seen.add(c.email)
    recipients.push({ address: c.email, kind: to.has(c.email) ? 'to' : cc.has(c.email) ? 'cc' : 'bcc' })
  }
  return {
    prepared: {
      id,
      raw,
      mailFrom: returnPath(id, domain, sub.mailFrom || from[0]!),
      messageIdHeader,
      fromAddress: from[0]!,
      subject: headerText(one('subject')?.value ?? ''),
      tags,
      recipients,
      domainId: domain?.id ?? null,
      poolId: poolId ?? domain?.pool_id ?? null,
      template: null,
      envelopeFrom: sub.mailFrom || null,
      // SMTP submission has no way to ask for a later send.
      scheduledAt: null,
      sentHtml: null,
    },
    idempotencyKey,
    nodeId: sub.nodeId ?? null,
    requestedTracking,
  }
}
