/**
 * The Audience pages in headless Chromium against the built binary: lists, contacts (edit a
 * contact's custom field), custom fields, a CSV import of 50,000 rows followed by its
 * progress bar to the end and its failed rows downloaded, a segment whose live count moves
 * as the rules change, and suppressions pasted in, found and removed. Screenshots of every
 * page land in docs/screenshots/ (`npm run test:e2e`).
 */
import type { Database } from 'bun:sqlite'
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import type { Page } from 'playwright-core'
import { accessibilityFindings, axeViolations, shot, choose } from './support/console'
import { STEP_MS, startMailConsole, type MailConsole } from './support/mail-console'

const HOUR = 3_600_000

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Radia', 'Linus', 'Frances', 'John']
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Perlman', 'Torvalds', 'Allen', 'McCarthy']
const PLANS = ['free', 'pro', 'team']

/**
 * Two lists, two custom fields (plan: one_of, company: text) and 300 contacts; contact 1 is
 * ada@example.com on the free plan. Written as the API's writer would, contact_counts included.
 */
function seedAudience(db: Database, now: number): void {
  db.transaction(() => {
    const list = db.prepare('INSERT INTO lists (name, description, created_at, updated_at) VALUES (?, ?, ?, ?)')
    list.run('Newsletter', 'The monthly product letter', now - 90 * 24 * HOUR, now - 90 * 24 * HOUR)
    list.run('Customers', 'Everyone with an account', now - 60 * 24 * HOUR, now - 60 * 24 * HOUR)
    const field = db.prepare(
      'INSERT INTO custom_fields (key, name, type, options, required, default_value, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    )
    field.run('plan', 'Plan', 'one_of', JSON.stringify(PLANS), 0, null, now, now)
    field.run('company', 'Company', 'text', '[]', 0, null, now, now)
    const contact = db.prepare(
      'INSERT INTO contacts (list_id, email, first_name, last_name, status, fields, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    )
    const counts = new Map<string, number>()
    for (let i = 1; i <= 300; i++) {
      const listId = i <= 240 ? 1 : 2
      const first = i === 1 ? 'Ada' : FIRST[i % FIRST.length]!
      const last = i === 1 ? 'Lovelace' : LAST[(i * 7) % LAST.length]!
      const email = i === 1 ? 'ada@example.com' : `${first}.${last}${i}@example.com`.toLowerCase()
      const status = i === 1 ? 'subscribed' : i % 11 === 0 ? 'unsubscribed' : i % 29 === 0 ? 'bounced' : i % 37 === 0 ? 'unconfirmed' : 'subscribed'
      const fields = { plan: i === 1 ? 'free' : PLANS[i % 3]!, ...(i % 4 ? { company: `${last} & Co` } : {}) }
      contact.run(listId, email, first, last, status, JSON.stringify(fields), now - i * HOUR, now - i * HOUR)
      counts.set(`${listId}:${status}`, (counts.get(`${listId}:${status}`) ?? 0) + 1)
    }
    const count = db.prepare('INSERT INTO contact_counts (list_id, status, n) VALUES (?, ?, ?)')
    for (const [k, n] of counts) {
      const [listId, status] = k.split(':')
      count.run(Number(listId), status!, n)
    }
    const suppression = db.prepare(
      "INSERT INTO suppressions (scope, scope_key, list_id, type, value, reason, created_at) VALUES ('global', 'global', NULL, ?, ?, ?, ?)",
    )
    suppression.run('email', 'bounced.hard@example.net', 'hard_bounce', now - 5 * HOUR)
    suppression.run('email', 'angry.reader@example.org', 'complaint', now - 4 * HOUR)
    suppression.run('domain', 'spamtrap.example', 'manual', now - 3 * HOUR)
  })()
}

let mc: MailConsole

beforeAll(async () => {
  mc = await startMailConsole({ seed: seedAudience })
}, STEP_MS)

afterAll(() => mc?.stop())

test(
  'lists: contacts counted by status; create and rename a list',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/audience/lists`)
    const newsletter = page.getByRole('row', { name: /Newsletter/ })
    await newsletter.waitFor()
    // 240 contacts on the newsletter, as seeded.
    expect(await newsletter.getByRole('cell').nth(5).textContent()).toBe('240')
    await page.getByRole('button', { name: 'New list' }).click()
    await page.getByLabel('Name', { exact: true }).fill('Spring launch')
    await page.getByRole('button', { name: 'Create list' }).click()
    await page.getByRole('row', { name: /Spring launch/ }).waitFor()
    await page.getByRole('button', { name: 'Actions for Spring launch' }).click()
    await page.getByRole('menuitem', { name: 'Rename' }).click()
    await page.getByLabel('Name', { exact: true }).fill('Spring launch 2026')
    await page.getByLabel('Description').fill('Early-access sign-ups')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('row', { name: /Spring launch 2026/ }).waitFor()
    await shot(page, 'lists', { theme: 'light' })
    await shot(page, 'lists', { theme: 'dark' })
    await close()
  },
  STEP_MS,
)

test(
  "contacts: search, filter by a custom field, and edit a contact's custom field in its sheet",
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/audience/contacts`)
    await page.getByRole('button', { name: 'ada@example.com' }).waitFor()
    await shot(page, 'contacts', { theme: 'light' })
    await shot(page, 'contacts', { theme: 'dark' })

    await page.getByLabel('Search by email').fill('ada@')
    await page.waitForURL(/search=ada%40/)
    await page.getByText('1–1 of 1').waitFor()
    await page.getByRole('button', { name: 'ada@example.com' }).click()
    const sheet = page.getByRole('dialog')
    await sheet.getByRole('heading', { name: 'ada@example.com' }).waitFor()
    await choose(page, /^Plan/, 'team')
    await sheet.getByLabel(/^Company/).fill('Analytical Engines Ltd')
    await shot(page, 'contact-sheet', { theme: 'light', fullPage: false })
    await sheet.getByRole('button', { name: 'Save changes' }).click()
    await page.getByText('ada@example.com saved').waitFor()
    await sheet.waitFor({ state: 'detached' })

    // The custom field filter finds her by the new value.
    await page.getByLabel('Search by email').fill('')
    await page.waitForURL((u) => !u.searchParams.has('search'))
    await choose(page, 'Custom field', 'Plan')
    await choose(page, 'Plan is', 'team')
    await page.waitForURL(/field_value=team/)
    await page.getByLabel('Search by email').fill('ada')
    await page.getByRole('button', { name: 'ada@example.com' }).waitFor()
    await page.getByText('1–1 of 1').waitFor()
    const saved = await page.evaluate(async () => {
      const r = await fetch('/api/v2/contacts?email=ada@example.com')
      return ((await r.json()) as { data: Array<{ fields: Record<string, unknown> }> }).data[0]!.fields
    })
    expect(saved).toEqual({ plan: 'team', company: 'Analytical Engines Ltd' })
    await close()

    const phone = await mc.signedIn({ width: 375 })
    await phone.page.goto(`${mc.server.base}/admin/audience/contacts`)
    await phone.page.getByRole('button', { name: 'ada@example.com' }).waitFor()
    await shot(phone.page, 'contacts', { theme: 'light', width: 375 })
    await shot(phone.page, 'contacts', { theme: 'dark', width: 375 })
    await phone.page.getByRole('button', { name: 'ada@example.com' }).click()
    await phone.page.getByRole('dialog').getByRole('heading', { name: 'ada@example.com' }).waitFor()
    await shot(phone.page, 'contact-sheet', { theme: 'light', width: 375, fullPage: false })
    await phone.close()
  },
  STEP_MS,
)

