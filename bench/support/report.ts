import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, release, totalmem } from 'node:os'
import { join } from 'node:path'
import { ROOT } from './servers'

/** docs/benchmarks.md, where every benchmark keeps its latest figures. */
export const BENCHMARKS_DOC = join(ROOT, 'docs', 'benchmarks.md')

const DOC_HEADER = `# Benchmarks

Figures measured by the scripts under \`bench/\`. \`npm run bench\` runs them all;
\`npm run bench -- NAME\` runs the named ones (\`bun bench/NAME.ts\` runs one directly).
Each script rewrites only its own section, between its \`<!-- bench:NAME:begin/end -->\`
markers; text outside the markers is kept. Figures from a shared, noisy 2-core VM move by
10-30 % between runs: compare ratios measured in the same run, not absolute rates across runs.
`

/** The commit measured, and whether src/ or migrations/ had uncommitted changes (read-only git). */
export function codeRevision(): string {
  const git = (...args: string[]) => Bun.spawnSync(['git', ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'ignore' })
  const head = git('rev-parse', '--short', 'HEAD')
  if (head.exitCode !== 0) return 'unknown (not a git checkout)'
  const dirty = git('--no-optional-locks', 'status', '--porcelain', '--', 'src', 'migrations').stdout.toString().trim()
  return `commit ${head.stdout.toString().trim()}${dirty ? ', with uncommitted changes in src/ or migrations/' : ''}`
}

/** Replaces (or appends) the section between `<!-- bench:NAME:begin -->` and `<!-- bench:NAME:end -->`. */
export function writeDocSection(name: string, markdown: string, file = BENCHMARKS_DOC): void {
  const begin = `<!-- bench:${name}:begin -->`
  const end = `<!-- bench:${name}:end -->`
  const block = `${begin}\n${markdown.trim()}\n${end}`
  const current = existsSync(file) ? readFileSync(file, 'utf8') : DOC_HEADER
  const from = current.indexOf(begin)
  const to = current.indexOf(end)
  const next = from !== -1 && to > from ? current.slice(0, from) + block + current.slice(to + end.length) : `${current.trimEnd()}\n\n${block}\n`
  writeFileSync(file, next)
}

export interface MachineInfo {
  nproc: number
  cpuModel: string
  memoryGiB: number
  kernel: string
  bun: string
  loadAverage: string
}

/** What the figures were measured on. */
export function machineInfo(): MachineInfo {
  let cpuModel = cpus()[0]?.model ?? 'unknown'
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))
    if (m) cpuModel = m[1]!.trim()
  } catch {
    // Not Linux: keep what os.cpus() says.
  }
  return {
    nproc: navigator.hardwareConcurrency,
    cpuModel,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: `${process.platform} ${release()}`,
    bun: Bun.version,
    loadAverage: loadavg()
      .map((n) => n.toFixed(2))
      .join(' / '),
  }
}

/** A plain-text table with right-aligned number columns, for the terminal. */
export function textTable(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const fmt = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')
  return [fmt(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(fmt)].join('\n')
}

/** A Markdown table; every column but the first is right-aligned. */
export function markdownTable(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`
  return [line(head), line(head.map((_, i) => (i === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n')
}

/** The middle value (mean of the two middle ones for an even count). */
export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** 12345.6 -> "12,346" */
export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US')
}

/** Milliseconds with two decimals below 10, one above. */
export function fmtMs(n: number): string {
  return n < 10 ? n.toFixed(2) : n.toFixed(1)
}
