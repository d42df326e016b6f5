/**
 * The mail pages of the console in headless Chromium (issue 14 pages 6, 8 and 9): a message
 * sent through the API with a key made by the CLI, delivered to a loopback SMTP sink through
 * a loopback DNS server (one recipient accepted, one deferred), found by its recipient and
 * followed on its timeline, its raw source downloaded; a template edited with its preview
 * following; a webhook created (its secret shown once) and tested against a loopback receiver.
 * The built binary runs from an empty directory, pointed at that loopback world by its flags.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver'
import { shot, pollUntil } from './support/console'
import { STEP_MS, startMailConsole, type MailConsole } from './support/mail-console'

let receiver: WebhookReceiver

/** Polls the API until `check` holds (a failure bound, not a timing assertion). */
const until = <T>(what: string, read: () => Promise<T>, check: (v: T) => boolean) => pollUntil(what, read, check, STEP_MS)

let mc: MailConsole

beforeAll(async () => {
  receiver = await startWebhookReceiver()
  mc = await startMailConsole({ mail: true, hostname: 'mail.example.com', flags: ['--webhooks-allow-private', 'true'], apiKey: 'e2e sender' })
}, STEP_MS)

afterAll(async () => {
  await mc?.stop()
  await receiver?.close()
})

test(
  'find a sent message: search by recipient, open its timeline, download its raw source',
  async () => {
    // Some history first, so the list is not a single row.
    for (const [to, subject] of [
      ['grace@example.net', 'Password reset'],
      ['linus@example.net', 'Welcome to Acme'],
      ['permfail@example.net', 'Your invoice is ready'],
    ] as const) {
      const r = await mc.call('POST', '/v1/emails', { from: 'Acme <billing@acme.test>', to: [to], subject, text: 'Hello' })
      expect(r.status).toBe(202)
    }
    const sent = await mc.call('POST', '/v1/emails', {
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
      () => mc.call('GET', `/api/v2/messages/${id}`),
      (r) => r.body.data.recipients.every((x: { state: string }) => x.state === 'sent' || x.state === 'deferred'),
    )
    await until(
      'the other messages to finish',
      () => mc.call('GET', '/api/v2/messages?status=queued'),
      (r) => r.body.meta.total === 0,
    )

    const { page, close } = await mc.signedIn()
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
    await page.getByLabel('Header fields as accepted').getByText('Message-ID', { exact: true }).waitFor()
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

test(
  'spin tags and a template: the preview follows the edits and the variables, save makes a version, compare, activate, send a test',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/templates?tab=spin-tags`)
    await page.getByRole('heading', { name: 'No spin tags yet' }).waitFor()
    await page.getByRole('button', { name: 'New spin tag' }).first().click()
    await page.getByLabel('Name').fill('greeting')
    await page.getByLabel('Alternatives').fill('Hi\nHello\nHey')
    await page.getByRole('button', { name: 'Create' }).click()
    await page.getByRole('cell', { name: 'greeting', exact: true }).waitFor()
    // Edit: an alternative added.
    await page.getByRole('button', { name: 'Edit greeting' }).click()
    await page.getByLabel('Alternatives').fill('Hi\nHello\nHey\nGood day')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByText('Good day').waitFor()
    await shot(page, 'spin-tags', { theme: 'light', width: 1440 })
    await shot(page, 'spin-tags', { theme: 'dark', width: 1440 })

    await page.getByRole('tab', { name: 'Templates' }).click()
    await page.getByRole('heading', { name: 'No templates yet' }).waitFor()
    await page.getByRole('button', { name: 'New template' }).first().click()
    await page.getByLabel('Name').fill('Order shipped')
    await page.getByLabel('Subject').fill('Your order {{order_id}} has shipped')
    await page.getByRole('button', { name: 'Create and edit' }).click()
    await page.getByRole('heading', { name: 'Order shipped' }).waitFor()

    const preview = page.frameLocator('iframe[title="HTML preview"]')
    await preview.getByText('Hello ,').waitFor()
    await page.getByLabel('From', { exact: true }).fill('Acme <hello@acme.test>')
    await page.getByRole('textbox', { name: 'HTML source' }).fill('<h1>{{spin "greeting"}} {{first_name}}!</h1>\n<p>Order {{order_id}} is on its way.</p>')
    // The variables the template uses appear in the panel; a value shows in the preview.
    await page.getByLabel('order_id').fill('A-1042')
    await page.getByLabel('first_name').fill('Ada')
    await preview.getByText('Order A-1042 is on its way.').waitFor()
    expect(await preview.locator('h1').textContent()).toMatch(/^(Hi|Hello|Hey|Good day) Ada!$/)
    await page.getByTestId('preview-subject').getByText('Your order A-1042 has shipped').waitFor()
    // A syntax error is shown next to the field while typing.
    await page.getByRole('textbox', { name: 'HTML source' }).fill('<h1>{{#if vip}}VIP</h1>')
    await page.getByText(/Parse error/).waitFor()
    await page.getByRole('textbox', { name: 'HTML source' }).fill('<h1>{{spin "greeting"}} {{first_name}}!</h1>\n<p>Order {{order_id}} is on its way.</p>')
    await preview.getByText('Order A-1042 is on its way.').waitFor()
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByText('Saved as version 2').waitFor()
    // The toast goes by itself; the screenshots are taken without it.
    await page.getByText('Saved as version 2').waitFor({ state: 'detached' })
    await page.getByRole('tab', { name: 'Mobile' }).click()
    await page.frameLocator('iframe[title="HTML preview at phone width"]').getByText('Order A-1042 is on its way.').waitFor()
    await shot(page, 'template', { theme: 'light', width: 1440 })
    await shot(page, 'template', { theme: 'dark', width: 1440 })
    await page.getByRole('tab', { name: 'Desktop' }).click()

    await page.getByRole('button', { name: 'Compare versions' }).click()
    const diff = page.getByTestId('version-diff')
    await diff.waitFor()
    expect(await diff.getByRole('region', { name: 'HTML changes' }).textContent()).toContain('Order {{order_id}} is on its way.')
    await shot(page, 'template-diff', { theme: 'light', width: 1440, fullPage: false })
    await page.keyboard.press('Escape')

    // Send a test through the dynamic template send, with the variables tried.
    await page.getByRole('button', { name: 'Send a test' }).click()
    await page.getByLabel('Send to').fill('tester@example.net')
    await page.getByRole('button', { name: 'Send test' }).click()
    await page.getByText('Test queued for tester@example.net').waitFor()
    const found = await until(
      'the test message',
      () => mc.call('GET', '/api/v2/messages?recipient=tester@example.net'),
      (r) => r.body.meta.total === 1,
    )
    expect(found.body.data[0].subject).toBe('Your order A-1042 has shipped')

    // Roll back to version 1.
    await page.getByRole('button', { name: 'Activate version 1' }).click()
    await page.getByText('Version 1 is now active').waitFor()
    await preview.getByText('Hello Ada,').waitFor()

    await page.goto(`${mc.server.base}/admin/templates`)
    await page.getByRole('link', { name: 'Order shipped' }).waitFor()
    await shot(page, 'templates', { theme: 'light', width: 1440 })
    await shot(page, 'templates', { theme: 'dark', width: 1440 })
    await close()
  },
  STEP_MS,
)

test(
  'a webhook: created with its secret shown once, edited, tested against a loopback receiver, its delivery log, re-enabled after a 410, secret rotated, payload format set',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/webhooks`)
    await page.getByRole('heading', { name: 'No webhooks yet' }).waitFor()
    await page.getByRole('button', { name: 'New webhook' }).first().click()
    await page.getByLabel('Endpoint URL').fill(receiver.url)
    await page.getByLabel('Description').fill('Delivery outcomes to the CRM')
    await page.getByRole('checkbox', { name: /message\.deferred/ }).click()
    await page.getByRole('button', { name: 'Create webhook' }).click()

    const secretBox = page.getByRole('textbox', { name: 'Signing secret' })
    await secretBox.waitFor()
    const secret = await secretBox.inputValue()
    expect(secret).toMatch(/^whsec_/)
    await page.getByText('This is the only time the secret is shown').waitFor()
    await shot(page, 'webhook-secret', { theme: 'light', width: 1440, fullPage: false })
    await page.getByRole('button', { name: 'I have saved it' }).click()
    await page.getByRole('heading', { name: 'Delivery outcomes to the CRM' }).waitFor()
    // Shown once: nowhere on the webhook's page, nor in the API's answers.
    expect(await page.content()).not.toContain(secret)
    const id = Number(new URL(page.url()).pathname.split('/').at(-1))
    expect((await mc.call('GET', `/api/v2/webhooks/${id}`)).body.data.secret).toBeUndefined()
    receiver.secrets = [secret]

    // Edit the events: one more kind, saved.
    await page.getByRole('checkbox', { name: /message\.failed/ }).click()
    await page.getByRole('button', { name: 'Save changes' }).click()
    await page.getByText('Webhook saved').waitFor()
    expect((await mc.call('GET', `/api/v2/webhooks/${id}`)).body.data.events).toContain('message.failed')

    // Send test: what the endpoint answered per kind, signed with the secret shown.
    await page.getByRole('button', { name: 'Send test' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Send test' }).click()
    const results = page.getByTestId('test-result')
    await results.first().waitFor()
    expect(await results.count()).toBe(4)
    for (const text of await results.allTextContents()) expect(text).toContain('204')
    expect(receiver.received.length).toBe(4)
    expect(receiver.received.every((r) => r.verified)).toBe(true)
    await shot(page, 'webhook-test', { theme: 'light', width: 1440, fullPage: false })
    await page.keyboard.press('Escape')

    // A real event: a message delivered to the sink makes a message.sent delivery.
    expect((await mc.call('POST', '/v1/emails', { from: 'Acme <billing@acme.test>', to: ['ada@example.net'], subject: 'Hook me', text: 'x' })).status).toBe(202)
    await until(
      'the delivery to succeed',
      () => mc.call('GET', `/api/v2/webhooks/${id}/deliveries?state=succeeded`),
      (r) => r.body.meta.total >= 1,
    )
    await page.reload()
    await page.getByRole('button', { name: 'message.sent' }).first().click()
    const attempts = page.getByRole('list', { name: 'Attempts' })
    await attempts.waitFor()
    expect(await attempts.textContent()).toContain('204')
    await page.keyboard.press('Escape')
    await shot(page, 'webhook', { theme: 'light', width: 1440 })
    await shot(page, 'webhook', { theme: 'dark', width: 1440 })

    // The endpoint answers 410 Gone: the webhook is switched off; re-enable it from the page.
    receiver.fallback = { status: 410, body: 'gone' }
    expect((await mc.call('POST', '/v1/emails', { from: 'Acme <billing@acme.test>', to: ['ada@example.net'], subject: 'Gone?', text: 'x' })).status).toBe(202)
    await until(
      'the webhook to be disabled',
      () => mc.call('GET', `/api/v2/webhooks/${id}`),
      (r) => r.body.data.enabled === false,
    )
    receiver.fallback = { status: 204 }
    await page.reload()
    await page.getByText('This webhook is disabled').waitFor()
    await shot(page, 'webhook-disabled', { theme: 'light', width: 1440 })
    await page.getByRole('button', { name: 'Re-enable' }).click()
    await page.getByText('This webhook is disabled').waitFor({ state: 'detached' })
    expect((await mc.call('GET', `/api/v2/webhooks/${id}`)).body.data).toMatchObject({ enabled: true, consecutive_failures: 0 })

    // Rotate: a new secret, shown once.
    await page.getByRole('button', { name: 'Rotate secret' }).click()
    await page.getByRole('alertdialog').getByRole('button', { name: 'Rotate secret' }).click()
    const rotated = await page.getByRole('textbox', { name: 'Signing secret' }).inputValue()
    expect(rotated).toMatch(/^whsec_/)
    expect(rotated).not.toBe(secret)
    await page.getByRole('button', { name: 'I have saved it' }).click()
    await page.getByText('Previous secret signs too until').waitFor()

    // The payload format: Resend's, for a consumer written for Resend; saved and shown in the list.
    await page.getByRole('combobox', { name: 'Payload format' }).click()
    await page.getByRole('option', { name: 'Resend' }).click()
    await page.getByText('signed with Svix headers').waitFor()
    await page.getByRole('button', { name: 'Save changes' }).click()
    await page.getByText('Webhook saved').waitFor()
    expect((await mc.call('GET', `/api/v2/webhooks/${id}`)).body.data.format).toBe('resend')

    await page.goto(`${mc.server.base}/admin/webhooks`)
    await page.getByRole('link', { name: receiver.url }).waitFor()
    await page.getByRole('cell', { name: 'Resend' }).waitFor()
    await shot(page, 'webhooks', { theme: 'light', width: 1440 })
    await shot(page, 'webhooks', { theme: 'dark', width: 1440 })
    await close()
  },
  STEP_MS,
)