test(
  'custom fields: create a one_of field with options',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/audience/custom-fields`)
    await page.getByRole('row', { name: /Plan/ }).waitFor()
    await page.getByRole('button', { name: 'New field' }).click()
    await page.getByLabel('Name').fill('Signup source')
    expect(await page.getByLabel('Key').inputValue()).toBe('signup_source')
    await choose(page, 'Type', 'One of a list')
    await page.getByLabel('Options').fill('website\nevent\nreferral')
    await page.getByRole('button', { name: 'Create field' }).click()
    await page.getByRole('row', { name: /Signup source/ }).waitFor()
    expect(await page.getByRole('row', { name: /Signup source/ }).textContent()).toContain('website, event, referral')
    await shot(page, 'custom-fields', { theme: 'light' })
    await shot(page, 'custom-fields', { theme: 'dark' })
    await close()
  },
  STEP_MS,
)

test(
  'import a CSV and watch the progress bar finish; the failed rows download',
  async () => {
    const { page, close } = await mc.signedIn()
    const rows = ['email,first_name,last_name,plan']
    for (let i = 0; i < 50_000; i++) rows.push(`reader${i}@import.example,Reader,${i},${PLANS[i % 3]}`)
    const invalid = ['not-an-address,Bad,Row,free', 'someone@import.example,Bad,Plan,platinum', 'no-at-sign.example,Bad,Row,pro']
    rows.splice(5_000, 0, invalid[0]!)
    rows.splice(32_000, 0, invalid[1]!)
    rows.push(invalid[2]!)
    const csv = rows.join('\n') + '\n'

    await page.goto(`${mc.server.base}/admin/audience/imports`)
    await page.getByRole('heading', { name: 'Import a file' }).waitFor()
    await choose(page, 'List', 'Customers')
    await page.getByLabel('File').setInputFiles({ name: 'readers.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) })
    // The columns were read from the header and matched by name.
    await page.getByRole('combobox', { name: 'Email (required)' }).getByText('email').waitFor()
    // Drips are started by default; this import leaves them alone.
    const enroll = page.getByRole('checkbox', { name: /Start the list’s drips/ })
    expect(await enroll.getAttribute('aria-checked')).toBe('true')
    await enroll.click()
    expect(await enroll.getAttribute('aria-checked')).toBe('false')
    await shot(page, 'imports-new', { theme: 'light' })
    // Every value the bar shows, recorded in the page as it changes.
    await page.evaluate(() => {
      const seen: number[] = []
      ;(window as unknown as { progressSeen: number[] }).progressSeen = seen
      const record = () => {
        const bar = document.querySelector('[role=progressbar]')
        const v = bar?.getAttribute('aria-valuenow')
        if (v != null && seen[seen.length - 1] !== Number(v)) seen.push(Number(v))
      }
      new MutationObserver(record).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['aria-valuenow'] })
    })
    await page.getByRole('button', { name: 'Start import' }).click()
    await page.getByRole('progressbar').waitFor()
    await page.getByText('Import finished').waitFor({ timeout: STEP_MS })
    const seen = await page.evaluate(() => (window as unknown as { progressSeen: number[] }).progressSeen)
    console.log(`progress values seen: ${seen.join(', ')}`)
    expect(seen[0]).toBeLessThan(100)
    expect(seen[seen.length - 1]).toBe(100)
    expect(seen).toEqual([...seen].sort((a, b) => a - b))
    expect(await page.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('100')
    expect(await page.getByText('drips not started', { exact: false }).count()).toBe(1)

    const figure = (label: string) => page.locator('div', { has: page.getByText(label, { exact: true }) }).last()
    expect(await figure('Added').textContent()).toContain('50,000')
    expect(await figure('Failed').textContent()).toContain('3')
    await page
      .getByRole('cell', { name: 'platinum' })
      .or(page.getByText(/platinum/).first())
      .first()
      .waitFor()

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: /Download the 3 failed rows/ }).click()])
    const text = readFileSync((await download.path())!, 'utf8')
    const lines = text.trim().split(/\r?\n/)
    expect(lines[0]).toBe('row,reason,raw')
    expect(lines).toHaveLength(4)
    for (const bad of ['not-an-address', 'platinum', 'no-at-sign.example']) expect(text).toContain(bad)
    await shot(page, 'imports', { theme: 'light' })
    await shot(page, 'imports', { theme: 'dark' })

    // The import is in the list of past imports, and the list counts moved.
    await page.getByRole('link', { name: 'All imports' }).click()
    await page.getByRole('heading', { name: 'Past imports' }).waitFor()
    await page
      .getByRole('row', { name: /Customers/ })
      .first()
      .waitFor()
    await shot(page, 'imports-list', { theme: 'light' })
    await shot(page, 'imports-list', { theme: 'dark' })
    await close()
  },
  STEP_MS,
)

test(
  'segments: build rules and watch the live count change; save and see the members',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/audience/segments/new`)
    const count = page.getByTestId('live-count')
    await count.waitFor()
    expect(await count.textContent()).toBe('—')
    await page.getByRole('button', { name: 'Add condition' }).click()
    // status is subscribed: a number appears.
    const subscribed = await countOtherThan(page, '—')
    expect(subscribed).toBeGreaterThan(0)
    // and the plan is pro: fewer.
    await page.getByRole('button', { name: 'Add condition' }).click()
    await choose(page, 'Field', 'Plan', 1)
    // A new condition starts at the field's first option ("free"), then "pro" is chosen.
    const free = await countOtherThan(page, subscribed.toLocaleString('en-US'))
    await choose(page, 'Plan value', 'pro')
    const pro = await countOtherThan(page, free.toLocaleString('en-US'))
    expect(pro).toBeGreaterThan(0)
    expect(pro).toBeLessThan(subscribed)

    await page.getByLabel('Name').fill('Pro subscribers')
    // Indexed: the members kept in an index of their own; the same members either way.
    const indexed = page.getByRole('switch', { name: 'Indexed' })
    expect(await indexed.getAttribute('aria-checked')).toBe('false')
    await indexed.click()
    await page.getByRole('button', { name: 'Save segment' }).click()
    await page.getByRole('heading', { name: 'Members' }).waitFor()
    await page.getByText(new RegExp(`of ${pro.toLocaleString('en-US')}$`)).waitFor()
    expect(await page.getByRole('switch', { name: 'Indexed' }).getAttribute('aria-checked')).toBe('true')
    await shot(page, 'segments', { theme: 'light' })
    await shot(page, 'segments', { theme: 'dark' })
    // A relative date cannot be indexed: the refusal shows at the switch, and nothing is saved.
    await page.getByRole('button', { name: 'Add condition' }).click()
    await choose(page, 'Field', 'Created', 2)
    await page.getByRole('button', { name: 'Save changes' }).click()
    await page.getByText(/must be false for rules with relative dates/).waitFor()
    await page.getByRole('link', { name: 'All segments' }).click()
    await page.getByRole('row', { name: /Pro subscribers\s*Indexed/ }).waitFor()
    await shot(page, 'segments-list', { theme: 'light' })
    await shot(page, 'segments-list', { theme: 'dark' })
    await close()
  },
  STEP_MS,
)

