/**
 * DMARC aggregate reports (RFC 7489 section 7.2 and appendix C): XML, sent as .xml, .xml.gz
 * (Microsoft, Yahoo) or .zip (Google), read with the strict XML subset of ./xml.ts and the
 * bounded decompression of ./zip.ts.
 *
 * XML syntax is strict; the schema is read leniently where real reporters differ (missing
 * optional elements get RFC 7489 defaults, unknown elements are ignored), but a report
 * without its identity (org_name, report_id, date_range, policy domain) is refused.
 */
import { isIP } from 'node:net'
import type { Attachment, ParsedMail } from './mime'
import { child, childrenNamed, childText, parseXml, type XmlElement } from './xml'
import { ArchiveError, gunzipLimited, MAX_DECOMPRESSED, unzipFirst } from './zip'

export interface DmarcRecord {
  sourceIp: string
  count: number
  /** none | quarantine | reject (as reported, lower-cased). */
  disposition: string
  /** DMARC-aligned DKIM and SPF results (policy_evaluated). */
  dkim: 'pass' | 'fail'
  spf: 'pass' | 'fail'
  /** policy_evaluated/reason: local policy overrides (forwarded, mailing_list, ...). */
  reasons: Array<{ type: string; comment: string | null }>
  headerFrom: string
  envelopeFrom: string | null
  envelopeTo: string | null
  /** Raw authentication results (not aligned), lower-cased results. */
  authResults: {
    dkim: Array<{ domain: string; result: string; selector?: string }>
    spf: Array<{ domain: string; result: string; scope?: string }>
  }
}

export interface DmarcReport {
  kind: 'dmarc'
  orgName: string
  email: string | null
  reportId: string
  /** Milliseconds since the epoch (the XML has seconds). */
  dateRange: { begin: number; end: number }
  policy: {
    domain: string
    p: string
    /** Subdomain policy; p when absent (RFC 7489 section 6.3). */
    sp: string
    pct: number
    adkim: 'r' | 's'
    aspf: 'r' | 's'
  }
  records: DmarcRecord[]
}

export class DmarcError extends Error {}

export interface DmarcLimits {
  /** Most bytes an attachment may decompress to (default 20 MB). */
  maxBytes?: number
  maxRecords?: number
}

const MAX_RECORDS = 100_000

function required(el: XmlElement | undefined, name: string, where: string): string {
  const v = childText(el, name)
  if (v === null) throw new DmarcError(`missing ${where}/${name}`)
  return v
}

function seconds(el: XmlElement | undefined, name: string): number {
  const v = required(el, name, 'date_range')
  if (!/^\d{1,12}$/.test(v)) throw new DmarcError(`date_range/${name} is not a timestamp: ${v.slice(0, 40)}`)
  return Number(v) * 1000
}

const alignment = (v: string | null): 'r' | 's' => (v?.toLowerCase() === 's' ? 's' : 'r')
const passFail = (v: string | null): 'pass' | 'fail' => (v?.toLowerCase() === 'pass' ? 'pass' : 'fail')

function readRecord(r: XmlElement): DmarcRecord {
  const row = child(r, 'row')
  const sourceIp = required(row, 'source_ip', 'record/row')
  if (isIP(sourceIp) === 0) throw new DmarcError(`record/row/source_ip is not an IP address: ${sourceIp.slice(0, 60)}`)
  const countText = required(row, 'count', 'record/row')
  if (!/^\d{1,12}$/.test(countText)) throw new DmarcError(`record/row/count is not a count: ${countText.slice(0, 40)}`)
  const pe = child(row, 'policy_evaluated')
  const ids = child(r, 'identifiers')
  const auth = child(r, 'auth_results')
  return {
    sourceIp,
    count: Number(countText),
    disposition: (childText(pe, 'disposition') ?? 'none').toLowerCase(),
    dkim: passFail(childText(pe, 'dkim')),
    spf: passFail(childText(pe, 'spf')),
    reasons: childrenNamed(pe, 'reason').map((x) => ({ type: (childText(x, 'type') ?? 'other').toLowerCase(), comment: childText(x, 'comment') })),
    headerFrom: required(ids, 'header_from', 'record/identifiers').toLowerCase(),
    envelopeFrom: childText(ids, 'envelope_from')?.toLowerCase() ?? null,
    envelopeTo: childText(ids, 'envelope_to')?.toLowerCase() ?? null,
    authResults: {
      dkim: childrenNamed(auth, 'dkim').map((d) => {
        const selector = childText(d, 'selector')
        return {
          domain: (childText(d, 'domain') ?? '').toLowerCase(),
          result: (childText(d, 'result') ?? 'none').toLowerCase(),
          ...(selector ? { selector } : {}),
        }
      }),
      spf: childrenNamed(auth, 'spf').map((x) => {
        const scope = childText(x, 'scope')
        return {
          domain: (childText(x, 'domain') ?? '').toLowerCase(),
          result: (childText(x, 'result') ?? 'none').toLowerCase(),
          ...(scope ? { scope: scope.toLowerCase() } : {}),
        }
      }),
    },
  }
}

