/**
 * An idle keep-alive connection stays open past the framework's default idle timeout (30-34 s),
 * so a client that reuses a pooled connection later does not race the server's close
 * (cli.ts, HTTP_IDLE_TIMEOUT_S). Against the real server over a raw socket: the second
 * request on the same connection must be answered.
 */
import { afterAll, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { startMailroom } from './support/server-process'
import { tempDir } from './support/temp-dirs'

let server: Awaited<ReturnType<typeof startMailroom>> | null = null
afterAll(async () => {
  server?.proc.kill()
  await server?.proc.exited
})

/** Beyond the longest idle time Elysia's default (30 s, checked every 4 s) lets a connection live. */
const IDLE_MS = 36_000

test('a keep-alive connection left idle for 36 s still carries the next request', async () => {
  server = await startMailroom(['--data-dir', tempDir('mailroom-keepalive-'), '--smtp-listen', 'off', '--access-log', 'false'])
  const { hostname, port } = new URL(server.base)
  const socket = connect(Number(port), hostname)
  let received = ''
  let closed = false
  socket.on('data', (chunk) => (received += chunk.toString('latin1')))
  socket.on('close', () => (closed = true))
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  const answers = () => received.match(/HTTP\/1\.1 200 /g)?.length ?? 0
  const ask = async (n: number) => {
    socket.write(`GET /health HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`)
    for (let waited = 0; answers() < n && !closed && waited < 5_000; waited += 20) await Bun.sleep(20)
  }
  await ask(1)
  expect(answers()).toBe(1)
  await Bun.sleep(IDLE_MS)
  expect(closed).toBe(false)
  await ask(2)
  expect(answers()).toBe(2)
  socket.destroy()
}, 60_000)
