/**
 * Tracking of whole messages (SMTP submission): `tracking/raw-mime.ts`, our own entity walker,
 * against the same rewrite built on mailsplit (`@zone-eu/mailsplit`, installed with
 * mailparser), whose README offers exact round trips and "adding tracking images". Both get
 * the same policy (which parts, which charsets, UTF-8 quoted-printable out) and the same
 * HTML rewrite (rewriteHtml); what differs is how the message is split, decoded, re-encoded
 * and joined.
 *
 * Exactness: for each hand-written message (the tracking tests' messages plus nested
 * multiparts, base64 and quoted-printable HTML, LF and mixed line breaks, 8-bit bodies and
 * headers), the bytes around the HTML part must come out as they went in, the part's other
 * header fields too, and a message that is not to be tracked must come out whole.
 * Speed: both implementations alternate in the same run, several rounds; the figure that
 * counts is the ratio (the machine is shared, absolute times move).
 */
import { Joiner, Splitter, type MimeNode, type SplitterChunk } from '@zone-eu/mailsplit'
import { simpleParser } from 'mailparser'
import { Transform, type TransformCallback } from 'node:stream'
import { parseArgs } from 'node:util'
import { headerFields } from '../src/lib/header-fields'
import { rewriteRawHtml } from '../src/modules/tracking/raw-mime'
import { rewriteHtml, type HtmlTracking } from '../src/modules/tracking/rewrite'
import { machineInfo, markdownTable, median, textTable, writeDocSection } from './support/report'

const tracking: HtmlTracking = { pixelUrl: 'https://t.test/o/px', clickUrl: (u) => `https://t.test/c/${encodeURIComponent(u)}` }

// ---------------------------------------------------------------------------------------
// The candidate: the same rewrite on mailsplit's Splitter and Joiner.
// ---------------------------------------------------------------------------------------

/** Everything a stream gives for `input`. */
function through(stream: Transform, input: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = []
    stream.on('data', (c: Buffer) => out.push(Buffer.from(c)))
    stream.on('end', () => resolve(Buffer.concat(out)))
    stream.on('error', reject)
    stream.end(input)
  })
}

/** The same charset rule as raw-mime.ts: no charset is US-ASCII; what cannot be decoded with certainty is not. */
function decodeCharset(bytes: Buffer, charset: string | false): { text: string; utf8: boolean } | null {
  const label = (charset || 'us-ascii').trim().toLowerCase()
  if ((label === 'us-ascii' || label === 'ascii') && bytes.some((b) => b > 0x7f)) return null
  try {
    const decoder = new TextDecoder(label, { fatal: true })
    return { text: decoder.decode(bytes), utf8: decoder.encoding === 'utf-8' }
  } catch {
    return null
  }
}

function declareUtf8(html: string): string {
  return new HTMLRewriter()
    .on('meta[charset]', { element: (el) => void el.setAttribute('charset', 'utf-8') })
    .on('meta[http-equiv]', {
      element: (el) => {
        if (el.getAttribute('http-equiv')!.trim().toLowerCase() === 'content-type') el.setAttribute('content', 'text/html; charset=utf-8')
      },
    })
    .transform(html)
}

/** A node's parsed header block (parsed by the Splitter before it emits the node). */
const headersOf = (node: MimeNode) => node.headers as Exclude<MimeNode['headers'], false>

const READABLE = new Set(['', '7bit', '8bit', 'binary', 'quoted-printable', 'base64'])

/** Holds each trackable text/html node with its body, and passes it on rewritten or as it was. */
class HtmlTracker extends Transform {
  private held: { node: MimeNode; chunks: Buffer[] } | null = null
  private mime = false
  constructor(private readonly tracking: HtmlTracking) {
    super({ objectMode: true })
  }

