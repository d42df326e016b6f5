/**
 * The Broadcasts pages in headless Chromium against the built binary (issue 15 "UI"): a
 * broadcast created through the editor (from on a sending domain, inline content, a list as
 * the audience with its live count, a version), scheduled after the confirmation that shows
 * the count, watched until it is sent (every subscribed reader once, at the loopback sink),
 * its results and recipients; another paused and resumed while sending; the list's status
 * filter, duplicate and bulk delete,
 * and every page checked with axe-core. The server delivers to a loopback SMTP sink through
 * a loopback DNS server, as in mail.e2e.ts. Screenshots land in docs/screenshots/.
 */
import type { Database } from 'bun:sqlite'
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { accessibilityFindings, shot, choose } from './support/console'
import { STEP_MS, startMailConsole, type MailConsole } from './support/mail-console'

const HOUR = 3_600_000
const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Radia', 'Linus']

/** Subscribed readers on "Readers" (30, of whom 3 unsubscribed) and "Staff" (5), all at example.net. */
const READERS = 27
function seedAudience(db: Database, now: number): void {
  db.transaction(() => {
    const list = db.prepare('INSERT INTO lists (name, description, created_at, updated_at) VALUES (?, ?, ?, ?)')
    list.run('Readers', 'Monthly letter', now - 30 * 24 * HOUR, now - 30 * 24 * HOUR)
    list.run('Staff', 'Colleagues', now - 20 * 24 * HOUR, now - 20 * 24 * HOUR)
    const contact = db.prepare(
      "INSERT INTO contacts (list_id, email, first_name, last_name, status, fields, created_at, updated_at) VALUES (?, ?, ?, 'Reader', ?, '{}', ?, ?)",
    )
    const counts = new Map<string, number>()
    const add = (listId: number, email: string, first: string, status: string) => {
      contact.run(listId, email, first, status, now - HOUR, now - HOUR)
      counts.set(`${listId}:${status}`, (counts.get(`${listId}:${status}`) ?? 0) + 1)
    }
    for (let i = 1; i <= 30; i++) add(1, `reader${i}@example.net`, FIRST[i % FIRST.length]!, i % 10 === 0 ? 'unsubscribed' : 'subscribed')
    for (let i = 1; i <= 5; i++) add(2, `staff${i}@example.net`, FIRST[i]!, 'subscribed')
    const count = db.prepare('INSERT INTO contact_counts (list_id, status, n) VALUES (?, ?, ?)')
    for (const [k, n] of counts) {
      const [listId, status] = k.split(':')
      count.run(Number(listId), status!, n)
    }
  })()
}

let mc: MailConsole

beforeAll(async () => {
  mc = await startMailConsole({ seed: seedAudience, mail: true, hostname: 'mail.example.com', apiKey: 'e2e broadcasts' })
  const domain = await mc.call('POST', '/api/v2/sending-domains', { name: 'news.example.com' })
  expect(domain.status).toBe(201)
}, STEP_MS)

afterAll(() => mc?.stop())

/** Waits for the status badge of the page to read `status`. */
async function statusIs(page: Page, status: string): Promise<void> {
  await page
    .getByTestId('broadcast-status')
    .filter({ hasText: new RegExp(`^${status}$`) })
    .first()
    .waitFor()
}

let created: number

