import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Resend, type AutomationConnection, type AutomationStep } from 'resend'
import { createAutomationRunner, type AutomationRunner } from '../../src/modules/automations/runner'
import { decodeId } from '../../src/modules/resend/ids'
import { testApp } from '../support/app'

/**
 * resend.automations and resend.events (issue 19) with the official SDK over a real socket,
 * onto the native triggers and custom events; the engine is driven turn by turn
 * (`runner.tick()`) on the test's fixed clock.
 */
let t: ReturnType<typeof testApp>
let admin: { key: string }
let runner: AutomationRunner
let base = ''

beforeAll(() => {
  t = testApp({ allow_unverified_domains: true })
  admin = t.makeKey()
  t.app.listen({ hostname: '127.0.0.1', port: 0 })
  base = `http://127.0.0.1:${t.app.server!.port}/compat/resend`
  runner = createAutomationRunner(t.deps, { pollMs: 10 })
  // As the server does at start: the engine reads the event log from here on.
  runner.prepare()
})
afterAll(async () => {
  await t.app.stop()
})

const client = () => new Resend(admin.key, { baseUrl: base })
const native = async (path: string) => (await t.call('GET', path, { key: admin.key })).body.data

async function publishedTemplate(): Promise<string> {
  const made = await client().templates.create({ name: 'Welcome', subject: 'Welcome {{first_name}}', html: '<p>Hello</p>', from: 'Acme <hi@acme.example>' })
  expect(made.error).toBeNull()
  expect((await client().templates.publish(made.data!.id)).error).toBeNull()
  return made.data!.id
}

function welcome(templateId: string, event = 'user.created'): { steps: AutomationStep[]; connections: AutomationConnection[] } {
  return {
    steps: [
      { key: 'start', type: 'trigger', config: { eventName: event } },
      { key: 'hello', type: 'send_email', config: { template: { id: templateId } } },
      { key: 'later', type: 'delay', config: { duration: '2 days' } },
      { key: 'is-pro', type: 'condition', config: { type: 'rule', field: 'event.plan', operator: 'eq', value: 'pro' } },
      {
        key: 'upgrade',
        type: 'wait_for_event',
        config: { eventName: 'plan.upgraded', timeout: '1 week', filterRule: { type: 'rule', field: 'event.to', operator: 'eq', value: 'team' } },
      },
      { key: 'tag', type: 'contact_update', config: { firstName: 'Pro', properties: { plan: 'pro' } } },
    ],
    connections: [
      { from: 'start', to: 'hello' },
      { from: 'hello', to: 'later' },
      { from: 'later', to: 'is-pro' },
      { from: 'is-pro', to: 'upgrade', type: 'condition_met' },
      { from: 'upgrade', to: 'tag', type: 'event_received' },
    ],
  }
}

