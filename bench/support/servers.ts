import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

/** The repository root (bench/support/..). */
export const ROOT = resolve(import.meta.dir, '..', '..')

/** The Bun that runs this script; servers run on the same one. */
const BUN = process.execPath

export interface ServerProcess {
  name: string
  pid: number
  /** Base URL, e.g. http://127.0.0.1:40123 */
  url: string
  /** SIGTERM, then SIGKILL if it has not exited after 20 s (Mailroom waits up to 10 s for deliveries on the wire). */
  stop(): Promise<void>
}

const running = new Set<ServerProcess>()
let handlersInstalled = false

/** Stops every server this process started (on Ctrl-C too), each by its own pid. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((s) => s.stop()))
}

function installHandlers(): void {
  if (handlersInstalled) return
  handlersInstalled = true
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void stopAll().finally(() => process.exit(130))
    })
  }
}

/**
 * Starts a server as a child process and waits for the line on its stdout that carries its
 * URL (servers listen on port 0, so the port is only known from that line).
 */
export async function startServer(
  name: string,
  args: string[],
  opts: { env?: Record<string, string | undefined>; stderrFile?: string; pattern: RegExp; timeoutMs?: number },
): Promise<ServerProcess> {
  installHandlers()
  const [command, env] = args[0] === 'src/main.ts' ? mailroomCommand(args.slice(1), opts.env ?? process.env) : [[BUN, ...args], opts.env ?? process.env]
  const proc = Bun.spawn(command, {
    cwd: ROOT,
    env,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: opts.stderrFile ? Bun.file(opts.stderrFile) : 'ignore',
  })
  let stopped: Promise<void> | null = null
  const server: ServerProcess = {
    name,
    pid: proc.pid,
    url: '',
    stop() {
      stopped ??= (async () => {
        if (proc.exitCode === null && proc.signalCode === null) {
          proc.kill('SIGTERM')
          const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000)
          await proc.exited
          clearTimeout(timer)
        }
        running.delete(server)
      })()
      return stopped
    },
  }
  running.add(server)

  const reader = proc.stdout.getReader()
  const decoder = new TextDecoder()
  let seen = ''
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000)
  try {
    while (true) {
      const m = opts.pattern.exec(seen)
      if (m) {
        server.url = m[1]!
        break
      }
      const remaining = deadline - Date.now()
      if (remaining <= 0) throw new Error(`${name} did not print its address within ${opts.timeoutMs ?? 30_000} ms; stdout so far:\n${seen}`)
      let timer: ReturnType<typeof setTimeout> | undefined
      const chunk = await Promise.race([reader.read(), new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), remaining)))])
      clearTimeout(timer)
      if (chunk === 'timeout') continue
      if (chunk.done)
        throw new Error(
          `${name} exited (code ${await proc.exited}) before listening; stdout:\n${seen}${opts.stderrFile ? `\n(stderr is in ${opts.stderrFile})` : ''}`,
        )
      seen += decoder.decode(chunk.value, { stream: true })
    }
  } catch (e) {
    await server.stop()
    throw e
  }
  // Keep draining stdout so the child can never block on a full pipe.
  void (async () => {
    while (!(await reader.read()).done);
  })().catch(() => {})
  return server
}

/**
 * How a Mailroom process is run: `bun src/main.ts ARGS`, or with BENCH_BINARY=PATH the built
 * executable (`npm run build`'s dist/mailroom, what users run: its bundle is smaller in memory
 * than the source transpiled at start). BENCH_BUN_FLAGS: extra runtime flags for Mailroom
 * processes (e.g. --smol), to compare in one sitting; BENCH_CPU_PROFILE=DIR: each server writes a CPU
 * profile in Markdown to DIR when it stops (how the issue 18 regression was found). An
 * executable takes runtime flags from BUN_OPTIONS.
 */
