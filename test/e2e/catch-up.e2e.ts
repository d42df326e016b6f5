/**
 * The console catching up with issues 15, 17 and 19, in headless Chromium against the built
 * binary, delivering to a loopback SMTP sink (STARTTLS with a self-signed certificate) through
 * a loopback DNS server as in mail.e2e.ts: a message page with each recipient's TLS and bounce
 * reason; a scheduled send rescheduled and cancelled from its page; the message search by tag
 * and acceptance time; a bridge's DSN switch; the broadcast editor's pool, tags, thresholds
 * and a version with its own template and send time; the webhook event kinds from the API in
 * grouped columns; the Templates tabs with their panels; a screenshot and an axe run that
 * return while an endless animation plays. Screenshots land in docs/screenshots/.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { accessibilityFindings, axeViolations, shot, pollUntil, choose, withoutToasts } from './support/console'
import { STEP_MS, startMailConsole, type MailConsole } from './support/mail-console'

const DAY = 86_400_000

/** Polls the API until `check` holds (a failure bound, not a timing assertion). */
const until = <T>(what: string, read: () => Promise<T>, check: (v: T) => boolean) => pollUntil(what, read, check, STEP_MS)

/** An instant as the browser's datetime-local text (its own time zone, to the minute). */
function localInput(page: Page, at: number): Promise<string> {
  return page.evaluate((ms) => {
    const d = new Date(ms)
    const pad = (n: number) => String(n).padStart(2, '0')
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`
  }, at)
}

let mc: MailConsole

beforeAll(async () => {
  mc = await startMailConsole({ mail: true, hostname: 'mail.example.com', apiKey: 'e2e catch-up' })
  expect((await mc.call('POST', '/api/v2/sending-domains', { name: 'acme.test' })).status).toBe(201)
}, STEP_MS)

afterAll(() => mc?.stop())

test(
  'a message page: each recipient’s TLS and bounce reason, its screenshot and axe run returning while an endless animation plays; the search by tag and by acceptance time',
  async () => {
    const before = Date.now()
    const sent = await mc.call('POST', '/v1/emails', {
      from: 'Acme Billing <billing@acme.test>',
      to: ['ada@example.net', 'permfail@example.net'],
      subject: 'Your receipt #2048',
      html: '<p>Thanks for your order!</p>',
      tags: ['receipt'],
    })
    expect(sent.status).toBe(202)
    expect((await mc.call('POST', '/v1/emails', { from: 'billing@acme.test', to: ['grace@example.net'], subject: 'Untagged', text: 'x' })).status).toBe(202)
    const id = sent.body.data.id as string
    const done = await until(
      'the delivery outcomes',
      () => mc.call('GET', `/api/v2/messages/${id}`),
      (r) => r.body.data.recipients.every((x: { state: string }) => x.state === 'sent' || x.state === 'bounced'),
    )
    const ada = done.body.data.recipients.find((r: { address: string }) => r.address === 'ada@example.net')
    // The sink offers STARTTLS with a self-signed certificate: encrypted, not verified.
    expect(ada.tls).toMatchObject({ verified: false })
    expect(ada.tls.version).toMatch(/^TLSv1\.[23]$/)

    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/messages/${id}`)
    await page.getByRole('heading', { name: 'Your receipt #2048' }).waitFor()
    const recipients = page.locator('div.rounded-lg.border', { hasText: 'ada@example.net' }).filter({ hasText: 'Attempts' })
    await recipients.getByText(ada.tls.version, { exact: true }).waitFor()
    expect(await recipients.textContent()).toContain(ada.tls.cipher)
    expect(await recipients.textContent()).toContain('Certificate not verified')
    const bounced = page.locator('div.rounded-lg.border', { hasText: 'permfail@example.net' }).filter({ hasText: 'Attempts' })
    await bounced.getByText('The mailbox does not exist').waitFor()
    expect(await bounced.textContent()).toContain('user_unknown')
    // An endless animation (as animate-pulse is) on an element that changes nothing in the
    // picture: the axe run returns and leaves it paused; played again, the screenshots return too.
    await page.evaluate(() => {
      const el = document.createElement('div')
      el.id = 'endless'
      el.style.cssText = 'position:absolute;top:0;left:0;width:1px;height:1px;opacity:0;pointer-events:none'
      document.body.append(el)
      el.animate([{ transform: 'scale(1)' }, { transform: 'scale(1.5)' }], { duration: 1000, iterations: Infinity })
    })
    expect(await axeViolations(page)).toEqual([])
    expect(await page.evaluate(() => document.getElementById('endless')!.getAnimations()[0]!.playState)).toBe('paused')
    await page.evaluate(() => document.getElementById('endless')!.getAnimations()[0]!.play())
    await withoutToasts(page, async () => {
      await shot(page, 'message-tls', { theme: 'light', width: 1440 })
      await shot(page, 'message-tls', { theme: 'dark', width: 1440 })
    })

    // Search by tag: only the tagged message.
    await page.goto(`${mc.server.base}/admin/messages`)
    await page.getByRole('heading', { name: 'Messages', exact: true }).waitFor()
    await page.getByLabel('Tag').fill('receipt')
    await page.getByRole('button', { name: 'Search' }).click()
    await page.getByRole('link', { name: 'Your receipt #2048' }).waitFor()
    await page.getByRole('link', { name: 'Untagged' }).waitFor({ state: 'detached' })
    expect(new URL(page.url()).searchParams.get('tag')).toBe('receipt')
    await shot(page, 'messages-filters', { theme: 'light', width: 1440 })

    // A time range: an end before its start is refused beside the field, nothing searched.
    await page.getByRole('button', { name: 'Clear' }).click()
    await page.getByLabel('Accepted from').fill(await localInput(page, before + DAY))
    await page.getByLabel('Accepted before').fill(await localInput(page, before - DAY))
    await page.getByRole('button', { name: 'Search' }).click()
    await page.getByText('The end must be after the start.').waitFor()
    expect(await page.getByLabel('Accepted before').getAttribute('aria-invalid')).toBe('true')
    expect(new URL(page.url()).searchParams.get('created_after')).toBeNull()
    // Accepted before an hour ago: none of them (both were accepted within this test).
    await page.getByLabel('Accepted from').fill('')
    await page.getByLabel('Accepted before').fill(await localInput(page, before - DAY / 24))
    await page.getByRole('button', { name: 'Search' }).click()
    await page.getByText('No message matches').waitFor()
    const createdBefore = new URL(page.url()).searchParams.get('created_before')!
    expect(Math.abs(new Date(createdBefore).getTime() - (before - DAY / 24))).toBeLessThan(60_000)
    // ... and from a day ago: both.
    await page.getByLabel('Accepted before').fill('')
    await page.getByLabel('Accepted from').fill(await localInput(page, before - DAY))
    await page.getByRole('button', { name: 'Search' }).click()
    await page.getByRole('link', { name: 'Untagged' }).waitFor()
    await page.getByRole('link', { name: 'Your receipt #2048' }).waitFor()
    await close()
  },
  STEP_MS,
)

