/** Issue 13 item 6: names with control characters are refused (422) wherever a name is given. */
import { describe, expect, test } from 'bun:test'
import { testApp } from '../support/app'

const EVIL = ['\x1b[31mred', 'bell\x07', 'nul\x00x', 'del\x7f', 'c1\x9b2J', 'new\nline']

describe('names refuse control characters', () => {
  const t = testApp()
  const { key } = t.makeKey()
  const routes: Array<[string, string, (name: string) => Record<string, unknown>]> = [
    ['POST', '/api/v2/api-keys', (name) => ({ name, role_id: 1 })],
    ['POST', '/api/v2/roles', (name) => ({ name, permissions: ['contacts.read'] })],
    ['POST', '/api/v2/lists', (name) => ({ name })],
    ['POST', '/api/v2/templates', (name) => ({ name, subject: 's', html: '<p>x</p>' })],
    ['POST', '/api/v2/segments', (name) => ({ name, rules: { all: [{ field: 'status', op: 'eq', value: 'subscribed' }] } })],
    ['POST', '/api/v2/ip-pools', (name) => ({ name })],
    ['POST', '/api/v2/sending-nodes', (name) => ({ name, kind: 'direct' })],
    ['POST', '/api/v2/bridges', (name) => ({ name })],
    ['POST', '/api/v2/feedback-loops', (name) => ({ name, kind: 'address', address: 'fbl@mailroom.test' })],
  ]
  for (const [method, path, body] of routes)
    test(`${method} ${path}`, async () => {
      for (const name of EVIL) {
        const r = await t.call(method, path, { key, body: body(name) })
        expect(r.status, `${path} ${JSON.stringify(name)}`).toBe(422)
        expect(r.body.error.code).toBe('validation_failed')
        expect(r.body.error.details.name).toEqual(['must be text without control characters'])
      }
      if (path.endsWith('/bridges')) return // needs a sending domain; the refusal is what is tested
      // Ordinary text, accents and symbols are fine.
      const fine = await t.call(method, path, { key, body: body('Café ✉ list') })
      expect(fine.status, JSON.stringify(fine.body)).toBeLessThan(300)
    })
})
