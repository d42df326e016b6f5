import { unpackMessage } from '../../src/lib/stored-message'
import { afterAll, describe, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import { nextTimeOfDay } from '../../src/modules/automations/graph'
import { createAutomationRunner } from '../../src/modules/automations/runner'
import { emit } from '../../src/modules/events/service'
import { testApp } from '../support/app'
import { startWebhookReceiver } from '../support/webhook-receiver'

/**
 * Drips, triggers and custom events (issue 16) through HTTP on a loopback socket, with the
 * engine driven turn by turn on the test's fixed clock (`runner.tick()`): no real time passes.
 */
const servers: Array<{ stop(): unknown }> = []
afterAll(() => servers.forEach((s) => s.stop()))

const DAY = 86_400_000

function world() {
  const t = testApp({ allow_unverified_domains: true, webhooks_allow_private: true })
  const admin = t.makeKey()
  const server = t.app.listen({ hostname: '127.0.0.1', port: 0 })
  servers.push(server)
  const base = `http://127.0.0.1:${server.server!.port}`
  const runner = createAutomationRunner(t.deps, { pollMs: 10 })
  // As the server does at start: the engine reads the event log from here on.
  runner.prepare()
  const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${admin.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? (JSON.parse(text) as any) : null }
  }
  const messages = () =>
    t.deps.db.$client
      .query<{ id: string; subject: string; to: string }, []>(
        "SELECT m.id, m.subject, r.address AS 'to' FROM messages m JOIN message_recipients r ON r.message_id = m.id WHERE m.source = 'automation' ORDER BY m.rowid",
      )
      .all()
  const rawOf = (id: string) => unpackMessage((t.deps.db.$client.query('SELECT raw FROM messages WHERE id = ?').get(id) as { raw: Uint8Array }).raw)
  /** Follows a tracking link of a sent message through the listening server. */
  const follow = (url: string) => fetch(base + url.slice(t.deps.config.public_url.length), { redirect: 'manual' })
  const list = async (name: string) => (await api('POST', '/api/v2/lists', { name })).body.data.id as number
  const contact = async (listId: number, email: string, first_name?: string) =>
    (await api('POST', '/api/v2/contacts', { list_id: listId, email, first_name })).body.data.id as number
  const runsOf = (kind: 'drips' | 'triggers', id: number) => api('GET', `/api/v2/${kind}/${id}/runs?per_page=100`).then((r) => r.body.data as any[])
  return { t, api, runner, messages, rawOf, follow, list, contact, runsOf, clock: t.deps.clock }
}

const send = (id: string, subject: string, next?: string, extra: Record<string, unknown> = {}) => ({
  id,
  kind: 'send',
  settings: { from: 'Hello <hello@example.com>', subject, html: `<p>${subject}</p>`, text: subject, ...extra },
  ...(next ? { edges: { next } } : {}),
})

