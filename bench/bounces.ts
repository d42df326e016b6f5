/**
 * Reading real bounces (issue 17), on a corpus we did not write: the 116 bounce messages of
 * GNU Mailman's bounce detector as Debian packages it (python3-flufl.bounce, LGPL-3), read in
 * place from the installed package and never copied into this repository. Their labels are the
 * package's own test table (`DATA` in flufl/bounce/testing/helpers.py: detector, file, the
 * addresses that failed, and True for a temporary failure or warning), parsed here from the
 * Python source text (no Python runs).
 *
 * Scored per labelled message with classifyInbound, as the inbound listener would receive it
 * (envelope sender from Return-Path, envelope recipients from To):
 * - read: every expected address is among the report's recipients;
 * - permanent addresses found failed, and how many of them are suppressed (informational:
 *   the labels say "failed permanently", not why, so a full mailbox or a policy block is
 *   rightly not suppressed);
 * - warnings (temporary) neither failed nor suppressed.
 * Not a timing benchmark: it runs in a second on one core.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { classifyInbound, type DsnRecipient } from '../src/smtp/reports'
import { markdownTable, textTable, writeDocSection } from './support/report'

export const FLUFL_DIR = '/usr/lib/python3/dist-packages/flufl/bounce'

export const FLUFL_INSTALL_HINT = `python3-flufl.bounce is not installed, so there is no corpus to read. To include it (Debian):
  apt-get install -y python3-flufl.bounce
Its test messages are read in place from ${FLUFL_DIR}/tests/data (LGPL-3; never copied into this repository).`

export interface FluflLabel {
  detector: string
  file: string
  addresses: string[]
  temporary: boolean
}

/**
 * The entries of helpers.py's DATA tuple: `('detector', 'file.txt', [b'addr', ...])`, with an
 * optional fourth element True for a temporary failure. Comments and line breaks inside an
 * entry are allowed; the addresses are lower-cased (we compare lower-cased).
 */
