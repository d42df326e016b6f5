import { describe, expect, test } from 'bun:test'
import { testApp } from '../support/app'

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

  test('an address account: at the host name or a return-path host only', async () => {
    const t = setup()
    const ok = await t.api('POST', '/api/v2/feedback-loops', { name: 'listener', kind: 'address', address: 'FBL@Mailroom.test' })
    expect(ok.status).toBe(201)
    expect(ok.body.data).toMatchObject({ kind: 'address', address: 'fbl@mailroom.test', host: null, password_set: false, poll_interval_seconds: null })
    const foreign = await t.api('POST', '/api/v2/feedback-loops', { name: 'x', kind: 'address', address: 'fbl@gmail.com' })
    expect(foreign.status).toBe(422)
    expect(foreign.body.error.details.address[0]).toContain('mailroom.test')
    const reserved = await t.api('POST', '/api/v2/feedback-loops', { name: 'y', kind: 'address', address: 'dmarc@mailroom.test' })
    expect(reserved.body.error.details.address[0]).toContain('reserved')
  })

  test.each([
    ['no address for kind address', { name: 'a', kind: 'address' }, 'address'],
    ['IMAP fields on an address account', { name: 'a', kind: 'address', address: 'fbl@mailroom.test', host: 'imap.example.net' }, 'host'],
    ['no host', { ...IMAP, host: undefined }, 'host'],
    ['no password', { ...IMAP, password: undefined }, 'password'],
    ['an address on an IMAP account', { ...IMAP, address: 'fbl@mailroom.test' }, 'address'],
    ['a poll interval under 60 s', { ...IMAP, poll_interval_seconds: 59 }, 'poll_interval_seconds'],
    ['an unknown kind', { ...IMAP, kind: 'pop3' }, 'kind'],
  ])('refused with 422: %s', async (_name, body, field) => {
    const t = setup()
    const r = await t.api('POST', '/api/v2/feedback-loops', body)
    expect(r.status).toBe(422)
    expect(JSON.stringify(r.body.error.details)).toContain(field)
  })

  test('names are unique (409); update keeps what is not sent; kind cannot change', async () => {
    const t = setup()
    const a = await t.api('POST', '/api/v2/feedback-loops', IMAP)
    expect((await t.api('POST', '/api/v2/feedback-loops', IMAP)).status).toBe(409)
    const b = await t.api('POST', '/api/v2/feedback-loops', { ...IMAP, name: 'Other' })
    expect((await t.api('PATCH', `/api/v2/feedback-loops/${b.body.data.id}`, { name: 'Yahoo' })).status).toBe(409)
    const updated = await t.api('PATCH', `/api/v2/feedback-loops/${a.body.data.id}`, { poll_interval_seconds: 600, active: false })
    expect(updated.body.data).toMatchObject({ name: 'Yahoo', host: 'imap.example.net', password_set: true, poll_interval_seconds: 600, active: false })
    expect((await t.api('PATCH', `/api/v2/feedback-loops/${a.body.data.id}`, { kind: 'address' })).status).toBe(422)
    expect((await t.api('PATCH', '/api/v2/feedback-loops/999', { active: true })).status).toBe(404)
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

  test('each route needs its feedback_loops permission', async () => {
    const t = setup()
    const created = await t.api('POST', '/api/v2/feedback-loops', IMAP)
    const reader = t.makeKey({ permissions: ['feedback_loops.read'] })
    const as = (method: string, path: string, body?: unknown) => t.call(method, path, { key: reader.key, body })
    expect((await as('GET', '/api/v2/feedback-loops')).status).toBe(200)
    expect((await as('POST', '/api/v2/feedback-loops', { ...IMAP, name: 'z' })).status).toBe(403)
    expect((await as('PATCH', `/api/v2/feedback-loops/${created.body.data.id}`, { active: false })).status).toBe(403)
    expect((await as('POST', '/api/v2/feedback-loops/bulk-delete', { ids: [1] })).status).toBe(403)
  })
})
