import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { buildApp } from '../../src/app'
import { createAutomationRunner } from '../../src/modules/automations/runner'
import { createImportRunner } from '../../src/modules/imports/runner'
import { encodeId } from '../../src/modules/resend/ids'
import { createApiKey } from '../../src/modules/api-keys/service'
import { CLI_ACTOR, findRoleByName } from '../../src/modules/roles/service'
import { testDeps } from '../support/app'
import { tempDir } from '../support/temp-dirs'

/**
 * Bulk imports enter the drips of their list (issue 16: "Imports can be told not to enroll"),
 * through HTTP on a loopback socket, the engine driven turn by turn on the fixed clock. The
 * imports run in batches of 5 rows here, so an import of 12 is three batches.
 */
const servers: Array<{ stop(): unknown }> = []
afterAll(() => servers.forEach((s) => s.stop()))

const DAY = 86_400_000

function world(deps = testDeps({ allow_unverified_domains: true })) {
  const t = { deps, ...buildApp(deps) }
  const admin = { key: createApiKey(deps, CLI_ACTOR, { name: 'admin', role_id: findRoleByName(deps, 'Administrator')!.id }).key }
  const server = t.app.listen({ hostname: '127.0.0.1', port: 0 })
  servers.push(server)
  const base = `http://127.0.0.1:${server.server!.port}`
  const engine = createAutomationRunner(t.deps, { pollMs: 10 })
  engine.prepare()
  const request = async (method: string, path: string, body?: BodyInit, headers: Record<string, string> = {}) => {
    const res = await fetch(base + path, { method, headers: { authorization: `Bearer ${admin.key}`, ...headers }, body })
    const text = await res.text()
    return { status: res.status, body: text ? (JSON.parse(text) as any) : null }
  }
  const api = (method: string, path: string, body?: unknown) =>
    request(method, path, body === undefined ? undefined : JSON.stringify(body), body === undefined ? {} : { 'content-type': 'application/json' })
  const list = async (name: string) => (await api('POST', '/api/v2/lists', { name })).body.data.id as number
  /** A drip: wait a day, then send. */
  const drip = async (listIds: number[], extra: Record<string, unknown> = {}) =>
    (
      await api('POST', '/api/v2/drips', {
        name: 'Imported welcome',
        status: 'active',
        list_ids: listIds,
        graph: {
          steps: [
            { id: 'pause', kind: 'wait', settings: { duration_seconds: 86_400 }, edges: { next: 'hello' } },
            { id: 'hello', kind: 'send', settings: { from: 'hello@example.com', subject: 'Hello {{email}}', text: 'Hi' } },
          ],
        },
        ...extra,
      })
    ).body.data as { id: number; status: string }
  /** Uploads a CSV; the app's own import runner is held, `importAll` runs it in batches of 5. */
  const upload = async (listId: number, csv: string, query = '') => {
    await t.imports.stop()
    const r = await request('POST', `/api/v2/imports?list_id=${listId}${query}`, csv, { 'content-type': 'text/csv' })
    expect(r.status).toBe(202)
    return r.body.data as { id: number; enroll: boolean }
  }
  const importAll = async () => {
    const runner = createImportRunner(t.deps, { batchRows: 5 })
    runner.kick()
    await runner.idle()
  }
  const runsOf = async (id: number) => (await api('GET', `/api/v2/drips/${id}/runs?per_page=100`)).body.data as any[]
  const sent = () =>
    t.deps.db.$client
      .query<{ to: string; subject: string }, []>(
        "SELECT r.address AS 'to', m.subject FROM messages m JOIN message_recipients r ON r.message_id = m.id WHERE m.source = 'automation' ORDER BY r.address",
      )
      .all()
  /** Stops listening (before the database closes). */
  const close = async () => {
    servers.splice(servers.indexOf(server), 1)
    await server.stop()
  }
  return { t, admin, base, close, request, api, list, drip, upload, importAll, runsOf, sent, engine, clock: t.deps.clock }
}

