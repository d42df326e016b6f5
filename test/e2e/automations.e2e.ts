/**
 * Drips and Triggers in headless Chromium against the built binary (issue 16 "UI"): a drip
 * built in the editor (a send with inline content, a one-second wait, a condition on whether
 * the mail was opened), a missing field shown on the step it names, then saved, activated,
 * a contact subscribed through the API and the live step counts seen to move; enrollment of
 * a list from the drip page; a trigger on order.completed with a property filter fired by
 * POST /api/v2/track; a contact's run history in the contact sheet; every page checked with
 * axe-core, light and dark. The engine runs on the real clock here (no fixed clock in the
 * e2e server), so the wait is one second. Screenshots land in docs/screenshots/.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Locator, Page } from 'playwright-core'
import { accessibilityFindings, shot } from './support/console'
import { STEP_MS, startMailConsole, type MailConsole } from './support/mail-console'

let listId: number
let dripId: number
let triggerId: number
let adaId: number

let mc: MailConsole

beforeAll(async () => {
  // Mail is delivered to a loopback sink (through a loopback DNS server): a bounce would unsubscribe the contact.
  mc = await startMailConsole({ mail: true, hostname: 'mail.example.com', flags: ['--default-from', 'Acme <hello@acme.test>'], apiKey: 'e2e automations' })
  expect((await mc.call('POST', '/api/v2/sending-domains', { name: 'acme.test' })).status).toBe(201)
  const list = await mc.call('POST', '/api/v2/lists', { name: 'Newcomers' })
  listId = list.body.data.id
  // On the list before the drip exists: only an explicit enrollment starts a run for it.
  expect((await mc.call('POST', '/api/v2/contacts', { list_id: listId, email: 'early@example.net' })).status).toBe(201)
}, STEP_MS)

afterAll(() => mc?.stop())

/** Picks an option of a Radix select found by its accessible name, inside `scope`. */
async function choose(page: Page, scope: Page | Locator, select: string, option: string): Promise<void> {
  await scope.getByRole('combobox', { name: select, exact: true }).click()
  await page.getByRole('option', { name: option, exact: true }).click()
}

async function addStep(page: Page, kind: string): Promise<void> {
  await page.getByRole('button', { name: 'Add step' }).click()
  await page.getByRole('menuitem', { name: kind, exact: true }).click()
}

