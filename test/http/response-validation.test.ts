import { describe, expect, test } from 'bun:test'
import { Elysia, t as types } from 'elysia'
import { extraFields, skipResponseValidation, strictResponsesPlugin } from '../../src/http/response-validation'
import { testApp } from '../support/app'

/** A route whose handler answers a body its schema refuses. */
const wrongApp = () => {
  const View = types.Object({ success: types.Boolean(), data: types.Object({ id: types.Integer() }) })
  return new Elysia().get('/x', () => ({ success: true, data: { id: 'not a number' } }) as never, { response: { 200: View } })
}

describe('validate_responses', () => {
  test('skipResponseValidation turns the check off for that app only; another app on the same schemas keeps it', async () => {
    const View = types.Object({ data: types.Integer() })
    const make = () => new Elysia().get('/x', () => ({ data: 'no' }) as never, { response: { 200: View } })
    const skipped = make()
    const checked = make()
    expect(skipResponseValidation(skipped.routes)).toBe(1)
    expect((await skipped.handle(new Request('http://localhost/x'))).status).toBe(200)
    expect((await checked.handle(new Request('http://localhost/x'))).status).toBe(422)
    expect((await wrongApp().handle(new Request('http://localhost/x'))).status).toBe(422)
    // The schema itself is untouched (the copy carries the mark, and not as an enumerable key).
    expect(JSON.stringify(skipped.routes[0]!.hooks.response)).toBe(JSON.stringify({ 200: View }))
  })

  test('off: the API answers as before and the OpenAPI document is the same', async () => {
    const on = testApp()
    const off = testApp({ validate_responses: false })
    const keyOn = on.makeKey()
    const keyOff = off.makeKey()
    const a = await on.call('GET', `/api/v2/api-keys/${keyOn.id}`, { key: keyOn.key })
    const b = await off.call('GET', `/api/v2/api-keys/${keyOff.id}`, { key: keyOff.key })
    expect(a.status).toBe(200)
    expect(b.status).toBe(200)
    expect(Object.keys(b.body.data).sort()).toEqual(Object.keys(a.body.data).sort())
    // Elysia adds `additionalProperties: false` to a shared schema when it compiles a route that
    // uses it, so that keyword depends on which routes ran before; everything else must match.
    const doc = async (app: typeof on) => (await app.call('GET', '/openapi.json')).text.replaceAll(',"additionalProperties":false', '')
    const docOff = await doc(off)
    expect(docOff).toBe(await doc(on))
    expect(docOff).toContain('"/api/v2/api-keys/{id}"')
  })
})

describe('strict responses (the tests’ guard for validate_responses off)', () => {
  const View = types.Object({
    id: types.Integer(),
    tags: types.Array(types.Object({ name: types.String() })),
    owner: types.Union([types.Object({ email: types.String() }), types.Null()]),
    fields: types.Record(types.String(), types.Object({ v: types.String() })),
  })

  test('extraFields names every undeclared field, in nested objects, arrays, unions and records', () => {
    const ok = { id: 1, tags: [{ name: 'a' }], owner: null, fields: { plan: { v: 'pro' } } }
    expect(extraFields(View, ok)).toEqual([])
    const leaky = {
      id: 1,
      secret_hash: 'x',
      tags: [{ name: 'a', internal: 1 }],
      owner: { email: 'a@b.c', password: 'p' },
      fields: { plan: { v: 'pro', raw: 1 } },
    }
    expect(extraFields(View, leaky).sort()).toEqual(['fields.plan.raw', 'owner.password', 'secret_hash', 'tags[0].internal'])
  })

  test('an app with the plugin answers 500 for a handler that returns an undeclared field, and 200 otherwise', async () => {
    const Envelope = types.Object({ success: types.Boolean(), data: types.Object({ id: types.Integer() }) })
    let app: Elysia = new Elysia()
    app = app
      .use(strictResponsesPlugin(() => app.routes as never))
      .get('/ok', () => ({ success: true, data: { id: 1 } }), { response: { 200: Envelope } })
      .get('/leak', () => ({ success: true, data: { id: 1, secret_hash: 'x' } }) as never, { response: { 200: Envelope } }) as unknown as Elysia
    expect((await app.handle(new Request('http://localhost/ok'))).status).toBe(200)
    expect((await app.handle(new Request('http://localhost/leak'))).status).toBe(500)
  })
})