test(
  'create a broadcast in the editor: from, content, a list with its live count, a version; schedule it after the confirmation',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.getByRole('link', { name: 'Broadcasts' }).first().click()
    await page.getByRole('heading', { name: 'No broadcasts yet' }).waitFor()
    await shot(page, 'broadcasts-empty', { theme: 'light' })
    await page.getByRole('button', { name: 'New broadcast' }).first().click()
    await page.getByRole('heading', { name: 'New broadcast' }).waitFor()

    await page.getByLabel('Name', { exact: true }).fill('November letter')
    await page.getByLabel('Sender name').fill('Acme News')
    await page.getByLabel('Local part').fill('letters')
    await choose(page, 'Sending domain', 'news.example.com (not verified)')
    await page.getByText('Sent as Acme News <letters@news.example.com>').waitFor()
    await page.getByLabel('Subject').fill('Hello {{first_name}}')
    await page.getByLabel('HTML', { exact: true }).fill('<p>Hi {{first_name}}, <a href="https://acme.example/news">the news</a>.</p>')
    await page.getByLabel('Text', { exact: true }).fill('Hi {{first_name}}, the news: https://acme.example/news')

    // The live count: 27 subscribed readers, then 32 with the staff, then 27 again with staff left out.
    await page.getByRole('group', { name: 'Lists', exact: true }).getByLabel('Readers').check()
    await page.getByTestId('audience-count').getByText(`${READERS} recipients now`).waitFor()
    await page.getByRole('group', { name: 'Lists', exact: true }).getByLabel('Staff').check()
    await page
      .getByTestId('audience-count')
      .getByText(`${READERS + 5} recipients now`)
      .waitFor()
    await page.getByRole('group', { name: 'Leave out lists' }).getByLabel('Staff').check()
    await page.getByTestId('audience-count').getByText(`${READERS} recipients now`).waitFor()

    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.waitForURL(/\/admin\/broadcasts\/\d+\/edit$/)
    created = Number(/broadcasts\/(\d+)\/edit/.exec(page.url())![1])
    await page.getByRole('heading', { name: 'November letter' }).waitFor()
    const saved = await mc.call('GET', `/api/v2/broadcasts/${created}`)
    expect(saved.body.data).toMatchObject({
      status: 'draft',
      from: 'Acme News <letters@news.example.com>',
      subject: 'Hello {{first_name}}',
      list_ids: [1, 2],
      exclude_list_ids: [2],
      track_opens: true,
    })

    // A version with its own subject.
    await page.getByRole('button', { name: 'Add version' }).click()
    await page.getByLabel('Name', { exact: true }).last().fill('Short subject')
    await page.getByLabel('Version subject').fill('News, {{first_name}}')
    await page.getByRole('button', { name: 'Add version', exact: true }).last().click()
    await page.getByText('Short subject').waitFor()
    const versions = await mc.call('GET', `/api/v2/broadcasts/${created}/versions`)
    expect(versions.body.data.map((v: { subject: string }) => v.subject)).toEqual(['News, {{first_name}}'])

    // A test copy, not counted.
    await page.getByRole('button', { name: 'Send test' }).click()
    await page.getByLabel('To', { exact: true }).fill('tester@example.net')
    await page.getByRole('button', { name: 'Send test' }).last().click()
    await page.getByText('Test sent').waitFor()
    const test = await mc.sink.waitFor(1, STEP_MS)
    expect(test[0]!.rcptTo).toEqual(['tester@example.net'])

    // A server-side problem lands beside its field: an unknown time zone.
    await page.getByLabel('Time zone').fill('Mars/Olympus')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await page.getByText('Mars/Olympus is not an IANA time zone').waitFor()
    await page.getByLabel('Time zone').fill('Europe/Paris')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await page.getByText('Broadcast saved').first().waitFor()
    // The toasts gone before the screenshots.
    await page.locator('[data-sonner-toast]').first().waitFor({ state: 'detached' })
    await shot(page, 'broadcast-editor', { theme: 'light' })
    await shot(page, 'broadcast-editor', { theme: 'dark' })

    // Schedule: the confirmation names the count, and "now" starts it.
    await page.getByRole('button', { name: 'Schedule…' }).click()
    await page.getByTestId('schedule-count').getByText(String(READERS)).waitFor()
    await shot(page, 'broadcast-schedule', { theme: 'light', fullPage: false })
    await page.getByRole('button', { name: 'Send now' }).click()
    await page.waitForURL(new RegExp(`/admin/broadcasts/${created}$`))
    await page.getByRole('heading', { name: 'November letter' }).waitFor()
    expect((await mc.call('GET', `/api/v2/broadcasts/${created}`)).body.data.timezone).toBe('Europe/Paris')
    expect((await mc.call('GET', `/api/v2/broadcasts/${created}`)).body.data.counts.total).toBeLessThanOrEqual(READERS)

    // Watch it finish: the page polls the record until the engine says sent.
    await statusIs(page, 'sent')
    await page.getByTestId('progress-summary').getByText(`${READERS} of ${READERS} done (100%).`).waitFor()
    const mail = await mc.sink.waitFor(READERS + 1, STEP_MS)
    const letters = mail.filter((m) => !m.rcptTo.includes('tester@example.net'))
    // Every subscribed reader exactly once, none of the staff (left out), personalized.
    expect(letters.flatMap((m) => m.rcptTo).sort()).toEqual(
      Array.from({ length: 30 }, (_, i) => i + 1)
        .filter((i) => i % 10 !== 0)
        .map((i) => `reader${i}@example.net`)
        .sort(),
    )
    const one = letters.find((m) => m.rcptTo[0] === 'reader1@example.net')!.raw.toString()
    expect(one).toContain('Grace')

    // Results: per version and in total, with the sent count.
    const results = page.getByTestId('results-table')
    await results.getByRole('row', { name: /Short subject/ }).waitFor()
    // The whole audience sent, in the totals row (read again as the record moves).
    await results
      .locator('tr', { hasText: 'All versions' })
      .locator('td:nth-child(2)', { hasText: new RegExp(`^${READERS}$`) })
      .waitFor()
    await shot(page, 'broadcast-results', { theme: 'light' })
    await shot(page, 'broadcast-results', { theme: 'dark' })

    // Recipients: filtered by state, each linked to its message.
    await page.getByRole('tab', { name: 'Recipients' }).click()
    await choose(page, 'State', 'Sent')
    await page.getByRole('cell', { name: 'reader1@example.net', exact: true }).waitFor()
    expect(new URL(page.url()).searchParams.get('state')).toBe('sent')
    await shot(page, 'broadcast-recipients', { theme: 'light' })
    await page.getByRole('link', { name: 'Message to reader1@example.net' }).click()
    await page.waitForURL(/\/admin\/messages\/[^/]+$/)
    await page.getByText('reader1@example.net').first().waitFor()
    await close()
  },
  STEP_MS,
)

