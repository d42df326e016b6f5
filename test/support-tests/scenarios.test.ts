import { describe, expect, test } from 'bun:test'
import { testApp } from '../support/app'
import { runScenario, type Scenario } from '../support/scenarios'

/** The scenario runner itself: each expectation it offers fails when the answer differs. */
const roles: Scenario = { name: 'list roles', method: 'GET', url: '/api/v2/roles', status: 200 }

describe('runScenario', () => {
  test('passes when every expectation holds', async () => {
    const reply = await runScenario({
      ...roles,
      json: { success: true, data: [{ name: 'Administrator' }] },
      expectedContent: ['"Administrator"'],
      notExpectedContent: ['mr_'],
      expectHeaders: { 'content-type': 'application/json', 'x-nothing': null },
    })
    expect(reply.status).toBe(200)
  })

  const failing: Array<[string, Partial<Scenario>]> = [
    ['another status', { status: 201 }],
    ['an error code', { status: 200, code: 'not_found' }],
    ['a JSON subset', { json: { data: [{ name: 'Nobody' }] } }],
    ['the whole body', { equals: { success: true } }],
    ['a substring', { expectedContent: ['Nobody'] }],
    ['a forbidden substring', { notExpectedContent: ['Administrator'] }],
    ['a header', { expectHeaders: { 'content-type': 'text/html' } }],
    ['an absent header', { expectHeaders: { 'content-type': null } }],
    ['an after hook', { after: () => expect(1).toBe(2) }],
  ]
  for (const [name, change] of failing) {
    test(`fails on ${name}`, async () => {
      await expect(runScenario({ ...roles, ...change })).rejects.toThrow()
    })
  }

  test('error expectations: code, message, details and detail fields', async () => {
    const bad: Scenario = { name: 'bad role', method: 'POST', url: '/api/v2/roles', body: { name: 5, permissions: 'all' }, status: 422 }
    await runScenario({ ...bad, code: 'validation_failed', message: 'invalid', detailFields: ['name', 'permissions'] })
    await expect(runScenario({ ...bad, message: /nothing like this/ })).rejects.toThrow()
    await expect(runScenario({ ...bad, detailFields: ['name'] })).rejects.toThrow()
    await expect(runScenario({ ...bad, details: { name: ['x'] } })).rejects.toThrow()
  })

  test('keys: none, exact permissions, a role, or one the row makes; `before` feeds the row', async () => {
    await runScenario({ ...roles, key: null, status: 401 })
    await runScenario({ ...roles, key: { permissions: ['contacts.read'] }, status: 403 })
    await runScenario({ ...roles, key: { permissions: ['roles.read'] }, status: 200 })
    await runScenario({ ...roles, key: { role: 'Administrator' }, status: 200 })
    await runScenario({
      name: 'one role',
      method: 'GET',
      before: ({ t }) => t.makeKey({ permissions: ['roles.read'] }),
      url: (c) => `/api/v2/roles/${c.setup.role_id}`,
      key: (c) => c.setup.key,
      status: 200,
      json: { data: { permissions: ['roles.read'] } },
    })
  })

  test('a shared app gains one Administrator key, however many rows run on it', async () => {
    const app = testApp()
    for (let i = 0; i < 3; i++) await runScenario(roles, { app })
    await runScenario({ ...roles, json: { data: [{ key_count: 1 }] } }, { app })
  })
})
