/**
 * The access pages in headless Chromium against the built binary: roles with permissions
 * denied, an API key shown once and refused where its role denies, allowlist errors as you
 * type, deactivate / delete / restore, the activity log, settings, CSRF refusal, and an
 * axe-core accessibility check of the main pages. Screenshots land in docs/screenshots/.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { accessibilityFindings, openPage, shot, signIn } from './support/console'
import { ADMIN, STEP_MS, startMailConsole, type MailConsole } from './support/mail-console'

const ROLE = 'Contacts reader'
const KEY = 'Reporting'

/** The key made in the browser, remembered for the refusal and deactivation tests. */
let keyValue = ''

let mc: MailConsole

beforeAll(async () => {
  mc = await startMailConsole()
}, STEP_MS)

afterAll(() => mc?.stop())

/** Calls the API from the page with a Bearer key and no cookie, as another program would. */
function statusWithKey(page: Page, path: string, key: string): Promise<number> {
  return page.evaluate(async ({ path, key }) => (await fetch(path, { headers: { authorization: `Bearer ${key}` }, credentials: 'omit' })).status, { path, key })
}

test(
  'a role is made with some permissions denied: a group shows as partly granted',
  async () => {
    const { context, page } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/access/roles`)
    await page.getByRole('heading', { name: 'Roles' }).waitFor()
    await page.getByRole('link', { name: 'New role' }).click()
    await page.getByRole('heading', { name: 'New role' }).waitFor()
    await page.getByLabel('Name').fill(ROLE)
    await page.getByLabel('Description').fill('Reads contacts and lists; changes nothing.')
    // The whole Contacts group at once, then one action denied again: the group is indeterminate.
    const contacts = page.getByRole('checkbox', { name: 'Contacts', exact: true })
    await contacts.click()
    expect(await contacts.getAttribute('aria-checked')).toBe('true')
    await page.getByRole('checkbox', { name: 'Delete contacts' }).click()
    await page.getByRole('checkbox', { name: 'Import contacts' }).click()
    expect(await contacts.getAttribute('aria-checked')).toBe('mixed')
    await page.getByRole('checkbox', { name: 'View lists' }).click()
    await page.getByRole('button', { name: 'Create role' }).click()
    await page.getByRole('heading', { name: ROLE }).waitFor()
    expect(new URL(page.url()).pathname).toMatch(/^\/admin\/access\/roles\/\d+$/)
    // The API holds exactly the ticked permissions.
    const role = await page.evaluate(async (name) => {
      const r = await fetch('/api/v2/roles?per_page=100')
      return ((await r.json()).data as Array<{ name: string; permissions: string[] }>).find((x) => x.name === name)
    }, ROLE)
    expect(role?.permissions.sort()).toEqual(['contacts.create', 'contacts.read', 'contacts.update', 'lists.read'])
    // Reloaded so no toast covers the picture.
    await page.reload()
    await page.getByRole('heading', { name: ROLE }).waitFor()
    await shot(page, 'role-editor', { theme: 'light', width: 1440 })
    await shot(page, 'role-editor', { theme: 'dark', width: 1440 })
    // A built-in role opens read-only.
    await page.getByRole('link', { name: 'Roles' }).first().click()
    await page.getByRole('heading', { name: 'Roles' }).waitFor()
    await page.getByRole('cell', { name: ROLE }).waitFor()
    await shot(page, 'roles', { theme: 'light', width: 1440 })
    await shot(page, 'roles', { theme: 'dark', width: 1440 })
    await page.getByRole('link', { name: 'Administrator', exact: true }).click()
    await page.getByText('Built-in, read-only').waitFor()
    expect(await page.getByRole('checkbox', { name: 'Contacts', exact: true }).isDisabled()).toBe(true)
    await context.close()
  },
  STEP_MS,
)

test(
  'an invalid allowlist entry shows its error next to the field as it is typed',
  async () => {
    const { context, page } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/access/api-keys`)
    await page.getByRole('button', { name: 'New API key' }).first().click()
    const dialog = page.getByRole('dialog')
    await dialog.getByLabel('Name').fill('Allowlist check')
    const allowlist = dialog.getByLabel('IP allowlist')
    await allowlist.fill('203.0.113.7\n10.0.0.300\n198.51.100.0/33')
    // The same messages the API gives (src/lib/ip-allowlist.ts), tied to the field.
    const error = dialog.getByRole('alert').filter({ hasText: '"10.0.0.300" is not a valid IP address, range or CIDR block' })
    await error.waitFor()
    await dialog.getByText('"198.51.100.0/33" is not a valid CIDR block: prefix length must be 0-32').waitFor()
    expect(await allowlist.getAttribute('aria-invalid')).toBe('true')
    const describedBy = (await allowlist.getAttribute('aria-describedby')) ?? ''
    const errorId = await error.getAttribute('id')
    expect(describedBy.split(' ')).toContain(errorId!)
    expect(await dialog.getByRole('button', { name: 'Create key' }).isDisabled()).toBe(true)
    await shot(page, 'api-key-allowlist-error', { theme: 'light', width: 1440, fullPage: false })
    // Fixed: the error goes.
    await allowlist.fill('203.0.113.7\n10.0.0.0/8\n2001:db8::1-2001:db8::ff')
    await error.waitFor({ state: 'detached' })
    expect(await allowlist.getAttribute('aria-invalid')).toBeNull()
    await context.close()
  },
  STEP_MS,
)

