import { describe, expect, test } from 'bun:test'
import { CompiledCache, compiledCacheOf } from '../../src/modules/templates/cache'
import { compileVersion } from '../../src/modules/templates/engine'
import { renderForRecipient } from '../../src/modules/templates/service'
import { testApp } from '../support/app'
import { runScenarios, type Scenario, type ScenarioContext } from '../support/scenarios'

/** An app with an admin key and helpers for the templates API. */
function setup() {
  const t = testApp()
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  const create = async (body: Record<string, unknown>) => {
    const res = await call('POST', '/api/v2/templates', { name: 'Welcome', ...body })
    expect(res.status).toBe(201)
    return res.body.data as { id: number; active_version_id: number }
  }
  const render = async (id: number, body: Record<string, unknown> = {}) => {
    const res = await call('POST', `/api/v2/templates/${id}/render`, body)
    expect(res.status).toBe(200)
    return res.body.data as { subject: string; html: string | null; text: string | null; missing_variables: string[]; version: number }
  }
  return { t, admin, call, create, render }
}

describe('templates', () => {
  test('CRUD: create makes version 1 active; list without bodies; delete and bulk delete', async () => {
    const { call, create } = setup()
    const res = await call('POST', '/api/v2/templates', { name: ' Welcome ', description: 'first mail', subject: 'Hi {{name}}', html: '<p>Hi {{name}}</p>' })
    expect(res.status).toBe(201)
    expect(res.body.data).toMatchObject({
      name: 'Welcome',
      description: 'first mail',
      active_version: 1,
      versions_count: 1,
      subject: 'Hi {{name}}',
      html: '<p>Hi {{name}}</p>',
      text: null,
      created_at: '2026-03-01T12:00:30.000Z',
    })
    const a = res.body.data.id as number
    const b = (await create({ subject: 'B', text: 'plain' })).id

    const page = await call('GET', '/api/v2/templates?per_page=1&page=2')
    expect(page.body.meta).toEqual({ current_page: 2, per_page: 1, total: 2, last_page: 2 })
    expect(page.body.data[0]).toMatchObject({ id: b, subject: 'B', versions_count: 1 })
    expect(page.body.data[0].html).toBeUndefined()

    expect((await call('GET', `/api/v2/templates/${a}`)).body.data.html).toBe('<p>Hi {{name}}</p>')
    expect((await call('DELETE', `/api/v2/templates/${a}`)).body.data.id).toBe(a)
    expect((await call('GET', `/api/v2/templates/${a}`)).status).toBe(404)
    expect((await call('GET', `/api/v2/templates/${a}/versions/1`)).status).toBe(404)
    const del = await call('POST', '/api/v2/templates/bulk-delete', { ids: [b, a, 999] })
    expect(del.body.data).toEqual({ deleted: [b], not_found: [a, 999] })
    expect((await call('GET', '/api/v2/templates')).body.meta.total).toBe(0)
  })

  test('every content change is a new immutable version; name changes are not; activate rolls back', async () => {
    const { t, call, create, render } = setup()
    const { id } = await create({ subject: 'Hello', html: '<p>v1</p>', text: 'v1' })

    // name only: no new version
    const renamed = await call('PATCH', `/api/v2/templates/${id}`, { name: 'Renamed' })
    expect(renamed.body.data).toMatchObject({ name: 'Renamed', active_version: 1, versions_count: 1 })
    // the same content again: no new version either
    expect((await call('PATCH', `/api/v2/templates/${id}`, { html: '<p>v1</p>' })).body.data.versions_count).toBe(1)

    t.deps.clock.advance(60_000)
    const v2 = await call('PATCH', `/api/v2/templates/${id}`, { html: '<p>v2</p>' })
    expect(v2.body.data).toMatchObject({ active_version: 2, versions_count: 2, subject: 'Hello', html: '<p>v2</p>', text: 'v1' })
    // null removes a part; the rest is carried over from the active version
    const v3 = await call('PATCH', `/api/v2/templates/${id}`, { text: null, subject: 'Hello again' })
    expect(v3.body.data).toMatchObject({ active_version: 3, html: '<p>v2</p>', text: null, subject: 'Hello again' })

    // version 1 is unchanged
    const v1 = await call('GET', `/api/v2/templates/${id}/versions/1`)
    expect(v1.body.data).toMatchObject({ version: 1, subject: 'Hello', html: '<p>v1</p>', text: 'v1', active: false, created_at: '2026-03-01T12:00:30.000Z' })
    expect((await call('GET', `/api/v2/templates/${id}/versions/2`)).body.data.created_at).toBe('2026-03-01T12:01:30.000Z')
    expect((await call('GET', `/api/v2/templates/${id}/versions/9`)).status).toBe(404)

    const versions = await call('GET', `/api/v2/templates/${id}/versions`)
    expect(versions.body.data.map((v: { version: number; active: boolean }) => [v.version, v.active])).toEqual([
      [3, true],
      [2, false],
      [1, false],
    ])
    expect(versions.body.data[0].html).toBeUndefined()
    expect(versions.body.meta.total).toBe(3)

    // roll back to version 1: sends and renders use it, and a later change starts from it
    const act = await call('POST', `/api/v2/templates/${id}/versions/1/activate`)
    expect(act.body.data).toMatchObject({ active_version: 1, html: '<p>v1</p>', text: 'v1' })
    expect((await render(id)).html).toBe('<p>v1</p>')
    expect((await render(id, { version: 2 })).html).toBe('<p>v2</p>')
    const v4 = await call('PATCH', `/api/v2/templates/${id}`, { subject: 'From v1' })
    expect(v4.body.data).toMatchObject({ active_version: 4, html: '<p>v1</p>', text: 'v1' })
    expect((await call('POST', `/api/v2/templates/${id}/versions/7/activate`)).status).toBe(404)
    expect((await call('POST', `/api/v2/templates/${id}/render`, { version: 7 })).status).toBe(404)
  })

  test('html escapes values; subject and text do not', async () => {
    const { create, render } = setup()
    const { id } = await create({ subject: '{{name}} & co', html: '<p>Hi {{name}}</p><p>{{{trusted}}}</p>', text: 'Hi {{name}}' })
    const out = await render(id, { variables: { name: '<script>alert("x")</script>', trusted: '<b>ok</b>' } })
    expect(out.html).toBe('<p>Hi &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</p><p><b>ok</b></p>')
    expect(out.text).toBe('Hi <script>alert("x")</script>')
    expect(out.subject).toBe('<script>alert("x")</script> & co')
    expect(out.missing_variables).toEqual([])
    expect(out.version).toBe(1)
  })

  test('missing variables: nested paths, block helpers follow the branch that renders', async () => {
    const { create, render } = setup()
    const { id } = await create({
      subject: 'Hi {{user.first_name}}',
      html: [
        '{{#if coupon}}Code: {{coupon}} until {{coupon_expiry}}{{else}}No code, {{fallback}}{{/if}}',
        '{{#with company}}{{name}} in {{address.city}}{{/with}}',
        '{{#each items}}{{this}} {{@index}} {{../shop}}{{else}}{{no_items}}{{/each}}',
        '{{#unless vip}}{{upsell}}{{/unless}}',
        '{{@root.footer}}',
      ].join('\n'),
    })
    const none = await render(id)
    expect(none.missing_variables).toEqual(['user.first_name', 'fallback', 'no_items', 'upsell', 'footer'])
    expect(none.subject).toBe('Hi')

    const some = await render(id, {
      variables: { 'user.first_name': 'Ann', coupon: 'X1', 'company.name': 'ACME', 'items.a': 'one', 'items.b': 'two', vip: 'yes', footer: 'bye' },
    })
    expect(some.missing_variables).toEqual(['coupon_expiry', 'company.address.city', 'shop'])
    expect(some.subject).toBe('Hi Ann')
    expect(some.html).toBe('Code: X1 until \nACME in \none 0 two 1 \n\nbye')
  })

  test('variables: dotted names nest; prototype names reach nothing', async () => {
    const { create, render } = setup()
    const { id } = await create({ subject: 's', text: '[{{user}}][{{user.name}}][{{constructor}}][{{__proto__}}][{{user.constructor.name}}][{{name.length}}]' })
    const out = await render(id, { variables: { 'user.name': 'Ann' } })
    expect(out.text).toBe('[][Ann][][][][]')
    expect(out.missing_variables).toEqual(['constructor', '__proto__', 'user.constructor.name', 'name.length'])
  })

  test('the subject stays on one line: folded from variables (CR/LF in the template: the 422 table)', async () => {
    const { create, render } = setup()
    const { id } = await create({ subject: 'Hello {{name}}!', text: 'Dear {{name}}' })
    const out = await render(id, { variables: { name: 'Ann\r\nBcc: victim@example.com\n\n\u2028x\u0000' } })
    expect(out.subject).toBe('Hello Ann Bcc: victim@example.com x!')
    expect(out.subject).not.toMatch(/[\r\n\u0000]/)
    expect(out.text).toBe('Dear Ann\r\nBcc: victim@example.com\n\n\u2028x\u0000') // body parts are not headers
    const trailing = await render(id, { variables: { name: '\r\n' } })
    expect(trailing.subject).toBe('Hello  !')
  })

  test('render with unsaved content: the base version with those parts replaced, checked like a save, nothing stored', async () => {
    const { t, call, create, render } = setup()
    const { id } = await create({ subject: 'Hi {{name}}', html: '<p>Hi {{name}}</p>', text: 'Hi {{name}}', from: 'team@example.com' })
    const draft = await render(id, { html: '<h1>{{title}}</h1><p>{{name}}</p>', variables: { name: 'Ann' } })
    // The replaced part renders; the others come from the active version.
    expect(draft).toMatchObject({ subject: 'Hi Ann', html: '<h1></h1><p>Ann</p>', text: 'Hi Ann', missing_variables: ['title'], version: 1 })
    expect((await render(id, { text: null, from: 'Other <other@example.com>' })).text).toBeNull()
    expect(((await render(id, { from: 'Other <other@example.com>' })) as unknown as { from: string }).from).toBe('Other <other@example.com>')
    // A syntax error answers 422 under the part, as a save would.
    const bad = await call('POST', `/api/v2/templates/${id}/render`, { html: '{{#if vip}}VIP' })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.error.details)).toEqual(['html'])
    const badSubject = await call('POST', `/api/v2/templates/${id}/render`, { subject: 'a\nb' })
    expect(Object.keys(badSubject.body.error.details)).toEqual(['subject'])
    const badFrom = await call('POST', `/api/v2/templates/${id}/render`, { from: 'not an address' })
    expect(Object.keys(badFrom.body.error.details)).toEqual(['from'])
    // Nothing was stored: still one version, with its own content.
    expect(t.deps.db.$client.query('SELECT count(*) AS n FROM template_versions').get()).toEqual({ n: 1 })
    expect((await render(id)).html).toBe('<p>Hi </p>')
  })

  test('from and reply_to: one mailbox each, versioned with the content, shown by GET, versions and render', async () => {
    const { call, create, render } = setup()
    const bad = await call('POST', '/api/v2/templates', {
      name: 'x',
      subject: 'Hi',
      text: 'Hi',
      from: 'not an address',
      reply_to: 'a@example.com, b@example.com',
    })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.error.details).sort()).toEqual(['from', 'reply_to'])

    const tpl = await create({ subject: 'Hi', text: 'Hi', from: ' Acme <hello@acme.example> ' })
    expect(tpl).toMatchObject({ active_version: 1, from: 'Acme <hello@acme.example>', reply_to: null })
    const patched = await call('PATCH', `/api/v2/templates/${tpl.id}`, { reply_to: 'help@acme.example' })
    expect(patched.body.data).toMatchObject({ active_version: 2, from: 'Acme <hello@acme.example>', reply_to: 'help@acme.example' })
    expect((await call('PATCH', `/api/v2/templates/${tpl.id}`, { from: 'Acme <hello@acme.example>' })).body.data.active_version).toBe(2)
    const cleared = await call('PATCH', `/api/v2/templates/${tpl.id}`, { from: '' })
    expect(cleared.body.data).toMatchObject({ active_version: 3, from: null, reply_to: 'help@acme.example' })
    expect((await call('PATCH', `/api/v2/templates/${tpl.id}`, { from: 'nope' })).status).toBe(422)
    expect((await call('GET', `/api/v2/templates/${tpl.id}/versions/2`)).body.data).toMatchObject({
      from: 'Acme <hello@acme.example>',
      reply_to: 'help@acme.example',
    })
    expect(await render(tpl.id, { version: 1 })).toMatchObject({ from: 'Acme <hello@acme.example>', reply_to: null })
    expect(await render(tpl.id)).toMatchObject({ from: null, reply_to: 'help@acme.example' })
  })

  test('a PATCH with a syntax error creates no version', async () => {
    const { call, create } = setup()
    const { id } = await create({ subject: 's', html: 'ok' })
    const res = await call('PATCH', `/api/v2/templates/${id}`, { html: '{{#each}}x{{/each}}', name: 'new name' })
    expect(res.status).toBe(422)
    expect(res.body.error.details.html[0]).toContain('#each takes one variable')
    expect((await call('GET', `/api/v2/templates/${id}`)).body.data).toMatchObject({ name: 'Welcome', versions_count: 1 })
  })

  test('renderForRecipient: the render call and the send path agree; compiled once per version', async () => {
    const { t, create, render } = setup()
    const { id, active_version_id } = await create({ subject: 'Hi {{name}}', html: '<b>{{name}}</b>', text: '{{name}} {{missing}}' })
    const cache = compiledCacheOf(t.deps.db)
    const viaApi = await render(id, { variables: { name: 'Ann' }, to: 'Ann@Example.com' })
    const direct = renderForRecipient(t.deps, { templateId: id, variables: { name: 'Ann' }, to: 'ann@example.com' })
    expect(direct).toEqual({ ...viaApi, template_id: id, template_version_id: active_version_id, version: 1 } as typeof direct)
    expect(direct.missing_variables).toEqual(['missing'])
    expect(cache.get(active_version_id)).toBe(cache.get(active_version_id)!) // one compiled object, reused
    expect(() => renderForRecipient(t.deps, { templateId: 999, variables: {}, to: 'a@example.com' })).toThrow('No template with id 999.')
    expect(() => renderForRecipient(t.deps, { templateId: id, version: 5, variables: {}, to: 'a@example.com' })).toThrow('has no version 5')
  })
})

