import { afterAll, beforeAll, expect } from 'bun:test'
import { createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import { startDnsServer } from './dns-server'
import { startSmtpSink } from './smtp-sink'
import { tempDir } from './temp-dirs'

/**
 * The real server as a child process (`bun src/main.ts`), for the crash tests: they SIGKILL
 * it and start it again on the same data directory. Only PATH is passed on, so no
 * MAILROOM_* variable of the caller leaks in.
 */
const MAIN = join(import.meta.dir, '../../src/main.ts')
const env = () => ({ PATH: process.env.PATH ?? '' })

/** Runs a one-shot command (e.g. `keys create`) and returns its stdout; fails the test on a non-zero exit. */
export async function runMailroom(args: string[], flags: string[]): Promise<string> {
  const proc = Bun.spawn(['bun', MAIN, ...args, ...flags], { stdout: 'pipe', stderr: 'pipe', env: env() })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  expect(code, err).toBe(0)
  return out
}

/** Creates an Administrator key with the CLI and returns its value (the last line printed); migrates first, as keys create needs a database. */
export async function createAdminKey(flags: string[], name: string): Promise<string> {
  await runMailroom(['migrate'], flags)
  return (await runMailroom(['keys', 'create', '--role', 'Administrator', '--name', name], flags)).trim().split('\n').at(-1)!
}

/**
 * Starts `mailroom serve` on an HTTP port chosen by the kernel and resolves once its first
 * lines name the HTTP URL (and the SMTP submission port, when `smtp` is set); `env` adds
 * variables to its environment.
 */
export async function startMailroom(flags: string[], opts: { smtp?: boolean; env?: Record<string, string> } = {}) {
  const proc = Bun.spawn(['bun', MAIN, 'serve', '--http-listen', '127.0.0.1:0', ...flags], { stdout: 'pipe', stderr: 'pipe', env: { ...env(), ...opts.env } })
  const reader = proc.stdout.getReader()
  let text = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`server exited before listening: ${text} ${await new Response(proc.stderr).text()}`)
    text += new TextDecoder().decode(value)
    const http = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text)
    const smtp = /SMTP submission listening on 127\.0\.0\.1:(\d+) \(STARTTLS\)/.exec(text)
    if (http && (smtp || !opts.smtp)) {
      // Keep reading both pipes so the child never blocks on a full one: its log goes to
      // stderr with blocking writes, and a pipe holds 64 KiB.
      const errors = proc.stderr.getReader()
      for (const pipe of [reader, errors])
        void (async () => {
          while (!(await pipe.read()).done);
        })().catch(() => {})
      return { proc, base: http[1]!, smtpPort: smtp ? Number(smtp[1]) : null }
    }
  }
}

/** Polls `check` until it holds; throws naming `what` after `deadlineMs` (a failure bound, not a timing assertion). */
export async function until(what: string, check: () => boolean, deadlineMs = 20_000): Promise<void> {
  const end = Date.now() + deadlineMs
  while (!check()) {
    if (Date.now() > end) throw new Error(`gave up waiting for: ${what}`)
    await Bun.sleep(25)
  }
}

/**
 * The outside world of a crash test: example.net's MX first points at a TCP server on
 * `stallHost` that accepts and never says a word, so deliveries hang in `sending` until the
 * process is killed; `release()` then points the MX at a recording sink on the same port.
 * `flags(dataDir)` are the server flags that wire the two together.
 */
export async function startStalledMx(stallHost: string) {
  const sink = await startSmtpSink({ host: '127.0.0.1' })
  const held: Socket[] = []
  const silent = createServer((socket) => held.push(socket))
  await new Promise<void>((resolve, reject) => silent.once('error', reject).listen(sink.port, stallHost, resolve))
  const zone = await startDnsServer({
    zones: { 'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] }, 'mx.example.net': { A: [stallHost] } },
  })
  return {
    sink,
    release: () => zone.setZone('mx.example.net', { A: ['127.0.0.1'] }),
    flags: (dataDir: string) => [
      '--data-dir',
      dataDir,
      '--mx-port',
      String(sink.port),
      '--dns-servers',
      zone.server,
      '--allow-unverified-domains',
      'true',
      '--hostname',
      'mailroom.test',
      '--access-log',
      'false',
      // A free port for the SMTP submission listener: never the default, which another server may hold.
      '--smtp-listen',
      '127.0.0.1:0',
    ],
    async close(): Promise<void> {
      for (const s of held) s.destroy()
      silent.close()
      await sink.close()
      await zone.close()
    },
  }
}

/**
 * A crash test file's set-up: a data directory of its own, and a stalled MX (startStalledMx)
 * started before the file's tests and closed after them. `world()` is that MX once started;
 * `flags()` are the server flags for both.
 */
export function stalledMxSuite(name: string, stallHost: string) {
  const dataDir = tempDir(`mailroom-${name}-`)
  let world: Awaited<ReturnType<typeof startStalledMx>>
  beforeAll(async () => {
    world = await startStalledMx(stallHost)
  })
  afterAll(() => world.close())
  return { dataDir, world: () => world, flags: () => world.flags(dataDir) }
}
