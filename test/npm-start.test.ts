/**
 * Issue 13 items 19-21, from source as a new user runs it: `npm start -- --flags`. The server
 * logs the settings that differ from their defaults, prints the key command as it was
 * started, and stopping npm stops the server.
 */
import { expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { until } from './support/server-process'
import { tempDir } from './support/temp-dirs'

const ROOT = join(import.meta.dir, '..')

test('npm start: flags after --, the settings line, the key hint, and SIGTERM to npm stops the server', async () => {
  const dir = join(tempDir('mailroom-npm-'), 'data')
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MAILROOM_') && !k.startsWith('npm_')))
  const flags = [
    '--data-dir',
    dir,
    '--http-listen',
    '127.0.0.1:0',
    '--smtp-listen',
    '127.0.0.1:0',
    '--allow-unverified-domains',
    'true',
    '--access-log',
    'false',
  ]
  const npm = Bun.spawn(['npm', 'start', '--', ...flags], { cwd: ROOT, env, stdout: 'pipe', stderr: 'pipe' })
  const out = { text: '' }
  const err = { text: '' }
  const pump = async (stream: ReadableStream<Uint8Array>, into: { text: string }) => {
    for await (const chunk of stream) into.text += new TextDecoder().decode(chunk)
  }
  const pumps = Promise.all([pump(npm.stdout, out), pump(npm.stderr, err)])
  try {
    await until('the server to announce itself', () => /No API keys yet/.test(out.text) || npm.exitCode !== null, 60_000)
    const base = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out.text)?.[1]
    expect(base, out.text + err.text).toBeDefined()
    expect((await fetch(`${base}/ready`)).status).toBe(200)
    // The key hint is the command that works from this checkout, for this data directory.
    expect(out.text).toContain(`npx bun src/main.ts keys create --role Administrator --name admin --data-dir ${dir}`)
    // The settings that differ from their defaults, with where they came from. stderr is
    // its own pipe: under load its line can arrive after stdout's announcement.
    await until('the settings line on stderr', () => err.text.includes('"msg":"settings"'))
    const settings = err.text
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .find((l) => l.msg === 'settings')
    expect(settings.changed.allow_unverified_domains).toEqual({ value: true, from: '--allow-unverified-domains' })
    expect(settings.changed.data_dir).toEqual({ value: dir, from: '--data-dir' })
    expect(settings.changed.log_level).toBeUndefined()

    npm.kill('SIGTERM')
    await npm.exited
    await until('the server to stop', () => out.text.includes('Mailroom stopped.'))
    const after = await fetch(`${base}/health`).then(
      () => 'answered',
      () => 'refused',
    )
    expect(after).toBe('refused')
  } finally {
    npm.kill('SIGKILL')
    await pumps.catch(() => {})
  }
}, 90_000)

test('a server whose parent process dies (SIGKILL, nothing forwarded) stops by itself', async () => {
  const dir = join(tempDir('mailroom-orphan-'), 'data')
  const log = join(dir, '..', 'server.log')
  const serve = [process.execPath, 'src/main.ts', 'serve', '--data-dir', dir, '--http-listen', '127.0.0.1:0', '--smtp-listen', 'off', '--access-log', 'false']
  // The shell is the parent: it starts the server in the background and waits; killing it
  // with SIGKILL forwards nothing, as when npm itself is killed.
  const shell = Bun.spawn(['sh', '-c', `${serve.map((a) => `'${a}'`).join(' ')} > '${log}' 2>&1 & echo $!; wait`], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'ignore',
  })
  // The server's pid, so a failing run does not leave it behind.
  const reader = shell.stdout.getReader()
  let first = ''
  while (!first.includes('\n')) {
    const chunk = await reader.read()
    if (chunk.done) break
    first += new TextDecoder().decode(chunk.value)
  }
  const serverPid = Number.parseInt(first, 10)
  const text = () => (existsSync(log) ? readFileSync(log, 'utf8') : '')
  try {
    await until('the server to announce itself', () => /listening on http:\/\/127\.0\.0\.1:\d+/.test(text()), 60_000)
    const base = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text())![1]
    expect((await fetch(`${base}/ready`)).status).toBe(200)
    shell.kill('SIGKILL')
    await shell.exited
    await until('the orphaned server to stop', () => text().includes('Mailroom stopped.'), 30_000)
    const after = await fetch(`${base}/health`).then(
      () => 'answered',
      () => 'refused',
    )
    expect(after).toBe('refused')
  } finally {
    shell.kill('SIGKILL')
    try {
      if (serverPid > 0) process.kill(serverPid, 'SIGKILL')
    } catch {
      // Already gone: the expected outcome.
    }
  }
}, 90_000)