test(
  'a key is shown once, and is refused where its role denies',
  async () => {
    const { context, page } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/access/api-keys`)
    await page.getByRole('button', { name: 'New API key' }).first().click()
    const dialog = page.getByRole('dialog')
    await dialog.getByLabel('Name').fill(KEY)
    await dialog.getByLabel('Role').click()
    await page.getByRole('option', { name: ROLE }).click()
    await dialog.getByLabel('Rate limit (requests per minute)').fill('120')
    await dialog.getByRole('button', { name: 'Create key' }).click()
    const secret = page.getByRole('dialog', { name: `“${KEY}” is ready` })
    await secret.waitFor()
    await secret.getByText('It will not be shown again').waitFor()
    keyValue = await secret.getByLabel('API key').inputValue()
    expect(keyValue.length).toBeGreaterThan(20)
    await shot(page, 'api-key-created', { theme: 'light', width: 1440, fullPage: false })
    await secret.getByRole('button', { name: 'I have stored it' }).click()
    await secret.waitFor({ state: 'detached' })
    // Not shown again: nowhere in the page, nor after a reload.
    await page.getByRole('cell', { name: new RegExp(`^${KEY}`) }).waitFor()
    expect(await page.content()).not.toContain(keyValue)
    await page.reload()
    await page.getByRole('cell', { name: new RegExp(`^${KEY}`) }).waitFor()
    expect(await page.content()).not.toContain(keyValue)
    const listed = await page.evaluate(async () => JSON.stringify(await (await fetch('/api/v2/api-keys')).json()))
    expect(listed).not.toContain(keyValue)

    // Granted by the role: 200. Denied: 403, though the administrator may.
    expect(await statusWithKey(page, '/api/v2/contacts', keyValue)).toBe(200)
    expect(await statusWithKey(page, '/api/v2/lists', keyValue)).toBe(200)
    expect(await statusWithKey(page, '/api/v2/roles', keyValue)).toBe(403)
    expect(await statusWithKey(page, '/api/v2/api-keys', keyValue)).toBe(403)
    const denied = await page.evaluate(
      async (key) => (await fetch('/api/v2/contacts/1', { method: 'DELETE', headers: { authorization: `Bearer ${key}` }, credentials: 'omit' })).status,
      keyValue,
    )
    expect(denied).toBe(403)

    await shot(page, 'api-keys', { theme: 'light', width: 1440 })
    await shot(page, 'api-keys', { theme: 'dark', width: 1440 })
    await shot(page, 'api-keys', { theme: 'light', width: 375 })
    await shot(page, 'api-keys', { theme: 'dark', width: 375 })
    await context.close()
  },
  STEP_MS,
)

test(
  'a key is deactivated (refused), activated, deleted, found among deleted keys and restored',
  async () => {
    expect(keyValue).not.toBe('')
    const { context, page } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/access/api-keys`)
    const row = page.getByRole('row', { name: new RegExp(KEY) })
    await row.waitFor()
    await row.getByRole('button', { name: `Actions for ${KEY}` }).click()
    await page.getByRole('menuitem', { name: 'Deactivate' }).click()
    await page.getByRole('alertdialog').getByRole('button', { name: 'Deactivate key' }).click()
    await row.getByText('Inactive').waitFor()
    expect(await statusWithKey(page, '/api/v2/contacts', keyValue)).toBe(401)

    await row.getByRole('button', { name: `Actions for ${KEY}` }).click()
    await page.getByRole('menuitem', { name: 'Activate' }).click()
    await row.getByText('Active', { exact: true }).waitFor()
    expect(await statusWithKey(page, '/api/v2/contacts', keyValue)).toBe(200)

    await row.getByRole('button', { name: `Actions for ${KEY}` }).click()
    await page.getByRole('menuitem', { name: 'Delete' }).click()
    await page.getByRole('alertdialog').getByRole('button', { name: 'Delete key' }).click()
    await row.waitFor({ state: 'detached' })
    expect(await statusWithKey(page, '/api/v2/contacts', keyValue)).toBe(401)

    await page.getByLabel('Show').click()
    await page.getByRole('option', { name: 'Deleted keys' }).click()
    expect(new URL(page.url()).searchParams.get('state')).toBe('deleted')
    const deleted = page.getByRole('row', { name: new RegExp(KEY) })
    await deleted.getByText('Deleted', { exact: true }).waitFor()
    await shot(page, 'api-keys-deleted', { theme: 'light', width: 1440 })
    await deleted.getByRole('button', { name: 'Restore' }).click()
    await deleted.waitFor({ state: 'detached' })
    expect(await statusWithKey(page, '/api/v2/contacts', keyValue)).toBe(200)
    await context.close()
  },
  STEP_MS,
)