test(
  'suppressions: paste a list, see what was added, skipped and refused; find and remove several',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/audience/suppressions`)
    await page.getByRole('row', { name: /spamtrap\.example/ }).waitFor()
    await page.getByRole('button', { name: 'Add suppressions' }).click()
    const dialog = page.getByRole('dialog')
    // Each tab has its panel: the chosen tab's aria-controls names the panel shown, and axe finds nothing to fault.
    const panelOfChosenTab = async () => {
      const id = await dialog.getByRole('tab', { selected: true }).getAttribute('aria-controls')
      return dialog.locator(`[role="tabpanel"][id="${id}"]`).count()
    }
    expect(await panelOfChosenTab()).toBe(1)
    expect(await axeViolations(page)).toEqual([])
    await dialog.getByRole('tab', { name: 'Domains' }).click()
    expect(await panelOfChosenTab()).toBe(1)
    expect(await axeViolations(page)).toEqual([])
    await dialog.getByRole('tab', { name: 'Addresses' }).click()
    await dialog.getByLabel('Addresses').fill('jane@example.com\nJane@Example.COM, bob@example.org\nnot-an-address')
    await dialog.getByRole('button', { name: 'Suppress 4' }).click()
    const result = dialog.getByRole('status')
    await result.waitFor()
    const figure = (label: string) => result.locator('div', { has: page.getByText(label, { exact: true }) }).last()
    expect(await figure('Added').textContent()).toContain('2')
    expect(await figure('Already there').textContent()).toContain('1')
    expect(await figure('Invalid').textContent()).toContain('1')
    expect(await result.getByRole('listitem').textContent()).toContain('not-an-address')
    await shot(page, 'suppressions-added', { theme: 'light', fullPage: false })
    await dialog.getByRole('button', { name: 'Done' }).click()

    await page.getByRole('row', { name: /bob@example\.org/ }).waitFor()
    await shot(page, 'suppressions', { theme: 'light' })
    await shot(page, 'suppressions', { theme: 'dark' })

    await page.getByLabel('Search suppressions').fill('jane@')
    await page.waitForURL(/search=jane%40/)
    await page.getByText('1–1 of 1').waitFor()
    await page.getByLabel('Search suppressions').fill('')
    await page.waitForURL((u) => !u.searchParams.has('search'))
    await page.getByText('1–5 of 5').waitFor()

    await page.getByRole('checkbox', { name: 'Select jane@example.com' }).click()
    await page.getByRole('checkbox', { name: 'Select bob@example.org' }).click()
    await page.getByRole('button', { name: 'Remove 2 selected' }).click()
    await page.getByRole('alertdialog').getByRole('button', { name: 'Remove' }).click()
    await page.getByText('2 suppressions removed').waitFor()
    await page.getByText('1–3 of 3').waitFor()
    expect(await page.getByRole('row', { name: /jane@example\.com/ }).count()).toBe(0)
    await close()
  },
  STEP_MS,
)

test(
  'the audience pages have no serious or critical accessibility violations (axe-core), light and dark',
  async () => {
    const pages = [
      { path: '/admin/audience/lists', heading: 'Lists' },
      { path: '/admin/audience/contacts', heading: 'Contacts' },
      { path: '/admin/audience/contacts?contact=1', heading: 'ada@example.com' },
      { path: '/admin/audience/imports', heading: 'Imports' },
      { path: '/admin/audience/imports/1', heading: 'Import #1' },
      { path: '/admin/audience/segments', heading: 'Segments' },
      { path: '/admin/audience/segments/1', heading: 'Pro subscribers' },
      { path: '/admin/audience/custom-fields', heading: 'Custom fields' },
      { path: '/admin/audience/suppressions', heading: 'Suppressions' },
    ]
    const found = await accessibilityFindings(mc.server.base, pages, (theme) => mc.signedIn({ theme }))
    expect(found).toEqual([])
  },
  STEP_MS * 2,
)

/** Waits until the live count shows a number other than `previous` (its text), and returns it. */
async function countOtherThan(page: Page, previous: string): Promise<number> {
  const el = await page.getByTestId('live-count').elementHandle()
  await page.waitForFunction(([node, prev]) => node!.textContent !== '—' && node!.textContent !== prev, [el, previous] as const)
  return Number((await page.getByTestId('live-count').textContent())!.replace(/\D/g, ''))
}