describe('drips', () => {
  test('a welcome drip sends on subscribe, waits 2 days, then branches on whether the first mail was opened', async () => {
    const w = world()
    const listId = await w.list('welcome')
    const created = await w.api('POST', '/api/v2/drips', {
      name: 'Welcome',
      status: 'active',
      list_ids: [listId],
      graph: {
        steps: [
          send('welcome', 'Welcome {{first_name}}', 'pause', { track_opens: true }),
          { id: 'pause', kind: 'wait', settings: { duration_seconds: 2 * 86_400 }, edges: { next: 'was-opened' } },
          {
            id: 'was-opened',
            kind: 'condition',
            settings: { type: 'engagement', step_id: 'welcome', activity: 'opened' },
            edges: { yes: 'thanks', no: 'nudge' },
          },
          send('thanks', 'Thanks for reading'),
          send('nudge', 'Did you miss this?'),
        ],
      },
    })
    expect(created.status).toBe(201)
    const drip = created.body.data
    expect(drip).toMatchObject({ kind: 'drip', status: 'active', version: 1, list_ids: [listId], reentry: 'once' })

    await w.contact(listId, 'ann@example.net', 'Ann')
    await w.contact(listId, 'bob@example.net', 'Bob')
    await w.runner.tick()
    expect(w.messages().map((m) => [m.to, m.subject])).toEqual([
      ['ann@example.net', 'Welcome Ann'],
      ['bob@example.net', 'Welcome Bob'],
    ])
    let runs = await w.runsOf('drips', drip.id)
    expect(runs.map((r) => [r.email, r.state, r.step_id])).toEqual([
      ['bob@example.net', 'waiting', 'pause'],
      ['ann@example.net', 'waiting', 'pause'],
    ])
    expect(runs[0].next_wake_at).toBe(new Date(w.clock.now() + 2 * DAY).toISOString())

    // Ann opens her welcome mail (the tracking image, through the server).
    const annMail = await simpleParser(w.rawOf(w.messages()[0]!.id))
    const pixel = /<img src="([^"]+)" width="1"/.exec(annMail.html as string)![1]!
    expect((await w.follow(pixel)).status).toBe(200)

    // A day later nothing is due yet; the wake-ups come due after two days.
    w.clock.advance(DAY)
    await w.runner.tick()
    expect(w.messages()).toHaveLength(2)
    w.clock.advance(DAY)
    await w.runner.tick()
    expect(
      w
        .messages()
        .slice(2)
        .map((m) => [m.to, m.subject]),
    ).toEqual([
      ['ann@example.net', 'Thanks for reading'],
      ['bob@example.net', 'Did you miss this?'],
    ])
    runs = await w.runsOf('drips', drip.id)
    expect(runs.map((r) => r.state)).toEqual(['finished', 'finished'])
    expect(runs.find((r) => r.email === 'ann@example.net').steps.map((s: any) => [s.step_id, s.outcome])).toEqual([
      ['welcome', 'next'],
      ['pause', 'next'],
      ['was-opened', 'yes'],
      ['thanks', 'next'],
    ])

    const stats = (await w.api('GET', `/api/v2/drips/${drip.id}/stats`)).body.data
    const byStep = Object.fromEntries(stats.steps.map((s: any) => [s.step_id, s]))
    expect(byStep.welcome).toMatchObject({ entered: 2, completed: 2, sent: 2, opened: 1, clicked: 0 })
    expect(byStep['was-opened']).toMatchObject({ entered: 2, completed: 2 })
    expect(byStep.thanks).toMatchObject({ sent: 1 })
    expect(byStep.nudge).toMatchObject({ sent: 1 })
    expect(stats.runs).toMatchObject({ finished: 2, waiting: 0 })

    // Once ever (the default): joining another list of the drip does not start a second run.
    const other = await w.list('other')
    await w.api('PATCH', `/api/v2/drips/${drip.id}`, { list_ids: [listId, other] })
    await w.contact(other, 'ann@example.net', 'Ann')
    await w.runner.tick()
    expect((await w.runsOf('drips', drip.id)).length).toBe(2)

    // A contact's run history.
    const annId = runs.find((r) => r.email === 'ann@example.net').contact_id
    const history = await w.api('GET', `/api/v2/contacts/${annId}/automations`)
    expect(history.status).toBe(200)
    expect(history.body.data.map((r: any) => [r.automation_name, r.state])).toEqual([['Welcome', 'finished']])
  })

  test('an exit condition ends a waiting run; pause holds wake-ups, resume releases them', async () => {
    const w = world()
    const listId = await w.list('course')
    const drip = (
      await w.api('POST', '/api/v2/drips', {
        name: 'Course',
        status: 'active',
        list_ids: [listId],
        exit_conditions: [{ event: 'course.cancelled' }],
        graph: {
          steps: [
            send('day1', 'Day 1', 'wait'),
            { id: 'wait', kind: 'wait', settings: { duration_seconds: 86_400 }, edges: { next: 'day2' } },
            send('day2', 'Day 2'),
          ],
        },
      })
    ).body.data
    await w.contact(listId, 'ann@example.net')
    await w.contact(listId, 'bob@example.net')
    await w.runner.tick()
    expect(w.messages().map((m) => m.subject)).toEqual(['Day 1', 'Day 1'])

    const tracked = await w.api('POST', '/api/v2/track', { event: 'course.cancelled', email: 'ann@example.net' })
    expect(tracked.status).toBe(202)
    await w.runner.tick()
    let runs = await w.runsOf('drips', drip.id)
    expect(runs.find((r) => r.email === 'ann@example.net')).toMatchObject({
      state: 'exited',
      step_id: 'wait',
      reason: 'exit condition: event course.cancelled',
    })

    // Paused: the wake-up comes due but is held.
    expect((await w.api('POST', `/api/v2/drips/${drip.id}/pause`)).body.data.status).toBe('paused')
    expect((await w.api('POST', `/api/v2/drips/${drip.id}/pause`)).status).toBe(409)
    w.clock.advance(DAY + 1000)
    await w.runner.tick()
    expect(w.messages()).toHaveLength(2)
    expect((await w.api('POST', `/api/v2/drips/${drip.id}/resume`)).body.data.status).toBe('active')
    await w.runner.tick()
    expect(w.messages().map((m) => [m.to, m.subject])).toEqual([
      ['ann@example.net', 'Day 1'],
      ['bob@example.net', 'Day 1'],
      ['bob@example.net', 'Day 2'],
    ])
    runs = await w.runsOf('drips', drip.id)
    expect(runs.map((r) => [r.email, r.state])).toEqual([
      ['bob@example.net', 'finished'],
      ['ann@example.net', 'exited'],
    ])
    const stats = (await w.api('GET', `/api/v2/drips/${drip.id}/stats`)).body.data
    expect(stats.steps.find((s: any) => s.step_id === 'wait')).toMatchObject({ entered: 2, completed: 1, exited: 1 })
  })

  test('explicit enrollment of contacts and of a whole list; the re-entry policy; a draft refuses', async () => {
    const w = world()
    const listId = await w.list('manual')
    const ids = [await w.contact(listId, 'a@example.net'), await w.contact(listId, 'b@example.net')]
    const drip = (
      await w.api('POST', '/api/v2/drips', {
        name: 'Manual',
        reentry: 'after_finish',
        graph: { steps: [send('one', 'One')] },
      })
    ).body.data
    expect(drip.status).toBe('draft')
    expect((await w.api('POST', `/api/v2/drips/${drip.id}/enroll`, { contact_ids: ids })).status).toBe(409)
    await w.api('POST', `/api/v2/drips/${drip.id}/resume`)
    const first = await w.api('POST', `/api/v2/drips/${drip.id}/enroll`, { contact_ids: [ids[0], 999] })
    expect(first.body.data).toEqual({ enrolled: 1, skipped: 0, not_found: [999] })
    // A run under way keeps the same address out (after_finish); once it finished, it may enter again.
    expect((await w.api('POST', `/api/v2/drips/${drip.id}/enroll`, { contact_ids: [ids[0]] })).body.data.enrolled).toBe(0)
    await w.runner.tick()
    const all = await w.api('POST', `/api/v2/drips/${drip.id}/enroll`, { list_id: listId })
    expect(all.body.data).toEqual({ enrolled: 2, skipped: 0, not_found: [] })
    await w.runner.tick()
    expect(w.messages().map((m) => m.to)).toEqual(['a@example.net', 'a@example.net', 'b@example.net'])
  })
})