  override _transform(obj: SplitterChunk, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.held && obj.type === 'body') {
      this.held.chunks.push(obj.value)
      return done()
    }
    const next = () => {
      if (obj.type === 'node') {
        const node = obj as MimeNode
        if (node.root) this.mime = headersOf(node).hasHeader('MIME-Version')
        if (this.trackable(node)) {
          this.held = { node, chunks: [] }
          return done()
        }
      }
      this.push(obj)
      done()
    }
    if (this.held) this.release().then(next, done)
    else next()
  }

  override _flush(done: TransformCallback): void {
    if (this.held) this.release().then(() => done(), done)
    else done()
  }

  private trackable(node: MimeNode): boolean {
    const headers = headersOf(node)
    return (
      this.mime &&
      node.contentType === 'text/html' &&
      node.disposition !== 'attachment' &&
      headers.get('Content-Type').length === 1 &&
      headers.get('Content-Transfer-Encoding').length <= 1 &&
      READABLE.has(node.encoding || '')
    )
  }

  private async release(): Promise<void> {
    const { node, chunks } = this.held!
    this.held = null
    const body = Buffer.concat(chunks)
    const decoded = decodeCharset(await through(node.getDecoder() as Transform, body), node.charset)
    const html = decoded ? rewriteHtml(decoded.text, this.tracking).html : null
    if (!decoded || html === null || html === decoded.text) {
      this.push(node)
      for (const value of chunks) this.push({ type: 'body', value })
      return
    }
    node.setCharset('utf-8')
    const encoder = node.getEncoder('quoted-printable') as Transform
    const text = (decoded.utf8 ? html : declareUtf8(html)).replace(/\r\n|\r|\n/g, '\r\n')
    const encoded = await through(encoder, Buffer.from(text))
    this.push(node)
    this.push({ type: 'body', value: encoded })
  }
}

/** rewriteRawHtml's job done with mailsplit: Splitter -> HtmlTracker -> Joiner. */
export async function rewriteWithMailsplit(raw: Buffer, tracking: HtmlTracking): Promise<Buffer> {
  // The typings declare only the 'data' events; both are ordinary Transform streams.
  const splitter = new Splitter({ ignoreEmbedded: true }) as unknown as Transform
  const joiner = new Joiner() as unknown as Transform
  const out: Buffer[] = []
  joiner.on('data', (c: Buffer) => out.push(c))
  const ended = new Promise<void>((resolve, reject) => {
    joiner.on('end', resolve)
    splitter.on('error', reject)
    joiner.on('error', reject)
  })
  splitter.pipe(new HtmlTracker(tracking)).pipe(joiner)
  splitter.end(raw)
  await ended
  return Buffer.concat(out)
}

/** Splitter -> Joiner with nothing changed: mailsplit's own round trip. */
async function roundTrip(raw: Buffer): Promise<Buffer> {
  const splitter = new Splitter()
  const joiner = new Joiner() as unknown as Transform
  const out: Buffer[] = []
  joiner.on('data', (c: Buffer) => out.push(c))
  const ended = new Promise<void>((resolve) => joiner.on('end', resolve))
  splitter.pipe(joiner)
  splitter.end(raw)
  await ended
  return Buffer.concat(out)
}

// ---------------------------------------------------------------------------------------
// The messages.
// ---------------------------------------------------------------------------------------

const crlf = (...lines: string[]) => lines.join('\r\n')
const lf = (...lines: string[]) => lines.join('\n')
const HEAD = crlf('From: Shop <orders@example.com>', 'To: ada@example.net', 'Subject: Your order', 'MIME-Version: 1.0')
const LINK = '<a href="https://shop.example/order?id=7&amp;ref=mail">Your order</a>'

/** A message to track: `before` + the HTML part + `after`; the bytes around the part must not change. */
interface Tracked {
  name: string
  before: string
  part: string
  after: string
  latin1?: boolean
}
/** A message that must come out whole. */
interface Untouched {
  name: string
  raw: string
  latin1?: boolean
}

const b64 = (s: string) =>
  Buffer.from(s)
    .toString('base64')
    .match(/.{1,76}/g)!

