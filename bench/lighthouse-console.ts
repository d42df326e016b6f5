/**
 * Lighthouse's accessibility score for the console's main pages, offline: builds and starts
 * the binary (as the e2e tests do), signs an administrator in, and runs the Lighthouse CLI
 * against Debian's Chromium with the session cookie, desktop and mobile presets.
 * Lighthouse is not a dependency of the project: install it apart and point at it,
 *   npm install --prefix /tmp/lh lighthouse
 *   LIGHTHOUSE_BIN=/tmp/lh/node_modules/.bin/lighthouse bun run bench/lighthouse-console.ts
 * Figures go to docs/benchmarks.md ("Console accessibility").
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createAdmin, startConsole } from '../test/e2e/support/console'

const bin = process.env.LIGHTHOUSE_BIN ?? 'lighthouse'
const chrome = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const PAGES = ['/admin', '/admin/access/api-keys', '/admin/access/roles', '/admin/access/roles/new', '/admin/access/activity', '/admin/settings']
const out = mkdtempSync(join(tmpdir(), 'mailroom-lighthouse-'))

const server = await startConsole()
try {
  await createAdmin(server, 'ops@example.com', 'correct horse battery')
  const r = await fetch(`${server.base}/admin/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: server.base },
    body: JSON.stringify({ email: 'ops@example.com', password: 'correct horse battery' }),
  })
  const cookie = (r.headers.get('set-cookie') ?? '').split(';')[0]
  if (r.status !== 200 || !cookie) throw new Error(`sign-in failed: ${r.status}`)
  console.log('| Page | Desktop | Mobile | Failing audits |\n|---|---|---|---|')
  for (const path of PAGES) {
    const scores: string[] = []
    const failing = new Set<string>()
    for (const preset of ['desktop', 'mobile'] as const) {
      const file = join(out, `${path.replaceAll('/', '_')}-${preset}.json`)
      const proc = Bun.spawn(
        [
          bin,
          `${server.base}${path}`,
          '--only-categories=accessibility',
          '--output=json',
          `--output-path=${file}`,
          '--quiet',
          `--extra-headers=${JSON.stringify({ Cookie: cookie })}`,
          '--chrome-flags=--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage',
          ...(preset === 'desktop' ? ['--preset=desktop'] : []),
        ],
        { env: { ...process.env, CHROME_PATH: chrome }, stdout: 'ignore', stderr: 'pipe' },
      )
      const [err, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
      if (code !== 0) throw new Error(`lighthouse failed on ${path} (${preset}): ${err.slice(-2000)}`)
      const report = await Bun.file(file).json()
      scores.push(String(Math.round(report.categories.accessibility.score * 100)))
      for (const [id, a] of Object.entries(report.audits as Record<string, { score: number | null; scoreDisplayMode: string }>))
        if (a.scoreDisplayMode === 'binary' && a.score === 0) failing.add(id)
    }
    console.log(`| \`${path}\` | ${scores[0]} | ${scores[1]} | ${[...failing].join(', ') || '—'} |`)
  }
} finally {
  await server.stop()
}