const emails = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(2, '0')}@example.net`)

describe('imports enroll into the drips of their list', () => {
  test('an import of 12 gives 12 runs waiting; each is sent to after the wait; a draft drip takes none', async () => {
    const w = world()
    const listId = await w.list('imported')
    const d = await w.drip([listId])
    const draft = await w.drip([listId], { status: 'draft' })
    expect(draft.status).toBe('draft')
    const addresses = emails('u', 12)
    const imp = await w.upload(listId, `email\n${addresses.join('\n')}\n`)
    expect(imp.enroll).toBe(true)
    await w.importAll()
    expect((await w.api('GET', `/api/v2/imports/${imp.id}`)).body.data).toMatchObject({ status: 'completed', created: 12, enroll: true })

    await w.engine.tick()
    const runs = await w.runsOf(d.id)
    expect(runs.map((r) => r.email).sort()).toEqual(addresses)
    expect(new Set(runs.map((r) => `${r.state}:${r.step_id}`))).toEqual(new Set(['waiting:pause']))
    const stats = (await w.api('GET', `/api/v2/drips/${d.id}/stats`)).body.data
    expect(stats.runs).toMatchObject({ waiting: 12, active: 0, finished: 0 })
    expect(stats.steps.find((s: any) => s.step_id === 'pause')).toMatchObject({ entered: 12, waiting: 12, completed: 0 })
    expect(await w.runsOf(draft.id)).toEqual([])
    expect(w.sent()).toEqual([])

    // Nothing before the day is over; then the first send, once for each.
    w.clock.advance(DAY - 1000)
    await w.engine.tick()
    expect(w.sent()).toEqual([])
    w.clock.advance(1000)
    await w.engine.tick()
    expect(w.sent()).toEqual(addresses.map((a) => ({ to: a, subject: `Hello ${a}` })))
    expect((await w.api('GET', `/api/v2/drips/${d.id}/stats`)).body.data.steps.find((s: any) => s.step_id === 'hello')).toMatchObject({ sent: 12 })
  })

  test('enroll=false imports without enrolling', async () => {
    const w = world()
    const listId = await w.list('quiet')
    const d = await w.drip([listId])
    const imp = await w.upload(listId, `email\n${emails('q', 7).join('\n')}\n`, '&enroll=false')
    expect(imp.enroll).toBe(false)
    await w.importAll()
    await w.engine.tick()
    expect((await w.api('GET', `/api/v2/imports/${imp.id}`)).body.data).toMatchObject({ status: 'completed', created: 7, enroll: false })
    expect(await w.runsOf(d.id)).toEqual([])
    expect((await w.api('GET', `/api/v2/contacts?list_id=${listId}`)).body.meta.total).toBe(7)
    expect((await w.request('POST', `/api/v2/imports?list_id=${listId}&enroll=maybe`, 'email\nx@example.net\n', { 'content-type': 'text/csv' })).status).toBe(
      422,
    )
  })

  test('a contact already running is not enrolled twice; one moved to subscribed by an update import joins', async () => {
    const w = world()
    const a = await w.list('a')
    const b = await w.list('b')
    const d = await w.drip([a, b], { reentry: 'after_finish' })
    // Ann joins list a through the API: her run starts and waits.
    await w.api('POST', '/api/v2/contacts', { list_id: a, email: 'ann@example.net' })
    // Carl is on list b, unsubscribed: no run.
    await w.api('POST', '/api/v2/contacts', { list_id: b, email: 'carl@example.net', status: 'unsubscribed' })
    await w.engine.tick()
    expect((await w.runsOf(d.id)).map((r) => [r.email, r.state])).toEqual([['ann@example.net', 'waiting']])

    // Ann joins list b by import while her run is under way; Carl re-subscribes by an update import.
    await w.upload(b, 'email,status\nann@example.net,subscribed\nbob@example.net,\ncarl@example.net,subscribed\n', '&mode=update')
    await w.importAll()
    await w.engine.tick()
    const runs = await w.runsOf(d.id)
    expect(runs.map((r) => r.email).sort()).toEqual(['ann@example.net', 'bob@example.net', 'carl@example.net'])
    expect(runs.every((r) => r.state === 'waiting')).toBe(true)

    // Imported again in update mode: nobody's status changes, so nobody joins (even when every entry would start a run).
    expect((await w.api('PATCH', `/api/v2/drips/${d.id}`, { reentry: 'always' })).body.data.reentry).toBe('always')
    await w.upload(b, 'email,status\nann@example.net,subscribed\nbob@example.net,subscribed\n', '&mode=update')
    await w.importAll()
    expect(await w.runsOf(d.id)).toHaveLength(3)
  })

  test('an unconfirmed contact of a double opt-in list is not enrolled until it confirms', async () => {
    const w = world()
    const listId = await w.list('double opt-in')
    const d = await w.drip([listId])
    await w.upload(listId, 'email,status\ndana@example.net,unconfirmed\neve@example.net,\n')
    await w.importAll()
    await w.engine.tick()
    expect((await w.runsOf(d.id)).map((r) => r.email)).toEqual(['eve@example.net'])
    // Confirmed (subscribed) later through the API: the list-join entry takes her then.
    const dana = (await w.api('GET', '/api/v2/contacts?email=dana@example.net')).body.data[0]
    expect(dana.status).toBe('unconfirmed')
    expect((await w.api('PATCH', `/api/v2/contacts/${dana.id}`, { status: 'subscribed' })).status).toBe(200)
    await w.engine.tick()
    expect((await w.runsOf(d.id)).map((r) => r.email).sort()).toEqual(['dana@example.net', 'eve@example.net'])
  })

  test('the Resend-compatible import takes enroll=false as a form field', async () => {
    const w = world()
    const listId = await w.list('segment')
    const d = await w.drip([listId])
    const form = (enroll?: string) => {
      const f = new FormData()
      f.set('file', new Blob([`email\n${enroll ?? 'default'}@example.net\n`], { type: 'text/csv' }), 'c.csv')
      f.set('segments', JSON.stringify([{ id: encodeId('segment', listId) }]))
      if (enroll !== undefined) f.set('enroll', enroll)
      return f
    }
    await w.t.imports.stop()
    for (const enroll of ['false', undefined]) expect((await w.request('POST', '/compat/resend/contacts/imports', form(enroll))).status).toBe(200)
    expect((await w.request('POST', '/compat/resend/contacts/imports', form('perhaps'))).status).toBe(422)
    const imports = (await w.api('GET', '/api/v2/imports')).body.data
    expect(imports.map((i: any) => i.enroll)).toEqual([true, false])
    await w.importAll()
    await w.engine.tick()
    expect((await w.runsOf(d.id)).map((r) => r.email)).toEqual(['default@example.net'])
  })
})

test('an import resumed after a stop neither misses nor repeats an enrollment', async () => {
  const dir = tempDir('mailroom-import-enroll-')
  const dbPath = join(dir, 'm.db')
  const first = testDeps({ data_dir: dir, allow_unverified_domains: true }, dbPath)
  const w = world(first)
  const listId = await w.list('resumed')
  // Every entry starts a run: a second enrollment of an address would show as a second run.
  const d = await w.drip([listId], { reentry: 'always' })
  const addresses = emails('r', 12)
  const imp = await w.upload(listId, `email\n${addresses.join('\n')}\n`)
  const runner1 = createImportRunner(first, { batchRows: 5 })
  runner1.kick()
  await runner1.stop()
  const partial = first.db.$client.query<{ n: number }, []>('SELECT COUNT(*) AS n FROM automation_enrollments').get()!.n
  expect(partial).toBe(5)
  await w.close()
  first.db.$client.close()

  // A new process on the same database resumes the import after its committed batch.
  const second = testDeps({ data_dir: dir }, dbPath)
  const { imports } = buildApp(second)
  await imports.stop()
  const runner2 = createImportRunner(second, { batchRows: 5 })
  runner2.kick()
  await runner2.idle()
  const db = second.db.$client
  expect(db.query('SELECT status, created FROM imports WHERE id = ?').get(imp.id)).toEqual({ status: 'completed', created: 12 })
  const runs = db.query<{ email: string }, [number]>('SELECT email FROM automation_enrollments WHERE automation_id = ? ORDER BY email').all(d.id)
  expect(runs.map((r) => r.email)).toEqual(addresses)
  expect(db.query('SELECT COUNT(*) AS n FROM automation_wakeups').get()).toEqual({ n: 12 })
})
