import { describe, expect, test } from 'bun:test'
import type { Config } from '../../src/config'
import { testApp, type Reply, type TestApp } from './app'

/**
 * Table-driven endpoint tests, in the manner of PocketBase's ApiScenario: each row is one
 * request through `app.handle` and what its answer must be. `runScenarios` registers one
 * bun test per row, so a failure names the row.
 */

/** What a scenario's functions see: the app, an Administrator key, and what `before` returned. */
export interface ScenarioContext<S = any> {
  t: TestApp
  admin: string
  setup: S
}

type Dyn<T, S> = T | ((ctx: ScenarioContext<S>) => T)
/** A JSON value (not `unknown`, so a function in its place is typed from context). */
type Json = Record<string, unknown> | unknown[] | string | number | boolean | null

/** Which key the request carries: none, the Administrator key (default), a role, exact permissions, or a key made by the test. */
export type ScenarioKey<S> = null | 'admin' | { role: string } | { permissions: string[] } | ((ctx: ScenarioContext<S>) => string | null)

export interface Scenario<S = any> {
  name: string
  method: string
  url: Dyn<string, S>
  key?: ScenarioKey<S>
  headers?: Dyn<Record<string, string>, S>
  /** Sent as JSON (content-type application/json unless `headers` says otherwise). */
  body?: Dyn<Json, S>
  /** Sent as it is. */
  rawBody?: Dyn<string | Uint8Array, S>
  /** Runs before the request; its result is `ctx.setup`. */
  before?: (ctx: ScenarioContext<any>) => S | Promise<S>

  status: number
  /** `error.code` of the failure envelope. */
  code?: string
  /** `error.message`: a substring or a pattern. */
  message?: string | RegExp
  /** `error.details`, exactly. */
  details?: Record<string, unknown>
  /** The names of the fields in `error.details`, in any order. */
  detailFields?: string[]
  /** A subset the JSON body must match (toMatchObject). */
  json?: Dyn<Record<string, unknown> | unknown[], S>
  /** The whole JSON body, exactly (toEqual). */
  equals?: Dyn<Json, S>
  /** Substrings the raw body must contain, and must not. */
  expectedContent?: string[]
  notExpectedContent?: string[]
  /** Response headers: a substring or a pattern each; null means absent. */
  expectHeaders?: Record<string, string | RegExp | null>
  /** Further assertions once the answer is in (state left behind, side effects). */
  after?: (ctx: ScenarioContext<S>, reply: Reply) => void | Promise<void>
}

export interface ScenarioOptions {
  /** Config for the fresh app each scenario gets. */
  config?: Partial<Config>
  /** One app for every scenario (when the table reads shared state), or a factory for a fresh, seeded one each. */
  app?: TestApp | (() => TestApp)
  /** The Administrator key already made on `app`, so the table does not add one. */
  admin?: string
}

const resolve = <T, S>(v: Dyn<T, S> | undefined, ctx: ScenarioContext<S>): T | undefined =>
  typeof v === 'function' ? (v as (c: ScenarioContext<S>) => T)(ctx) : v

/** Registers `describe(name)` with one test per scenario. */
export function runScenarios(name: string, scenarios: Scenario[], options: ScenarioOptions = {}): void {
  const seen = new Set<string>()
  for (const s of scenarios) {
    if (seen.has(s.name)) throw new Error(`scenario "${s.name}" appears twice in "${name}"`)
    seen.add(s.name)
  }
  describe(name, () => {
    for (const s of scenarios) test(`${s.name} -> ${s.status}${s.code ? ` ${s.code}` : ''}`, () => runScenario(s, options))
  })
}

/** Runs one scenario; exported for tests that need a loop of their own. */
export async function runScenario<S>(s: Scenario<S>, options: ScenarioOptions = {}): Promise<Reply> {
  const t = typeof options.app === 'function' ? options.app() : (options.app ?? testApp(options.config))
  if (options.admin) adminKeys.set(t, options.admin)
  const ctx = { t, setup: undefined as S } as ScenarioContext<S>
  // Made on first use, once per app, so a shared app does not gain a key per row.
  Object.defineProperty(ctx, 'admin', { get: () => adminKeyOf(t) })
  if (s.before) ctx.setup = await s.before(ctx)
  const key = keyFor(s.key, ctx)
  const rawBody = resolve(s.rawBody, ctx)
  const body = resolve(s.body, ctx)
  const reply = await t.call(s.method, resolve(s.url, ctx)!, {
    key: key ?? undefined,
    headers: resolve(s.headers, ctx),
    ...(rawBody !== undefined ? { rawBody } : {}),
    ...(body !== undefined ? { body } : {}),
  })
  const where = `${s.method} ${resolve(s.url, ctx)} answered ${reply.status}: ${reply.text.slice(0, 500)}`
  expect(reply.status, where).toBe(s.status)
  if (s.code !== undefined) expect(reply.body?.error?.code, where).toBe(s.code)
  if (s.message !== undefined) {
    const message = String(reply.body?.error?.message)
    if (typeof s.message === 'string') expect(message, where).toContain(s.message)
    else expect(message, where).toMatch(s.message)
  }
  if (s.details !== undefined) expect(reply.body?.error?.details, where).toEqual(s.details)
  if (s.detailFields !== undefined) expect(Object.keys(reply.body?.error?.details ?? {}).sort(), where).toEqual([...s.detailFields].sort())
  const json = resolve(s.json, ctx)
  if (json !== undefined) expect(reply.body).toMatchObject(json)
  if (s.equals !== undefined) expect(reply.body).toEqual(resolve(s.equals, ctx))
  for (const c of s.expectedContent ?? []) expect(reply.text).toContain(c)
  for (const c of s.notExpectedContent ?? []) expect(reply.text).not.toContain(c)
  for (const [h, v] of Object.entries(s.expectHeaders ?? {})) {
    const got = reply.headers.get(h)
    if (v === null) expect(got).toBeNull()
    else if (typeof v === 'string') expect(got ?? '').toContain(v)
    else expect(got ?? '').toMatch(v)
  }
  if (s.after) await s.after(ctx, reply)
  return reply
}

const adminKeys = new WeakMap<TestApp, string>()
function adminKeyOf(t: TestApp): string {
  let key = adminKeys.get(t)
  if (!key) adminKeys.set(t, (key = t.makeKey({ name: 'scenario admin' }).key))
  return key
}

function keyFor<S>(k: ScenarioKey<S> | undefined, ctx: ScenarioContext<S>): string | null {
  if (k === undefined || k === 'admin') return ctx.admin
  if (k === null) return null
  if (typeof k === 'function') return k(ctx)
  if ('role' in k) return ctx.t.makeKey({ role: k.role }).key
  return ctx.t.makeKey({ permissions: k.permissions }).key
}
