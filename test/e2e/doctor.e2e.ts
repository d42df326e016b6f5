/**
 * The Deliverability page (issue 17) in headless Chromium, against Mailroom started from
 * source with its DNS lookups pointed at the loopback DNS server: a sending domain without
 * DMARC shows as failing with the record to publish; once it is published, "Run checks now"
 * clears it. Screenshots land in docs/screenshots/ (`npm run test:e2e`).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { reverseName, startDnsServer, type DnsServer } from '../support/dns-server'
import { axeViolations, createAdmin, createApiKey, launchBrowser, openSignedIn, shot, startConsole, type ConsoleServer } from './support/console'

const EMAIL = 'ops@example.com'
const PASSWORD = 'correct horse battery'
const HOSTNAME = 'mail.example.com'
const DOMAIN = 'example.com'
const STEP_MS = 180_000

let server: ConsoleServer
let browser: Browser
let dns: DnsServer

beforeAll(async () => {
  // The host name resolves and forward-confirms: with no IP registered, its address is the sending IP.
  dns = await startDnsServer({ zones: { [HOSTNAME]: { A: ['192.0.2.25'] }, [reverseName('192.0.2.25')]: { PTR: [HOSTNAME] } } })
  server = await startConsole({ from: 'source', flags: ['--hostname', HOSTNAME, '--dns-servers', dns.server, '--public-url', `https://${HOSTNAME}`] })
  await createAdmin(server, EMAIL, PASSWORD)
  browser = await launchBrowser()
}, STEP_MS)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  await dns?.close()
})

test(
  'a failing check shows its fix; publishing the record and running the checks again clears it',
  async () => {
    // A sending domain with DKIM, SPF and the return path published, but no DMARC.
    const key = await createApiKey(server, 'e2e')
    const created = await fetch(`${server.base}/api/v2/sending-domains`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: DOMAIN }),
    })
    expect(created.status).toBe(201)
    const records = (await created.json()).data.dns_records as Array<{ purpose: string; type: string; name: string; value: string }>
    dns.publishRecords(records.filter((r) => r.purpose !== 'dmarc'))
    const dmarc = records.find((r) => r.purpose === 'dmarc')!

    const { page, close } = await openSignedIn(browser, server.base, EMAIL, PASSWORD)
    try {
      await page.goto(`${server.base}/admin/sending/deliverability`)
      await page.getByRole('heading', { name: 'Deliverability', exact: true, level: 1 }).waitFor()
      // The run made at start may predate the domain: run now.
      await page.getByRole('button', { name: 'Run checks now' }).click()
      const failing = page.locator(`[data-check="domain.dmarc:${DOMAIN}"]`)
      await failing.waitFor()
      expect(await failing.locator('[data-status="fail"]').count()).toBe(1)
      expect(await failing.textContent()).toContain(`Publish TXT ${dmarc.name} = ${dmarc.value}`)
      expect(await failing.getByRole('button', { name: /^Copy fix for/ }).count()).toBe(1)
      // Passing checks are under "All checks" only.
      expect(await page.locator(`[data-check="domain.dkim:${DOMAIN}"]`).count()).toBe(0)
      await page.getByRole('tab', { name: /^All checks/ }).click()
      await page.locator(`[data-check="domain.dkim:${DOMAIN}"] [data-status="pass"]`).waitFor()
      await page.getByRole('tab', { name: /^Needs attention/ }).click()
      // The screenshots show the page, not the toast of the run.
      await page.addStyleTag({ content: '[data-sonner-toaster] { visibility: hidden !important; }' })
      await shot(page, 'deliverability', { theme: 'dark', width: 1440 })
      await shot(page, 'deliverability', { theme: 'light', width: 1440 })
      await shot(page, 'deliverability', { theme: 'light', width: 375 })
      // Nothing wider than a phone's screen.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
      // No serious or critical WCAG findings, in both themes.
      expect(await axeViolations(page)).toEqual([])
      await shot(page, 'deliverability', { theme: 'dark', width: 375 })
      expect(await axeViolations(page)).toEqual([])

      // Publish DMARC, run again: the check passes and leaves the list.
      dns.setZone(dmarc.name, { TXT: [dmarc.value] })
      await page.setViewportSize({ width: 1440, height: 900 })
      await page.getByRole('button', { name: 'Run checks now' }).click()
      await failing.waitFor({ state: 'detached' })
      await page.getByRole('tab', { name: /^All checks/ }).click()
      await page.locator(`[data-check="domain.dmarc:${DOMAIN}"] [data-status="pass"]`).waitFor()

      // The dashboard no longer warns about failing checks.
      const overview = await page.evaluate(async () => (await fetch('/api/v2/system/overview')).json())
      expect(overview.data.warnings.map((w: { kind: string }) => w.kind)).not.toContain('doctor_failed')
    } finally {
      await close()
    }
  },
  STEP_MS,
)
