import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { buildApp } from '../../src/app'
import { listContacts } from '../../src/modules/contacts/service'
import { createImportRunner, IMPORT_CACHE_KIB } from '../../src/modules/imports/runner'
import { getImport, listImportErrors } from '../../src/modules/imports/service'
import { createList } from '../../src/modules/lists/service'
import { testApp, testDeps } from '../support/app'
import { runScenarios, type Scenario, type ScenarioContext } from '../support/scenarios'
import { tempDir } from '../support/temp-dirs'

function setup(overrides = {}) {
  const t = testApp(overrides)
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  const upload = (listId: number, body: string | Uint8Array, query = '', type = 'text/csv') =>
    t.app
      .handle(
        new Request(`http://mailroom.test/api/v2/imports?list_id=${listId}${query}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${admin.key}`, 'content-type': type },
          body: body as BodyInit,
        }),
      )
      .then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
  const list = async () => (await call('POST', '/api/v2/lists', { name: 'L' })).body.data.id as number
  const finished = async (id: number) => {
    await t.imports.idle()
    return (await call('GET', `/api/v2/imports/${id}`)).body.data
  }
  return { t, admin, call, upload, list, finished }
}

describe('bulk import', () => {
  test('a CSV imports with columns mapped by name, custom fields typed from text', async () => {
    const { call, upload, list, finished } = setup()
    const l = await list()
    await call('POST', '/api/v2/custom-fields', { key: 'plan', name: 'Plan', type: 'one_of', options: ['free', 'pro'] })
    await call('POST', '/api/v2/custom-fields', { key: 'seats', name: 'Seats', type: 'number' })
    const csv = 'Email,First_Name,Last_Name,plan,seats,ignored\nada@example.com,Ada,Lovelace,pro,5,x\n"Bob@Example.com","Bob ""B""",,free,,y\n'
    const r = await upload(l, csv)
    expect(r.status).toBe(202)
    expect(r.body.data).toMatchObject({
      status: 'queued',
      // Counted from the line breaks as the file arrived: known before the import runs.
      total_rows: 2,
      list_id: l,
      format: 'csv',
      mode: 'skip',
      mapping: { email: 'Email', first_name: 'First_Name', last_name: 'Last_Name', 'fields.plan': 'plan', 'fields.seats': 'seats' },
    })
    const done = await finished(r.body.data.id)
    expect(done).toMatchObject({ status: 'completed', total_rows: 2, rows_done: 2, created: 2, updated: 0, skipped: 0, invalid: 0, error: null })
    const contacts = (await call('GET', `/api/v2/contacts?list_id=${l}`)).body.data
    expect(contacts.map((c: any) => [c.email, c.first_name, c.last_name, c.fields])).toEqual([
      ['ada@example.com', 'Ada', 'Lovelace', { plan: 'pro', seats: 5 }],
      ['bob@example.com', 'Bob "B"', null, { plan: 'free' }],
    ])
  })

  test('invalid rows are reported with row numbers and reasons, and the rest imports', async () => {
    const { call, upload, list, finished, t, admin } = setup()
    const l = await list()
    await call('POST', '/api/v2/custom-fields', { key: 'plan', name: 'Plan', type: 'one_of', options: ['free', 'pro'] })
    const csv = [
      'email,plan,status',
      'good@example.com,pro,',
      'not-an-email,pro,',
      'x@example.com,gold,',
      'y@example.com,pro,happy',
      'short@example.com',
      'z@example.com,"pro"oops,',
      'last@example.com,free,unsubscribed',
      '',
    ].join('\n')
    const r = await upload(l, csv)
    const done = await finished(r.body.data.id)
    expect(done).toMatchObject({ status: 'completed', created: 2, invalid: 5 })
    expect(done.rows_done).toBe(done.total_rows)
    const errors = (await call('GET', `/api/v2/imports/${r.body.data.id}/errors`)).body
    expect(errors.meta.total).toBe(5)
    const byRow = Object.fromEntries(errors.data.map((e: any) => [e.row, e.reason]))
    expect(byRow[2]).toContain('email must look like name@example.com')
    expect(byRow[3]).toContain('fields.plan must be one of: free, pro')
    expect(byRow[4]).toContain('status must be one of')
    expect(byRow[5]).toContain('has 1 values but the header has 3 columns')
    expect(byRow[6]).toContain('broken quoting')
    const last = (await call('GET', '/api/v2/contacts?email=last@example.com')).body.data[0]
    expect(last.status).toBe('unsubscribed')

    const exported = await t.app.handle(
      new Request(`http://mailroom.test/api/v2/imports/${r.body.data.id}/errors/export`, { headers: { authorization: `Bearer ${admin.key}` } }),
    )
    expect(exported.headers.get('content-type')).toContain('text/csv')
    const lines = (await exported.text()).trim().split('\r\n')
    expect(lines[0]).toBe('row,reason,raw')
    expect(lines).toHaveLength(6)
    expect(lines[1]).toStartWith('2,')
    expect(lines[1]).toContain('not-an-email')
  })

  test('skip and update modes for addresses already on the list', async () => {
    const { call, upload, list, finished } = setup()
    const l = await list()
    await call('POST', '/api/v2/contacts', { email: 'old@example.com', list_id: l, first_name: 'Old' })
    const csv = 'email,first_name\nold@example.com,New\nfresh@example.com,Fresh\n'
    const skip = await finished((await upload(l, csv)).body.data.id)
    expect(skip).toMatchObject({ created: 1, skipped: 1, updated: 0 })
    expect((await call('GET', '/api/v2/contacts?email=old@example.com')).body.data[0].first_name).toBe('Old')
    const update = await finished((await upload(l, csv, '&mode=update')).body.data.id)
    expect(update).toMatchObject({ created: 0, updated: 2, skipped: 0 })
    expect((await call('GET', '/api/v2/contacts?email=old@example.com')).body.data[0].first_name).toBe('New')
    expect((await call('GET', `/api/v2/contacts?list_id=${l}`)).body.meta.total).toBe(2)
  })

  test('an explicit mapping, and JSON lines', async () => {
    const { call, upload, list, finished } = setup()
    const l = await list()
    const mapped = await upload(l, 'E-mail address;Name\n', `&mapping=${encodeURIComponent(JSON.stringify({ email: 'E-mail address;Name' }))}`)
    expect(mapped.status).toBe(202)
    const csv = 'E-mail,Vorname\nmia@example.com,Mia\n'
    const r = await upload(l, csv, `&mapping=${encodeURIComponent(JSON.stringify({ email: 'E-mail', first_name: 'Vorname' }))}`)
    expect((await finished(r.body.data.id)).created).toBe(1)
    expect((await call('GET', '/api/v2/contacts?email=mia@example.com')).body.data[0].first_name).toBe('Mia')

    const jsonl = '{"email":"j1@example.com","first_name":"J"}\n{"email":"bad"}\nnot json\n{"email":"j2@example.com"}\n'
    const j = await upload(l, jsonl, '', 'application/x-ndjson')
    expect(j.body.data.format).toBe('jsonl')
    expect(await finished(j.body.data.id)).toMatchObject({ status: 'completed', total_rows: 4, created: 2, invalid: 2 })
  })

  test('suppressed addresses are imported with a status saying so', async () => {
    const { call, upload, list, finished } = setup()
    const l = await list()
    await call('POST', '/api/v2/suppressions/batch', { type: 'email', reason: 'complaint', entries: ['angry@example.com'] })
    await call('POST', '/api/v2/suppressions/batch', { type: 'domain', reason: 'manual', entries: ['blocked.example'] })
    await call('POST', '/api/v2/suppressions/batch', { type: 'email', reason: 'hard_bounce', entries: ['gone@example.com'], scope: 'list', list_id: l })
    const r = await upload(l, 'email\nangry@example.com\nsomeone@blocked.example\ngone@example.com\nfine@example.com\n')
    expect((await finished(r.body.data.id)).created).toBe(4)
    const statuses = Object.fromEntries((await call('GET', `/api/v2/contacts?list_id=${l}`)).body.data.map((c: any) => [c.email, c.status]))
    expect(statuses).toEqual({
      'angry@example.com': 'complained',
      'someone@blocked.example': 'unsubscribed',
      'gone@example.com': 'bounced',
      'fine@example.com': 'subscribed',
    })
  })

  test('a restart resumes after the last committed batch and never counts a row twice', async () => {
    const dir = tempDir('mailroom-import-')
    const dbPath = join(dir, 'm.db')
    const first = testDeps({ data_dir: dir }, dbPath)
    const { app, imports } = buildApp(first)
    await imports.stop() // this test drives the runners itself
    const { createApiKey } = await import('../../src/modules/api-keys/service')
    const { CLI_ACTOR } = await import('../../src/modules/roles/service')
    const key = createApiKey(first, CLI_ACTOR, { name: 'k', role_id: 1 }).key
    const listId = createList(first, { name: 'L' })
    const rows = Array.from({ length: 23 }, (_, i) => `r${i}@example.com`).join('\n')
    const res = await app.handle(
      new Request(`http://mailroom.test/api/v2/imports?list_id=${listId.id}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
        body: `email\n${rows}\nbad\n`,
      }),
    )
    const id = ((await res.json()) as any).data.id

    // The first server commits one batch of 5 rows and stops (as at SIGTERM, or a crash after a commit).
    const runner1 = createImportRunner(first, { batchRows: 5 })
    runner1.kick()
    await runner1.stop()
    expect(getImport(first, id)).toMatchObject({ status: 'running', rows_done: 5, created: 5 })
    first.db.$client.close()

    // A new process on the same database resumes.
    const second = testDeps({ data_dir: dir }, dbPath)
    const runner2 = createImportRunner(second, { batchRows: 5 })
    runner2.kick()
    await runner2.idle()
    expect(getImport(second, id)).toMatchObject({ status: 'completed', total_rows: 24, rows_done: 24, created: 23, skipped: 0, invalid: 1 })
    expect(listContacts(second, {}).meta.total).toBe(23)
    expect(listImportErrors(second, id, {}).meta.total).toBe(1)
    expect(readdirSync(join(dir, 'imports'))).toEqual([]) // the file is removed once done
  })

  test('rows are read and checked in a worker thread or in this one with the same outcome', async () => {
    const csv = [
      'email,first_name,plan,seats,status',
      'ada@example.com,Ada,pro,5,',
      'bad-address,X,pro,1,',
      '"Bob@Example.com","Bob ""B""",free,,unconfirmed',
      'cy@example.com,Cy,gold,2,',
      'ada@example.com,Again,free,1,',
      'broken,"x"y,free,1,',
      'dee@example.com,Dee,free,2,bounced',
    ].join('\n')
    const outcome = async (worker: boolean) => {
      const { t, call, upload, list } = setup()
      await t.imports.stop() // driven below
      const l = await list()
      await call('POST', '/api/v2/custom-fields', { key: 'plan', name: 'Plan', type: 'one_of', options: ['free', 'pro'] })
      await call('POST', '/api/v2/custom-fields', { key: 'seats', name: 'Seats', type: 'number' })
      const id = (await upload(l, csv)).body.data.id
      const runner = createImportRunner(t.deps, { worker, batchRows: 3 })
      runner.kick()
      await runner.idle()
      const imp = (await call('GET', `/api/v2/imports/${id}`)).body.data
      const contacts = (await call('GET', `/api/v2/contacts?list_id=${l}`)).body.data.map((c: any) => [c.email, c.first_name, c.status, c.fields])
      const errors = (await call('GET', `/api/v2/imports/${id}/errors`)).body.data
      return { counts: [imp.status, imp.rows_done, imp.created, imp.skipped, imp.invalid], contacts, errors }
    }
    const inWorker = await outcome(true)
    expect(inWorker.counts).toEqual(['completed', 7, 3, 1, 3])
    expect(inWorker.errors.map((e: any) => e.row)).toEqual([2, 4, 6])
    expect(await outcome(false)).toEqual(inWorker)
  })

  test('an import runs with its own small page cache and gives the connection its own back', async () => {
    const { t, upload, list } = setup()
    await t.imports.stop() // driven below
    const l = await list()
    const id = (await upload(l, 'email\n' + Array.from({ length: 12 }, (_, i) => `c${i}@example.com`).join('\n') + '\n')).body.data.id
    const client = t.deps.db.$client
    const cacheSize = () => (client.query('PRAGMA cache_size').get() as { cache_size: number }).cache_size
    const before = cacheSize()
    // Asked inside each batch's transaction: what the connection runs the inserts with.
    const during: number[] = []
    const runner = createImportRunner(t.deps, {
      batchRows: 5,
      suppressionReasons: () => {
        during.push(cacheSize())
        return new Map()
      },
    })
    runner.kick()
    await runner.idle()
    expect(getImport(t.deps, id)).toMatchObject({ status: 'completed', created: 12 })
    expect(during).toEqual([-IMPORT_CACHE_KIB, -IMPORT_CACHE_KIB, -IMPORT_CACHE_KIB])
    expect(before).not.toBe(-IMPORT_CACHE_KIB)
    expect(cacheSize()).toBe(before)
  })

  test('an import whose file vanished fails cleanly with a reason', async () => {
    const { t, upload, list, finished } = setup()
    const l = await list()
    // Hold the runner back so the file can be removed before it runs.
    const stopped = t.imports.stop()
    await stopped
    const r = await upload(l, 'email\na@example.com\n')
    rmSync(join(t.deps.config.data_dir, 'imports'), { recursive: true, force: true })
    const runner = createImportRunner(t.deps)
    runner.kick()
    await runner.idle()
    const done = await finished(r.body.data.id)
    expect(done).toMatchObject({ status: 'failed', created: 0, error: 'the uploaded file is no longer in the data directory' })
  })
})

test('the invalid-rows export streams every row past one read batch, in file order', async () => {
  const t = testApp()
  const admin = t.makeKey()
  const l = (await t.call('POST', '/api/v2/lists', { key: admin.key, body: { name: 'L' } })).body.data.id
  const csv = 'email\n' + Array.from({ length: 2500 }, (_, i) => (i % 2 ? `ok${i}@example.com` : `bad-${i}`)).join('\n') + '\n'
  const up = await t.app.handle(
    new Request(`http://mailroom.test/api/v2/imports?list_id=${l}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin.key}`, 'content-type': 'text/csv' },
      body: csv,
    }),
  )
  const id = ((await up.json()) as { data: { id: number } }).data.id
  await t.imports.idle()
  const res = await t.app.handle(new Request(`http://mailroom.test/api/v2/imports/${id}/errors/export`, { headers: { authorization: `Bearer ${admin.key}` } }))
  const rows = (await res.text()).trim().split('\r\n').slice(1)
  expect(rows).toHaveLength(1250)
  expect(rows.map((r) => Number(r.split(',')[0]))).toEqual(Array.from({ length: 1250 }, (_, i) => 2 * i + 1))
})

// A list made with the scenario's Administrator key; `setup` is its id.
const aList = async ({ t, admin }: ScenarioContext) => (await t.call('POST', '/api/v2/lists', { key: admin, body: { name: 'L' } })).body.data.id as number
const csv = { 'content-type': 'text/csv' }

runScenarios(
  'bulk import refuses at upload, leaving nothing behind',
  (
    [
      [
        'a file that is not UTF-8',
        new Uint8Array([...Buffer.from('email,first_name\nb@example.com,Bj'), 0xf6, ...Buffer.from('rn\n')]),
        '',
        'file',
        /not UTF-8/,
      ],
      ['an empty file', '', '', 'file', /empty/],
      ['no email column', 'name,phone\nA,1\n', '', 'mapping', /no column maps to email/],
      [
        'a mapping to a missing column',
        'email\na@example.com\n',
        `&mapping=${encodeURIComponent('{"email":"Mail"}')}`,
        'mapping',
        /column "Mail" \(for email\) is not in the header/,
      ],
      [
        'a mapping to an unknown attribute',
        'email\na@example.com\n',
        `&mapping=${encodeURIComponent('{"email":"email","fields.nope":"email"}')}`,
        'mapping',
        /not a contact attribute/,
      ],
      ['a mapping that is not JSON', 'email\na@example.com\n', '&mapping=email', 'mapping', /JSON object/],
      ['an unknown list', 'email\na@example.com\n', '', 'list_id', /No list/],
    ] as Array<[string, string | Uint8Array, string, string, RegExp]>
  ).map(([name, body, query, field, message]): Scenario => ({
    name,
    method: 'POST',
    before: aList,
    url: (c) => `/api/v2/imports?list_id=${name === 'an unknown list' ? 999 : c.setup}${query}`,
    headers: csv,
    rawBody: body,
    status: 422,
    after: async ({ t, admin }, r) => {
      expect(r.body.error.details[field].join(' ')).toMatch(message)
      expect((await t.call('GET', '/api/v2/imports', { key: admin })).body.meta.total).toBe(0)
      const dir = join(t.deps.config.data_dir, 'imports')
      expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([])
    },
  })),
)

runScenarios(
  'bulk import: size and media type limits',
  [
    {
      name: 'a file over max_import_bytes',
      method: 'POST',
      before: aList,
      url: (c) => `/api/v2/imports?list_id=${c.setup}`,
      headers: csv,
      rawBody: 'email\n' + 'a@example.com\n'.repeat(20),
      status: 413,
    },
    {
      name: 'JSON is not an import format',
      method: 'POST',
      before: aList,
      url: (c) => `/api/v2/imports?list_id=${c.setup}`,
      headers: { 'content-type': 'application/json' },
      rawBody: '{"email":"a@example.com"}',
      status: 415,
    },
  ],
  { config: { max_import_bytes: 100 } },
)
