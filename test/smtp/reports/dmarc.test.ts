import { describe, expect, test } from 'bun:test'
import zlib from 'node:zlib'
import { classifyInbound, type DmarcReport } from '../../../src/smtp/reports'
import { parseDmarcAttachment, parseDmarcXml } from '../../../src/smtp/reports/dmarc'
import { parseXml, XmlError } from '../../../src/smtp/reports/xml'
import { ArchiveError, gunzipLimited, unzipFirst } from '../../../src/smtp/reports/zip'
import { fixture } from './support'

const ENVELOPE = { mailFrom: 'noreply-dmarc-support@google.com', rcptTo: ['dmarc@reports.example.com'] }

async function dmarc(name: string): Promise<DmarcReport> {
  const report = await classifyInbound(fixture(name), ENVELOPE)
  if (report.kind !== 'dmarc') throw new Error(`expected dmarc, got ${JSON.stringify(report)}`)
  return report
}

const MINIMAL = (records: string, extra = '') => `<?xml version="1.0"?>
<feedback>${extra}
  <report_metadata><org_name>Example &amp; Co</org_name><email>d@example.net</email><report_id>r-1</report_id>
    <date_range><begin>1772409600</begin><end>1772495999</end></date_range></report_metadata>
  <policy_published><domain>Example.com</domain><p>reject</p></policy_published>
  ${records}
</feedback>`

/** The .zip attached to the Google fixture. */
function googleZip(): Buffer {
  const mail = fixture('dmarc-google.eml').toString()
  return Buffer.from(mail.slice(mail.indexOf('base64') + 8, mail.lastIndexOf('--==report-boundary==--')).replace(/\s+/g, ''), 'base64')
}

const RECORD = `<record><row><source_ip>192.0.2.1</source_ip><count>2</count>
  <policy_evaluated><disposition>none</disposition><dkim>pass</dkim><spf>fail</spf></policy_evaluated></row>
  <identifiers><header_from>example.com</header_from></identifiers>
  <auth_results><dkim><domain>example.com</domain><result>pass</result></dkim><spf><domain>example.com</domain><result>softfail</result></spf></auth_results></record>`

describe('DMARC aggregate report fixtures', () => {
  test('Google (.zip)', async () => {
    const r = await dmarc('dmarc-google.eml')
    expect(r).toMatchObject({
      orgName: 'google.com',
      email: 'noreply-dmarc-support@google.com',
      reportId: '12345678901234567890',
      dateRange: { begin: 1772409600_000, end: 1772495999_000 },
      policy: { domain: 'example.com', p: 'quarantine', sp: 'quarantine', pct: 100, adkim: 'r', aspf: 'r' },
    })
    expect(r.records).toEqual([
      {
        sourceIp: '198.51.100.7',
        count: 1423,
        disposition: 'none',
        dkim: 'pass',
        spf: 'pass',
        reasons: [],
        headerFrom: 'example.com',
        envelopeFrom: null,
        envelopeTo: null,
        authResults: { dkim: [{ domain: 'example.com', result: 'pass', selector: 'mr202603' }], spf: [{ domain: 'bounces.example.com', result: 'pass' }] },
      },
      {
        sourceIp: '2001:db8::25',
        count: 3,
        disposition: 'quarantine',
        dkim: 'fail',
        spf: 'fail',
        reasons: [],
        headerFrom: 'example.com',
        envelopeFrom: null,
        envelopeTo: null,
        authResults: { dkim: [], spf: [{ domain: 'spoofer.example.net', result: 'softfail' }] },
      },
    ])
  })

  test('Microsoft (.xml.gz, namespaces, reasons, scope)', async () => {
    const r = await dmarc('dmarc-microsoft.eml')
    expect(r).toMatchObject({ orgName: 'Outlook.com', reportId: 'a3f1c2d4e5b6478899aabbccddeeff00' })
    expect(r.policy).toEqual({ domain: 'example.com', p: 'reject', sp: 'none', pct: 50, adkim: 's', aspf: 'r' })
    expect(r.records).toHaveLength(2)
    expect(r.records[1]).toMatchObject({
      sourceIp: '203.0.113.99',
      count: 12,
      disposition: 'reject',
      dkim: 'fail',
      spf: 'fail',
      reasons: [{ type: 'local_policy', comment: 'arc=fail' }],
      envelopeFrom: 'example.com',
      envelopeTo: 'hotmail.com',
      authResults: { spf: [{ domain: 'example.com', result: 'fail', scope: 'mfrom' }] },
    })
  })

  test('Yahoo (.xml.gz sent as application/octet-stream; sp defaults to p)', async () => {
    const r = await dmarc('dmarc-yahoo.eml')
    expect(r).toMatchObject({ orgName: 'Yahoo', policy: { domain: 'example.com', p: 'none', sp: 'none', pct: 100 } })
    expect(r.records[0]).toMatchObject({ sourceIp: '198.51.100.7', count: 560, dkim: 'pass', spf: 'fail' })
  })

  test('a zip bomb is refused without decompressing it all', async () => {
    const report = await classifyInbound(fixture('dmarc-zip-bomb.eml'), ENVELOPE)
    expect(report.kind).toBe('unknown')
    if (report.kind === 'unknown') expect(report.reason).toContain('decompresses to more than')
  })

  test('an XML entity bomb (and XXE) is refused at the DOCTYPE', async () => {
    const report = await classifyInbound(fixture('xml-entity-bomb.eml'), ENVELOPE)
    expect(report.kind).toBe('unknown')
    if (report.kind === 'unknown') expect(report.reason).toContain('DOCTYPE')
  })
})