describe('web form welcome drips', () => {
  test("a confirmed web-form sign-up starts the form's welcome drip once; a drip on the same list is not entered twice", async () => {
    const w = world()
    const listId = await w.list('newsletter')
    const welcome = (await w.api('POST', '/api/v2/drips', { name: 'Welcome', graph: { steps: [send('hi', 'Welcome aboard')] } })).body.data
    await w.api('POST', `/api/v2/drips/${welcome.id}/resume`)
    const onList = (
      await w.api('POST', '/api/v2/drips', { name: 'List drip', list_ids: [listId], reentry: 'always', graph: { steps: [send('l', 'List hello')] } })
    ).body.data
    await w.api('POST', `/api/v2/drips/${onList.id}/resume`)
    const a = await w.contact(listId, 'a@example.net')
    const b = await w.contact(listId, 'b@example.net')
    const now = w.clock.now()
    // What web-forms/service.ts writes on confirmation (its own tests cover the page and link).
    emit(w.t.deps.db, now, {
      kind: 'contact.confirmed',
      contact_id: a,
      list_id: listId,
      data: { email: 'a@example.net', list_id: listId, form_id: 1, welcome_drip_id: welcome.id },
    })
    emit(w.t.deps.db, now, {
      kind: 'contact.confirmed',
      contact_id: b,
      list_id: listId,
      data: { email: 'b@example.net', list_id: listId, form_id: 1, welcome_drip_id: onList.id },
    })
    await w.runner.tick()
    const welcomes = w.messages().filter((m) => m.subject === 'Welcome aboard')
    expect(welcomes.map((m) => m.to)).toEqual(['a@example.net'])
    // b's form names the list drip, which contact.subscribed already entered: one run, one mail.
    expect(w.messages().filter((m) => m.subject === 'List hello' && m.to === 'b@example.net')).toHaveLength(1)
  })
})