describe('automations', () => {
  test('create -> get -> list -> update -> duplicate -> stop -> remove, in the shapes the SDK declares', async () => {
    const templateId = await publishedTemplate()
    const created = await client().automations.create({ name: 'Onboarding', ...welcome(templateId) })
    expect(created.error).toBeNull()
    expect(created.data).toEqual({ object: 'automation', id: expect.any(String) })
    const id = created.data!.id

    // Natively a trigger on the event, a draft (disabled), its graph entered at the step the trigger connects to.
    const trigger = await native(`/api/v2/triggers/${decodeId('automation', id)}`)
    expect(trigger).toMatchObject({ kind: 'trigger', name: 'Onboarding', status: 'draft', event_name: 'user.created', reentry: 'always' })
    expect(trigger.graph.steps.map((s: { id: string; kind: string }) => `${s.id}:${s.kind}`)).toEqual([
      'hello:send',
      'later:wait',
      'is-pro:condition',
      'upgrade:wait_for_event',
      'tag:update_contact',
    ])
    expect(trigger.graph.steps[1].settings).toEqual({ duration_seconds: 2 * 86_400 })
    expect(trigger.graph.steps[2]).toMatchObject({ settings: { type: 'event', property: 'plan', op: 'eq', value: 'pro' }, edges: { yes: 'upgrade' } })
    expect(trigger.graph.steps[3].settings).toEqual({ event: 'plan.upgraded', timeout_seconds: 7 * 86_400, filter: { to: 'team' } })

    const got = await client().automations.get(id)
    expect(got.error).toBeNull()
    expect(got.data).toEqual({
      object: 'automation',
      id,
      name: 'Onboarding',
      status: 'disabled',
      created_at: expect.any(String),
      updated_at: expect.any(String),
      steps: [
        { key: 'trigger', type: 'trigger', config: { event_name: 'user.created' } },
        { key: 'hello', type: 'send_email', config: { template: { id: templateId } } },
        { key: 'later', type: 'delay', config: { duration: '2 days' } },
        { key: 'is-pro', type: 'condition', config: { type: 'rule', field: 'event.plan', operator: 'eq', value: 'pro' } },
        {
          key: 'upgrade',
          type: 'wait_for_event',
          config: { event_name: 'plan.upgraded', timeout: '1 week', filter_rule: { type: 'rule', field: 'event.to', operator: 'eq', value: 'team' } },
        },
        { key: 'tag', type: 'contact_update', config: { first_name: 'Pro', properties: { plan: 'pro' } } },
      ],
      connections: [
        { from: 'trigger', to: 'hello', type: 'default' },
        { from: 'hello', to: 'later', type: 'default' },
        { from: 'later', to: 'is-pro', type: 'default' },
        { from: 'is-pro', to: 'upgrade', type: 'condition_met' },
        { from: 'upgrade', to: 'tag', type: 'event_received' },
      ],
    })

    const listed = await client().automations.list({ limit: 100 })
    expect(listed.error).toBeNull()
    expect(listed.data).toMatchObject({ object: 'list', has_more: false })
    expect(listed.data!.data.find((a) => a.id === id)).toEqual({
      id,
      name: 'Onboarding',
      status: 'disabled',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    })
    expect((await client().automations.list({ status: 'enabled' })).data!.data.some((a) => a.id === id)).toBe(false)

    // A new graph is a new native version; `enabled` activates.
    const changed = welcome(templateId, 'user.signed_up')
    const updated = await client().automations.update(id, {
      name: 'Onboarding 2',
      status: 'enabled',
      steps: changed.steps.slice(0, 3),
      connections: changed.connections.slice(0, 2),
    })
    expect(updated).toEqual({ data: { object: 'automation', id }, error: null, headers: expect.anything() })
    expect(await native(`/api/v2/triggers/${decodeId('automation', id)}`)).toMatchObject({
      name: 'Onboarding 2',
      status: 'active',
      event_name: 'user.signed_up',
      version: 2,
    })
    expect((await client().automations.list({ status: 'enabled' })).data!.data.map((a) => a.id)).toContain(id)

    const copy = await client().automations.duplicate(id)
    expect(copy.data).toEqual({ object: 'automation', id: expect.any(String) })
    expect(copy.data!.id).not.toBe(id)
    const copied = (await client().automations.get(copy.data!.id)).data!
    expect(copied).toMatchObject({ name: 'Onboarding 2 (copy)', status: 'disabled' })
    expect(copied.steps).toEqual((await client().automations.get(id)).data!.steps)

    const stopped = await client().automations.stop(id)
    expect(stopped.data).toEqual({ object: 'automation', id, status: 'disabled' })
    expect((await client().automations.get(id)).data!.status).toBe('disabled')

    for (const a of [id, copy.data!.id]) expect((await client().automations.remove(a)).data).toEqual({ object: 'automation', id: a, deleted: true })
    const gone = await client().automations.get(id)
    expect(gone.data).toBeNull()
    expect(gone.error).toMatchObject({ name: 'not_found', statusCode: 404, message: 'Automation not found.' })
  })

  test('a step without a native counterpart is refused with 422 naming it; nothing is created', async () => {
    const before = (await client().automations.list({ limit: 100 })).data!.data.length
    const cases: Array<{ step: AutomationStep; says: string }> = [
      { step: { key: 'bye', type: 'contact_delete', config: {} }, says: 'steps.bye.type' },
      { step: { key: 'either', type: 'condition', config: { type: 'or', rules: [] } }, says: 'steps.either.config.type' },
      { step: { key: 'soon', type: 'delay', config: { duration: 'a while' } }, says: 'steps.soon.config.duration' },
      {
        step: { key: 'prefix', type: 'condition', config: { type: 'rule', field: 'event.name', operator: 'starts_with', value: 'a' } },
        says: 'steps.prefix.config.operator',
      },
    ]
    for (const c of cases) {
      const res = await client().automations.create({
        name: 'Refused',
        steps: [{ key: 'start', type: 'trigger', config: { eventName: 'x' } }, c.step],
        connections: [{ from: 'start', to: c.step.key }],
      })
      expect(res.data).toBeNull()
      expect(res.error).toMatchObject({ name: 'validation_error', statusCode: 422 })
      expect(res.error!.message).toContain(c.says)
    }
    const noTrigger = await client().automations.create({ name: 'x', steps: [{ key: 'd', type: 'delay', config: { duration: '1 hour' } }], connections: [] })
    expect(noTrigger.error).toMatchObject({ statusCode: 422, message: expect.stringContaining('exactly one step of type trigger') })
    expect((await client().automations.list({ limit: 100 })).data!.data.length).toBe(before)
  })
})