const invalid: Array<[string, Record<string, unknown>, string, string]> = [
  ['unclosed block', { html: 'Hi {{#if x}} there' }, 'html', 'Parse error on line 1'],
  ['mismatched block', { text: '{{#if x}}a{{/each}}' }, 'text', "if doesn't match each"],
  ['unknown helper', { html: '{{uppercase name}}' }, 'html', 'unknown helper "uppercase"'],
  ['unknown block helper', { html: '{{#items}}x{{/items}}' }, 'html', 'unknown block helper "#items"'],
  ['partial', { html: '{{> footer}}' }, 'html', 'partials'],
  ['decorator', { html: '{{* deco}}' }, 'html', 'decorators'],
  ['lookup helper', { html: '{{lookup a b}}' }, 'html', 'unknown helper "lookup"'],
  ['log helper', { html: '{{log a}}' }, 'html', 'unknown helper "log"'],
  ['hash argument', { html: '{{#each items key=1}}x{{/each}}' }, 'html', 'named arguments'],
  ['sub-expression', { html: '{{#if (spin "a")}}x{{/if}}' }, 'html', '#if takes one variable'],
  ['inline if', { html: '{{if x}}' }, 'html', 'block helper'],
  ['data variable', { html: '{{@partial-block}}' }, 'html', 'data variables'],
  ['literal', { html: '{{"text"}}' }, 'html', 'literal'],
  ['colon in a name', { html: '{{spin:greeting}}' }, 'html', "':' is not allowed"],
  ['subject syntax', { subject: 'Hi {{name', html: 'x' }, 'subject', 'Parse error'],
  ['no body part', { html: '', text: null }, 'text', 'give html, text or both'],
  ['html over 512 KiB', { html: 'é'.repeat(300_000) }, 'html', 'at most 524288 bytes'],
  ['spin without a name', { html: '{{spin}}' }, 'html', 'spin takes the name'],
  ['spin_inline with one alternative', { html: '{{spin_inline "a"}}' }, 'html', 'spin_inline takes 2 to 100'],
]

