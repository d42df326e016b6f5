import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * The load generator: wrk (C, multi-threaded, one epoll loop per thread), so the client
 * costs far less CPU per request than any JavaScript generator would on the same 2 cores.
 */

export const WRK_INSTALL_HINT = [
  'wrk, the HTTP load generator this benchmark uses, is not installed (not found on PATH).',
  'Install it, then run the benchmark again:',
  '  Debian/Ubuntu:  sudo apt-get update && sudo apt-get install -y wrk',
  '  Fedora/RHEL:    sudo dnf install -y wrk',
  '  Alpine:         sudo apk add wrk',
  '  macOS:          brew install wrk',
].join('\n')

/** The wrk binary on PATH, or null. */
export function findWrk(): string | null {
  return Bun.which('wrk')
}

/** wrk's version line, e.g. "wrk debian/4.1.0-3+b2 [epoll]". */
export function wrkVersion(wrk: string): string {
  // `wrk --version` prints the version and the usage text, and exits with status 1.
  const out = Bun.spawnSync([wrk, '--version'], { stdout: 'pipe', stderr: 'pipe' })
  const text = out.stdout.toString() + out.stderr.toString()
  return (text.split('\n')[0] ?? '').replace(/\s+Copyright.*$/, '').trim() || 'wrk (unknown version)'
}

export interface WrkSettings {
  threads: number
  connections: number
  durationS: number
  /** A request without an answer after this long counts as a timeout error. */
  timeoutS: number
}

export interface WrkResult {
  requests: number
  durationUs: number
  bytes: number
  rps: number
  errors: { connect: number; read: number; write: number; status: number; timeout: number }
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number }
}

const REPORT_SCRIPT = join(import.meta.dir, 'wrk-report.lua')

/**
 * A wrk script that sends every request as `method` with `body` (the same bytes each time)
 * and reports like wrk-report.lua; returns its path (a file in a fresh temporary directory).
 */
export function requestScript(method: string, body: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'mailroom-wrk-')), 'request.lua')
  // A Lua long string with a level no body contains, so nothing needs escaping.
  let level = '='
  while (body.includes(`]${level}]`)) level += '='
  writeFileSync(file, `wrk.method = "${method}"\nwrk.body = [${level}[${body}]${level}]\n${readFileSync(REPORT_SCRIPT, 'utf8')}`)
  return file
}

/**
 * A wrk script whose `request()` hook (Lua source, `lua`) builds each request, reporting like
 * wrk-report.lua; for bodies that must differ per request. Returns its path.
 */
export function dynamicRequestScript(lua: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'mailroom-wrk-')), 'request.lua')
  writeFileSync(file, `${lua}\n${readFileSync(REPORT_SCRIPT, 'utf8')}`)
  return file
}

/** Runs wrk once against `url` and returns its report (parsed from the line wrk-report.lua prints); `script` replaces that script (requestScript). */
export async function runWrk(
  wrk: string,
  url: string,
  settings: WrkSettings,
  headers: Record<string, string> = {},
  script = REPORT_SCRIPT,
): Promise<WrkResult> {
  const args = [
    wrk,
    `--threads=${settings.threads}`,
    `--connections=${settings.connections}`,
    `--duration=${settings.durationS}s`,
    `--timeout=${settings.timeoutS}s`,
    `--script=${script}`,
    ...Object.entries(headers).flatMap(([k, v]) => ['--header', `${k}: ${v}`]),
    url,
  ]
  const proc = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  const line = stdout.split('\n').find((l) => l.startsWith('WRK_REPORT '))
  if (code !== 0 || !line) throw new Error(`wrk failed (exit ${code}) against ${url}:\n${stdout}${stderr}`)
  const r = JSON.parse(line.slice('WRK_REPORT '.length)) as {
    requests: number
    duration_us: number
    bytes: number
    errors: WrkResult['errors']
    latency_us: { mean: number; p50: number; p90: number; p99: number; max: number }
  }
  const ms = (us: number) => us / 1000
  return {
    requests: r.requests,
    durationUs: r.duration_us,
    bytes: r.bytes,
    rps: r.requests / (r.duration_us / 1e6),
    errors: r.errors,
    latencyMs: { mean: ms(r.latency_us.mean), p50: ms(r.latency_us.p50), p90: ms(r.latency_us.p90), p99: ms(r.latency_us.p99), max: ms(r.latency_us.max) },
  }
}