describe('triggers and custom events', () => {
  test('a trigger on order.completed with a property filter; event properties in the mail and in conditions', async () => {
    const w = world()
    const listId = await w.list('customers')
    await w.contact(listId, 'ann@example.net', 'Ann')
    const trigger = (
      await w.api('POST', '/api/v2/triggers', {
        name: 'Euro orders',
        status: 'active',
        event_name: 'order.completed',
        event_filter: { currency: 'EUR' },
        reentry: 'always',
        graph: {
          steps: [
            {
              id: 'big-order',
              kind: 'condition',
              settings: { type: 'event', property: 'order.total', op: 'gte', value: 100 },
              edges: { yes: 'vip', no: 'thanks' },
            },
            send('vip', 'Big order {{event.order.id}}'),
            send('thanks', 'Order {{event.order.id}}'),
          ],
        },
      })
    ).body.data
    expect(trigger).toMatchObject({ kind: 'trigger', event_name: 'order.completed', event_filter: { currency: 'EUR' } })

    const track = (body: Record<string, unknown>, headers: Record<string, string> = {}) => w.api('POST', '/api/v2/track', body, headers)
    expect((await track({ event: 'order.completed', email: 'ann@example.net', properties: { currency: 'USD', order: { id: 'A1', total: 500 } } })).status).toBe(
      202,
    )
    expect((await track({ event: 'order.shipped', email: 'ann@example.net', properties: { currency: 'EUR', order: { id: 'A2', total: 500 } } })).status).toBe(
      202,
    )
    const big = await track(
      { event: 'order.completed', email: 'ANN@example.net', properties: { currency: 'EUR', order: { id: 'A3', total: 250 } } },
      { 'idempotency-key': 'order-A3' },
    )
    expect(big.status).toBe(202)
    expect(big.body.data).toMatchObject({ event: 'order.completed', email: 'ann@example.net', duplicate: false })
    // The same key again: nothing new is stored or started.
    const again = await track(
      { event: 'order.completed', email: 'ann@example.net', properties: { currency: 'EUR', order: { id: 'A3', total: 250 } } },
      { 'idempotency-key': 'order-A3' },
    )
    expect(again.body.data).toMatchObject({ id: big.body.data.id, duplicate: true })
    await track({ event: 'order.completed', email: 'ann@example.net', properties: { currency: 'EUR', order: { id: 'A4', total: 20 } } })
    await w.runner.tick()
    expect(w.messages().map((m) => m.subject)).toEqual(['Big order A3', 'Order A4'])
    expect((await w.runsOf('triggers', trigger.id)).length).toBe(2)

    // On the contact's timeline.
    const timeline = await w.api('GET', `/api/v2/events?kind=event.tracked&contact_id=${big.body.data.contact_id}`)
    expect(timeline.body.data.length).toBe(4)

    // Unknown address: 422 unless asked to create the contact.
    const unknown = await track({ event: 'signup', email: 'new@example.net' })
    expect(unknown.status).toBe(422)
    expect(Object.keys(unknown.body.error.details)).toEqual(['email'])
    const createdContact = await track({ event: 'signup', email: 'new@example.net', create_contact: true, list_id: listId })
    expect(createdContact.status).toBe(202)
    expect(createdContact.body.data.contact_id).toBeGreaterThan(0)

    const batch = await w.api('POST', '/api/v2/track/batch', {
      events: [
        { event: 'order.completed', email: 'ann@example.net', properties: { currency: 'EUR', order: { id: 'B1', total: 1 } } },
        { event: 'order.completed', contact_id: 999_999 },
      ],
    })
    expect(batch.status).toBe(422)
    expect(Object.keys(batch.body.error.details)).toEqual(['events.1.contact_id'])
    await w.runner.tick()
    expect(w.messages()).toHaveLength(2)
  })

  test('a wait for event takes event_received when it comes, and the timeout edge when it does not', async () => {
    const w = world()
    const listId = await w.list('apps')
    await w.contact(listId, 'quick@example.net')
    await w.contact(listId, 'slow@example.net')
    const trigger = (
      await w.api('POST', '/api/v2/triggers', {
        name: 'Activation',
        status: 'active',
        event_name: 'signup',
        graph: {
          steps: [
            {
              id: 'activation',
              kind: 'wait_for_event',
              settings: { event: 'activated', filter: { plan: ['pro', 'team'] }, timeout_seconds: 3600 },
              edges: { event_received: 'welcome', timeout: 'help' },
            },
            send('welcome', 'Welcome aboard'),
            send('help', 'Need help?'),
          ],
        },
      })
    ).body.data
    await w.api('POST', '/api/v2/track', { event: 'signup', email: 'quick@example.net' })
    await w.api('POST', '/api/v2/track', { event: 'signup', email: 'slow@example.net' })
    await w.runner.tick()
    w.clock.advance(10 * 60_000)
    // A filtered-out event does not count; the matching one does.
    await w.api('POST', '/api/v2/track', { event: 'activated', email: 'quick@example.net', properties: { plan: 'free' } })
    await w.runner.tick()
    expect(w.messages()).toHaveLength(0)
    await w.api('POST', '/api/v2/track', { event: 'activated', email: 'quick@example.net', properties: { plan: 'team' } })
    await w.runner.tick()
    expect(w.messages().map((m) => [m.to, m.subject])).toEqual([['quick@example.net', 'Welcome aboard']])
    w.clock.advance(50 * 60_000)
    await w.runner.tick()
    expect(w.messages().map((m) => [m.to, m.subject])).toEqual([
      ['quick@example.net', 'Welcome aboard'],
      ['slow@example.net', 'Need help?'],
    ])
    const runs = await w.runsOf('triggers', trigger.id)
    expect(runs.map((r) => [r.email, r.steps[0].outcome])).toEqual([
      ['slow@example.net', 'timeout'],
      ['quick@example.net', 'event_received'],
    ])
  })
})

