/**
 * The console in a real browser: starts Mailroom (the built binary, or src/main.ts) alone in
 * an empty temp directory on free loopback ports, creates an administrator through the CLI
 * (password on stdin), drives Debian's headless Chromium with playwright-core, and saves
 * screenshots under docs/screenshots/. Used by test/e2e/*.e2e.ts (`npm run test:e2e`).
 */
import { Database } from 'bun:sqlite'
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { buildBinary } from '../../../scripts/build'
import { tempDir } from '../../support/temp-dirs'

const ROOT = join(import.meta.dir, '../../..')
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
export const SCREENSHOTS = join(ROOT, 'docs', 'screenshots')
/** How long a start, a build or a page state may take before the test gives up (a failure bound, not a timing assertion). */
const READY_MS = 120_000

export interface ConsoleServer {
  base: string
  dataDir: string
  /** Runs a one-shot CLI command against the same data directory; `stdin` is piped in. */
  cli(args: string[], stdin?: string): Promise<{ code: number; out: string; err: string }>
  output(): string
  /** Waits until the server's standard output matches, and returns the match. */
  waitForOutput(pattern: RegExp): Promise<RegExpExecArray>
  stop(): Promise<void>
}

let built: Promise<string> | null = null
/** Builds the binary once per test process, into a temp path (never dist/). */
export function builtBinary(): Promise<string> {
  built ??= buildBinary(join(tempDir('mailroom-e2e-build-'), 'mailroom')).then((b) => b.outfile)
  return built
}

/** The command that runs Mailroom: the binary, or bun on the source with the repository's bunfig.toml (its Tailwind plugin). */
async function program(from: 'binary' | 'source'): Promise<string[]> {
  if (from === 'binary') return [await builtBinary()]
  return [process.execPath, `--config=${join(ROOT, 'bunfig.toml')}`, join(ROOT, 'src', 'main.ts')]
}

function drain(stream: ReadableStream<Uint8Array>) {
  const state = { text: '' }
  void (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) state.text += decoder.decode(chunk, { stream: true })
  })().catch(() => {})
  return state
}

/**
 * Starts a server from an empty directory: HTTP on a port the kernel picks, SMTP submission
 * off (the default port may be held by another server). `seed` runs on the migrated database
 * before the server opens it.
 */
export async function startConsole(
  opts: { from?: 'binary' | 'source'; seed?: (db: Database, now: number) => void; flags?: string[] } = {},
): Promise<ConsoleServer> {
  const cmd = await program(opts.from ?? 'binary')
  const dir = tempDir('mailroom-e2e-')
  const dataDir = join(dir, 'data')
  const common = ['--data-dir', dataDir, ...(opts.flags ?? [])]
  // Only PATH is passed on: no MAILROOM_* variable of the caller leaks in.
  const env = { PATH: process.env.PATH ?? '', HOME: dir }
  const cli = async (args: string[], stdin?: string) => {
    const proc = Bun.spawn([...cmd, ...args, ...common], {
      cwd: dir,
      env,
      stdin: stdin === undefined ? 'ignore' : new TextEncoder().encode(stdin),
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    return { code, out, err }
  }
  if (opts.seed) {
    const migrated = await cli(['migrate'])
    if (migrated.code !== 0) throw new Error(`migrate failed: ${migrated.err}`)
    const db = new Database(join(dataDir, 'mailroom.db'))
    try {
      opts.seed(db, Date.now())
    } finally {
      db.close()
    }
  }
  const proc = Bun.spawn([...cmd, 'serve', '--http-listen', '127.0.0.1:0', '--smtp-listen', 'off', ...common], {
    cwd: dir,
    env,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const out = drain(proc.stdout)
  const err = drain(proc.stderr)
  const output = () => `--- stdout\n${out.text}\n--- stderr\n${err.text.slice(-4000)}`
  const end = Date.now() + READY_MS
  let base: string | null = null
  while (!base) {
    if (proc.exitCode !== null || Date.now() > end) throw new Error(`the server did not start:\n${output()}`)
    base = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out.text)?.[1] ?? null
    if (!base) await Bun.sleep(50)
  }
  return {
    base,
    dataDir,
    cli,
    output,
    async waitForOutput(pattern) {
      const until = Date.now() + READY_MS
      for (;;) {
        const m = pattern.exec(out.text)
        if (m) return m
        if (proc.exitCode !== null || Date.now() > until) throw new Error(`the server never printed ${pattern}:\n${output()}`)
        await Bun.sleep(50)
      }
    },
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Creates an administrator with `mailroom admin create`, the password on stdin (never argv). */
export async function createAdmin(server: ConsoleServer, email: string, password: string, role?: string): Promise<void> {
  const r = await server.cli(['admin', 'create', '--email', email, ...(role ? ['--role', role] : [])], `${password}\n`)
  if (r.code !== 0) throw new Error(`admin create failed (${r.code}): ${r.err}${r.out}`)
}

/** Creates an API key with `mailroom keys create` and returns it (the last line printed, shown only then). */
export async function createApiKey(server: ConsoleServer, name: string, role = 'Administrator'): Promise<string> {
  const r = await server.cli(['keys', 'create', '--role', role, '--name', name])
  if (r.code !== 0) throw new Error(`keys create failed (${r.code}): ${r.err}${r.out}`)
  return r.out.trim().split('\n').at(-1)!.trim()
}

/** Headless Chromium with no way off the loopback host, as on an offline appliance. */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'],
  })
}

export interface Viewport {
  theme?: 'light' | 'dark'
  width?: number
}

export interface ShotOptions extends Viewport {
  /** The whole page (default), or only the viewport (for an open sheet or dialog, which is fixed to it). */
  fullPage?: boolean
}

/** A page at a width and a colour scheme (the console follows prefers-color-scheme until a choice is saved). */
export async function openPage(browser: Browser, { theme = 'light', width = 1440 }: Viewport = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height: width < 768 ? 812 : 900 }, colorScheme: theme, deviceScaleFactor: width < 768 ? 2 : 1 })
  const page = await context.newPage()
  return { context, page }
}

