/**
 * Inbound report classification: one entry point for everything the inbound listener and
 * the feedback-loop mailboxes receive. Chooses the parser by structure (the report-type of
 * multipart/report, RFC 6522, and the parts present), then falls back to the JMRP and
 * plain-text bounce heuristics.
 *
 * Never throws: malformed, hostile or oversized input comes back as kind 'unknown' with a
 * reason. Work is bounded: at most `maxBytes` of the message are parsed, decompression stops
 * at 20 MB, and a timeout returns 'unknown' if parsing takes too long.
 */
import { arfFromMail, type ArfReport } from './arf'
import { dmarcFromMail, type DmarcReport } from './dmarc'
import { dsnFromMail, heuristicDsn, standardDsn, type DsnReport } from './dsn'
import { contentType, findPart, headerSection, parseMail, type ParsedMail } from './mime'
import { tokenFromAddress } from '../../lib/return-path-token'

export type { ArfReport, FeedbackType } from './arf'
export type { DmarcRecord, DmarcReport } from './dmarc'
export type { BounceClass, DsnAction, DsnRecipient, DsnReport } from './dsn'
export type { ReturnPath } from './mime'
export { parseArf } from './arf'
export { parseDmarcAttachment, parseDmarcXml } from './dmarc'
export { parseDsn } from './dsn'

export interface UnknownReport {
  kind: 'unknown'
  /** Why nothing was recognised (for the log; not for end users). */
  reason: string
}

export type InboundReport = DsnReport | ArfReport | DmarcReport | UnknownReport

export interface InboundEnvelope {
  /** MAIL FROM ('' or '<>' for the null reverse-path that DSNs use). */
  mailFrom: string
  rcptTo: string[]
}

export interface ClassifyOptions {
  /** Return-path secret: when given, tokens are verified and `returnPath` is filled in. */
  secret?: Buffer
  /** Most bytes of the message parsed (default 16 MiB); a longer message is cut (report parts come first, RFC 6522). */
  maxBytes?: number
  /** Parsing time limit in ms (default 10 s). */
  timeoutMs?: number
  /** Most bytes a DMARC attachment may decompress to (default 20 MB). */
  maxDecompressedBytes?: number
}

export const DEFAULT_MAX_BYTES = 16 * 1024 * 1024
const DEFAULT_TIMEOUT_MS = 10_000

class Timeout extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Timeout(`parsing took longer than ${ms} ms`)), ms)
  })
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer))
}

/** Chooses the parser for an already parsed message. */
export function classifyParsed(mail: ParsedMail, envelope: InboundEnvelope, options: ClassifyOptions = {}): InboundReport {
  const rcptTo = Array.isArray(envelope.rcptTo) ? envelope.rcptTo : []
  // Of several recipients, the one carrying a token is the bounce address.
  const envelopeTo = rcptTo.find((r) => tokenFromAddress(r) !== null) ?? rcptTo[0]
  const dsnOptions = { envelopeTo, envelopeFrom: typeof envelope.mailFrom === 'string' ? envelope.mailFrom : undefined, secret: options.secret }
  const reportType = contentType(mail).params['report-type']?.toLowerCase()

  if (reportType === 'feedback-report') {
    const arf = arfFromMail(mail, options)
    if (arf) return arf
  }
  if (reportType === 'delivery-status') {
    const dsn = dsnFromMail(mail, dsnOptions)
    if (dsn) return dsn
  }
  // By parts present, whatever the top-level type says (reports forwarded inside multipart/mixed).
  const standard = standardDsn(mail, dsnOptions) ?? arfFromMail(mail, options)
  if (standard) return standard
  const dmarc = dmarcFromMail(mail, { maxBytes: options.maxDecompressedBytes })
  if (dmarc && 'kind' in dmarc) return dmarc
  if (dmarc) return { kind: 'unknown', reason: `dmarc attachment refused: ${dmarc.error}` }
  const heuristic = heuristicDsn(mail, dsnOptions)
  if (heuristic) return heuristic
  if (reportType) return { kind: 'unknown', reason: `multipart/report with report-type=${reportType} and nothing readable` }
  return { kind: 'unknown', reason: 'not a bounce, complaint or DMARC report' }
}

/**
 * Classifies one inbound message (raw RFC 5322 bytes and its SMTP envelope) as a DSN, an
 * ARF/JMRP complaint, a DMARC aggregate report, or unknown. Never throws.
 */
export async function classifyInbound(raw: Buffer, envelope: InboundEnvelope, options: ClassifyOptions = {}): Promise<InboundReport> {
  try {
    if (!Buffer.isBuffer(raw) || raw.length === 0) return { kind: 'unknown', reason: 'empty message' }
    const max = options.maxBytes ?? DEFAULT_MAX_BYTES
    const input = raw.length > max ? raw.subarray(0, max) : raw
    const mail = await withTimeout(parseMail(input), options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
    const report = classifyParsed(mail, envelope ?? { mailFrom: '', rcptTo: [] }, options)
    if (report.kind !== 'unknown') return report
    const forwarded = await forwardedReport(mail, envelope ?? { mailFrom: '', rcptTo: [] }, options)
    return forwarded ?? report
  } catch (e) {
    const reason = e instanceof Timeout ? e.message : `malformed message: ${e instanceof Error ? e.message : String(e)}`
    return { kind: 'unknown', reason: reason.slice(0, 500) }
  }
}

/**
 * A report forwarded whole as an attachment. Complaints: Amazon SES's email feedback
 * forwarding (and people forwarding a provider's report "as attachment") wrap the provider's
 * multipart/report; report-type=feedback-report in a message/rfc822 part. Bounces: content
 * gateways in front of Exchange (InterScan and the like) re-wrap the server's
 * multipart/report; report-type=delivery-status as a message/rfc822 attachment of a
 * multipart/mixed. One level only, and only when the attached message's own header says it
 * is such a report (every bounce carries the original as message/rfc822: that is not one).
 */
async function forwardedReport(mail: ParsedMail, envelope: InboundEnvelope, options: ClassifyOptions): Promise<ArfReport | DsnReport | null> {
  const part = findPart(mail, ['message/rfc822'])
  if (!part) return null
  const type = /report-type\s*=\s*"?(feedback-report|delivery-status)/i.exec(headerSection(part.content))?.[1]?.toLowerCase()
  if (!type) return null
  try {
    const inner = await withTimeout(parseMail(part.content), options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
    if (type === 'feedback-report') return arfFromMail(inner, options)
    const report = classifyParsed(inner, envelope, options)
    return report.kind === 'dsn' ? report : null
  } catch {
    // The outer message already came back unknown; a broken attachment does not change that.
    return null
  }
}
