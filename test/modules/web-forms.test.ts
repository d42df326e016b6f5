import { unpackMessage } from '../../src/lib/stored-message'
import { describe, expect, test } from 'bun:test'
import { solveChallenge } from 'altcha-lib'
import { deriveKey } from 'altcha-lib/algorithms/sha'
import { createHash } from 'node:crypto'
import { SOLVER_JS } from '../../src/modules/web-forms/solver'
import { testApp, type TestApp } from '../support/app'

const FROM = 'Acme News <news@acme.test>'

function setup(overrides: Record<string, unknown> = {}) {
  const t = testApp({ default_from: FROM, web_form_challenge_max: 300, allow_unverified_domains: true, ...overrides } as never)
  const { key } = t.makeKey()
  return { ...t, key }
}

async function makeForm(t: TestApp & { key: string }, extra: Record<string, unknown> = {}) {
  const list = await t.call('POST', '/api/v2/lists', { key: t.key, body: { name: `News ${Math.random()}` } })
  const form = await t.call('POST', '/api/v2/web-forms', {
    key: t.key,
    body: {
      name: 'Acme newsletter',
      list_ids: [list.body.data.id],
      fields: [{ key: 'first_name', required: true }],
      consent_text: 'I agree to get the newsletter.',
      ...extra,
    },
  })
  expect(form.status).toBe(201)
  return { listId: list.body.data.id as number, form: form.body.data }
}

