import { describe, expect, test } from 'bun:test'
import { renderForRecipient } from '../../src/modules/templates/service'
import { testApp } from '../support/app'
import { runScenarios, type Scenario, type ScenarioContext } from '../support/scenarios'

function setup() {
  const t = testApp()
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  const tag = async (name: string, alternatives: string[]) => {
    const res = await call('POST', '/api/v2/spin-tags', { name, alternatives })
    expect(res.status).toBe(201)
    return res.body.data.id as number
  }
  const template = async (body: Record<string, unknown>) => {
    const res = await call('POST', '/api/v2/templates', { name: 'Spun', ...body })
    expect(res.status).toBe(201)
    return res.body.data.id as number
  }
  const render = async (id: number, body: Record<string, unknown>) => {
    const res = await call('POST', `/api/v2/templates/${id}/render`, body)
    expect(res.status).toBe(200)
    return res.body.data as { subject: string; html: string | null; text: string | null; missing_variables: string[] }
  }
  return { t, call, tag, template, render }
}

const GREETINGS = ['Hi', 'Hello', 'Hey', 'Howdy', 'Greetings']
const recipients = Array.from({ length: 40 }, (_, i) => `user${i}@example.com`)

describe('spin tags resource', () => {
  test('CRUD and bulk delete', async () => {
    const { call, tag } = setup()
    const res = await call('POST', '/api/v2/spin-tags', { name: 'greeting', alternatives: ['Hi', 'Hello'] })
    expect(res.status).toBe(201)
    expect(res.body.data).toEqual({
      id: res.body.data.id,
      name: 'greeting',
      alternatives: ['Hi', 'Hello'],
      created_at: '2026-03-01T12:00:30.000Z',
      updated_at: '2026-03-01T12:00:30.000Z',
    })
    const id = res.body.data.id as number
    const other = await tag('sign_off', ['Cheers', 'Best'])

    const dup = await call('POST', '/api/v2/spin-tags', { name: 'greeting', alternatives: ['a', 'b'] })
    expect(dup.status).toBe(409)
    expect(dup.body.error.code).toBe('conflict')

    const patched = await call('PATCH', `/api/v2/spin-tags/${id}`, { alternatives: ['Hi', 'Hello', 'Hey'] })
    expect(patched.body.data.alternatives).toEqual(['Hi', 'Hello', 'Hey'])
    expect((await call('PATCH', `/api/v2/spin-tags/${id}`, { name: 'greeting', alternatives: ['a', 'b'] })).status).toBe(200)
    const rename = await call('PATCH', `/api/v2/spin-tags/${id}`, { name: 'salutation' })
    expect(rename.status).toBe(422)
    expect(rename.body.error.details.name[0]).toContain('cannot change')

    const page = await call('GET', '/api/v2/spin-tags')
    expect(page.body.data.map((t: { name: string }) => t.name)).toEqual(['greeting', 'sign_off'])
    expect(page.body.meta.total).toBe(2)
    expect((await call('GET', `/api/v2/spin-tags/${id}`)).body.data.alternatives).toEqual(['a', 'b'])
    expect((await call('DELETE', `/api/v2/spin-tags/${id}`)).body.data.name).toBe('greeting')
    expect((await call('GET', `/api/v2/spin-tags/${id}`)).status).toBe(404)
    expect((await call('POST', '/api/v2/spin-tags/bulk-delete', { ids: [other, id] })).body.data).toEqual({ deleted: [other], not_found: [id] })
  })
})

// A spin tag made with the scenario's Administrator key; `setup` is its id.
const greeting = async ({ t, admin }: ScenarioContext) =>
  (await t.call('POST', '/api/v2/spin-tags', { key: admin, body: { name: 'greeting', alternatives: ['a', 'b'] } })).body.data.id as number

runScenarios('spin tags: refusals', [
  ...(
    [
      ['upper-case name', { name: 'Greeting', alternatives: ['a', 'b'] }],
      ['name with a dash', { name: 'good-bye', alternatives: ['a', 'b'] }],
      ['name starting with a digit', { name: '1st', alternatives: ['a', 'b'] }],
      ['one alternative', { name: 'x', alternatives: ['a'] }],
      ['101 alternatives', { name: 'x', alternatives: Array.from({ length: 101 }, (_, i) => `a${i}`) }],
      ['an empty alternative', { name: 'x', alternatives: ['a', ''] }],
      ['a blank alternative', { name: 'x', alternatives: ['a', '   '] }],
    ] as Array<[string, Record<string, unknown>]>
  ).map(([name, body]): Scenario => ({ name, method: 'POST', url: '/api/v2/spin-tags', body, status: 422, code: 'validation_failed' })),
  {
    name: 'templates.read cannot read a tag',
    method: 'GET',
    before: greeting,
    url: (c) => `/api/v2/spin-tags/${c.setup}`,
    key: { permissions: ['templates.read'] },
    status: 403,
  },
  {
    name: 'templates.read cannot bulk delete',
    method: 'POST',
    before: greeting,
    url: '/api/v2/spin-tags/bulk-delete',
    body: (c) => ({ ids: [c.setup] }),
    key: { permissions: ['templates.read'] },
    status: 403,
  },
  { name: 'spin_tags.read lists', method: 'GET', before: greeting, url: '/api/v2/spin-tags', key: { permissions: ['spin_tags.read'] }, status: 200 },
  {
    name: 'spin_tags.read cannot delete',
    method: 'DELETE',
    before: greeting,
    url: (c) => `/api/v2/spin-tags/${c.setup}`,
    key: { permissions: ['spin_tags.read'] },
    status: 403,
  },
])