test(
  'a scheduled send: its time on the message page, rescheduled, then cancelled',
  async () => {
    const due = Date.now() + 2 * DAY
    const scheduled = await mc.call('POST', '/v1/emails', {
      from: 'Acme <news@acme.test>',
      to: ['ada@example.net', 'linus@example.net'],
      subject: 'See you on Friday',
      text: 'Friday!',
      scheduled_at: new Date(due).toISOString(),
    })
    expect(scheduled.status).toBe(202)
    expect(scheduled.body.data.status).toBe('scheduled')
    const id = scheduled.body.data.id as string

    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/messages/${id}`)
    await page.getByRole('heading', { name: 'See you on Friday' }).waitFor()
    const card = page.getByTestId('scheduled-send')
    await card.getByText('Scheduled to go out').waitFor()
    await page.locator('[data-kind="message.scheduled"]').first().waitFor()
    await withoutToasts(page, async () => {
      await shot(page, 'message-scheduled', { theme: 'light', width: 1440 })
      await shot(page, 'message-scheduled', { theme: 'dark', width: 1440 })
    })

    // Reschedule a day later (to the minute, in the browser's zone).
    const moved = due + DAY
    await card.getByRole('button', { name: 'Reschedule' }).click()
    const dialog = page.getByRole('dialog', { name: 'Reschedule this message' })
    expect(await dialog.getByLabel('Send at').inputValue()).toBe(await localInput(page, due))
    await dialog.getByLabel('Send at').fill(await localInput(page, moved))
    await shot(page, 'message-reschedule', { theme: 'light', width: 1440, fullPage: false })
    await dialog.getByRole('button', { name: 'Reschedule' }).click()
    await dialog.waitFor({ state: 'detached' })
    const after = await mc.call('GET', `/api/v2/messages/${id}`)
    expect(after.body.data.status).toBe('scheduled')
    expect(Math.floor(new Date(after.body.data.scheduled_at).getTime() / 60_000)).toBe(Math.floor(moved / 60_000))

    // A time more than 30 days ahead is refused beside the field.
    await card.getByRole('button', { name: 'Reschedule' }).click()
    await dialog.getByLabel('Send at').fill(await localInput(page, Date.now() + 40 * DAY))
    await dialog.getByRole('button', { name: 'Reschedule' }).click()
    await dialog.getByRole('alert').waitFor()
    expect(await dialog.getByLabel('Send at').getAttribute('aria-invalid')).toBe('true')
    await dialog.getByRole('button', { name: 'Cancel' }).click()

    // Cancel: asked first, then nothing is sent.
    await card.getByRole('button', { name: 'Cancel send' }).click()
    const confirm = page.getByRole('alertdialog', { name: 'Cancel this scheduled send?' })
    await confirm.getByText('None of its 2 recipients will get it.').waitFor()
    await confirm.getByRole('button', { name: 'Cancel send' }).click()
    await card.waitFor({ state: 'detached' })
    await page.locator('[data-kind="message.canceled"]').first().waitFor()
    const canceled = await mc.call('GET', `/api/v2/messages/${id}`)
    expect(canceled.body.data.status).toBe('canceled')
    expect(canceled.body.data.recipients.map((r: { state: string }) => r.state)).toEqual(['canceled', 'canceled'])
    expect(mc.sink.messages.some((m) => m.raw.toString().includes('See you on Friday'))).toBe(false)
    await close()
  },
  STEP_MS,
)

test(
  'a bridge: "Send bounce reports" (send_dsn) shown and set, on by default',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/sending/bridges`)
    await page.getByRole('heading', { name: 'Bridges', exact: true }).waitFor()
    await page.getByRole('button', { name: 'Create bridge' }).first().click()
    const dialog = page.getByRole('dialog')
    await dialog.getByLabel('Name').fill('shop')
    await dialog.getByRole('checkbox', { name: 'acme.test' }).click()
    const dsn = dialog.getByRole('switch', { name: 'Send bounce reports' })
    expect(await dsn.getAttribute('aria-checked')).toBe('true')
    await dsn.click()
    await dialog.getByRole('button', { name: 'Create bridge' }).click()
    await page.getByRole('dialog', { name: 'Credentials of shop' }).getByRole('button', { name: 'I have stored them' }).click()
    await page.getByRole('cell', { name: /^shop/ }).getByText('No bounce reports').waitFor()
    const listed = (await mc.call('GET', '/api/v2/bridges')).body.data
    expect(listed.map((b: { name: string; send_dsn: boolean }) => [b.name, b.send_dsn])).toEqual([['shop', false]])

    // Edit: the form shows it off; switched on again and saved.
    await page.getByRole('button', { name: 'Actions for shop' }).click()
    await page.getByRole('menuitem', { name: 'Edit' }).click()
    const edit = page.getByRole('dialog', { name: 'Edit shop' })
    const again = edit.getByRole('switch', { name: 'Send bounce reports' })
    expect(await again.getAttribute('aria-checked')).toBe('false')
    await edit.getByText('delivery status notification (RFC 3464)').scrollIntoViewIfNeeded()
    await shot(page, 'sending-bridge-form', { theme: 'light', width: 1440, fullPage: false })
    await again.click()
    await edit.getByRole('button', { name: 'Save' }).click()
    await edit.waitFor({ state: 'detached' })
    await page.getByText('No bounce reports').waitFor({ state: 'detached' })
    expect((await mc.call('GET', '/api/v2/bridges')).body.data[0].send_dsn).toBe(true)
    await close()
  },
  STEP_MS,
)