export function parseFluflData(source: string): FluflLabel[] {
  const start = source.search(/^DATA\s*=\s*\(/m)
  if (start === -1) return []
  const body = source.slice(start).replace(/#[^\n]*/g, '')
  const entry = /\(\s*'([\w.-]+)'\s*,\s*'([\w.-]+)'\s*,\s*\[([^\]]*)\]\s*(?:,\s*(True|False)\s*)?\)/g
  const out: FluflLabel[] = []
  for (const m of body.matchAll(entry)) {
    const addresses = [...m[3]!.matchAll(/b?'([^']*)'/g)].map((a) => a[1]!.toLowerCase())
    out.push({ detector: m[1]!, file: m[2]!, addresses, temporary: m[4] === 'True' })
  }
  return out
}

interface Scored {
  label: FluflLabel
  read: boolean
  /** Per expected address: what the report says about it (undefined when absent). */
  found: Array<{ address: string; entry: DsnRecipient | undefined }>
  got: string
}

function envelopeOf(raw: Buffer): { mailFrom: string; rcptTo: string[] } {
  const head =
    raw
      .subarray(0, Math.min(raw.length, 64 * 1024))
      .toString('latin1')
      .split(/\r?\n\r?\n/)[0] ?? ''
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ')
  const header = (name: string) => new RegExp(`^${name}:[ \\t]*(.*)$`, 'im').exec(unfolded)?.[1] ?? ''
  const addresses = (v: string) => [...v.matchAll(/[^\s<>,;"()]+@[^\s<>,;"()]+/g)].map((m) => m[0])
  return { mailFrom: addresses(header('return-path'))[0] ?? '', rcptTo: addresses(header('to')) }
}

async function score(labels: FluflLabel[], dataDir: string): Promise<Scored[]> {
  const out: Scored[] = []
  for (const label of labels) {
    const raw = readFileSync(join(dataDir, label.file))
    const report = await classifyInbound(raw, envelopeOf(raw))
    const recipients = report.kind === 'dsn' ? report.recipients : []
    const find = (a: string) => recipients.find((r) => [r.recipient, r.finalRecipient, r.originalRecipient].includes(a))
    const found = label.addresses.map((address) => ({ address, entry: find(address) }))
    const got =
      report.kind === 'dsn'
        ? recipients.map((r) => `${r.recipient} ${r.action} ${r.status}${r.suppress ? ' suppress' : ''}`).join('; ') || 'no recipients'
        : report.kind === 'unknown'
          ? `unknown: ${report.reason}`
          : `read as ${report.kind}`
    out.push({ label, read: found.every((f) => f.entry), found, got })
  }
  return out
}

const pct = (n: number, d: number) => (d === 0 ? '-' : `${((100 * n) / d).toFixed(1)} %`)

export async function run(argv: string[], command: string): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'dry-run': { type: 'boolean', default: false } }, allowPositionals: true })
  const dataDir = join(FLUFL_DIR, 'tests', 'data')
  const helpers = join(FLUFL_DIR, 'testing', 'helpers.py')
  if (!existsSync(dataDir) || !existsSync(helpers)) {
    process.stdout.write(`${FLUFL_INSTALL_HINT}\n`)
    return 0
  }
  const all = parseFluflData(readFileSync(helpers, 'utf8')).filter((l) => existsSync(join(dataDir, l.file)))
  // A file labelled twice (groupwise_02: one detector finds nothing, another the address) counts once, with its addresses.
  const labelled = all.filter((l) => l.addresses.length > 0)
  const empty = all.filter((l) => l.addresses.length === 0 && !labelled.some((o) => o.file === l.file))
  const scored = await score(labelled, dataDir)
  const emptyScored = await score(empty, dataDir)

  const permanent = scored.filter((s) => !s.label.temporary).flatMap((s) => s.found)
  const warnings = scored.filter((s) => s.label.temporary).flatMap((s) => s.found)
  const failed = permanent.filter((f) => f.entry?.action === 'failed')
  const suppressed = permanent.filter((f) => f.entry?.suppress)
  const warnFailed = warnings.filter((f) => f.entry && (f.entry.action === 'failed' || f.entry.suppress))
  const emptySuppressing = emptyScored.filter((s) => s.got.includes(' suppress'))
  const read = scored.filter((s) => s.read)
  const files = new Set(readdirSync(dataDir).filter((f) => f.endsWith('.txt'))).size

  const head = ['measure', 'count', 'share']
  const rows = [
    ['labelled bounces read (every expected address found)', `${read.length} / ${scored.length}`, pct(read.length, scored.length)],
    ['permanent addresses found as failed', `${failed.length} / ${permanent.length}`, pct(failed.length, permanent.length)],
    ['permanent addresses suppressed (dead-address replies only)', `${suppressed.length} / ${permanent.length}`, pct(suppressed.length, permanent.length)],
    [
      'warnings not failed (temporary: never failed or suppressed)',
      `${warnings.length - warnFailed.length} / ${warnings.length}`,
      pct(warnings.length - warnFailed.length, warnings.length),
    ],
    [
      'messages labelled "no address" that suppress nothing',
      `${empty.length - emptySuppressing.length} / ${empty.length}`,
      pct(empty.length - emptySuppressing.length, empty.length),
    ],
  ]
  const misses = [
    ...scored
      .filter((s) => !s.read)
      .map((s) => `- ${s.label.file} (${s.label.detector}${s.label.temporary ? ', temporary' : ''}): want ${s.label.addresses.join(', ')}; got ${s.got}`),
    ...scored
      .filter((s) => s.label.temporary && s.found.some((f) => f.entry && (f.entry.action === 'failed' || f.entry.suppress)))
      .map((s) => `- ${s.label.file} (warning failed): ${s.got}`),
    ...emptySuppressing.map((s) => `- ${s.label.file} (labelled "no address"): ${s.got}`),
  ]
  const notSuppressed = scored
    .filter((s) => !s.label.temporary && s.read && s.found.some((f) => !f.entry!.suppress))
    .map((s) => `${s.label.file} ${s.found.map((f) => `${f.entry!.status} ${f.entry!.reason}: ${(f.entry!.diagnostic ?? '').slice(0, 110)}`).join('; ')}`)
  const suppressedLines = scored.flatMap((s) =>
    s.found
      .filter((f) => f.entry?.suppress)
      .map((f) => `${s.label.file} ${f.address} ${f.entry!.status} ${f.entry!.rule}: ${(f.entry!.diagnostic ?? '').slice(0, 110)}`),
  )
  process.stdout.write(
    `\n${textTable(head, rows)}\n\nmisses:\n${misses.join('\n') || '(none)'}\n\nsuppressed:\n${suppressedLines.join('\n')}\n\nread, permanent, not suppressed:\n${notSuppressed.join('\n')}\n`,
  )
  if (!values['dry-run'])
    writeDocSection(
      'bounces',
      `## Reading real bounces: flufl.bounce's test messages

\`${command}\`: the bounce messages of GNU Mailman's detector as Debian ships them (\`python3-flufl.bounce\`, ${files} files read in place, never copied here), labelled by the package's own test table (helpers.py \`DATA\`: the addresses that failed, and whether the failure is temporary). ${scored.length} messages name at least one address; ${empty.length} are labelled "no address". Our own corpus (test/fixtures/reports/corpus) is written from facts about each layout and scored by test/smtp/reports/corpus.test.ts; this one is held out (decisions 43 and 62).

${markdownTable(head, rows)}

"Suppressed" is informational: flufl's labels say an address failed, not why; a full mailbox, a policy block or a relay refusal rightly does not suppress.

Misses (${misses.length}):

${misses.join('\n') || '(none)'}
`,
    )
  return 0
}

if (import.meta.main) process.exit(await run(process.argv.slice(2), 'bun bench/bounces.ts'))
