/**
 * The Deliverability page (issue 17) in headless Chromium, against Mailroom started from
 * source with its DNS lookups pointed at the loopback DNS server: a sending domain without
 * DMARC shows as failing with the record to publish; once it is published, "Run checks now"
 * clears it. Screenshots land in docs/screenshots/ (`npm run test:e2e`).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { reverseName } from '../support/dns-server'
import { axeViolations, shot } from './support/console'
import { STEP_MS, startMailConsole, type MailConsole } from './support/mail-console'

const HOSTNAME = 'mail.example.com'
const DOMAIN = 'example.com'

let mc: MailConsole

beforeAll(async () => {
  // The host name resolves and forward-confirms: with no IP registered, its address is the sending IP.
  mc = await startMailConsole({
    from: 'source',
    hostname: HOSTNAME,
    zones: { [HOSTNAME]: { A: ['192.0.2.25'] }, [reverseName('192.0.2.25')]: { PTR: [HOSTNAME] } },
    flags: ['--public-url', `https://${HOSTNAME}`],
    apiKey: 'e2e',
  })
}, STEP_MS)

afterAll(() => mc?.stop())

test(
  'a failing check shows its fix; publishing the record and running the checks again clears it',
  async () => {
    // A sending domain with DKIM, SPF and the return path published, but no DMARC.
    const created = await mc.call('POST', '/api/v2/sending-domains', { name: DOMAIN })
    expect(created.status).toBe(201)
    const records = created.body.data.dns_records as Array<{ purpose: string; type: string; name: string; value: string }>
    mc.dns.publishRecords(records.filter((r) => r.purpose !== 'dmarc'))
    const dmarc = records.find((r) => r.purpose === 'dmarc')!

    const { page, close } = await mc.signedIn()
    try {
      await page.goto(`${mc.server.base}/admin/sending/deliverability`)
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
      mc.dns.setZone(dmarc.name, { TXT: [dmarc.value] })
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
