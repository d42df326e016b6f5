import { testApp } from './app'

/**
 * Prints GET /openapi.json of a freshly built test app, keys sorted, two-space indent.
 * Run as its own process by test/http/openapi-snapshot.test.ts: Elysia adds
 * `additionalProperties: false` to a shared schema object in place when it first compiles a
 * validator for it, so in a process that has already served requests the document differs.
 * A fresh process gives what a freshly started server serves, whatever ran before.
 */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
  )
}

const res = await testApp().call('GET', '/openapi.json')
if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`)
process.stdout.write(JSON.stringify(sortKeys(res.body), null, 2) + '\n')