describe('engine lookups', () => {
  test('a trigger is found by its event name, and a changed event name counts from the next events', async () => {
    const w = world()
    const listId = await w.list('shop')
    await w.contact(listId, 'ann@example.net')
    const hold = { steps: [{ id: 'hold', kind: 'wait', settings: { duration_seconds: 3600 } }] }
    const paid = (await w.api('POST', '/api/v2/triggers', { name: 'Paid', status: 'active', event_name: 'paid', reentry: 'always', graph: hold })).body.data
    const left = (await w.api('POST', '/api/v2/triggers', { name: 'Left', status: 'active', event_name: 'left', reentry: 'always', graph: hold })).body.data
    await w.api('POST', '/api/v2/track', { event: 'paid', email: 'ann@example.net' })
    await w.runner.tick()
    expect((await w.runsOf('triggers', paid.id)).length).toBe(1)
    expect((await w.runsOf('triggers', left.id)).length).toBe(0)
    // Renamed: 'paid' no longer starts it, 'refunded' does.
    expect((await w.api('PATCH', `/api/v2/triggers/${paid.id}`, { event_name: 'refunded' })).status).toBe(200)
    await w.api('POST', '/api/v2/track', { event: 'paid', email: 'ann@example.net' })
    await w.api('POST', '/api/v2/track', { event: 'refunded', email: 'ann@example.net' })
    await w.api('POST', '/api/v2/track', { event: 'left', email: 'ann@example.net' })
    await w.runner.tick()
    expect((await w.runsOf('triggers', paid.id)).length).toBe(2)
    expect((await w.runsOf('triggers', left.id)).length).toBe(1)
  })

  test('an event by address goes to its subscribed contact first, else to its oldest', async () => {
    const w = world()
    const older = await w.contact(await w.list('older'), 'sam@example.net')
    const newer = await w.contact(await w.list('newer'), 'sam@example.net')
    const third = await w.contact(await w.list('third'), 'sam@example.net')
    const setStatus = (id: number, status: string) => w.t.deps.db.$client.run('UPDATE contacts SET status = ? WHERE id = ?', [status, id])
    const trackedContact = async () => (await w.api('POST', '/api/v2/track', { event: 'seen', email: 'sam@example.net' })).body.data.contact_id
    expect(await trackedContact()).toBe(older)
    setStatus(older, 'unsubscribed')
    expect(await trackedContact()).toBe(newer)
    setStatus(newer, 'unsubscribed')
    expect(await trackedContact()).toBe(third)
    setStatus(third, 'unsubscribed')
    expect(await trackedContact()).toBe(older)
  })

  test('a run that throws is rolled back alone: the rest of its batch goes on, and it stays held until a restart', async () => {
    const w = world()
    const listId = await w.list('batch')
    const bad = await w.contact(listId, 'bad@example.net')
    await w.contact(listId, 'one@example.net')
    await w.contact(listId, 'two@example.net')
    // Fields that are not JSON make the time-of-day wait throw for this contact only.
    w.t.deps.db.$client.run("UPDATE contacts SET fields = 'not json' WHERE id = ?", [bad])
    const drip = (
      await w.api('POST', '/api/v2/drips', {
        name: 'Morning',
        status: 'active',
        graph: { steps: [{ id: 'morning', kind: 'wait', settings: { time_of_day: '09:00' } }] },
      })
    ).body.data
    expect((await w.api('POST', `/api/v2/drips/${drip.id}/enroll`, { list_id: listId })).status).toBeLessThan(300)
    expect((await w.runner.tick()).runs).toBe(3)
    const runs = await w.runsOf('drips', drip.id)
    expect(runs.map((r) => [r.email, r.state, r.steps.length]).sort()).toEqual([
      ['bad@example.net', 'active', 0],
      ['one@example.net', 'waiting', 1],
      ['two@example.net', 'waiting', 1],
    ])
    const held = () => w.t.deps.db.$client.query<{ claimed: number }, []>('SELECT claimed FROM automation_wakeups WHERE claimed = 1').all().length
    expect(held()).toBe(1)
    // Not spun on: the next turn leaves it alone; a restart makes it due again.
    expect((await w.runner.tick()).runs).toBe(0)
    w.runner.prepare()
    expect(held()).toBe(0)
    expect((await w.runner.tick()).runs).toBe(1)
  })

  test("a time-of-day wait ends at that hour in the contact's own zone; a duration wait does not need it", async () => {
    const w = world()
    const listId = await w.list('zones')
    const tokyo = await w.contact(listId, 'tokyo@example.net')
    await w.contact(listId, 'utc@example.net')
    w.t.deps.db.$client.run('UPDATE contacts SET fields = ? WHERE id = ?', [JSON.stringify({ timezone: 'Asia/Tokyo' }), tokyo])
    const drip = (
      await w.api('POST', '/api/v2/drips', {
        name: 'Morning',
        status: 'active',
        graph: {
          steps: [
            { id: 'pause', kind: 'wait', settings: { duration_seconds: 60 }, edges: { next: 'morning' } },
            { id: 'morning', kind: 'wait', settings: { time_of_day: '09:00' } },
          ],
        },
      })
    ).body.data
    expect((await w.api('POST', `/api/v2/drips/${drip.id}/enroll`, { list_id: listId })).status).toBeLessThan(300)
    await w.runner.tick()
    w.clock.advance(60_001)
    await w.runner.tick()
    const now = w.clock.now()
    const due = w.t.deps.db.$client
      .query<{ email: string; due_at: number }, []>(
        'SELECT e.email, w.due_at FROM automation_wakeups w JOIN automation_enrollments e ON e.id = w.enrollment_id ORDER BY e.email',
      )
      .all()
    expect(due).toEqual([
      { email: 'tokyo@example.net', due_at: nextTimeOfDay(now, '09:00', 'Asia/Tokyo') },
      { email: 'utc@example.net', due_at: nextTimeOfDay(now, '09:00', 'UTC') },
    ])
    expect(due[0]!.due_at).not.toBe(due[1]!.due_at)
  })
})

