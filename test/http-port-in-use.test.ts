/**
 * A second server on an HTTP port that is in use stops with one line naming the address,
 * instead of sharing the port (Elysia turns SO_REUSEPORT on by default, under which the
 * kernel would split connections between the two processes).
 */
import { afterEach, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startMailroom } from './support/server-process'
import { tempDir } from './support/temp-dirs'

const MAIN = join(import.meta.dir, '../src/main.ts')
const running: Array<{ kill(): void; exited: Promise<number> }> = []
afterEach(async () => {
  for (const p of running.splice(0)) (p.kill(), await p.exited)
})

test('serve on an HTTP address already in use exits 1 naming it, and the first server keeps the port', async () => {
  const first = await startMailroom(['--data-dir', tempDir('mailroom-port-a-'), '--smtp-listen', 'off'])
  running.push(first.proc)
  const address = first.base.replace('http://', '')
  const second = Bun.spawn(['bun', MAIN, 'serve', '--http-listen', address, '--smtp-listen', 'off', '--data-dir', tempDir('mailroom-port-b-')], {
    stdout: 'pipe',
    stderr: 'pipe',
    env: { PATH: process.env.PATH ?? '' },
  })
  running.push(second)
  const [code, err] = await Promise.all([second.exited, new Response(second.stderr).text()])
  expect(code).toBe(1)
  expect(err).toContain(`cannot listen for HTTP on ${address}`)
  expect((await fetch(`${first.base}/health`)).status).toBe(200)
}, 30_000) // two servers start from source: 4-5 s on a loaded CI machine, past the default 5 s