const TRACKED: Tracked[] = [
  {
    name: 'single part, quoted-printable, a folded field',
    before: crlf(HEAD, 'X-Folded: one', '  two', ''),
    part: crlf(
      'Content-Type: text/html; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      '<html><body><p>Gr=C3=BC=C3=9Fe! <a href=3D"https://shop.example/order?id=3D7&amp;ref=',
      '=3Dmail">Your order</a></p></body></html>',
      '',
    ),
    after: '',
  },
  {
    name: 'base64 HTML in alternative in mixed, preamble, epilogue, HTML attachment',
    before: crlf(
      HEAD,
      'Content-Type: multipart/mixed;',
      ' boundary="outer"',
      '',
      'This is a preamble.',
      '--outer',
      'Content-Type: multipart/alternative; boundary=inner',
      '',
      '--inner',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      'Order: https://shop.example/order?id=3D7',
      '--inner',
      '',
    ),
    part: crlf('Content-Type: text/html; charset="UTF-8"', 'Content-Transfer-Encoding: base64', '', ...b64(`<p>Danke, Zoë: ${LINK}</p>\n`)),
    after: crlf(
      '',
      '--inner--',
      '',
      '--outer',
      'Content-Type: text/html; name="invoice.html"',
      'Content-Disposition: attachment; filename="invoice.html"',
      'Content-Transfer-Encoding: base64',
      '',
      ...b64('<a href="https://shop.example/invoice">invoice</a>'),
      '--outer--',
      'An epilogue.',
      '',
    ),
  },
  {
    name: 'ISO-8859-1 8bit, folded Content-Type with an RFC 2231 name',
    before: crlf(HEAD, ''),
    part: crlf(
      'Content-Type: text/html;',
      ' format=flowed; charset="ISO-8859-1";',
      " name*=utf-8''r%C3%A9sum%C3%A9.html",
      'Content-Transfer-Encoding: 8bit',
      '',
      '<html><head><meta charset="iso-8859-1"></head><body><p>Caf\xe9 <a href="https://shop.example/">menu</a></p></body></html>',
      '',
    ),
    after: '',
    latin1: true,
  },
  {
    name: 'windows-1252, no Content-Transfer-Encoding',
    before: crlf(HEAD, ''),
    part: crlf('Content-Type: text/html; charset=windows-1252', '', '<p>\x93quoted\x94 <a href="https://shop.example/">x</a></p>'),
    after: '',
    latin1: true,
  },
  {
    name: 'related in alternative in mixed: HTML with Content-ID and inline disposition, a cid image',
    before: crlf(
      HEAD,
      'Content-Type: multipart/mixed; boundary=m',
      '',
      '--m',
      'Content-Type: multipart/alternative; boundary=a',
      '',
      '--a',
      'Content-Type: text/plain',
      '',
      'plain',
      '--a',
      'Content-Type: multipart/related; boundary=r; type="text/html"',
      '',
      '--r',
      '',
    ),
    part: crlf(
      'Content-Type: text/html; charset=utf-8',
      'Content-ID: <body@example.com>',
      'Content-Disposition: inline',
      'Content-Transfer-Encoding: 8bit',
      '',
      `<p>Zoë ${LINK} <img src="cid:logo@example.com"></p>`,
    ),
    after: crlf(
      '',
      '--r',
      'Content-Type: image/png',
      'Content-ID: <logo@example.com>',
      'Content-Transfer-Encoding: base64',
      '',
      'iVBORw0KGgo=',
      '--r--',
      '--a--',
      '--m',
      'Content-Type: application/pdf; name=a.pdf',
      'Content-Transfer-Encoding: base64',
      '',
      'JVBERi0=',
      '--m--',
      '',
    ),
  },
  {
    name: '8-bit UTF-8 in the headers (RFC 6532) and body',
    before: crlf('From: Zoë <zoe@example.com>', 'Subject: Grüße', 'MIME-Version: 1.0', ''),
    part: crlf('Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: 8bit', '', `<p>Grüße ${LINK}</p>`, ''),
    after: '',
  },
  {
    name: 'a line that only starts with the boundary; a delimiter with trailing white space',
    before: crlf(HEAD, 'Content-Type: multipart/alternative; boundary=b', '', '--b', 'Content-Type: text/plain', '', '--bx is not a delimiter', '--b  ', ''),
    part: crlf('Content-Type: text/html', '', '<a href="https://shop.example/">x</a>'),
    after: crlf('', '--b--'),
  },
  {
    name: 'long quoted-printable lines with soft breaks and transport white space',
    before: crlf(HEAD, ''),
    part: crlf(
      'Content-Type: text/html; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      `<p>${'x'.repeat(70)}=`,
      `${'y'.repeat(70)} <a href=3D"https://shop.ex= \t`,
      'ample/">x</a>   ',
      '</p>',
    ),
    after: '',
  },
  {
    name: 'LF line breaks only',
    before: lf(
      'From: a@example.com',
      'MIME-Version: 1.0',
      'Content-Type: multipart/alternative; boundary=b',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'plain',
      '--b',
      '',
    ),
    part: lf('Content-Type: text/html; charset=utf-8', 'Content-ID: <x@example.com>', '', `<p>${LINK}</p>`),
    after: lf('', '--b--', ''),
  },
]