describe('parseDmarcXml', () => {
  test('entities and defaults', () => {
    const r = parseDmarcXml(MINIMAL(RECORD))
    expect(r.orgName).toBe('Example & Co')
    expect(r.policy).toEqual({ domain: 'example.com', p: 'reject', sp: 'reject', pct: 100, adkim: 'r', aspf: 'r' })
    expect(r.records[0]).toMatchObject({ sourceIp: '192.0.2.1', count: 2, dkim: 'pass', spf: 'fail' })
  })

  test('a report without records is valid', () => {
    expect(parseDmarcXml(MINIMAL('')).records).toEqual([])
  })

  test.each([
    ['not a feedback root', '<report/>'],
    ['missing report_id', MINIMAL('').replace('<report_id>r-1</report_id>', '')],
    ['bad timestamp', MINIMAL('').replace('<begin>1772409600</begin>', '<begin>yesterday</begin>')],
    ['bad source ip', MINIMAL(RECORD.replace('192.0.2.1', '192.0.2.999'))],
    ['bad count', MINIMAL(RECORD.replace('<count>2</count>', '<count>-2</count>'))],
    ['missing header_from', MINIMAL(RECORD.replace('<header_from>example.com</header_from>', ''))],
  ])('refuses: %s', (_label, xml) => {
    expect(() => parseDmarcXml(xml)).toThrow()
  })

  test('.xml, .xml.gz and .zip bytes give the same report', () => {
    const xml = Buffer.from(MINIMAL(RECORD))
    const plain = parseDmarcAttachment(xml, 'r.xml')
    expect(parseDmarcAttachment(zlib.gzipSync(xml), 'r.xml.gz')).toEqual(plain)
    const zip = googleZip()
    expect(parseDmarcAttachment(zip, 'r.zip')).toEqual(parseDmarcAttachment(unzipFirst(zip)!.data, 'r.xml'))
  })

  test('an honest huge size in a gzip is stopped at the limit', () => {
    const bomb = zlib.gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x20))
    expect(() => gunzipLimited(bomb, 1024 * 1024)).toThrow(ArchiveError)
    expect(() => parseDmarcAttachment(bomb, 'r.xml.gz', { maxBytes: 1024 * 1024 })).toThrow(ArchiveError)
  })
})

describe('parseXml (strict subset)', () => {
  test('elements, text, CDATA, comments, PIs, attributes, namespaces, character references', () => {
    const root = parseXml(
      '\uFEFF<?xml version="1.0"?><!-- c --><x:a xmlns:x="urn:x" k=\'v>w\'><b>1 &lt; 2 &#x41;&#66;</b><![CDATA[<raw>&]]><c/><?pi data?></x:a>\n',
    )
    expect(root.name).toBe('a')
    expect(root.children.map((c) => c.name)).toEqual(['b', 'c'])
    expect(root.children[0]!.text).toBe('1 < 2 AB')
    expect(root.text).toBe('<raw>&')
  })

  test.each([
    ['DOCTYPE', '<!DOCTYPE a><a/>'],
    ['ENTITY outside a DOCTYPE', '<a><!ENTITY x "y"></a>'],
    ['undeclared entity', '<a>&lol;</a>'],
    ['external entity reference', '<a>&xxe;</a>'],
    ['bare ampersand', '<a>fish & chips</a>'],
    ['NUL character reference', '<a>&#0;</a>'],
    ['mismatched tags', '<a><b></a></b>'],
    ['unclosed element', '<a><b></b>'],
    ['two roots', '<a/><b/>'],
    ['text after the root', '<a/>junk'],
    ['text before the root', 'junk<a/>'],
    ['unterminated comment', '<a><!-- </a>'],
    ['bad attribute', '<a b=c/>'],
    ['< in attribute value', '<a b="<"/>'],
    ['empty document', '   '],
    ['deep nesting', '<a>'.repeat(100) + '</a>'.repeat(100)],
  ])('refuses: %s', (_label, xml) => {
    expect(() => parseXml(xml)).toThrow(XmlError)
  })
})

describe('unzipFirst', () => {
  test('refuses garbage and truncated archives', () => {
    expect(() => unzipFirst(Buffer.from('PK\x03\x04 not really a zip'))).toThrow(ArchiveError)
    const zip = googleZip()
    expect(unzipFirst(zip)?.name).toMatch(/\.xml$/)
    expect(() => unzipFirst(zip.subarray(0, zip.length - 30))).toThrow(ArchiveError)
    const corrupt = Buffer.from(zip)
    // A byte of the deflated data (after the 30-byte local header and the name): CRC or inflate error.
    const at = 30 + zip.readUInt16LE(26) + 20
    corrupt[at] = corrupt[at]! ^ 0xff
    expect(() => unzipFirst(corrupt)).toThrow(ArchiveError)
  })
})
