/**
 * The console in headless Chromium against the built binary, run from an empty directory
 * with no network beyond loopback: sign-in (a wrong password refused), the dashboard's
 * charts from the statistics rollups, the theme switch, navigation at phone width.
 * Screenshots of these pages land in docs/screenshots/ (`npm run test:e2e`).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { openPage, seedTraffic, shot, signIn, startConsole } from './support/console'
import { ADMIN, STEP_MS, startMailConsole, type MailConsole } from './support/mail-console'

let mc: MailConsole

beforeAll(async () => {
  mc = await startMailConsole({ seed: (db, now) => void seedTraffic(db, now), hostname: 'mail.example.com' })
}, STEP_MS)

afterAll(() => mc?.stop())

test(
  'the console loads its script and stylesheet from the binary, with no other request',
  async () => {
    const { context, page } = await openPage(mc.browser)
    const offsite: string[] = []
    page.on('request', (r) => {
      if (!r.url().startsWith(mc.server.base)) offsite.push(r.url())
    })
    const assets: string[] = []
    page.on('response', (r) => {
      if (r.url().includes('/admin/assets/')) assets.push(`${r.status()} ${r.headers()['content-type']}`)
    })
    await page.goto(`${mc.server.base}/admin/some/deep/link`)
    // The history fallback served the app, which (signed out) moved to the sign-in page.
    await page.getByRole('heading', { name: 'Sign in to Mailroom' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/admin/sign-in')
    expect(new URL(page.url()).searchParams.get('next')).toBe('/admin/some/deep/link')
    expect(assets.some((a) => a.startsWith('200 text/javascript'))).toBe(true)
    expect(assets.some((a) => a.startsWith('200 text/css'))).toBe(true)
    // Tailwind's stylesheet is applied: the sign-in button has the primary colour, not the browser default.
    const bg = await page.getByRole('button', { name: 'Sign in' }).evaluate((el) => getComputedStyle(el).backgroundColor)
    expect(bg).not.toBe('rgba(0, 0, 0, 0)')
    expect(offsite).toEqual([])
    await shot(page, 'sign-in', { theme: 'light', width: 1440 })
    await shot(page, 'sign-in', { theme: 'dark', width: 1440 })
    await context.close()
  },
  STEP_MS,
)

test(
  'a wrong password is refused with a message, and the page stays',
  async () => {
    const { context, page } = await openPage(mc.browser)
    await page.goto(`${mc.server.base}/admin/sign-in`)
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill('not the password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    const alert = page.getByRole('alert')
    await alert.waitFor()
    expect((await alert.textContent())?.length).toBeGreaterThan(5)
    expect(new URL(page.url()).pathname).toBe('/admin/sign-in')
    await shot(page, 'sign-in-refused', { theme: 'light', width: 1440 })
    await context.close()
  },
  STEP_MS,
)

test(
  'sign-in opens the dashboard with its charts from the statistics',
  async () => {
    const { context, page } = await openPage(mc.browser)
    await signIn(page, mc.server.base, ADMIN.email, ADMIN.password)
    // The rollup job counts the seeded events within its first seconds; wait for the API to say so.
    const deadline = Date.now() + STEP_MS
    for (;;) {
      const r = await page.request.get(`${mc.server.base}/api/v2/stats?bucket=hour&kinds=message.queued`)
      const body = await r.json()
      if (body.data?.totals?.[0]?.counts?.['message.queued'] > 0) break
      if (Date.now() > deadline) throw new Error(`the statistics never showed the seeded events: ${JSON.stringify(body)}`)
      await Bun.sleep(200)
    }
    await page.reload()
    for (const chart of ['delivery', 'engagement']) await page.locator(`[data-chart="${chart}"] .recharts-surface`).first().waitFor()
    // The tiles show the totals: "Sent" is no longer zero.
    const totals = page.getByRole('region', { name: 'Totals' })
    await expect(totals.getByText('Sent')).toBeTruthy()
    const sent = await totals.locator('text=Sent').locator('xpath=../..').locator('.text-2xl').textContent()
    expect(Number(sent?.replace(/\D/g, ''))).toBeGreaterThan(0)
    // The queue section comes from GET /api/v2/system/overview.
    await page.getByRole('heading', { name: 'Queue', exact: true }).waitFor()
    await page.getByTestId('queue-depth').waitFor()

    await shot(page, 'dashboard', { theme: 'light', width: 1440 })
    await shot(page, 'dashboard', { theme: 'dark', width: 1440 })
    await page.getByRole('tab', { name: '30 days' }).click()
    expect(new URL(page.url()).searchParams.get('range')).toBe('30d')
    await page.locator('[data-chart="delivery"] .recharts-surface').first().waitFor()
    await shot(page, 'dashboard-30d', { theme: 'light', width: 1440 })
    await context.close()
  },
  STEP_MS,
)

test(
  'the theme switch paints the page dark and is remembered after a reload',
  async () => {
    const { context, page } = await openPage(mc.browser, { theme: 'light' })
    await signIn(page, mc.server.base, ADMIN.email, ADMIN.password)
    expect(await page.evaluate(() => document.documentElement.classList.contains('dark'))).toBe(false)
    await page.getByRole('button', { name: /^Theme/ }).click()
    await page.getByRole('menuitemradio', { name: 'Dark' }).click()
    expect(await page.evaluate(() => document.documentElement.classList.contains('dark'))).toBe(true)
    const bodyBg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor)
    await page.reload()
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor()
    expect(await page.evaluate(() => document.documentElement.classList.contains('dark'))).toBe(true)
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe(bodyBg)
    await context.close()
  },
  STEP_MS,
)

test(
  'at phone width the navigation is a sheet that opens, navigates and closes',
  async () => {
    const { context, page } = await openPage(mc.browser, { theme: 'light', width: 375 })
    await signIn(page, mc.server.base, ADMIN.email, ADMIN.password)
    await page.locator('[data-chart="delivery"] .recharts-surface').first().waitFor()
    // The sidebar is hidden; the menu button opens the sheet.
    expect(await page.getByRole('complementary').isVisible()).toBe(false)
    await shot(page, 'dashboard', { theme: 'light', width: 375 })
    await shot(page, 'dashboard', { theme: 'dark', width: 375 })
    await page.getByRole('button', { name: 'Open navigation' }).click()
    const sheet = page.getByRole('dialog')
    await sheet.waitFor()
    await shot(page, 'navigation', { theme: 'light', width: 375, fullPage: false })
    await shot(page, 'navigation', { theme: 'dark', width: 375, fullPage: false })
    await sheet.getByRole('link', { name: /API keys/ }).click()
    await page.getByRole('heading', { name: 'API keys' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/admin/access/api-keys')
    await sheet.waitFor({ state: 'detached' })
    // Sign out from the top bar goes back to the sign-in page.
    await page.getByRole('button', { name: /^Account/ }).click()
    await page.getByRole('menuitem', { name: 'Sign out' }).click()
    await page.getByRole('heading', { name: 'Sign in to Mailroom' }).waitFor()
    await shot(page, 'sign-in', { theme: 'light', width: 375 })
    await context.close()
  },
  STEP_MS,
)

test(
  'the first-run setup link creates the first administrator and signs them in',
  async () => {
    const fresh = await startConsole()
    try {
      const token = (await fresh.waitForOutput(/\/admin\/setup#token=(\S+)/))[1]!
      const { context, page } = await openPage(mc.browser)
      await page.goto(`${fresh.base}/admin/setup#token=${token}`)
      await page.getByRole('heading', { name: 'Create the first administrator' }).waitFor()
      await shot(page, 'setup', { theme: 'light', width: 1440 })
      await shot(page, 'setup', { theme: 'dark', width: 1440 })
      await page.getByLabel('Email').fill('first@example.com')
      await page.getByLabel('Password', { exact: true }).fill('short')
      await page.getByLabel('Confirm password').fill('short')
      await page.getByRole('button', { name: 'Create administrator' }).click()
      // Too short: said next to the field, nothing sent.
      await page.getByText('Use at least 10 characters.').waitFor()
      await page.getByLabel('Password', { exact: true }).fill(ADMIN.password)
      await page.getByLabel('Confirm password').fill(ADMIN.password)
      await page.getByRole('button', { name: 'Create administrator' }).click()
      await page.getByRole('heading', { name: 'Dashboard' }).waitFor()
      await page.getByRole('button', { name: /^Account: first@example.com/ }).waitFor()
      // The link is spent: opened again, it says setup is done.
      await page.goto(`${fresh.base}/admin/setup#token=${token}`)
      await page.getByRole('heading', { name: 'Mailroom is set up' }).waitFor()
      await context.close()
    } finally {
      await fresh.stop()
    }
  },
  STEP_MS,
)