/** Opens the hosted page and solves its challenge as the browser would (altcha-lib's own solver). */
async function solvedFromPage(t: TestApp, publicId: string): Promise<string> {
  const page = await t.call('GET', `/f/${publicId}`)
  expect(page.status).toBe(200)
  const attr = /data-challenge="([^"]+)"/.exec(page.text)![1]!
  const challenge = JSON.parse(attr.replace(/&#(\d+);/g, (_, c) => String.fromCharCode(Number(c))))
  const solution = await solveChallenge({ challenge, deriveKey })
  return Buffer.from(JSON.stringify({ challenge, solution })).toString('base64')
}

const post = (t: TestApp, publicId: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  t.call('POST', `/f/${publicId}`, {
    rawBody: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  })

const contactsOf = (t: TestApp, email: string) =>
  t.deps.db.$client
    .query<{ id: number; list_id: number; status: string; first_name: string | null }, [string]>('SELECT * FROM contacts WHERE email = ?')
    .all(email)
const eventsOf = (t: TestApp, kind: string) => t.deps.db.$client.query<{ id: number }, [string]>('SELECT id FROM events WHERE kind = ?').all(kind)
const formMails = (t: TestApp) =>
  t.deps.db.$client
    .query<{ raw: Buffer; from_address: string }, []>("SELECT raw, from_address FROM messages WHERE source = 'web_form' ORDER BY created_at")
    .all()
/** The confirmation link of the newest confirmation mail, from its raw text (quoted-printable soft breaks undone). */
function confirmPath(t: TestApp): string {
  const raw = unpackMessage(formMails(t).at(-1)!.raw)
    .toString('utf8')
    .replace(/=\r?\n/g, '')
  return new URL(/https?:\/\/[^\s"<>]+\/f\/confirm\/[A-Za-z0-9_.-]+/.exec(raw)![0]).pathname
}

describe('web forms API', () => {
  test('create, read, update (consent version), list, bulk delete', async () => {
    const t = setup()
    const { form, listId } = await makeForm(t)
    expect(form.public_id).toMatch(/^[A-Za-z0-9_-]{16}$/)
    expect(form.double_opt_in).toBe(true)
    expect(form.hosted_url).toBe(`${t.deps.config.public_url}/f/${form.public_id}`)
    expect(form.embed_html).toContain(`action="${t.deps.config.public_url}/f/${form.public_id}"`)
    expect(form.embed_html).toContain('/challenge"')
    expect(form.fields).toEqual([{ key: 'first_name', label: 'First name', required: true }])
    const unknownDrip = await t.call('PATCH', `/api/v2/web-forms/${form.id}`, { key: t.key, body: { welcome_drip_id: 12 } })
    expect(unknownDrip.status).toBe(422)
    expect(unknownDrip.body.error.details).toEqual({ welcome_drip_id: ['no drip with id 12'] })
    const drip = await t.call('POST', '/api/v2/drips', { key: t.key, body: { name: 'Welcome', graph: { steps: [{ id: 'end', kind: 'exit' }] } } })
    const patched = await t.call('PATCH', `/api/v2/web-forms/${form.id}`, {
      key: t.key,
      body: { consent_text: 'New wording.', welcome_drip_id: drip.body.data.id },
    })
    expect(patched.status).toBe(200)
    expect(patched.body.data.consent_version).toBe(2)
    expect(patched.body.data.welcome_drip_id).toBe(drip.body.data.id)
    const again = await t.call('PATCH', `/api/v2/web-forms/${form.id}`, { key: t.key, body: { name: 'Renamed' } })
    expect(again.body.data.consent_version).toBe(2)
    const second = await makeForm(t)
    const page = await t.call('GET', '/api/v2/web-forms', { key: t.key })
    expect(page.body.meta.total).toBe(2)
    const bulk = await t.call('POST', '/api/v2/web-forms/bulk-delete', { key: t.key, body: { ids: [form.id, second.form.id, 999] } })
    expect(bulk.body.data).toEqual({ deleted: [form.id, second.form.id], not_found: [999] })
    expect((await t.call('GET', `/api/v2/web-forms/${form.id}`, { key: t.key })).status).toBe(404)
    expect((await t.call('GET', `/f/${form.public_id}`)).status).toBe(404)
    void listId
  })

  test('refuses unknown lists and fields, bad origins, and double opt-in without a sender', async () => {
    const t = setup({ default_from: '' })
    const r = await t.call('POST', '/api/v2/web-forms', {
      key: t.key,
      body: { name: 'x', list_ids: [404], fields: [{ key: 'shoe_size' }, { key: 'email' }], consent_text: 'ok', allowed_origins: ['https://a.test/path'] },
    })
    expect(r.status).toBe(422)
    expect(Object.keys(r.body.error.details).sort()).toEqual(['allowed_origins.0', 'confirmation_from', 'fields.0.key', 'fields.1.key', 'list_ids'])
  })

  test('preview renders the draft as the hosted page, saving nothing', async () => {
    const t = setup()
    const r = await t.call('POST', '/api/v2/web-forms/preview', {
      key: t.key,
      body: { name: 'Draft <b>', fields: [{ key: 'last_name', label: 'Surname' }], consent_text: 'Yes please' },
    })
    expect(r.status).toBe(200)
    expect(r.body.data.html).toContain('<h1>Draft &#60;b&#62;</h1>')
    expect(r.body.data.html).toContain('Surname <span class="mr-optional">(optional)</span>')
    expect((await t.call('GET', '/api/v2/web-forms', { key: t.key })).body.meta.total).toBe(0)
  })

  test('needs the web_forms permissions', async () => {
    const t = setup()
    const { key } = t.makeKey({ permissions: ['lists.read'] })
    expect((await t.call('GET', '/api/v2/web-forms', { key })).status).toBe(403)
    expect((await t.call('GET', '/api/v2/web-forms')).status).toBe(401)
  })
})

describe('hosted page and double opt-in', () => {
  test('the page: consent unchecked, honeypot hidden from people, a challenge, the solver script', async () => {
    const t = setup()
    const { form } = await makeForm(t)
    const page = await t.call('GET', `/f/${form.public_id}`)
    expect(page.headers.get('content-type')).toContain('text/html')
    expect(page.text).toMatch(/<input type="checkbox" id="[^"]+" name="consent" value="yes" required>/)
    expect(page.text).not.toMatch(/name="consent"[^>]*checked/)
    expect(page.text).toMatch(/<div class="mr-hp" aria-hidden="true">.*name="website_url" tabindex="-1"/)
    expect(page.text).toContain('data-challenge="')
    expect((await t.call('GET', '/f/pow.js')).text).toBe(SOLVER_JS)
  })

  test('submit -> pending, mail queued; GET confirm changes nothing; POST confirm subscribes, records consent, emits events', async () => {
    const t = setup()
    const { form, listId } = await makeForm(t)
    const altcha = await solvedFromPage(t, form.public_id)
    const r = await post(
      t,
      form.public_id,
      { email: 'Ada@Example.net', first_name: 'Ada', consent: 'yes', website_url: '', altcha },
      { 'user-agent': 'test browser' },
    )
    expect(r.status).toBe(200)
    expect(r.text).toContain('Check your inbox')
    expect(contactsOf(t, 'ada@example.net')).toEqual([])
    const mails = formMails(t)
    expect(mails.length).toBe(1)
    expect(mails[0]!.from_address).toBe('news@acme.test')
    const path = confirmPath(t)
    const view = await t.call('GET', path)
    expect(view.status).toBe(200)
    expect(view.text).toContain('<form method="post"><button type="submit">Confirm subscription</button>')
    expect(contactsOf(t, 'ada@example.net')).toEqual([])
    const done = await t.call('POST', path, { headers: { 'user-agent': 'confirming browser' } })
    expect(done.status).toBe(200)
    expect(done.text).toContain('Subscription confirmed')
    const [c] = contactsOf(t, 'ada@example.net')
    expect(c).toMatchObject({ list_id: listId, status: 'subscribed', first_name: 'Ada' })
    const consent = t.deps.db.$client.query<Record<string, unknown>, [number]>('SELECT * FROM consents WHERE contact_id = ?').get(c!.id)
    expect(consent).toMatchObject({ text: 'I agree to get the newsletter.', version: 1, user_agent: 'confirming browser', form_id: form.id })
    expect(consent!.confirmed_at).toBe(t.deps.clock.now())
    expect(eventsOf(t, 'contact.subscribed').length).toBe(1)
    expect(eventsOf(t, 'contact.confirmed').length).toBe(1)
    const twice = await t.call('POST', path)
    expect(twice.text).toContain('Already confirmed')
    expect(eventsOf(t, 'contact.confirmed').length).toBe(1)
  })

  test('an expired link is refused with 410 and subscribes nobody; a tampered one gets 404', async () => {
    const t = setup()
    const { form } = await makeForm(t)
    await post(t, form.public_id, { email: 'late@example.net', first_name: 'L', consent: 'yes', altcha: await solvedFromPage(t, form.public_id) })
    const path = confirmPath(t)
    t.deps.clock.advance(7 * 86_400_000)
    const get = await t.call('GET', path)
    expect(get.status).toBe(410)
    expect(get.text).toContain('Link expired')
    expect((await t.call('POST', path)).status).toBe(410)
    expect(contactsOf(t, 'late@example.net')).toEqual([])
    const tampered = path.slice(0, -2) + (path.endsWith('AA') ? 'AB' : 'AA')
    expect((await t.call('GET', tampered)).status).toBe(404)
  })

  test('the honeypot gets a fake success and stores nothing', async () => {
    const t = setup()
    const { form } = await makeForm(t)
    const r = await post(t, form.public_id, { email: 'bot@example.net', first_name: 'Bot', consent: 'yes', website_url: 'http://spam.test', altcha: '' })
    expect(r.status).toBe(200)
    expect(r.text).toContain('Check your inbox')
    expect(formMails(t)).toEqual([])
    expect(t.deps.db.$client.query('SELECT COUNT(*) AS n FROM web_form_submissions').get()).toEqual({ n: 0 })
  })

  test('no challenge, a challenge of another form, or one used twice: 422', async () => {
    const t = setup()
    const { form } = await makeForm(t)
    const other = await makeForm(t)
    const none = await post(t, form.public_id, { email: 'a@example.net', first_name: 'A', consent: 'yes' })
    expect(none.status).toBe(422)
    const foreign = await post(t, form.public_id, {
      email: 'a@example.net',
      first_name: 'A',
      consent: 'yes',
      altcha: await solvedFromPage(t, other.form.public_id),
    })
    expect(foreign.status).toBe(422)
    const altcha = await solvedFromPage(t, form.public_id)
    expect((await post(t, form.public_id, { email: 'a@example.net', first_name: 'A', consent: 'yes', altcha })).status).toBe(200)
    const reused = await post(t, form.public_id, { email: 'b@example.net', first_name: 'B', consent: 'yes', altcha }, { accept: 'application/json' })
    expect(reused.status).toBe(422)
    expect(reused.body.error.details.altcha).toEqual(['was used already: reload the page'])
  })

  test('without consent or a required field: 422 naming them', async () => {
    const t = setup()
    const { form } = await makeForm(t)
    const r = await t.call('POST', `/f/${form.public_id}`, { body: { email: 'x@example.net', altcha: await solvedFromPage(t, form.public_id) } })
    expect(r.status).toBe(422)
    expect(Object.keys(r.body.error.details).sort()).toEqual(['consent', 'first_name'])
  })
})

describe('single opt-in, CORS, throttle', () => {
  test('JSON post subscribes at once; a second submission answers the same', async () => {
    const t = setup()
    const { form } = await makeForm(t, { double_opt_in: false })
    const send = async () =>
      t.call('POST', `/f/${form.public_id}`, {
        body: { email: 'grace@example.net', first_name: 'Grace', consent: true, altcha: await solvedFromPage(t, form.public_id) },
      })
    const first = await send()
    const second = await send()
    expect(first.status).toBe(200)
    expect(second.text).toBe(first.text)
    expect(contactsOf(t, 'grace@example.net').map((c) => c.status)).toEqual(['subscribed'])
    expect(t.deps.db.$client.query('SELECT COUNT(*) AS n FROM consents').get()).toEqual({ n: 2 })
    expect(eventsOf(t, 'contact.subscribed').length).toBe(1)
    expect(formMails(t)).toEqual([])
  })

  test('CORS only for the listed origins; posts from other sites are refused', async () => {
    const t = setup()
    const { form } = await makeForm(t, { allowed_origins: ['https://shop.test'] })
    const pre = await t.call('OPTIONS', `/f/${form.public_id}`, { headers: { origin: 'https://shop.test', 'access-control-request-method': 'POST' } })
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://shop.test')
    expect((await t.call('OPTIONS', `/f/${form.public_id}`, { headers: { origin: 'https://evil.test' } })).status).toBe(403)
    const ch = await t.call('GET', `/f/${form.public_id}/challenge`, { headers: { origin: 'https://shop.test' } })
    expect(ch.headers.get('access-control-allow-origin')).toBe('https://shop.test')
    const evil = await post(t, form.public_id, { email: 'a@example.net' }, { origin: 'https://evil.test' })
    expect(evil.status).toBe(403)
  })

  test('per-IP throttle: 429 past the limit', async () => {
    const t = setup({ web_form_rate_per_minute: 2 })
    const { form } = await makeForm(t)
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await post(t, form.public_id, { email: `p${i}@example.net` })).status)
    expect(statuses).toEqual([422, 422, 429])
  })
})

test('the browser solver hashes like SHA-256', () => {
  const mod: { exports?: { sha256(b: Uint8Array): Uint8Array } } = {}
  new Function('module', SOLVER_JS)(mod)
  for (const s of ['', 'abc', 'x'.repeat(55), 'y'.repeat(64), 'z'.repeat(130)])
    expect(Buffer.from(mod.exports!.sha256(new TextEncoder().encode(s))).toString('hex')).toBe(createHash('sha256').update(s).digest('hex'))
})