const UNTOUCHED: Untouched[] = [
  { name: 'an unknown charset', raw: crlf(HEAD, 'Content-Type: text/html; charset=x-unknown-7', '', LINK) },
  { name: 'an unknown transfer encoding', raw: crlf(HEAD, 'Content-Type: text/html', 'Content-Transfer-Encoding: x-uuencode', '', LINK) },
  { name: 'bytes that are not UTF-8 under charset=utf-8', raw: crlf(HEAD, 'Content-Type: text/html; charset=utf-8', '', `<p>\xe9</p>${LINK}`), latin1: true },
  { name: '8-bit text that names no charset', raw: crlf(HEAD, 'Content-Type: text/html', '', `<p>\xe9</p>${LINK}`), latin1: true },
  { name: 'two Content-Type fields', raw: crlf(HEAD, 'Content-Type: text/html', 'Content-Type: text/plain', '', LINK) },
  { name: 'text/plain', raw: crlf(HEAD, 'Content-Type: text/plain; charset=utf-8', '', 'https://shop.example/') },
  { name: 'no MIME-Version', raw: crlf('From: orders@example.com', 'Content-Type: text/html', '', LINK) },
  { name: 'an HTML attachment', raw: crlf(HEAD, 'Content-Type: text/html', 'Content-Disposition: attachment; filename=a.html', '', LINK) },
  {
    name: 'a forwarded message/rfc822 with HTML inside',
    raw: crlf(
      HEAD,
      'Content-Type: multipart/mixed; boundary=b',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'See below.',
      '--b',
      'Content-Type: message/rfc822',
      '',
      'From: x@example.org',
      'MIME-Version: 1.0',
      'Content-Type: text/html',
      '',
      LINK,
      '--b--',
      '',
    ),
  },
  { name: 'a multipart without a boundary', raw: crlf(HEAD, 'Content-Type: multipart/mixed', '', '--b', 'Content-Type: text/html', '', LINK, '--b--') },
  { name: 'HTML without links or pixel change (clicks only)', raw: crlf(HEAD, 'Content-Type: text/html; charset=utf-8', '', '<p>No links</p>') },
]

const bytes = (s: string, latin1?: boolean) => Buffer.from(s, latin1 ? 'latin1' : 'utf8')

/** The part's header fields other than Content-Type and Content-Transfer-Encoding, as written. */
function otherFields(part: string): string[] {
  const split = part.search(/\r?\n\r?\n/)
  return headerFields(part.slice(0, split + 2).replace(/\r?\n/g, '\r\n'))
    .filter((f) => f.name !== 'content-type' && f.name !== 'content-transfer-encoding')
    .map((f) => f.raw)
}

/** The parameters of the part's Content-Type other than charset, as written (folding included). */
function otherParams(part: string): string[] {
  const field = headerFields(part.slice(0, part.search(/\r?\n\r?\n/) + 2).replace(/\r?\n/g, '\r\n')).find((f) => f.name === 'content-type')!
  return field.raw
    .split(';')
    .slice(1)
    .map((p) => p.trim())
    .filter((p) => p && !/^charset/i.test(p))
}

