/**
 * The mail pages of the console in headless Chromium (issue 14 pages 6, 8 and 9): a message
 * sent through the API with a key made by the CLI, delivered to a loopback SMTP sink through
 * a loopback DNS server (one recipient accepted, one deferred), found by its recipient and
 * followed on its timeline, its raw source downloaded; a template edited with its preview
 * following; a webhook created (its secret shown once) and tested against a loopback receiver.
 * The server runs from source (src/main.ts) because it needs that loopback world.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { startDnsServer, type DnsServer } from '../support/dns-server'
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver'
import { createAdmin, createApiKey, launchBrowser, openPage, shot, signIn, startConsole, type ConsoleServer } from './support/console'

const EMAIL = 'ops@example.com'
const PASSWORD = 'correct horse battery'
const STEP_MS = 180_000

let server: ConsoleServer
let browser: Browser
let sink: SmtpSink
let dns: DnsServer
let receiver: WebhookReceiver
let key: string

/** An API call with the CLI-made key. */
async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: await res.json() }
}

/** Polls the API until `check` holds (a failure bound, not a timing assertion). */
async function until<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  const end = Date.now() + STEP_MS
  for (;;) {
    const v = await read()
    if (check(v)) return v
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}: ${JSON.stringify(v)}`)
    await Bun.sleep(200)
  }
}

beforeAll(async () => {
  sink = await startSmtpSink({ host: '127.0.0.1' })
  dns = await startDnsServer({
    zones: { 'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] }, 'mx.example.net': { A: ['127.0.0.1'] } },
  })
  receiver = await startWebhookReceiver()
  server = await startConsole({
    from: 'source',
    flags: [
      '--hostname',
      'mail.example.com',
      '--mx-port',
      String(sink.port),
      '--dns-servers',
      dns.server,
      '--allow-unverified-domains',
      'true',
      '--webhooks-allow-private',
      'true',
    ],
  })
  await createAdmin(server, EMAIL, PASSWORD)
  key = await createApiKey(server, 'e2e sender')
  browser = await launchBrowser()
}, STEP_MS)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  await receiver?.close()
  await sink?.close()
  await dns?.close()
})

async function signedIn(opts: { theme?: 'light' | 'dark'; width?: number } = {}): Promise<{ page: Page; close: () => Promise<void> }> {
  const { context, page } = await openPage(browser, opts)
  await signIn(page, server.base, EMAIL, PASSWORD)
  return { page, close: () => context.close() }
}

test(
  'find a sent message: search by recipient, open its timeline, download its raw source',
  async () => {
    // Some history first, so the list is not a single row.
    for (const [to, subject] of [
      ['grace@example.net', 'Password reset'],
      ['linus@example.net', 'Welcome to Acme'],
      ['permfail@example.net', 'Your invoice is ready'],
    ] as const) {
      const r = await call('POST', '/v1/emails', { from: 'Acme <billing@acme.test>', to: [to], subject, text: 'Hello' })
      expect(r.status).toBe(202)
    }
    const sent = await call('POST', '/v1/emails', {
      from: 'Acme Billing <billing@acme.test>',
      to: ['ada@example.net', 'tempfail@example.net'],
      subject: 'Your receipt #1042',
      html: '<p>Thanks for your order!</p>',
      text: 'Thanks for your order!',
      tags: ['receipt'],
    })
    expect(sent.status).toBe(202)
    const id = sent.body.data.id as string
    // One recipient accepted by the sink, the other deferred by it (tempfail@ answers 4xx).
    await until(
      'the delivery outcomes',
      () => call('GET', `/api/v2/messages/${id}`),
      (r) => r.body.data.recipients.every((x: { state: string }) => x.state === 'sent' || x.state === 'deferred'),
    )
    await until(
      'the other messages to finish',
      () => call('GET', '/api/v2/messages?status=queued'),
      (r) => r.body.meta.total === 0,
    )

    const { page, close } = await signedIn()
    await page.getByRole('link', { name: 'Messages' }).first().click()
    await page.getByRole('heading', { name: 'Messages' }).waitFor()
    await page.getByRole('link', { name: 'Password reset' }).waitFor()
    await shot(page, 'messages', { theme: 'light', width: 1440 })
    await shot(page, 'messages', { theme: 'dark', width: 1440 })

    await page.getByLabel('Recipient').fill('ADA@example.net')
    await page.getByRole('button', { name: 'Search' }).click()
    expect(new URL(page.url()).searchParams.get('recipient')).toBe('ADA@example.net')
    await page.getByRole('link', { name: 'Password reset' }).waitFor({ state: 'detached' })
    const rows = page.locator('tbody tr')
    expect(await rows.count()).toBe(1)
    await page.getByRole('link', { name: 'Your receipt #1042' }).click()

    await page.getByRole('heading', { name: 'Your receipt #1042' }).waitFor()
    expect(new URL(page.url()).pathname).toBe(`/admin/messages/${id}`)
    const timeline = page.getByRole('list', { name: 'Timeline' })
    await timeline.locator('[data-kind="message.sent"]').waitFor()
    await timeline.locator('[data-kind="message.deferred"]').waitFor()
    // The receiving server's reply and the next attempt are on the timeline.
    expect(await timeline.locator('[data-kind="message.sent"]').textContent()).toContain('250')
    expect(await timeline.locator('[data-kind="message.deferred"]').textContent()).toContain('Next attempt')
    // Per recipient: only ada's events.
    await page.getByRole('combobox', { name: 'Show the timeline of' }).click()
    await page.getByRole('option', { name: 'ada@example.net' }).click()
    await timeline.locator('[data-kind="message.deferred"]').waitFor({ state: 'detached' })
    await timeline.locator('[data-kind="message.sent"]').waitFor()
    await page.getByRole('combobox', { name: 'Show the timeline of' }).click()
    await page.getByRole('option', { name: /^All/ }).click()
    await page
      .getByRole('cell', { name: 'X-Mailer' })
      .or(page.getByRole('cell', { name: 'Message-ID', exact: true }))
      .first()
      .waitFor()
    await shot(page, 'message', { theme: 'light', width: 1440 })
    await shot(page, 'message', { theme: 'dark', width: 1440 })
    await shot(page, 'message', { theme: 'light', width: 375 })
    await page.setViewportSize({ width: 1440, height: 900 })

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download .eml' }).click()])
    expect(download.suggestedFilename()).toBe(`${id}.eml`)
    const raw = readFileSync((await download.path())!, 'utf8')
    expect(raw).toContain('Subject: Your receipt #1042')
    expect(raw).toContain('Thanks for your order!')
    await close()
  },
  STEP_MS,
)