// A template made through the API with the scenario's Administrator key; its id is `setup`.
const template =
  (body: Record<string, unknown>) =>
  async ({ t, admin }: ScenarioContext) => {
    const res = await t.call('POST', '/api/v2/templates', { key: admin, body: { name: 'Welcome', ...body } })
    expect(res.status).toBe(201)
    return res.body.data.id as number
  }
const noTemplates: Scenario['after'] = async ({ t, admin }) => expect((await t.call('GET', '/api/v2/templates', { key: admin })).body.meta.total).toBe(0)

runScenarios('templates: 422 validation_failed', [
  ...invalid.map(([name, body, field, message]): Scenario => ({
    name,
    method: 'POST',
    url: '/api/v2/templates',
    body: { name: 'x', subject: 's', ...body },
    status: 422,
    code: 'validation_failed',
    after: async (ctx, res) => {
      expect(res.body.error.details[field].join('\n')).toContain(message)
      await noTemplates!(ctx, res)
    },
  })),
  {
    name: 'CR/LF in the subject',
    method: 'POST',
    url: '/api/v2/templates',
    body: { name: 'x', subject: 'Hi\r\nBcc: victim@example.com', text: 't' },
    status: 422,
    after: (_, r) => expect(r.body.error.details.subject[0]).toContain('one line'),
  },
])