test(
  'a change sent from the signed-in page without the X-CSRF-Token header is refused with 403',
  async () => {
    const { context, page } = await mc.signedIn()
    const answer = await page.evaluate(async () => {
      const body = JSON.stringify({ name: 'Forged', permissions: [] })
      const r = await fetch('/api/v2/roles', { method: 'POST', headers: { 'content-type': 'application/json' }, body, credentials: 'same-origin' })
      const session = await (await fetch('/admin/api/session')).json()
      const withToken = await fetch('/api/v2/roles', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': session.data.csrf_token },
        body: JSON.stringify({ name: 'Made with the token', permissions: [] }),
      })
      return { status: r.status, body: await r.json(), withToken: withToken.status }
    })
    expect(answer.status).toBe(403)
    expect(answer.body.error.code).toBe('forbidden')
    expect(answer.body.error.message).toContain('CSRF')
    // The same request with the session's token goes through: the refusal was the missing header.
    expect(answer.withToken).toBe(201)
    await context.close()
  },
  STEP_MS,
)

test(
  'the activity log lists the console changes newest first, with the administrator as actor, and filters by action',
  async () => {
    const { context, page } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/access/activity`)
    await page.getByRole('heading', { name: 'Activity log' }).waitFor()
    const firstRow = page.locator('tbody tr').first()
    await firstRow.waitFor()
    expect(await firstRow.textContent()).toContain(ADMIN.email)
    await shot(page, 'activity', { theme: 'light', width: 1440 })
    await shot(page, 'activity', { theme: 'dark', width: 1440 })
    await page.getByLabel('Action').click()
    await page.getByRole('option', { name: 'Create API keys' }).click()
    await page.getByRole('button', { name: 'Apply filters' }).click()
    expect(new URL(page.url()).searchParams.get('action')).toBe('api_keys.create')
    await page.locator('tbody tr').first().getByText('api_keys.create').waitFor()
    const actions = await page.locator('tbody tr td:nth-child(3)').allTextContents()
    expect(actions.length).toBeGreaterThan(0)
    expect(new Set(actions)).toEqual(new Set(['api_keys.create']))
    // A time range that holds nothing: the empty state says so.
    await page.getByLabel('From').fill('2001-01-01T00:00')
    await page.getByLabel('Until').fill('2001-01-02T00:00')
    await page.getByRole('button', { name: 'Apply filters' }).click()
    await page.getByText('Nothing matches these filters').waitFor()
    await context.close()
  },
  STEP_MS,
)

test(
  'settings list the administrators and the server settings with the flag and variable of each',
  async () => {
    const { context, page } = await mc.signedIn()
    await page.goto(`${mc.server.base}/admin/settings`)
    await page.getByRole('heading', { name: 'Administrators' }).waitFor()
    await page.getByRole('cell', { name: new RegExp(`^${ADMIN.email}`) }).waitFor()
    await page.getByText('MAILROOM_HOSTNAME').waitFor()
    await page.getByText('--default-rate-limit').waitFor()
    // Invite a read-only operator.
    await page.getByRole('button', { name: 'Add administrator' }).click()
    const dialog = page.getByRole('dialog')
    await dialog.getByLabel('Email').fill('viewer@example.com')
    await dialog.getByLabel('Password').fill('short')
    await dialog.getByText('At least 10 characters (5 so far).').waitFor()
    await dialog.getByLabel('Password').fill('another long password')
    await dialog.getByLabel('Role').click()
    await page.getByRole('option', { name: ROLE }).click()
    await dialog.getByRole('button', { name: 'Add administrator' }).click()
    await page.getByRole('cell', { name: 'viewer@example.com', exact: true }).waitFor()
    await page.reload()
    await page.getByRole('cell', { name: 'viewer@example.com', exact: true }).waitFor()
    await page.getByText('MAILROOM_HOSTNAME').waitFor()
    await shot(page, 'settings', { theme: 'light', width: 1440 })
    await shot(page, 'settings', { theme: 'dark', width: 1440 })
    // Disable them.
    const row = page.getByRole('row', { name: /viewer@example.com/ })
    await row.getByRole('button', { name: 'Actions for viewer@example.com' }).click()
    await page.getByRole('menuitem', { name: 'Disable' }).click()
    await page.getByRole('alertdialog').getByRole('button', { name: 'Disable administrator' }).click()
    await row.getByText('Disabled').waitFor()
    await context.close()
  },
  STEP_MS,
)

test(
  'the main pages have no serious or critical accessibility violations (axe-core), light and dark',
  async () => {
    const pages = [
      { path: '/admin', heading: 'Dashboard' },
      { path: '/admin/access/api-keys', heading: 'API keys' },
      { path: '/admin/access/roles', heading: 'Roles' },
      { path: '/admin/access/roles/new', heading: 'New role' },
      { path: '/admin/access/activity', heading: 'Activity log' },
      { path: '/admin/settings', heading: 'Settings' },
    ]
    const found = await accessibilityFindings(mc.server.base, pages, async (theme) => {
      const { context, page } = await openPage(mc.browser, { theme })
      await signIn(page, mc.server.base, ADMIN.email, ADMIN.password)
      return { page, close: () => context.close() }
    })
    expect(found).toEqual([])
  },
  STEP_MS * 2,
)
