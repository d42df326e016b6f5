import { describe, expect, test } from 'bun:test'
import { testApp } from '../support/app'
import { runScenarios, type Scenario, type ScenarioContext } from '../support/scenarios'

const IMAP = { name: 'Yahoo', kind: 'imap', host: 'imap.example.net', username: 'fbl@example.net', password: 'secret' }

function setup() {
  const t = testApp()
  const admin = t.makeKey()
  const api = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  return { ...t, admin, api }
}

describe('/api/v2/feedback-loops', () => {
  test('an IMAP account: created with defaults, the password is write-only', async () => {
    const t = setup()
    const r = await t.api('POST', '/api/v2/feedback-loops', IMAP)
    expect(r.status).toBe(201)
    expect(r.body.data).toEqual({
      id: r.body.data.id,
      name: 'Yahoo',
      kind: 'imap',
      address: null,
      host: 'imap.example.net',
      port: 993,
      tls: true,
      username: 'fbl@example.net',
      password_set: true,
      mailbox: 'INBOX',
      poll_interval_seconds: 300,
      active: true,
      last_polled_at: null,
      last_error: null,
      created_at: '2026-03-01T12:00:30.000Z',
      updated_at: '2026-03-01T12:00:30.000Z',
    })
    expect(JSON.stringify(r.body)).not.toContain('secret')
    const plain = await t.api('POST', '/api/v2/feedback-loops', { ...IMAP, name: 'plain', tls: false, mailbox: 'Reports', poll_interval_seconds: 60 })
    expect(plain.body.data).toMatchObject({ port: 143, tls: false, mailbox: 'Reports', poll_interval_seconds: 60 })
    const list = await t.api('GET', '/api/v2/feedback-loops?per_page=1')
    expect(list.body.meta).toEqual({ current_page: 1, per_page: 1, total: 2, last_page: 2 })
    expect(JSON.stringify(list.body)).not.toContain('secret')
  })

  test('an address account (refusals: the 422 table)', async () => {
    const t = setup()
    const ok = await t.api('POST', '/api/v2/feedback-loops', { name: 'listener', kind: 'address', address: 'FBL@Mailroom.test' })
    expect(ok.status).toBe(201)
    expect(ok.body.data).toMatchObject({ kind: 'address', address: 'fbl@mailroom.test', host: null, password_set: false, poll_interval_seconds: null })
  })

  test('update keeps what is not sent (409, 404 and kind changes: the tables)', async () => {
    const t = setup()
    const a = await t.api('POST', '/api/v2/feedback-loops', IMAP)
    const updated = await t.api('PATCH', `/api/v2/feedback-loops/${a.body.data.id}`, { poll_interval_seconds: 600, active: false })
    expect(updated.body.data).toMatchObject({ name: 'Yahoo', host: 'imap.example.net', password_set: true, poll_interval_seconds: 600, active: false })
  })

  test('delete one and bulk delete', async () => {
    const t = setup()
    const ids: number[] = []
    for (const name of ['a', 'b', 'c']) ids.push((await t.api('POST', '/api/v2/feedback-loops', { ...IMAP, name })).body.data.id)
    const one = await t.api('DELETE', `/api/v2/feedback-loops/${ids[0]}`)
    expect(one.body.data.name).toBe('a')
    expect((await t.api('GET', `/api/v2/feedback-loops/${ids[0]}`)).status).toBe(404)
    const bulk = await t.api('POST', '/api/v2/feedback-loops/bulk-delete', { ids: [ids[1], ids[2], 999] })
    expect(bulk.body.data).toEqual({ deleted: [ids[1], ids[2]], not_found: [999] })
    expect((await t.api('GET', '/api/v2/feedback-loops')).body.meta.total).toBe(0)
  })
})

// An IMAP account made with the scenario's Administrator key; `setup` is its id.
const account = async ({ t, admin }: ScenarioContext, body: Record<string, unknown> = IMAP) =>
  (await t.call('POST', '/api/v2/feedback-loops', { key: admin, body })).body.data.id as number

runScenarios('/api/v2/feedback-loops refusals', [
  ...(
    [
      ['no address for kind address', { name: 'a', kind: 'address' }, 'address'],
      ['IMAP fields on an address account', { name: 'a', kind: 'address', address: 'fbl@mailroom.test', host: 'imap.example.net' }, 'host'],
      ['no host', { ...IMAP, host: undefined }, 'host'],
      ['no password', { ...IMAP, password: undefined }, 'password'],
      ['an address on an IMAP account', { ...IMAP, address: 'fbl@mailroom.test' }, 'address'],
      ['a poll interval under 60 s', { ...IMAP, poll_interval_seconds: 59 }, 'poll_interval_seconds'],
      ['an unknown kind', { ...IMAP, kind: 'pop3' }, 'kind'],
    ] as Array<[string, Record<string, unknown>, string]>
  ).map(([name, body, field]): Scenario => ({
    name,
    method: 'POST',
    url: '/api/v2/feedback-loops',
    body,
    status: 422,
    after: (_, r) => expect(JSON.stringify(r.body.error.details)).toContain(field),
  })),
  {
    name: 'an address account outside the host name and return-path hosts',
    method: 'POST',
    url: '/api/v2/feedback-loops',
    body: { name: 'x', kind: 'address', address: 'fbl@gmail.com' },
    status: 422,
    after: (_, r) => expect(r.body.error.details.address[0]).toContain('mailroom.test'),
  },
  {
    name: 'a reserved address',
    method: 'POST',
    url: '/api/v2/feedback-loops',
    body: { name: 'y', kind: 'address', address: 'dmarc@mailroom.test' },
    status: 422,
    after: (_, r) => expect(r.body.error.details.address[0]).toContain('reserved'),
  },
  { name: 'a name taken, on create', method: 'POST', before: (c) => account(c), url: '/api/v2/feedback-loops', body: IMAP, status: 409 },
  {
    name: 'a name taken, on update',
    method: 'PATCH',
    before: async (c) => {
      await account(c)
      return account(c, { ...IMAP, name: 'Other' })
    },
    url: (c) => `/api/v2/feedback-loops/${c.setup}`,
    body: { name: 'Yahoo' },
    status: 409,
  },
  {
    name: 'the kind cannot change',
    method: 'PATCH',
    before: (c) => account(c),
    url: (c) => `/api/v2/feedback-loops/${c.setup}`,
    body: { kind: 'address' },
    status: 422,
  },
  { name: 'an unknown id', method: 'PATCH', url: '/api/v2/feedback-loops/999', body: { active: true }, status: 404 },
])

const reader = { permissions: ['feedback_loops.read'] }
runScenarios('each feedback-loops route needs its feedback_loops permission', [
  { name: 'a reader lists', method: 'GET', before: (c) => account(c), url: '/api/v2/feedback-loops', key: reader, status: 200 },
  {
    name: 'a reader cannot create',
    method: 'POST',
    before: (c) => account(c),
    url: '/api/v2/feedback-loops',
    body: { ...IMAP, name: 'z' },
    key: reader,
    status: 403,
  },
  {
    name: 'a reader cannot update',
    method: 'PATCH',
    before: (c) => account(c),
    url: (c) => `/api/v2/feedback-loops/${c.setup}`,
    body: { active: false },
    key: reader,
    status: 403,
  },
  {
    name: 'a reader cannot bulk delete',
    method: 'POST',
    before: (c) => account(c),
    url: '/api/v2/feedback-loops/bulk-delete',
    body: { ids: [1] },
    key: reader,
    status: 403,
  },
])