describe('spins in templates', () => {
  test('an unknown spin tag is refused when the template is saved, naming it', async () => {
    const { call, tag } = setup()
    await tag('greeting', GREETINGS)
    const res = await call('POST', '/api/v2/templates', { name: 'x', subject: '{{spin "greeting"}}', html: '{{spin "greting"}} {{spin "sign_off"}}' })
    expect(res.status).toBe(422)
    expect(res.body.error.details).toEqual({
      html: [
        'unknown spin tag "greting"; create it with POST /api/v2/spin-tags first',
        'unknown spin tag "sign_off"; create it with POST /api/v2/spin-tags first',
      ],
    })
    const bad = await call('POST', '/api/v2/templates', { name: 'x', subject: 's', text: '{{spin "Not A Name"}}' })
    expect(bad.body.error.details.text[0]).toContain('is not a spin tag name')
  })

  test('the choice is deterministic per recipient, and the preview equals what the send path renders', async () => {
    const { t, tag, template, render } = setup()
    await tag('greeting', GREETINGS)
    const id = await template({
      subject: '{{spin "greeting"}} {{name}}',
      html: '<p>{{spin "greeting"}} {{name}}</p><p>{{spin_inline "Cheers" "Best" "Thanks" "Regards"}}</p>',
      text: '{{spin "greeting"}} {{name}}\n{{spin_inline "Cheers" "Best" "Thanks" "Regards"}}',
    })
    const seen = new Set<string>()
    const signOffs = new Set<string>()
    for (const to of recipients) {
      const a = await render(id, { to, variables: { name: 'Ann' } })
      const b = await render(id, { to: to.toUpperCase(), variables: { name: 'Ann' } }) // the address is compared in lower case
      expect(b).toEqual(a)
      const sent = renderForRecipient(t.deps, { templateId: id, to, variables: { name: 'Ann' } })
      expect({ subject: sent.subject, html: sent.html, text: sent.text }).toEqual({ subject: a.subject, html: a.html, text: a.text })

      const greeting = a.subject.replace(' Ann', '')
      expect(GREETINGS).toContain(greeting)
      // The HTML and the text part (and the subject) say the same thing.
      expect(a.html).toStartWith(`<p>${greeting} Ann</p>`)
      const [textGreeting, textSignOff] = a.text!.split('\n')
      expect(textGreeting).toBe(`${greeting} Ann`)
      expect(a.html).toEndWith(`<p>${textSignOff}</p>`)
      seen.add(greeting)
      signOffs.add(textSignOff!)
    }
    // Different recipients get different alternatives (40 recipients, 5 choices).
    expect(seen.size).toBeGreaterThan(1)
    expect(signOffs.size).toBeGreaterThan(1)
  })

  test('a new version reshuffles; the same version does not', async () => {
    const { call, tag, template, render } = setup()
    await tag('greeting', GREETINGS)
    const id = await template({ subject: 's', text: '{{spin "greeting"}}' })
    const before = await Promise.all(recipients.map((to) => render(id, { to }).then((r) => r.text)))
    await call('PATCH', `/api/v2/templates/${id}`, { text: '{{spin "greeting"}} ' })
    const after = await Promise.all(recipients.map((to) => render(id, { to }).then((r) => r.text!.trimEnd())))
    expect(after).not.toEqual(before)
    const again = await Promise.all(recipients.map((to) => render(id, { to, version: 1 }).then((r) => r.text)))
    expect(again).toEqual(before)
  })

  test('alternatives are escaped in html; a deleted tag renders empty and is reported', async () => {
    const { call, tag, template, render } = setup()
    const tagId = await tag('fancy', ['<b>A</b>', '<b>A</b>'])
    const id = await template({ subject: '{{spin "fancy"}}', html: '{{spin "fancy"}}|{{{spin "fancy"}}}', text: '{{spin "fancy"}}' })
    const out = await render(id, { to: 'a@example.com' })
    expect(out).toMatchObject({ subject: '<b>A</b>', html: '&lt;b&gt;A&lt;/b&gt;|<b>A</b>', text: '<b>A</b>', missing_variables: [] })

    await call('DELETE', `/api/v2/spin-tags/${tagId}`)
    const gone = await render(id, { to: 'a@example.com' })
    expect(gone).toMatchObject({ subject: '', html: '|', text: '', missing_variables: ['spin:fancy'] })
  })

  test('without `to` the preview is still deterministic', async () => {
    const { tag, template, render } = setup()
    await tag('greeting', GREETINGS)
    const id = await template({ subject: 's', text: '{{spin "greeting"}}' })
    const first = await render(id, {})
    for (let i = 0; i < 5; i++) expect(await render(id, {})).toEqual(first)
  })
})
