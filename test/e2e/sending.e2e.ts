/**
 * The Sending pages in headless Chromium, against Mailroom started from source with its DNS
 * lookups pointed at the loopback DNS server (test/support/dns-server.ts): a sending domain
 * verified by publishing its records there and pressing Check DNS; a source IP this host
 * cannot bind refused with the error beside the field; a relay node; a bridge whose
 * credentials are shown once, and a test message sent through it. Screenshots of every
 * Sending page land in docs/screenshots/ (`npm run test:e2e`).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { shot, withoutToasts } from './support/console'
import { STEP_MS, startMailConsole, type MailConsole } from './support/mail-console'

const HOSTNAME = 'mail.example.com'
const DOMAIN = 'example.com'

let mc: MailConsole

beforeAll(async () => {
  // The server's public host name resolves in the test DNS: SPF's `a:` mechanism is checked against it.
  mc = await startMailConsole({ from: 'source', hostname: HOSTNAME, zones: { [HOSTNAME]: { A: ['192.0.2.25'] } } })
}, STEP_MS)

afterAll(() => mc?.stop())

/** Dark and light at 1440 of the page as it stands. */
async function shots(page: Page, name: string): Promise<void> {
  await withoutToasts(page, async () => {
    await shot(page, name, { theme: 'dark', width: 1440 })
    await shot(page, name, { theme: 'light', width: 1440 })
  })
}

test(
  'a sending domain: its records to copy, Check DNS before and after publishing them, then "verified"',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/sending/domains`)
    await page.getByRole('heading', { name: 'Sending domains', exact: true }).waitFor()
    await page.getByText('No sending domains yet').waitFor()
    await page.getByRole('button', { name: 'Add domain' }).first().click()
    await page.getByLabel('Domain name').fill(DOMAIN)
    await page.getByRole('dialog').getByRole('button', { name: 'Add domain' }).click()

    // The domain's page: every record unchecked, each value with its copy button.
    await page.getByRole('heading', { name: DOMAIN, level: 1 }).waitFor()
    expect(new URL(page.url()).pathname).toMatch(/^\/admin\/sending\/domains\/\d+$/)
    for (const purpose of ['dkim', 'spf', 'dmarc', 'return_path']) {
      const record = page.locator(`[data-record="${purpose}"]`)
      expect(await record.locator('[data-state="unchecked"]').count()).toBe(1)
      expect(await record.getByRole('button', { name: /^Copy .* record value$/ }).count()).toBe(1)
    }
    // The values shown are the API's, exactly.
    const id = new URL(page.url()).pathname.split('/').pop()
    const domain = (await page.evaluate(async (path) => (await fetch(path)).json(), `/api/v2/sending-domains/${id}`)).data as {
      dns_records: Array<{ type: string; name: string; value: string; purpose: string }>
    }
    const dkim = domain.dns_records.find((r) => r.purpose === 'dkim')!
    expect(await page.locator('[data-record="dkim"] code').nth(1).textContent()).toBe(dkim.value)

    // Nothing published yet: Check DNS says which records are missing.
    await page.getByRole('button', { name: 'Check DNS' }).click()
    await page.getByText(/^Not verified yet: 3 of 3 required records need attention/).waitFor()
    expect(await page.locator('[data-record="dkim"] [data-state="missing"]').count()).toBe(1)
    await shots(page, 'sending-domain')

    // Published in the loopback DNS: Check DNS verifies every record.
    mc.dns.publishRecords(domain.dns_records)
    await page.getByRole('button', { name: 'Check DNS' }).click()
    await page.getByText(`All required records are verified: mail from ${DOMAIN} can be sent.`).waitFor()
    for (const purpose of ['dkim', 'spf', 'dmarc', 'return_path'])
      expect(await page.locator(`[data-record="${purpose}"] [data-state="verified"]`).count()).toBe(1)
    expect(await page.getByRole('heading', { name: DOMAIN, level: 1 }).locator('..').getByText('Verified').count()).toBeGreaterThan(0)
    await shots(page, 'sending-domain-verified')
    await withoutToasts(page, async () => {
      await shot(page, 'sending-domain-verified', { theme: 'dark', width: 375 })
      await shot(page, 'sending-domain-verified', { theme: 'light', width: 375 })
    })

    await page.setViewportSize({ width: 1440, height: 900 })
    await page.getByRole('link', { name: 'Sending domains' }).first().click()
    await page.getByRole('cell', { name: DOMAIN }).waitFor()
    await page.getByText('3 of 3 required records verified').waitFor()
    await shots(page, 'sending-domains')
    await close()
  },
  STEP_MS,
)

test(
  'IPs and pools: an address this host cannot bind is refused beside the field; a pool with a member and a weight',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/sending/ips`)
    await page.getByRole('heading', { name: 'IPs & pools' }).waitFor()
    await page.getByText('No source IPs').waitFor()
    await page.getByRole('button', { name: 'Add IP' }).first().click()
    const dialog = page.getByRole('dialog')
    await dialog.getByLabel('Address').fill('203.0.113.77')
    await dialog.getByLabel('EHLO host name').fill('mail1.example.com')
    await dialog.getByRole('button', { name: 'Add IP' }).click()
    // The API's words, under the Address field, tied to it for screen readers.
    const error = dialog.getByRole('alert')
    await error.waitFor()
    expect(await error.textContent()).toContain('203.0.113.77')
    const address = dialog.getByLabel('Address')
    expect(await address.getAttribute('aria-invalid')).toBe('true')
    expect(await address.getAttribute('aria-describedby')).toContain(await error.getAttribute('id'))
    await shot(page, 'sending-ip-refused', { theme: 'light', width: 1440, fullPage: false })

    // 127.0.0.1 can be bound here: it is added.
    await address.fill('127.0.0.1')
    await dialog.getByLabel('EHLO host name').fill(HOSTNAME)
    await dialog.getByRole('button', { name: 'Add IP' }).click()
    await page.getByRole('cell', { name: '127.0.0.1', exact: true }).waitFor()
    await shots(page, 'sending-ips')

    await page.getByRole('tab', { name: 'Pools' }).click()
    await page.getByRole('button', { name: 'Create pool' }).first().click()
    const poolDialog = page.getByRole('dialog')
    await poolDialog.getByLabel('Name').fill('transactional')
    await poolDialog.getByRole('switch', { name: 'Default pool' }).click()
    await poolDialog.getByRole('combobox', { name: 'Address to add' }).click()
    await page.getByRole('option', { name: /127\.0\.0\.1/ }).click()
    await poolDialog.getByRole('button', { name: 'Add', exact: true }).click()
    await poolDialog.getByLabel('Weight of 127.0.0.1').fill('5')
    await poolDialog.getByRole('button', { name: 'Create pool' }).click()
    await page.getByRole('cell', { name: /^transactional/ }).waitFor()
    await page.getByText('127.0.0.1 · 5').waitFor()
    await shots(page, 'sending-pools')
    await close()
  },
  STEP_MS,
)