test(
  'pause while sending and resume: the live view follows, the reason shows while paused, every recipient gets it once',
  async () => {
    // 60 a minute: one a second, long enough to watch and to pause in the middle.
    const b = await mc.call('POST', '/api/v2/broadcasts', {
      name: 'Winter sale',
      from: 'Acme <sale@news.example.com>',
      subject: 'Winter sale',
      text: 'Everything must go, {{first_name}}.',
      list_ids: [1],
      send_rate_per_minute: 60,
    })
    expect(b.status).toBe(201)
    const id = b.body.data.id as number
    expect((await mc.call('POST', `/api/v2/broadcasts/${id}/schedule`, {})).status).toBe(200)

    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/broadcasts/${id}`)
    await page.getByRole('heading', { name: 'Winter sale' }).waitFor()
    await statusIs(page, 'sending')
    // A few out, the chart of sent over time drawn from the polled counts.
    await page.getByRole('img', { name: 'Messages sent over time' }).waitFor()
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="broadcast-counts"] div:nth-child(3) dd')?.textContent) >= 3)
    await shot(page, 'broadcast-progress', { theme: 'light' })
    await page.getByRole('button', { name: 'Pause' }).click()
    await statusIs(page, 'paused')
    expect(await page.getByTestId('status-reason').textContent()).toContain('paused by')
    const paused = (await mc.call('GET', `/api/v2/broadcasts/${id}`)).body.data
    expect(paused.status).toBe('paused')
    expect(paused.counts.pending).toBeGreaterThan(0)
    await shot(page, 'broadcast-paused', { theme: 'dark' })

    await page.getByRole('button', { name: 'Resume' }).click()
    await page.getByTestId('status-reason').waitFor({ state: 'detached' })
    await statusIs(page, 'sent')
    const sale = mc.sink.messages.filter((m) => m.raw.toString().includes('Subject: Winter sale'))
    expect(sale.length).toBe(READERS)
    expect(new Set(sale.flatMap((m) => m.rcptTo)).size).toBe(READERS)
    const done = (await mc.call('GET', `/api/v2/broadcasts/${id}`)).body.data
    expect(done.counts).toMatchObject({ total: READERS, pending: 0, sent: READERS })

    // A future one: cancelled from the list's row menu after a confirmation.
    const later = await mc.call('POST', '/api/v2/broadcasts', {
      name: 'Spring sale',
      from: 'sale@news.example.com',
      subject: 'Spring',
      text: 'Soon',
      list_ids: [1],
    })
    expect(
      (await mc.call('POST', `/api/v2/broadcasts/${later.body.data.id}/schedule`, { send_at: new Date(Date.now() + 24 * HOUR).toISOString() })).status,
    ).toBe(200)
    await page.goto(`${mc.server.base}/admin/broadcasts`)
    await page.getByRole('button', { name: 'Actions for Spring sale' }).click()
    await page.getByRole('menuitem', { name: 'Cancel' }).click()
    await page.getByRole('button', { name: 'Cancel broadcast' }).click()
    await page.getByText('Broadcast cancelled').waitFor()
    expect((await mc.call('GET', `/api/v2/broadcasts/${later.body.data.id}`)).body.data.status).toBe('cancelled')
    await close()
  },
  STEP_MS,
)

test(
  'the list: status filter, duplicate, bulk delete',
  async () => {
    for (const name of ['Draft one', 'Draft two']) {
      const r = await mc.call('POST', '/api/v2/broadcasts', { name, from: 'news@news.example.com', subject: name, text: 'x', list_ids: [2] })
      expect(r.status).toBe(201)
    }
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/broadcasts`)
    await page.getByRole('link', { name: 'Draft two' }).waitFor()
    await shot(page, 'broadcasts', { theme: 'light' })
    await shot(page, 'broadcasts', { theme: 'dark' })
    await choose(page, 'Status', 'Cancelled')
    await page.getByRole('link', { name: 'Spring sale' }).waitFor()
    await page.getByRole('link', { name: 'Draft two' }).waitFor({ state: 'detached' })
    expect(new URL(page.url()).searchParams.get('status')).toBe('cancelled')
    await page.getByRole('button', { name: 'Clear filter' }).click()

    await page.getByRole('button', { name: 'Actions for Draft one' }).click()
    await page.getByRole('menuitem', { name: 'Duplicate' }).click()
    await page.getByRole('heading', { name: 'Draft one (copy)' }).waitFor()
    await page.goto(`${mc.server.base}/admin/broadcasts`)
    await page.getByLabel('Select Draft one', { exact: true }).check()
    await page.getByLabel('Select Draft two').check()
    await page.getByLabel('Select Draft one (copy)').check()
    await page.getByRole('button', { name: 'Delete 3 selected' }).click()
    await page.getByRole('button', { name: 'Delete', exact: true }).click()
    await page.getByText('3 broadcasts deleted').waitFor()
    await page.getByRole('link', { name: 'Draft two' }).waitFor({ state: 'detached' })
    const left = await mc.call('GET', '/api/v2/broadcasts?status=draft')
    expect(left.body.meta.total).toBe(0)
    await close()
  },
  STEP_MS,
)

test(
  'the broadcast pages have no serious or critical accessibility violations (axe-core), light and dark',
  async () => {
    const pages = [
      { path: '/admin/broadcasts', heading: 'Broadcasts' },
      { path: '/admin/broadcasts/new', heading: 'New broadcast' },
      { path: `/admin/broadcasts/${created}/edit`, heading: 'November letter' },
      { path: `/admin/broadcasts/${created}`, heading: 'November letter' },
      { path: `/admin/broadcasts/${created}?tab=recipients`, heading: 'November letter' },
    ]
    const found = await accessibilityFindings(mc.server.base, pages, (theme) => mc.signedIn({ theme }))
    expect(found).toEqual([])
  },
  STEP_MS * 2,
)