/** Parses the XML of an aggregate report; throws DmarcError (or XmlError) when it is not one. */
export function parseDmarcXml(xml: string, limits: DmarcLimits = {}): DmarcReport {
  const root = parseXml(xml)
  if (root.name !== 'feedback') throw new DmarcError(`root element is <${root.name}>, not <feedback>`)
  const meta = child(root, 'report_metadata')
  const range = child(meta, 'date_range')
  const policy = child(root, 'policy_published')
  if (!meta || !range || !policy) throw new DmarcError('missing report_metadata, date_range or policy_published')
  const records = childrenNamed(root, 'record')
  if (records.length > (limits.maxRecords ?? MAX_RECORDS)) throw new DmarcError(`too many records (${records.length})`)
  const p = required(policy, 'p', 'policy_published').toLowerCase()
  const pct = childText(policy, 'pct')
  return {
    kind: 'dmarc',
    orgName: required(meta, 'org_name', 'report_metadata'),
    email: childText(meta, 'email'),
    reportId: required(meta, 'report_id', 'report_metadata'),
    dateRange: { begin: seconds(range, 'begin'), end: seconds(range, 'end') },
    policy: {
      domain: required(policy, 'domain', 'policy_published').toLowerCase(),
      p,
      sp: (childText(policy, 'sp') ?? p).toLowerCase(),
      pct: pct !== null && /^\d{1,3}$/.test(pct) ? Math.min(100, Number(pct)) : 100,
      adkim: alignment(childText(policy, 'adkim')),
      aspf: alignment(childText(policy, 'aspf')),
    },
    records: records.map(readRecord),
  }
}

/** What an attachment's bytes are, by magic number first and name second. */
export function sniffReport(data: Buffer, filename = ''): 'gzip' | 'zip' | 'xml' | null {
  if (data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b) return 'gzip'
  if (data.length >= 4 && data.readUInt32LE(0) === 0x04034b50) return 'zip'
  const head = data
    .subarray(0, 512)
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart()
  if (head.startsWith('<')) return 'xml'
  if (/\.zip$/i.test(filename)) return 'zip'
  if (/\.gz$/i.test(filename)) return 'gzip'
  return null
}

/** Decompresses (when needed) and parses one report file: .xml, .xml.gz or .zip. */
export function parseDmarcAttachment(data: Buffer, filename = '', limits: DmarcLimits = {}): DmarcReport {
  const max = limits.maxBytes ?? MAX_DECOMPRESSED
  const kind = sniffReport(data, filename)
  let xml: Buffer
  if (kind === 'gzip') xml = gunzipLimited(data, max)
  else if (kind === 'zip') {
    const entry = unzipFirst(data, (n) => /\.xml$/i.test(n), max) ?? unzipFirst(data, () => true, max)
    if (!entry) throw new ArchiveError('zip: no file inside')
    xml = entry.data
  } else if (kind === 'xml') {
    if (data.length > max) throw new DmarcError(`XML larger than ${max} bytes`)
    xml = data
  } else throw new DmarcError('not an XML, gzip or zip file')
  return parseDmarcXml(xml.toString('utf8'), limits)
}

const REPORT_TYPES = [
  'application/zip',
  'application/x-zip-compressed',
  'application/x-zip',
  'application/gzip',
  'application/x-gzip',
  'text/xml',
  'application/xml',
]

/** Attachments of a parsed message that may be aggregate reports (by type, name or magic number). */
export function dmarcCandidates(mail: ParsedMail): Attachment[] {
  return mail.attachments.filter(
    (a) =>
      REPORT_TYPES.includes(a.contentType.toLowerCase()) ||
      /\.(xml|xml\.gz|gz|zip)$/i.test(a.filename ?? '') ||
      (a.contentType.toLowerCase() === 'application/octet-stream' && sniffReport(a.content, a.filename) !== null),
  )
}

/**
 * The aggregate report in a parsed message: the first candidate attachment that parses.
 * Returns the report, or the first error when candidates exist but none parses, or null when
 * the message has no candidate at all.
 */
export function dmarcFromMail(mail: ParsedMail, limits: DmarcLimits = {}): DmarcReport | { error: string } | null {
  const candidates = dmarcCandidates(mail)
  let firstError: string | null = null
  for (const a of candidates.slice(0, 8)) {
    try {
      return parseDmarcAttachment(a.content, a.filename ?? '', limits)
    } catch (e) {
      firstError ??= `${a.filename ?? a.contentType}: ${(e as Error).message}`
    }
  }
  return firstError ? { error: firstError } : null
}
