import { describe, expect, test } from 'bun:test'
import { Elysia, t as types } from 'elysia'
import { skipResponseValidation } from '../../src/http/response-validation'
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