/** Signs in through the sign-in page and waits for the dashboard. */
export async function signIn(page: Page, base: string, email: string, password: string): Promise<void> {
  await page.goto(`${base}/admin/sign-in`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor()
}

/** A new page signed in as `email`, at a width and theme; `close()` ends its browser context. */
export async function openSignedIn(browser: Browser, base: string, email: string, password: string, view: Viewport = {}) {
  const { context, page } = await openPage(browser, view)
  await signIn(page, base, email, password)
  return { context, page, close: () => context.close() }
}

/** How long `settleAnimations` waits for finite animations (a failure bound, not a timing assertion). */
const SETTLE_MS = 5_000

/**
 * Brings every CSS animation and transition of the page to rest: an infinite one (a spinner,
 * `animate-pulse`) never resolves its `finished` promise, so it is paused at its start frame
 * (the same picture on every run); a finite one is waited for, at most SETTLE_MS, and then
 * finished. So a page with a spinner cannot hang a screenshot or an axe run.
 */
export async function settleAnimations(page: Page, limitMs = SETTLE_MS): Promise<void> {
  await page.evaluate(async (limit) => {
    const animations = document.getAnimations()
    const finite: Animation[] = []
    for (const a of animations) {
      if (a.effect?.getComputedTiming().endTime === Infinity) {
        a.pause()
        a.currentTime = 0
      } else finite.push(a)
    }
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), limit)))
    const done = Promise.all(finite.map((a) => a.finished.catch(() => null)))
    if ((await Promise.race([done, late])) === 'late') {
      for (const a of finite) {
        try {
          a.finish()
        } catch {
          // An animation with no end cannot finish (already paused above); nothing else to do.
        }
      }
    }
    clearTimeout(timer)
  }, limitMs)
}

/**
 * Saves a screenshot as docs/screenshots/<name>-<theme>-<width>.png. The theme is switched
 * through the saved choice (what the theme menu writes) so the page is painted in it.
 */
export async function shot(page: Page, name: string, { theme = 'light', width = 1440, fullPage = true }: ShotOptions = {}): Promise<string> {
  const size = page.viewportSize()
  if (!size || size.width !== width) await page.setViewportSize({ width, height: width < 768 ? 812 : 900 })
  const current = await page.evaluate(() => document.documentElement.classList.contains('dark'))
  if (current !== (theme === 'dark')) {
    await page.evaluate((t) => {
      localStorage.setItem('mailroom.theme', t)
      document.documentElement.classList.toggle('dark', t === 'dark')
    }, theme)
  }
  // No focus ring left by the last click (unless a dialog holds the focus on purpose).
  if (fullPage) await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur?.())
  // Let opening animations (sheets, dialogs) finish and the charts settle before the capture.
  await settleAnimations(page)
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))))
  mkdirSync(SCREENSHOTS, { recursive: true })
  const path = join(SCREENSHOTS, `${name}-${theme}-${width}.png`)
  // Belt and braces: Playwright also finishes finite animations and resets infinite ones for the capture.
  await page.screenshot({ path, fullPage, animations: 'disabled' })
  return path
}

/**
 * Demo traffic for the dashboard: 30 days of message events with a daily rhythm, written to
 * the event log so the server's own rollup job counts them (the dashboard reads the rollups).
 * Deterministic, so the screenshots do not change from run to run but for the dates.
 */