interface Verdict {
  around: boolean
  fields: boolean
  params: boolean
  tracked: boolean
}

async function judgeTracked(t: Tracked, out: Buffer): Promise<Verdict> {
  const text = out.toString(t.latin1 ? 'latin1' : 'latin1')
  const before = bytes(t.before, t.latin1).toString('latin1')
  const after = bytes(t.after, t.latin1).toString('latin1')
  const around = text.startsWith(before) && text.endsWith(after)
  const part = around ? text.slice(before.length, text.length - after.length) : text
  const inPart = bytes(t.part, t.latin1).toString('latin1')
  const fields = around && otherFields(part).join('\n') === otherFields(inPart).join('\n')
  const params = around && otherParams(inPart).every((p) => part.includes(p))
  const html = (await simpleParser(out)).html || ''
  const tracked = html.includes('https://t.test/c/') && html.includes('https://t.test/o/px')
  return { around, fields, params, tracked }
}

// ---------------------------------------------------------------------------------------
// Speed.
// ---------------------------------------------------------------------------------------

/** A small newsletter-like message: text and QP HTML (30 links) in multipart/alternative, about 6 KB. */
function smallMessage(): Buffer {
  const para = '<p>Lorem ipsum dolor sit amet, <a href="https://shop.example/p/1">consectetur</a> adipiscing elit, sed do eiusmod.</p>\n'
  const html = `<html><body>${para.repeat(30)}</body></html>`
  const qp = (s: string) =>
    s
      .replace(/=/g, '=3D')
      .match(/.{1,75}/g)!
      .join('=\r\n')
  return bytes(
    crlf(
      HEAD,
      'Content-Type: multipart/alternative; boundary="alt"',
      '',
      '--alt',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Lorem ipsum '.repeat(100),
      '--alt',
      'Content-Type: text/html; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      qp(html),
      '--alt--',
      '',
    ),
  )
}

/** The same beside a base64 PDF attachment (about 180 KB encoded) that both must copy through. */
function largeMessage(): Buffer {
  const small = smallMessage().toString('latin1')
  const body = small.slice(small.indexOf('\r\n\r\n') + 4)
  const pdf = Buffer.alloc(135_000, 7)
    .toString('base64')
    .match(/.{1,76}/g)!
  return bytes(
    crlf(
      HEAD,
      'Content-Type: multipart/mixed; boundary="mix"',
      '',
      '--mix',
      'Content-Type: multipart/alternative; boundary="alt"',
      '',
      body,
      '--mix',
      'Content-Type: application/pdf; name="invoice.pdf"',
      'Content-Disposition: attachment; filename="invoice.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      ...pdf,
      '--mix--',
      '',
    ),
  )
}

/**
 * CPU time per message, in µs: this process's user + system time, not wall time, so that
 * other work on a shared machine (a process that takes the core away) counts far less.
 * Both run on this thread only (mailsplit's streams included), so CPU time is their cost.
 */
async function timePerMessage(fn: (raw: Buffer) => Buffer | Promise<Buffer>, raw: Buffer, n: number): Promise<number> {
  const t0 = process.cpuUsage()
  for (let i = 0; i < n; i++) await fn(raw)
  const used = process.cpuUsage(t0)
  return (used.user + used.system) / n
}