test(
  'build a drip in the editor: send, wait, condition; a missing field on its step; save, activate, subscribe, counts move; enroll a list',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.getByRole('link', { name: 'Drips' }).first().click()
    await page.getByRole('heading', { name: 'Drips', exact: true }).waitFor()
    await page.getByText('No drips yet').waitFor()
    await shot(page, 'drips-empty')
    await page.getByRole('button', { name: 'New drip' }).first().click()
    await page.getByRole('heading', { name: 'New drip' }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Welcome series')
    await page.getByRole('checkbox', { name: 'Newcomers' }).click()

    const welcome = page.getByRole('region', { name: 'Step welcome' })
    await choose(page, welcome, 'Content', 'Written here')
    await welcome.getByLabel('Subject').fill('Welcome, {{first_name}}')
    await welcome.getByLabel('Text').fill('Glad you are here.')

    await addStep(page, 'Wait')
    const wait = page.getByRole('region', { name: 'Step wait_2' })
    await choose(page, wait, 'Duration unit', 'seconds')
    await wait.getByLabel('Duration', { exact: true }).fill('1')

    await addStep(page, 'Condition')
    const condition = page.getByRole('region', { name: 'Step condition_3' })
    // The new steps follow each other: welcome -> wait_2 -> condition_3.
    expect(await welcome.getByRole('combobox', { name: 'Then' }).textContent()).toBe('Go to wait_2')
    expect(await wait.getByRole('combobox', { name: 'Then' }).textContent()).toBe('Go to condition_3')

    // Saved without saying what the condition tests: the API's message lands on that step.
    await page.getByRole('button', { name: 'Create drip' }).click()
    await condition.getByRole('alert').filter({ hasText: 'settings.type: must be segment, event or engagement' }).waitFor()
    expect(await welcome.getByRole('alert').count()).toBe(0)
    expect((await mc.call('GET', '/api/v2/drips')).body.meta.total).toBe(0)
    await shot(page, 'drip-editor-error')

    await choose(page, condition, 'Condition type', 'Opened or clicked a send step')
    await choose(page, condition, 'Send step', 'welcome')
    await choose(page, condition, 'Activity', 'Opened')
    await page.getByRole('button', { name: 'Check the flow' }).click()
    await page.getByText('The flow is valid (3 steps)').waitFor()
    expect(await condition.getByRole('alert').count()).toBe(0)
    await page.getByRole('button', { name: 'Create drip' }).click()
    await page.getByRole('heading', { name: 'Welcome series', exact: true }).waitFor()
    const drips = await mc.call('GET', '/api/v2/drips')
    expect(drips.body.data.map((d: any) => [d.name, d.status, d.list_ids])).toEqual([['Welcome series', 'draft', [listId]]])
    dripId = drips.body.data[0].id
    const saved = await mc.call('GET', `/api/v2/drips/${dripId}`)
    expect(saved.body.data.graph.steps).toEqual([
      { id: 'welcome', kind: 'send', settings: { subject: 'Welcome, {{first_name}}', text: 'Glad you are here.' }, edges: { next: 'wait_2' } },
      { id: 'wait_2', kind: 'wait', settings: { duration_seconds: 1 }, edges: { next: 'condition_3' } },
      { id: 'condition_3', kind: 'condition', settings: { type: 'engagement', step_id: 'welcome', activity: 'opened' }, edges: {} },
    ])

    await page.getByRole('button', { name: 'Activate' }).click()
    await page.getByRole('button', { name: 'Pause' }).waitFor()
    expect((await mc.call('GET', `/api/v2/drips/${dripId}`)).body.data.status).toBe('active')

    // A new subscriber of the list starts a run; the counts on the steps follow, polled.
    const ada = await mc.call('POST', '/api/v2/contacts', { list_id: listId, email: 'ada@example.net', first_name: 'Ada' })
    expect(ada.status).toBe(201)
    adaId = ada.body.data.id
    const welcomeStats = welcome.getByTestId('step-stats')
    await welcomeStats.filter({ hasText: 'entered 1' }).filter({ hasText: 'sent 1' }).waitFor({ timeout: 30_000 })
    // After the one-second wait the condition ran (not opened: the "no" way, which ends the run).
    await condition.getByTestId('step-stats').filter({ hasText: 'entered 1' }).filter({ hasText: 'completed 1' }).waitFor({ timeout: 30_000 })
    await page.getByRole('table', { name: 'Runs of this drip' }).getByRole('cell', { name: 'ada@example.net' }).waitFor()
    await page.getByRole('table', { name: 'Runs of this drip' }).getByText('finished').waitFor({ timeout: 30_000 })
    await shot(page, 'drip-editor')
    await shot(page, 'drip-editor', { theme: 'dark' })

    // Enrollment of the whole list: the early contact starts; Ada (once per address) is skipped.
    await page.getByRole('button', { name: 'Enroll contacts' }).click()
    const dialog = page.getByRole('dialog', { name: 'Enroll contacts' })
    await choose(page, dialog, 'List', 'Newcomers')
    await dialog.getByRole('button', { name: 'Enroll' }).click()
    await page.getByText('1 enrolled, 1 skipped').waitFor()
    await welcomeStats.filter({ hasText: 'entered 2' }).waitFor({ timeout: 30_000 })
    const runs = await mc.call('GET', `/api/v2/drips/${dripId}/runs`)
    expect(runs.body.data.map((r: any) => r.email).sort()).toEqual(['ada@example.net', 'early@example.net'])

    await page.getByRole('link', { name: 'All drips' }).click()
    const row = page.getByRole('row').filter({ hasText: 'Welcome series' })
    await row.getByText('Active', { exact: true }).waitFor()
    await shot(page, 'drips')
    await close()
  },
  STEP_MS,
)

