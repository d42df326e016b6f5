/**
 * The docs page in a real browser: headless Chromium (Debian's package, installed by
 * .ci/run) loads /docs from a live server with no internet access and renders the API
 * reference from the bundled script. Run with `npm run test:e2e`; `npm test` leaves it out
 * because a fresh machine with only Node.js and npm has no browser.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SERVER_BODY_CAP } from '../../src/http/body'
import { testApp } from '../support/app'
import { tempDir } from '../support/temp-dirs'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const t = testApp()
let base = ''

beforeAll(() => {
  t.app.listen({ hostname: '127.0.0.1', port: 0, maxRequestBodySize: SERVER_BODY_CAP })
  base = `http://127.0.0.1:${t.app.server!.port}`
})
afterAll(() => t.app.stop(true))

/** Runs headless Chromium on a URL and returns what it printed (the rendered DOM with --dump-dom). */
async function chromium(args: string[]): Promise<string> {
  const profile = tempDir('mailroom-chromium-')
  const proc = Bun.spawn(
    [
      CHROMIUM,
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
      // Everything not on loopback fails at once, as it would on an offline host.
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      '--virtual-time-budget=15000',
      ...args,
    ],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const timer = setTimeout(() => proc.kill(), 90_000)
  const out = await new Response(proc.stdout).text()
  await proc.exited
  clearTimeout(timer)
  return out
}

test('/docs renders the API reference offline', async () => {
  const dom = await chromium(['--dump-dom', `${base}/docs`])
  // Scalar has rendered the reference from /openapi.json: the first section's operation
  // summaries, and the sidebar with every tag (later sections load as the reader scrolls).
  expect(dom).toContain('Mailroom API')
  for (const text of ['Liveness', 'Readiness: the database takes writes', '>roles<', '>api keys<', '>activity logs<']) expect(dom).toContain(text)
}, 120_000)

test('/docs screenshot shows the reference', async () => {
  const shot = join(tempDir('mailroom-shot-'), 'docs.png')
  await chromium(['--window-size=1280,900', `--screenshot=${shot}`, `${base}/docs`])
  const png = readFileSync(shot)
  expect(png.subarray(1, 4).toString()).toBe('PNG')
  expect(png.byteLength).toBeGreaterThan(20_000) // a blank page is a few kB
  if (process.env.KEEP_SCREENSHOT) Bun.write(process.env.KEEP_SCREENSHOT, png)
}, 120_000)