test(
  'the broadcast editor: IP pool, tags, bounce and complaint thresholds; a version with its own template and send time',
  async () => {
    const pool = await mc.call('POST', '/api/v2/ip-pools', { name: 'marketing' })
    expect(pool.status).toBe(201)
    const template = await mc.call('POST', '/api/v2/templates', { name: 'Autumn layout', subject: 'Autumn', html: '<p>Autumn news</p>', text: 'Autumn news' })
    expect(template.status).toBe(201)
    const list = await mc.call('POST', '/api/v2/lists', { name: 'Readers' })
    expect(list.status).toBe(201)

    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/broadcasts/new`)
    await page.getByRole('heading', { name: 'New broadcast' }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Autumn letter')
    await page.getByLabel('Local part').fill('news')
    await choose(page, 'Sending domain', 'acme.test (not verified)')
    await page.getByLabel('Subject').fill('Autumn at Acme')
    await page.getByLabel('HTML', { exact: true }).fill('<p>Hello</p>')
    await page.getByRole('group', { name: 'Lists', exact: true }).getByLabel('Readers').check()
    await choose(page, 'IP pool', 'marketing')
    await page.getByLabel('Tags').fill('newsletter, autumn, newsletter')
    await page.getByLabel('Bounce rate (%)').fill('2')
    await page.getByLabel('Complaint rate (%)').fill('0.1')
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.waitForURL(/\/broadcasts\/\d+\/edit$/)
    const id = Number(new URL(page.url()).pathname.split('/').at(-2))
    const saved = (await mc.call('GET', `/api/v2/broadcasts/${id}`)).body.data
    expect(saved).toMatchObject({ pool_id: pool.body.data.id, tags: ['newsletter', 'autumn'], max_bounce_rate: 0.02, max_complaint_rate: 0.001 })

    // A threshold over 100 % is stopped by the field itself: nothing is saved.
    const bounceField = page.getByLabel('Bounce rate (%)')
    await bounceField.fill('250')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    expect(await bounceField.evaluate((el) => (el as HTMLInputElement).validity.rangeOverflow)).toBe(true)
    expect((await mc.call('GET', `/api/v2/broadcasts/${id}`)).body.data.max_bounce_rate).toBe(0.02)
    await bounceField.fill('2')

    // A version with the template and a later send time.
    const sendAt = Date.now() + 3 * DAY
    await page.getByRole('button', { name: 'Add version' }).click()
    const dialog = page.getByRole('dialog', { name: 'New version' })
    await dialog.getByLabel('Name', { exact: true }).fill('Template B')
    await choose(page, 'Version template', 'Autumn layout')
    await dialog.getByLabel('Send at').fill(await localInput(page, sendAt))
    await withoutToasts(page, () => shot(page, 'broadcast-version', { theme: 'light', width: 1440, fullPage: false }))
    await dialog.getByRole('button', { name: 'Add version' }).click()
    await dialog.waitFor({ state: 'detached' })
    const versions = (await mc.call('GET', `/api/v2/broadcasts/${id}/versions`)).body.data
    expect(versions).toHaveLength(1)
    expect(versions[0].template_id).toBe(template.body.data.id)
    expect(Math.floor(new Date(versions[0].send_at).getTime() / 60_000)).toBe(Math.floor(sendAt / 60_000))
    await page.getByText('the broadcast’s subject · Autumn layout · sends').waitFor()

    // Reopened, the form shows what was saved.
    await page.reload()
    await page.getByRole('heading', { name: 'Autumn letter' }).waitFor()
    expect(await page.getByLabel('Tags').inputValue()).toBe('newsletter, autumn')
    expect(await page.getByLabel('Bounce rate (%)').inputValue()).toBe('2')
    expect(await page.getByLabel('Complaint rate (%)').inputValue()).toBe('0.1')
    expect(await page.getByRole('combobox', { name: 'IP pool' }).textContent()).toBe('marketing')
    await withoutToasts(page, async () => {
      await shot(page, 'broadcast-editor-sending', { theme: 'light', width: 1440 })
      await shot(page, 'broadcast-editor-sending', { theme: 'dark', width: 1440 })
    })
    await close()
  },
  STEP_MS,
)

test(
  'webhook event kinds: every kind the API lists, in grouped columns with a checkbox per group, nothing overflowing',
  async () => {
    const kinds = (await mc.call('GET', '/api/v2/webhooks/event-kinds')).body.data as Array<{ kind: string }>
    expect(kinds.length).toBeGreaterThan(25)
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/webhooks`)
    await page.getByRole('button', { name: 'New webhook' }).first().click()
    const dialog = page.getByRole('dialog')
    const groups = dialog.getByTestId('event-groups')
    await groups.getByText('message.canceled', { exact: true }).waitFor()
    for (const k of kinds) expect(await groups.getByRole('checkbox', { name: new RegExp(`^${k.kind.replace('.', '\\.')} `) }).count()).toBe(1)
    // A new webhook starts with message.sent and message.bounced: its group is "some".
    await dialog.getByTestId('events-chosen').getByText(`(2 of ${kinds.length})`).waitFor()
    const group = dialog.getByRole('checkbox', { name: 'All Messages events' })
    expect(await group.getAttribute('aria-checked')).toBe('mixed')

    // A group's checkbox takes all of it; one kind less makes it "some" again.
    const messageKinds = kinds.filter((k) => k.kind.startsWith('message.')).length
    await group.click()
    expect(await group.getAttribute('aria-checked')).toBe('true')
    await dialog.getByTestId('events-chosen').getByText(`(${messageKinds} of ${kinds.length})`).waitFor()
    await dialog.getByRole('checkbox', { name: /^message\.delayed / }).click()
    expect(await group.getAttribute('aria-checked')).toBe('mixed')

    // Two columns in the dialog, and no text wider than its box.
    const layout = await groups.evaluate((el) => ({
      columns: new Set([...el.children].map((c) => Math.round(c.getBoundingClientRect().left))).size,
      overflowing: [...el.querySelectorAll('*')].filter((c) => c.scrollWidth > c.clientWidth + 1 && getComputedStyle(c).overflowX === 'visible').length,
      wider: el.scrollWidth > el.clientWidth + 1,
    }))
    expect(layout).toEqual({ columns: 2, overflowing: 0, wider: false })
    await shot(page, 'webhook-events', { theme: 'light', width: 1440, fullPage: false })
    await shot(page, 'webhook-events', { theme: 'dark', width: 1440, fullPage: false })
    await close()
  },
  STEP_MS,
)