test(
  'a trigger on order.completed with a property filter, fired by POST /api/v2/track; the contact sheet lists the runs',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/automations/triggers`)
    await page.getByRole('heading', { name: 'Triggers', exact: true }).waitFor()
    await page.getByRole('button', { name: 'New trigger' }).first().click()
    await page.getByRole('heading', { name: 'New trigger' }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Order thanks')
    await page.getByLabel('Event name').fill('order.completed')
    await page.getByLabel('Property filter').fill('{"currency":"EUR"}')
    const thanks = page.getByRole('region', { name: 'Step welcome' })
    await thanks.getByLabel('Step id').fill('thanks')
    const step = page.getByRole('region', { name: 'Step thanks' })
    await choose(page, step, 'Content', 'Written here')
    await step.getByLabel('Subject').fill('Thanks for order {{event.order.id}}')
    await step.getByLabel('Text').fill('It is on its way.')
    await page.getByRole('button', { name: 'Create trigger' }).click()
    await page.getByRole('heading', { name: 'Order thanks', exact: true }).waitFor()
    const triggers = await mc.call('GET', '/api/v2/triggers')
    triggerId = triggers.body.data[0].id
    expect(triggers.body.data[0]).toMatchObject({ event_name: 'order.completed', event_filter: { currency: 'EUR' }, status: 'draft' })
    await page.getByRole('button', { name: 'Activate' }).click()
    await page.getByRole('button', { name: 'Pause' }).waitFor()

    // One event the filter refuses, one it lets through.
    const usd = await mc.call('POST', '/api/v2/track', {
      event: 'order.completed',
      email: 'ada@example.net',
      properties: { currency: 'USD', order: { id: 'A1' } },
    })
    expect(usd.status).toBe(202)
    const eur = await mc.call('POST', '/api/v2/track', {
      event: 'order.completed',
      email: 'ada@example.net',
      properties: { currency: 'EUR', order: { id: 'A2' } },
    })
    expect(eur.status).toBe(202)
    await step.getByTestId('step-stats').filter({ hasText: 'entered 1' }).filter({ hasText: 'sent 1' }).waitFor({ timeout: 30_000 })
    const runs = await mc.call('GET', `/api/v2/triggers/${triggerId}/runs`)
    expect(runs.body.meta.total).toBe(1)
    await shot(page, 'trigger-editor')

    // The contact's run history: both automations, each with its state and step.
    await page.goto(`${mc.server.base}/admin/audience/contacts?contact=${adaId}`)
    const history = page.getByRole('table', { name: "This contact's automation runs" })
    await history.getByRole('row').filter({ hasText: 'Welcome series' }).filter({ hasText: 'finished' }).filter({ hasText: 'condition_3' }).waitFor()
    await history.getByRole('row').filter({ hasText: 'Order thanks' }).filter({ hasText: 'thanks' }).waitFor()
    await shot(page, 'contact-automations', { fullPage: false })
    await close()
  },
  STEP_MS,
)

test(
  'pause from the list, then bulk delete',
  async () => {
    const { page, close } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/automations/triggers`)
    await page.getByRole('button', { name: 'Actions for Order thanks' }).click()
    await page.getByRole('menuitem', { name: 'Pause' }).click()
    await page.getByRole('row').filter({ hasText: 'Order thanks' }).getByText('Paused', { exact: true }).waitFor()
    expect((await mc.call('GET', `/api/v2/triggers/${triggerId}`)).body.data.status).toBe('paused')
    const second = await mc.call('POST', '/api/v2/triggers', {
      name: 'Signup ping',
      event_name: 'signup',
      graph: { steps: [{ id: 'bye', kind: 'exit' }] },
    })
    expect(second.status).toBe(201)
    await page.reload()
    await page.getByRole('checkbox', { name: 'Select every trigger on this page' }).click()
    await page.getByRole('button', { name: 'Delete 2 selected' }).click()
    await page.getByRole('alertdialog').getByRole('button', { name: 'Delete' }).click()
    await page.getByText('2 triggers deleted').waitFor()
    await page.getByText('No triggers yet').waitFor()
    expect((await mc.call('GET', '/api/v2/triggers')).body.meta.total).toBe(0)
    await close()
  },
  STEP_MS,
)

test(
  'the automation pages have no serious or critical accessibility violations (axe-core), light and dark',
  async () => {
    const pages = [
      { path: '/admin/automations/drips', heading: 'Drips' },
      { path: '/admin/automations/drips/new', heading: 'New drip' },
      { path: `/admin/automations/drips/${dripId}`, heading: 'Welcome series' },
      { path: '/admin/automations/triggers/new', heading: 'New trigger' },
    ]
    const found = await accessibilityFindings(mc.server.base, pages, (theme) => mc.signedIn({ theme }))
    expect(found).toEqual([])
  },
  STEP_MS * 2,
)
