/**
 * Web forms in headless Chromium (issue 16): the console's form builder (live preview, the
 * hosted link and embed snippet after saving); double opt-in end to end through the hosted
 * page: the browser solves the proof of work, the form is submitted, the confirmation mail
 * is read from a loopback SMTP sink (through a loopback DNS server), its link opened and the
 * confirm button pressed, and the contact is subscribed; the honeypot path (a fake success,
 * nothing stored). The built binary runs from an empty directory on loopback ports.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createServer } from 'node:net'
import { accessibilityFindings, axeViolations, openPage, shot } from './support/console'
import { STEP_MS, startMailConsole, type MailConsole } from './support/mail-console'

let listId: number

/** A free loopback port: the hosted links and confirmation mails carry public_url, which port 0 cannot make. */
async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as { port: number }).port
  await new Promise((resolve) => probe.close(resolve))
  return port
}

let mc: MailConsole

beforeAll(async () => {
  const port = await freePort()
  mc = await startMailConsole({
    mail: true,
    hostname: 'mail.example.com',
    flags: ['--http-listen', `127.0.0.1:${port}`, '--public-url', `http://127.0.0.1:${port}`, '--default-from', 'Acme News <news@acme.test>'],
    apiKey: 'e2e forms',
  })
  const list = await mc.call('POST', '/api/v2/lists', { name: 'Newsletter' })
  listId = list.body.data.id
}, STEP_MS)

afterAll(() => mc?.stop())

test(
  'the form builder: fields, live preview, create; then the hosted link and the embed snippet',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.getByRole('link', { name: 'Web forms' }).first().click()
    await page.getByRole('heading', { name: 'Web forms', exact: true }).waitFor()
    await page.getByText('No web forms yet').waitFor()
    await page.getByRole('link', { name: 'New web form' }).first().click()
    await page.getByRole('heading', { name: 'New web form' }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Acme newsletter')
    await page.getByRole('checkbox', { name: 'Newsletter' }).click()
    await page.getByLabel('Consent text').fill('Yes, send me the Acme newsletter.')
    // The preview follows the unsaved draft.
    const preview = page.frameLocator('iframe[title="Preview of the hosted form"]')
    await preview.getByRole('heading', { name: 'Acme newsletter' }).waitFor()
    await preview.getByText('Yes, send me the Acme newsletter.').waitFor()
    await page.getByRole('button', { name: 'Create form' }).click()
    await page.getByRole('heading', { name: 'Acme newsletter', exact: true }).waitFor()
    const hostedField = page.getByRole('textbox', { name: 'Hosted link' })
    await hostedField.waitFor()
    const hosted = await hostedField.inputValue()
    expect(hosted).toMatch(new RegExp(`^${mc.server.base}/f/[A-Za-z0-9_-]{16}$`))
    expect(await page.getByRole('textbox', { name: 'Embed snippet' }).inputValue()).toContain(`action="${hosted}"`)
    await shot(page, 'web-forms-builder')
    await shot(page, 'web-forms-builder', { theme: 'dark' })
    await page.getByRole('link', { name: 'All web forms' }).click()
    await page.getByRole('link', { name: 'Acme newsletter' }).waitFor()
    await shot(page, 'web-forms')
    await close()
  },
  STEP_MS,
)

test(
  'double opt-in through the hosted page: challenge solved in the mc.browser, mail read from the sink, confirm pressed, contact subscribed; the honeypot stores nothing',
  async () => {
    const forms = await mc.call('GET', '/api/v2/web-forms')
    const form = forms.body.data[0]
    const { page, context } = await openPage(mc.browser)
    // A bot: fills the hidden field too. It is told "thanks" and nothing is stored.
    await page.goto(form.hosted_url)
    await page.getByLabel('Email address').fill('bot@example.net')
    await page.getByLabel('First name').fill('Bot')
    await page.getByRole('checkbox', { name: 'Yes, send me the Acme newsletter.' }).check()
    await page.locator('input[name="website_url"]').fill('http://spam.example', { force: true })
    await page.locator('form[data-mailroom-ready]').waitFor()
    await page.getByRole('button', { name: 'Subscribe' }).click()
    await page.getByText('Check your inbox').waitFor()
    const botMail = await mc.call('GET', '/api/v2/messages?recipient=bot@example.net')
    expect(botMail.status).toBe(200)
    expect(botMail.body.meta.total).toBe(0)

    // A person: the consent box starts unchecked; the page solves its challenge, then sends.
    await page.goto(form.hosted_url)
    expect(await page.getByRole('checkbox', { name: 'Yes, send me the Acme newsletter.' }).isChecked()).toBe(false)
    await page.getByLabel('Email address').fill('ada@example.net')
    await page.getByLabel('First name').fill('Ada')
    await page.getByRole('checkbox', { name: 'Yes, send me the Acme newsletter.' }).check()
    await page.locator('form[data-mailroom-ready]').waitFor()
    await shot(page, 'web-form-hosted')
    await page.getByRole('button', { name: 'Subscribe' }).click()
    await page.getByText('Check your inbox').waitFor()
    expect((await mc.call('GET', `/api/v2/contacts?email=ada@example.net`)).body.meta.total).toBe(0)

    const [mail] = await mc.sink.waitFor(1, STEP_MS)
    expect(mail!.rcptTo).toEqual(['ada@example.net'])
    expect(mc.sink.messages.some((m) => m.rcptTo.includes('bot@example.net'))).toBe(false)
    const raw = mail!.raw.toString('utf8').replace(/=\r?\n/g, '')
    const link = /http:\/\/127\.0\.0\.1:\d+\/f\/confirm\/[A-Za-z0-9_.-]+/.exec(raw)![0]
    await page.goto(link)
    await page.getByRole('heading', { name: 'Confirm your subscription' }).waitFor()
    // Opening the link (as a scanner would) changed nothing.
    expect((await mc.call('GET', `/api/v2/contacts?email=ada@example.net`)).body.meta.total).toBe(0)
    await shot(page, 'web-form-confirm')
    await page.getByRole('button', { name: 'Confirm subscription' }).click()
    await page.getByRole('heading', { name: 'Subscription confirmed' }).waitFor()
    const contacts = await mc.call('GET', `/api/v2/contacts?email=ada@example.net`)
    expect(contacts.body.data).toHaveLength(1)
    expect(contacts.body.data[0]).toMatchObject({ list_id: listId, status: 'subscribed', first_name: 'Ada' })
    const events = await mc.call('GET', '/api/v2/events?kind=contact.confirmed')
    expect(events.body.data).toHaveLength(1)
    await context.close()
  },
  STEP_MS,
)

test(
  'accessibility: the console pages and the public pages of a form have no serious or critical axe findings',
  async () => {
    const form = (await mc.call('GET', '/api/v2/web-forms')).body.data[0]
    const pages = [
      { path: '/admin/web-forms', heading: 'Web forms' },
      { path: '/admin/web-forms/new', heading: 'New web form' },
      { path: `/admin/web-forms/${form.id}`, heading: form.name },
    ]
    const found = await accessibilityFindings(mc.server.base, pages, (theme) => mc.signedIn({ theme }))
    const { page, context } = await openPage(mc.browser)
    await page.goto(form.hosted_url)
    await page.locator('form[data-mailroom-ready]').waitFor()
    for (const v of await axeViolations(page)) found.push(`hosted page: ${v.id} (${v.impact}) ${v.help} at ${v.nodes.slice(0, 3).join(', ')}`)
    await context.close()
    expect(found).toEqual([])
  },
  STEP_MS,
)