test(
  'the Templates page: each tab controls a panel, and the changed pages pass axe-core in light and dark',
  async () => {
    expect((await mc.call('POST', '/api/v2/spin-tags', { name: 'greeting', alternatives: ['Hello', 'Hi'] })).status).toBe(201)
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/templates`)
    await page.getByRole('heading', { name: 'Templates', exact: true }).waitFor()
    for (const name of ['Templates', 'Spin tags']) {
      const controls = await page.getByRole('tab', { name }).getAttribute('aria-controls')
      expect(controls).toBeTruthy()
      expect(await page.locator(`[id="${controls}"]`).count()).toBe(1)
    }
    await page.getByRole('tabpanel', { name: 'Templates' }).getByRole('link', { name: 'Autumn layout' }).waitFor()
    await page.getByRole('tab', { name: 'Spin tags' }).click()
    await page.getByRole('tabpanel', { name: 'Spin tags' }).getByText('greeting').first().waitFor()
    await close()

    const message = (await mc.call('GET', '/api/v2/messages?tag=receipt')).body.data[0].id as string
    const template = (await mc.call('GET', '/api/v2/templates')).body.data[0].id as number
    const broadcast = (await mc.call('GET', '/api/v2/broadcasts')).body.data[0].id as number
    const pages = [
      { path: '/admin/templates', heading: 'Templates' },
      { path: '/admin/templates?tab=spin-tags', heading: 'Templates' },
      { path: `/admin/templates/${template}`, heading: 'Autumn layout' },
      { path: '/admin/messages?tag=receipt', heading: 'Messages' },
      { path: `/admin/messages/${message}`, heading: 'Your receipt #2048' },
      { path: '/admin/sending/bridges', heading: 'Bridges' },
      { path: `/admin/broadcasts/${broadcast}/edit`, heading: 'Autumn letter' },
    ]
    const found = await accessibilityFindings(mc.server.base, pages, (theme) => mc.signedIn({ theme }))
    expect(found).toEqual([])
  },
  STEP_MS,
)