export function seedTraffic(db: Database, now: number): { last24h: Record<string, number> } {
  let x = 42
  const rand = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648
  const insert = db.prepare('INSERT INTO events (kind, created_at, recipient, data) VALUES (?, ?, ?, ?)')
  const last24h: Record<string, number> = {}
  const hour = 3_600_000
  db.transaction(() => {
    for (let h = 30 * 24 - 1; h >= 0; h--) {
      const at = now - h * hour - hour / 2
      const local = new Date(at).getUTCHours()
      const rhythm = 0.35 + 0.65 * Math.max(0, Math.sin(((local - 6) / 24) * 2 * Math.PI))
      const sent = Math.round((30 + rand() * 25) * rhythm * (1 + (30 * 24 - h) / 1200))
      const opened = Math.round(sent * (0.3 + rand() * 0.12))
      const counts: Record<string, number> = {
        'message.queued': sent,
        'message.sent': Math.round(sent * (0.94 + rand() * 0.03)),
        'message.deferred': Math.round(sent * rand() * 0.06),
        'message.bounced': Math.round(sent * (0.005 + rand() * 0.02)),
        'message.complained': rand() < 0.15 ? 1 : 0,
        'message.opened': opened,
        'message.clicked': Math.round(opened * (0.12 + rand() * 0.08)),
      }
      for (const [kind, n] of Object.entries(counts)) {
        // Most opens and clicks are a message's first (data.first), which the unique counters and the rates count.
        for (let i = 0; i < n; i++) {
          const first = (kind === 'message.opened' || kind === 'message.clicked') && i % 5 !== 0
          insert.run(kind, Math.round(at + (i * hour) / (n + 1) - hour / 2), `person${i}@example.net`, first ? '{"first":true}' : '{}')
        }
        if (h < 24) last24h[kind] = (last24h[kind] ?? 0) + n
      }
    }
  })()
  return { last24h }
}

/** One axe-core finding of the impact levels a check fails on. */
export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: string[]
}

let axeSource: string | null = null
/**
 * Runs axe-core (WCAG 2.0/2.1 A and AA rules) in the page as it is now and returns the serious
 * and critical violations, each with the selectors of the elements at fault.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= await Bun.file(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js')).text()
  // Evaluated through the DevTools protocol: the console's CSP (script-src 'self') rightly refuses an inline script tag.
  await page.evaluate(axeSource)
  // Let opening animations finish: half-faded text would be measured at the wrong contrast.
  await settleAnimations(page)
  return page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run: (
            ctx: Document,
            opts: unknown,
          ) => Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }> }>
        }
      }
    ).axe
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, resultTypes: ['violations'] })
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.map(String).join(' ')) }))
  })
}

/**
 * Opens each page in light and dark (after `open(theme)` gives a signed-in page), waits for
 * its heading and for any live status (loading) to go, and lists every serious or critical
 * axe-core violation as one line; an accessible console gives an empty list.
 */
export async function accessibilityFindings(
  base: string,
  pages: Array<{ path: string; heading: string }>,
  open: (theme: 'light' | 'dark') => Promise<{ page: Page; close(): Promise<void> }>,
): Promise<string[]> {
  const found: string[] = []
  for (const theme of ['light', 'dark'] as const) {
    const { page, close } = await open(theme)
    for (const p of pages) {
      await page.goto(`${base}${p.path}`)
      await page.getByRole('heading', { name: p.heading, exact: true }).waitFor()
      await page
        .locator('[role="status"][aria-live]')
        .first()
        .waitFor({ state: 'detached' })
        .catch(() => {})
      for (const v of await axeViolations(page)) found.push(`${theme} ${p.path}: ${v.id} (${v.impact}) ${v.help} at ${v.nodes.slice(0, 3).join(', ')}`)
    }
    await close()
  }
  return found
}

/** An API call with a key, answering the status and the parsed JSON body. */
export async function apiCall(base: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: await res.json() }
}

/** Reads until `check` holds, every 200 ms, failing after `limitMs` (a failure bound, not a timing assertion). */
export async function pollUntil<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean, limitMs: number): Promise<T> {
  const end = Date.now() + limitMs
  for (;;) {
    const v = await read()
    if (check(v)) return v
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}: ${JSON.stringify(v)}`)
    await Bun.sleep(200)
  }
}

/** Picks an option of a Radix select found by its accessible name (the `nth` of that name). */
export async function choose(page: Page, select: string | RegExp, option: string, nth = 0): Promise<void> {
  await page.getByRole('combobox', { name: select }).nth(nth).click()
  await page.getByRole('option', { name: option, exact: true }).click()
}

/** Runs the captures with the toasts hidden (not removed: React owns them), so they show the page itself. */
export async function withoutToasts(page: Page, capture: () => Promise<unknown>): Promise<void> {
  await page.addStyleTag({ content: '[data-sonner-toaster] { visibility: hidden !important; }' })
  try {
    await capture()
  } finally {
    await page.evaluate(() => document.querySelectorAll('style').forEach((el) => el.textContent?.includes('[data-sonner-toaster]') && el.remove()))
  }
}