export function mailroomCommand(args: string[], env: Record<string, string | undefined>): [string[], Record<string, string | undefined>] {
  const flags = (process.env.BENCH_BUN_FLAGS ?? '').split(' ').filter(Boolean)
  if (process.env.BENCH_CPU_PROFILE && args[0] === 'serve') flags.push('--cpu-prof-md', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`)
  const binary = process.env.BENCH_BINARY
  if (!binary) return [[BUN, ...flags, 'src/main.ts', ...args], env]
  return [[resolve(ROOT, binary), ...args], flags.length ? { ...env, BUN_OPTIONS: [env.BUN_OPTIONS ?? '', ...flags].join(' ').trim() } : env]
}

/** The environment for a Mailroom child: ours without any MAILROOM_* setting, plus `settings`. */
export function mailroomEnv(settings: Record<string, string>): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MAILROOM_')) env[k] = v
  return { ...env, ...settings }
}

export interface MailroomInstance extends ServerProcess {
  key: string
  dataDir: string
  /** Where the server's stderr (JSON log lines, the access log among them) goes. */
  logFile: string
  /** Stops the server and deletes its data directory. */
  dispose(): Promise<void>
}

/**
 * Makes the database in `dataDir` (`mailroom migrate`: the other commands never create one)
 * and an Administrator key with `rateLimit` requests per minute; returns the key.
 */
export function createBenchKey(dataDir: string, env: Record<string, string | undefined>, rateLimit: number | 'unlimited'): string {
  const cli = (args: string[]) => {
    const [command, childEnv] = mailroomCommand([...args, '--data-dir', dataDir], env)
    return Bun.spawnSync(command, { cwd: ROOT, env: childEnv, stdout: 'pipe', stderr: 'pipe' })
  }
  const migrated = cli(['migrate'])
  if (migrated.exitCode !== 0) throw new Error(`mailroom migrate failed (exit ${migrated.exitCode}):\n${migrated.stdout}${migrated.stderr}`)
  const created = cli(['keys', 'create', '--role', 'Administrator', '--name', 'bench', '--rate-limit', String(rateLimit)])
  const key = created.stdout.toString().trim().split('\n').at(-1)?.trim() ?? ''
  if (created.exitCode !== 0 || !key.startsWith('mr_'))
    throw new Error(`mailroom keys create failed (exit ${created.exitCode}):\n${created.stdout}${created.stderr}`)
  return key
}

/**
 * A fresh Mailroom: new temporary data directory, one Administrator key with `rateLimit`
 * requests per minute (or none), then `mailroom serve` on 127.0.0.1 port 0 with stderr to a
 * file; `serveArgs` are extra flags for `serve` (e.g. `--access-log false`).
 */
export async function startMailroom(
  name: string,
  opts: { rateLimit: number | 'unlimited'; settings?: Record<string, string>; serveArgs?: string[] },
): Promise<MailroomInstance> {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-bench-'))
  // No submission listener unless a benchmark asks for one: its fixed default port may be taken on a shared machine.
  const env = mailroomEnv({ MAILROOM_LOG_LEVEL: 'info', MAILROOM_SMTP_LISTEN: 'off', ...opts.settings })
  let key: string
  try {
    key = createBenchKey(dataDir, env, opts.rateLimit)
  } catch (e) {
    rmSync(dataDir, { recursive: true, force: true })
    throw e
  }
  const logFile = join(dataDir, 'stderr.log')
  let server: ServerProcess
  try {
    server = await startServer(name, ['src/main.ts', 'serve', '--data-dir', dataDir, '--http-listen', '127.0.0.1:0', ...(opts.serveArgs ?? [])], {
      env,
      stderrFile: logFile,
      pattern: /listening on (http:\/\/\S+)/,
    })
  } catch (e) {
    rmSync(dataDir, { recursive: true, force: true })
    throw e
  }
  return {
    ...server,
    stop: () => server.stop(),
    key,
    dataDir,
    logFile,
    async dispose() {
      await server.stop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** A minimal Elysia hello-world (bench/support/elysia-server.ts), the framework's floor. */
export function startElysia(): Promise<ServerProcess> {
  return startServer('elysia', [join(ROOT, 'bench', 'support', 'elysia-server.ts')], { pattern: /listening on (http:\/\/\S+)/ })
}

/** The bare Bun.serve hello-world (bench/support/bare-server.ts). */
export function startBare(): Promise<ServerProcess> {
  return startServer('bare', [join(ROOT, 'bench', 'support', 'bare-server.ts')], { pattern: /listening on (http:\/\/\S+)/ })
}

/** A port free right now (the kernel's pick), for a server whose port is set by flag. */
export async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as AddressInfo).port
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

/** What the counting sink (bench/support/counting-sink.ts) has taken since its last reset. */
export interface SinkCount {
  messages: number
  recipients: number
  /** Wall-clock ms of the first / last message since the last reset. */
  first_at: number | null
  last_at: number | null
}

export interface CountingSink extends ServerProcess {
  smtpPort: number
  count(): Promise<SinkCount>
  reset(): Promise<void>
}

/** The counting SMTP sink in its own process: an MX that takes every message and counts it. */
export async function startCountingSink(): Promise<CountingSink> {
  // The sink prints "listening on http://HOST:PORT smtp=PORT"; startServer keeps the whole match.
  const s = await startServer('sink', ['bench/support/counting-sink.ts'], { pattern: /listening on (http:\/\/\S+ smtp=\d+)/ })
  const [httpUrl, smtp] = s.url.split(' smtp=') as [string, string]
  return {
    ...s,
    smtpPort: Number(smtp),
    async count() {
      return (await (await fetch(httpUrl)).json()) as SinkCount
    },
    async reset() {
      await (await fetch(httpUrl, { method: 'POST' })).arrayBuffer()
    },
  }
}