test(
  'sending nodes: a relay node with its host, port, TLS and a write-only password',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/sending/nodes`)
    await page.getByRole('heading', { name: 'Sending nodes', exact: true }).waitFor()
    await page.getByText('No sending nodes').waitFor()
    await page.getByRole('button', { name: 'Create node' }).first().click()
    const dialog = page.getByRole('dialog')
    await dialog.getByLabel('Name').fill('smarthost')
    await dialog.getByRole('combobox', { name: 'Kind' }).click()
    await page.getByRole('option', { name: 'Relay (smart host)' }).click()
    await dialog.getByLabel('Relay host').fill('smtp.relay.example.org')
    await dialog.getByLabel('Port').fill('2525')
    await dialog.getByLabel('User name').fill('relay-user')
    await dialog.getByLabel('Password', { exact: true }).fill('relay-secret-1')
    await dialog.getByLabel('Hourly cap').fill('500')
    await dialog.getByRole('switch', { name: 'Default route' }).click()
    await dialog.getByRole('button', { name: 'Create node' }).click()
    await page
      .getByRole('cell', { name: /^smarthost/ })
      .first()
      .waitFor()
    await page.getByText('smtp.relay.example.org:2525').waitFor()
    await page.getByText('0 of 500 this hour').waitFor()
    // The password is never sent back: the edit form only says one is stored.
    const node = (await page.evaluate(async () => (await fetch('/api/v2/sending-nodes')).json())).data[0]
    expect(node).toMatchObject({ kind: 'relay', relay_host: 'smtp.relay.example.org', relay_port: 2525, has_password: true, is_default: true })
    expect(JSON.stringify(node)).not.toContain('relay-secret-1')
    await page.getByRole('button', { name: 'Edit smarthost' }).click()
    await page.getByRole('dialog').getByText('A password is stored. Leave empty to keep it.').waitFor()
    expect(await page.getByRole('dialog').getByLabel('Password', { exact: true }).inputValue()).toBe('')
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click()
    await shots(page, 'sending-nodes')
    await close()
  },
  STEP_MS,
)

test(
  'bridges: created with its SMTP and API credentials shown once, then a test message sent through it',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/sending/bridges`)
    await page.getByRole('heading', { name: 'Bridges', exact: true }).waitFor()
    await page.getByText('No bridges yet').waitFor()
    await page.getByRole('button', { name: 'Create bridge' }).first().click()
    const dialog = page.getByRole('dialog')
    await dialog.getByLabel('Name').fill('shop')
    await dialog.getByRole('checkbox', { name: DOMAIN }).click()
    await dialog.getByLabel('Hourly quota').fill('100')
    // An allowlist entry that is not an address is refused beside the field.
    await dialog.getByLabel('Allowed addresses').fill('not-an-address')
    await dialog.getByRole('button', { name: 'Create bridge' }).click()
    await dialog.getByRole('alert').waitFor()
    expect(await dialog.getByLabel('Allowed addresses').getAttribute('aria-invalid')).toBe('true')
    await dialog.getByLabel('Allowed addresses').fill('127.0.0.0/8')
    await dialog.getByRole('button', { name: 'Create bridge' }).click()

    const creds = page.getByRole('dialog', { name: 'Credentials of shop' })
    await creds.waitFor()
    expect(await creds.getByRole('textbox', { name: 'SMTP host' }).inputValue()).toBe(HOSTNAME)
    const password = await creds.getByRole('textbox', { name: 'Password' }).inputValue()
    const apiKey = await creds.getByRole('textbox', { name: 'API key' }).inputValue()
    expect(password.length).toBeGreaterThan(20)
    expect(apiKey).toMatch(/^mr_/)
    expect(await creds.getByRole('button', { name: 'Copy password' }).count()).toBe(1)
    expect(await creds.getByText('This is the only time the password and the API key are shown').count()).toBe(1)
    await shot(page, 'sending-bridge-credentials', { theme: 'dark', width: 1440, fullPage: false })
    await shot(page, 'sending-bridge-credentials', { theme: 'light', width: 1440, fullPage: false })
    await creds.getByRole('button', { name: 'I have stored them' }).click()
    await page.getByRole('cell', { name: /^shop/ }).waitFor()
    // Once: neither secret is anywhere on the page, nor in the API's answer, afterwards.
    expect(await page.content()).not.toContain(password)
    expect(await page.content()).not.toContain(apiKey)
    const listed = JSON.stringify(await page.evaluate(async () => (await fetch('/api/v2/bridges')).json()))
    expect(listed).not.toContain(password)
    expect(listed).not.toContain(apiKey)

    // Send test: a bad address is refused beside the field; a good one is queued through the bridge.
    await page.getByRole('button', { name: 'Actions for shop' }).click()
    await page.getByRole('menuitem', { name: 'Send test' }).click()
    const test = page.getByRole('dialog')
    await test.getByLabel('Send to').fill('not an address')
    await test.getByRole('button', { name: 'Send test' }).click()
    await test.getByRole('alert').waitFor()
    await test.getByLabel('Send to').fill('ada@example.net')
    await test.getByRole('button', { name: 'Send test' }).click()
    await test.getByText('Queued for ada@example.net.').waitFor()
    await shot(page, 'sending-bridge-test', { theme: 'light', width: 1440, fullPage: false })
    await test.getByRole('button', { name: 'Close' }).first().click()
    await page.reload()
    await page.getByText('1 of 100 this hour').waitFor()
    await page.getByText('accepted').first().waitFor()
    await shots(page, 'sending-bridges')
    await close()
  },
  STEP_MS,
)