export async function run(argv: string[], command: string): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { rounds: { type: 'string', default: '21' }, messages: { type: 'string', default: '200' }, 'dry-run': { type: 'boolean', default: false } },
    allowPositionals: true,
  })
  const rounds = Number(values.rounds)
  const n = Number(values.messages)

  // Exactness.
  const exactRows: string[][] = []
  const yes = (b: boolean) => (b ? 'yes' : '**no**')
  let rawMimeExact = 0
  let mailsplitExact = 0
  for (const t of TRACKED) {
    const raw = bytes(t.before + t.part + t.after, t.latin1)
    const a = await judgeTracked(t, rewriteRawHtml(raw, tracking))
    const b = await judgeTracked(t, await rewriteWithMailsplit(raw, tracking))
    const cell = (v: Verdict) => `${yes(v.around && v.fields)} / ${yes(v.params)} / ${yes(v.tracked)}`
    if (a.around && a.fields && a.params) rawMimeExact++
    if (b.around && b.fields && b.params) mailsplitExact++
    exactRows.push([t.name, cell(a), cell(b), yes((await roundTrip(raw)).equals(raw))])
  }
  for (const u of UNTOUCHED) {
    const raw = bytes(u.raw, u.latin1)
    const asked = u.name.includes('clicks only') ? { clickUrl: tracking.clickUrl } : tracking
    const a = rewriteRawHtml(raw, asked).equals(raw)
    const b = (await rewriteWithMailsplit(raw, asked)).equals(raw)
    if (a) rawMimeExact++
    if (b) mailsplitExact++
    exactRows.push([`left whole: ${u.name}`, yes(a), yes(b), yes((await roundTrip(raw)).equals(raw))])
  }
  const cases = TRACKED.length + UNTOUCHED.length
  const exactHead = ['message', 'raw-mime.ts', 'mailsplit', 'mailsplit split+join, no change: identical']
  process.stdout.write(`\n${textTable(exactHead, exactRows)}\n\nexact: raw-mime.ts ${rawMimeExact}/${cases}, mailsplit ${mailsplitExact}/${cases}\n`)

  // Speed: alternate the two in each round, the order swapped every round.
  const speedRows: string[][] = []
  const ratios: Record<string, number[]> = {}
  for (const [label, raw] of [
    ['multipart/alternative, QP HTML with 30 links', smallMessage()],
    ['the same + a base64 PDF attachment', largeMessage()],
  ] as const) {
    const ours: number[] = []
    const theirs: number[] = []
    await timePerMessage((m) => rewriteWithMailsplit(m, tracking), raw, 20)
    await timePerMessage((m) => rewriteRawHtml(m, tracking), raw, 20)
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) {
        ours.push(await timePerMessage((m) => rewriteRawHtml(m, tracking), raw, n))
        theirs.push(await timePerMessage((m) => rewriteWithMailsplit(m, tracking), raw, n))
      } else {
        theirs.push(await timePerMessage((m) => rewriteWithMailsplit(m, tracking), raw, n))
        ours.push(await timePerMessage((m) => rewriteRawHtml(m, tracking), raw, n))
      }
    }
    const perRound = ours.map((o, i) => theirs[i]! / o)
    ratios[label] = perRound
    speedRows.push([
      `${label} (${(raw.length / 1024).toFixed(1)} KB)`,
      `${median(perRound).toFixed(2)}x`,
      `${Math.min(...perRound).toFixed(2)}-${Math.max(...perRound).toFixed(2)}x`,
    ])
  }
  const speedHead = ['message', 'mailsplit CPU time / raw-mime.ts CPU time (median of rounds)', 'range over rounds']
  process.stdout.write(`\n${textTable(speedHead, speedRows)}\n`)

  const machine = machineInfo()
  if (!values['dry-run'])
    writeDocSection(
      'raw-mime',
      `## Tracking whole messages: raw-mime.ts against mailsplit

\`${command}\` (${rounds} rounds of ${n} messages per implementation, alternating, the order swapped each round; ${machine.nproc} cores, ${machine.cpuModel}, load ${machine.loadAverage}, Bun ${machine.bun}). The machine was shared while this ran: only the ratios mean something. See decision 37.

Exactness, per message: "around / params / tracked" = the bytes before and after the HTML part and its other header fields come out as written / the other Content-Type parameters are kept as written / a reader (mailparser) sees the tracked link and pixel. "left whole" rows: the message must come out byte for byte.

${markdownTable(exactHead, exactRows)}

Exact on ${rawMimeExact}/${cases} messages (raw-mime.ts) and ${mailsplitExact}/${cases} (mailsplit).

Speed: CPU time of this process per message rewritten (the rewrite of the HTML itself included in both), as a ratio per round:

${markdownTable(speedHead, speedRows)}
`,
    )
  return 0
}

if (import.meta.main) process.exit(await run(process.argv.slice(2), 'bun bench/raw-mime.ts'))