const textTemplate = template({ subject: 's', text: '[{{user}}][{{user.name}}]' })
runScenarios('templates: render refuses bad variables and unknown templates', [
  {
    name: 'a name that is both a value and a parent',
    method: 'POST',
    before: textTemplate,
    url: (c) => `/api/v2/templates/${c.setup}/render`,
    body: { variables: { user: 'x', 'user.name': 'Ann' } },
    status: 422,
    detailFields: ['variables.user.name'],
  },
  {
    name: 'an empty segment',
    method: 'POST',
    before: textTemplate,
    url: (c) => `/api/v2/templates/${c.setup}/render`,
    body: { variables: { 'a..b': 'x' } },
    status: 422,
    details: { 'variables.a..b': ['has an empty segment between dots'] },
  },
  {
    name: 'a bad recipient',
    method: 'POST',
    before: textTemplate,
    url: (c) => `/api/v2/templates/${c.setup}/render`,
    body: { to: 'not an address' },
    status: 422,
    after: (_, r) => expect(r.body.error.details.to).toBeDefined(),
  },
  { name: 'an unknown template', method: 'POST', url: '/api/v2/templates/999/render', body: {}, status: 404 },
])

// Reading, rendering and writing each need their permission.
const oneTemplate = template({ subject: 's', html: 'x' })
const writer = { permissions: ['templates.create'] }
const reader = { permissions: ['templates.read'] }
runScenarios('templates: permissions', [
  { name: 'a writer cannot read', method: 'GET', before: oneTemplate, url: (c) => `/api/v2/templates/${c.setup}`, key: writer, status: 403 },
  {
    name: 'a writer cannot render',
    method: 'POST',
    before: oneTemplate,
    url: (c) => `/api/v2/templates/${c.setup}/render`,
    body: {},
    key: writer,
    status: 403,
    code: 'forbidden',
  },
  {
    name: 'a writer creates',
    method: 'POST',
    before: oneTemplate,
    url: '/api/v2/templates',
    body: { name: 'n', subject: 's', text: 't' },
    key: writer,
    status: 201,
  },
  { name: 'a reader renders', method: 'POST', before: oneTemplate, url: (c) => `/api/v2/templates/${c.setup}/render`, body: {}, key: reader, status: 200 },
  {
    name: 'a reader cannot update',
    method: 'PATCH',
    before: oneTemplate,
    url: (c) => `/api/v2/templates/${c.setup}`,
    body: { name: 'n' },
    key: reader,
    status: 403,
  },
  {
    name: 'a reader cannot activate',
    method: 'POST',
    before: oneTemplate,
    url: (c) => `/api/v2/templates/${c.setup}/versions/1/activate`,
    key: reader,
    status: 403,
  },
  { name: 'a reader cannot delete', method: 'DELETE', before: oneTemplate, url: (c) => `/api/v2/templates/${c.setup}`, key: reader, status: 403 },
  { name: 'no key', method: 'GET', before: oneTemplate, url: '/api/v2/templates', key: null, status: 401 },
])

describe('template engine', () => {
  test('the compiled cache is bounded by entries and by source size, least recently used out first', () => {
    const compiled = (size: number) => {
      const r = compileVersion({ subject: 's', html: null, text: 'x' })
      if (!r.ok) throw new Error('compile')
      return { ...r.compiled, size }
    }
    const byCount = new CompiledCache(2, 1_000)
    byCount.set(1, compiled(1))
    byCount.set(2, compiled(1))
    byCount.get(1) // 1 is now the most recent
    byCount.set(3, compiled(1))
    expect([byCount.get(1) !== undefined, byCount.get(2) !== undefined, byCount.get(3) !== undefined]).toEqual([true, false, true])

    const bySize = new CompiledCache(100, 10)
    bySize.set(1, compiled(6))
    bySize.set(2, compiled(6))
    expect(bySize.size).toBe(1)
    expect(bySize.get(2)).toBeDefined()
  })
})