describe('graphs, versions and deletes', () => {
  test('422 names the step of a cycle without a wait, and of bad settings; the validation endpoint says the same', async () => {
    const w = world()
    const loop = {
      steps: [
        send('a', 'A', 'b'),
        { id: 'b', kind: 'condition', settings: { type: 'event', property: 'x', op: 'exists' }, edges: { yes: 'a', no: 'c' } },
        { id: 'c', kind: 'wait', settings: { duration_seconds: 60 }, edges: { next: 'a' } },
      ],
    }
    const refused = await w.api('POST', '/api/v2/drips', { name: 'Loop', graph: loop })
    expect(refused.status).toBe(422)
    expect(refused.body.error.code).toBe('validation_failed')
    expect(refused.body.error.details).toEqual({ 'steps.a': ['is on a cycle without a wait: add a wait step to the loop'] })
    expect((await w.api('POST', '/api/v2/drips/validate', { graph: loop })).body.error.details).toEqual(refused.body.error.details)
    // Through the wait only, the loop is fine.
    const ok = { steps: [send('a', 'A', 'c'), { id: 'c', kind: 'wait', settings: { duration_seconds: 60 }, edges: { next: 'a' } }] }
    expect((await w.api('POST', '/api/v2/triggers/validate', { graph: ok })).body.data).toEqual({ valid: true, steps: 2 })

    const bad = await w.api('POST', '/api/v2/triggers', {
      name: 'Bad',
      event_name: 'x',
      graph: {
        steps: [
          { id: 'w', kind: 'wait', settings: {}, edges: { yes: 'nowhere' } },
          { id: 'l', kind: 'add_to_list', settings: { list_id: 42 } },
        ],
      },
    })
    expect(bad.status).toBe(422)
    expect(bad.body.error.details).toEqual({
      'steps.w.settings': ['give exactly one of duration_seconds, until, time_of_day'],
      'steps.w.edges.yes': ['a wait step has no outcome yes (it has: next)'],
      'steps.l.settings.list_id': ['no list with id 42'],
    })
  })

  test('a new version leaves runs in flight on theirs; moving them is refused while a run sits on a removed step', async () => {
    const w = world()
    const listId = await w.list('v')
    const v1 = { steps: [{ id: 'hold', kind: 'wait', settings: { duration_seconds: 3600 }, edges: { next: 'first' } }, send('first', 'Version 1')] }
    const drip = (await w.api('POST', '/api/v2/drips', { name: 'Versions', status: 'active', list_ids: [listId], graph: v1 })).body.data
    await w.contact(listId, 'early@example.net')
    await w.runner.tick()
    const v2 = { steps: [{ id: 'hold2', kind: 'wait', settings: { duration_seconds: 3600 }, edges: { next: 'second' } }, send('second', 'Version 2')] }
    const moved = await w.api('POST', `/api/v2/drips/${drip.id}/versions`, { graph: v2, move_runs: true })
    expect(moved.status).toBe(422)
    expect(Object.keys(moved.body.error.details)).toEqual(['steps.hold'])
    const saved = await w.api('PATCH', `/api/v2/drips/${drip.id}`, { graph: v2 })
    expect(saved.body.data.version).toBe(2)
    await w.contact(listId, 'late@example.net')
    await w.runner.tick()
    w.clock.advance(3600_000)
    await w.runner.tick()
    expect(w.messages().map((m) => [m.to, m.subject])).toEqual([
      ['early@example.net', 'Version 1'],
      ['late@example.net', 'Version 2'],
    ])
    const versions = (await w.api('GET', `/api/v2/drips/${drip.id}/versions`)).body.data
    expect(versions.map((v: any) => [v.version, v.current])).toEqual([
      [1, false],
      [2, true],
    ])
  })

  test('bulk deletes take runs and wake-ups with them, and only of their own kind', async () => {
    const w = world()
    const listId = await w.list('d')
    const graph = { steps: [{ id: 'w', kind: 'wait', settings: { duration_seconds: 60 } }] }
    const d1 = (await w.api('POST', '/api/v2/drips', { name: 'D1', status: 'active', list_ids: [listId], graph })).body.data.id
    const d2 = (await w.api('POST', '/api/v2/drips', { name: 'D2', graph })).body.data.id
    const t1 = (await w.api('POST', '/api/v2/triggers', { name: 'T1', event_name: 'e', graph })).body.data.id
    await w.contact(listId, 'x@example.net')
    await w.runner.tick()
    const count = (table: string) => (w.t.deps.db.$client.query(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n
    expect(count('automation_wakeups')).toBe(1)
    const r = await w.api('POST', '/api/v2/drips/bulk-delete', { ids: [d1, d2, t1, 999] })
    expect(r.status).toBe(200)
    expect(r.body.data).toEqual({ deleted: [d1, d2], not_found: [t1, 999] })
    expect(count('automation_wakeups')).toBe(0)
    expect(count('automation_enrollments')).toBe(0)
    expect((await w.api('GET', `/api/v2/triggers/${t1}`)).status).toBe(200)
    expect((await w.api('POST', '/api/v2/triggers/bulk-delete', { ids: [t1] })).body.data).toEqual({ deleted: [t1], not_found: [] })
    expect((await w.api('GET', `/api/v2/drips/${d1}`)).status).toBe(404)
  })
})

describe('contact, list and webhook steps', () => {
  test('update contact, add to and remove from lists, and a signed webhook call, each recorded on the run', async () => {
    const w = world()
    const rx = await startWebhookReceiver({ now: () => w.clock.now() })
    try {
      await w.api('POST', '/api/v2/custom-fields', { key: 'stage', name: 'Stage', type: 'text' })
      const leads = await w.list('leads')
      const customers = await w.list('customers')
      const hook = (await w.api('POST', '/api/v2/webhooks', { endpoint: rx.url, events: ['contact.subscribed'] })).body.data
      rx.secrets.push(hook.secret)
      const trigger = (
        await w.api('POST', '/api/v2/triggers', {
          name: 'Convert',
          status: 'active',
          event_name: 'order.completed',
          graph: {
            steps: [
              { id: 'mark', kind: 'update_contact', settings: { first_name: 'Buyer', fields: { stage: 'customer' } }, edges: { next: 'join' } },
              { id: 'join', kind: 'add_to_list', settings: { list_id: customers }, edges: { next: 'leave' } },
              { id: 'leave', kind: 'remove_from_list', settings: { list_id: leads }, edges: { next: 'tell' } },
              { id: 'tell', kind: 'webhook', settings: { webhook_id: hook.id }, edges: { next: 'done' } },
              { id: 'done', kind: 'exit' },
            ],
          },
        })
      ).body.data
      const contactId = await w.contact(leads, 'lead@example.net', 'Lee')
      await w.api('POST', '/api/v2/track', { event: 'order.completed', email: 'lead@example.net', properties: { order_id: 'X9' } })
      await w.runner.tick()

      const lead = (await w.api('GET', `/api/v2/contacts/${contactId}`)).body.data
      expect(lead).toMatchObject({ first_name: 'Buyer', status: 'unsubscribed', fields: { stage: 'customer' } })
      const onCustomers = (await w.api('GET', `/api/v2/contacts?list_id=${customers}`)).body.data
      expect(onCustomers.map((c: any) => [c.email, c.status, c.first_name])).toEqual([['lead@example.net', 'subscribed', 'Buyer']])

      const call = rx.received.find((r) => r.payload.type === 'automation.step')!
      expect(call.verified).toBe(true)
      expect(call.id).toBe(`auto_${(await w.runsOf('triggers', trigger.id))[0].id}_tell_1`)
      expect(call.payload.data).toMatchObject({ step_id: 'tell', contact: { email: 'lead@example.net' }, event_properties: { order_id: 'X9' } })

      const [run] = await w.runsOf('triggers', trigger.id)
      expect(run).toMatchObject({ state: 'exited', step_id: 'done', reason: 'exit step' })
      expect(run.steps.map((s: any) => [s.step_id, s.outcome, s.detail])).toEqual([
        ['mark', 'next', null],
        ['join', 'next', null],
        ['leave', 'next', null],
        ['tell', 'next', 'HTTP 204'],
        ['done', 'exit', null],
      ])
    } finally {
      await rx.close()
    }
  })
})