describe('events', () => {
  test('events.send starts the automation for a new address; the run shows in runs.list and runs.get; stop cancels it', async () => {
    const templateId = await publishedTemplate()
    const { steps, connections } = welcome(templateId, 'trial.started')
    const id = (await client().automations.create({ name: 'Trial', status: 'enabled', steps: steps.slice(0, 3), connections: connections.slice(0, 2) })).data!
      .id

    const sent = await client().events.send({ event: 'trial.started', email: 'new.user@example.com', payload: { plan: 'pro' } })
    expect(sent.error).toBeNull()
    expect(sent.data).toEqual({ object: 'event', event: 'trial.started' })
    // Resend creates the contact of an unknown address: here on the General list.
    const contact = (await client().contacts.get({ email: 'new.user@example.com' })).data!
    expect(contact.email).toBe('new.user@example.com')

    await runner.tick()
    await runner.tick()
    const runs = await client().automations.runs.list({ automationId: id })
    expect(runs.error).toBeNull()
    expect(runs.data).toEqual({
      object: 'list',
      has_more: false,
      data: [{ id: expect.any(String), status: 'running', started_at: expect.any(String), completed_at: null, created_at: expect.any(String) }],
    })
    const runId = runs.data!.data[0]!.id
    const run = await client().automations.runs.get({ automationId: id, runId })
    expect(run.error).toBeNull()
    expect(run.data).toMatchObject({ object: 'automation_run', id: runId, status: 'running', completed_at: null })
    expect(run.data!.steps.map((s) => [s.key, s.type, s.status])).toEqual([
      ['hello', 'send_email', 'completed'],
      ['later', 'delay', 'waiting'],
    ])
    expect(run.data!.steps[0]!.output).toMatchObject({ outcome: 'next', message_id: expect.any(String) })

    // The same event by contact id starts another run (Resend runs on every event).
    expect((await client().events.send({ event: 'trial.started', contactId: contact.id })).error).toBeNull()
    await runner.tick()
    expect((await client().automations.runs.list({ automationId: id, status: 'running' })).data!.data).toHaveLength(2)

    expect((await client().automations.stop(id)).error).toBeNull()
    const after = await client().automations.runs.list({ automationId: id, status: ['cancelled'] })
    expect(after.data!.data.map((r) => r.status)).toEqual(['cancelled', 'cancelled'])
    expect(after.data!.data.every((r) => r.completed_at !== null)).toBe(true)
    expect((await client().automations.runs.list({ automationId: id, status: 'running' })).data!.data).toEqual([])
    const other = await client().automations.runs.get({ automationId: id, runId: id })
    expect(other.error).toMatchObject({ statusCode: 404 })
  })

  test('events.get and list show the names received; definitions are not applicable (422)', async () => {
    await client().events.send({ event: 'order.paid', email: 'buyer@example.com' })
    await client().events.send({ event: 'order.paid', email: 'buyer@example.com' })
    const listed = await client().events.list()
    expect(listed.error).toBeNull()
    const paid = listed.data!.data.find((e) => e.name === 'order.paid')
    expect(paid).toEqual({ id: expect.any(String), name: 'order.paid', schema: null, created_at: expect.any(String), updated_at: null })
    expect(listed.data!.data.filter((e) => e.name === 'order.paid')).toHaveLength(1)
    for (const key of [paid!.id, 'order.paid']) expect((await client().events.get(key)).data).toEqual({ object: 'event', ...paid! })
    expect((await client().events.get('never.sent')).error).toMatchObject({ statusCode: 404, message: 'Event not found.' })

    const firstPage = await client().events.list({ limit: 1 })
    expect(firstPage.data!.has_more).toBe(true)
    const next = await client().events.list({ limit: 1, after: firstPage.data!.data[0]!.id })
    expect(next.data!.data[0]!.id).not.toBe(firstPage.data!.data[0]!.id)

    for (const res of [
      await client().events.create({ name: 'user.created', schema: { plan: 'string' } }),
      await client().events.update('order.paid', { schema: null }),
      await client().events.remove('order.paid'),
    ])
      expect(res.error).toMatchObject({ name: 'validation_error', statusCode: 422, message: expect.stringContaining('without a definition') })

    const both = await client().events.send({ event: 'x', email: 'a@example.com', contactId: 'y' } as never)
    expect(both.error).toMatchObject({ statusCode: 422 })
  })
})
