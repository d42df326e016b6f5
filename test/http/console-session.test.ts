import { afterAll, describe, expect, test } from 'bun:test'
import { createAdmin, issueSetupToken } from '../../src/modules/admins/service'
import { CLI_ACTOR, createRole, findRoleByName } from '../../src/modules/roles/service'
import { testApp } from '../support/app'

const PASSWORD = 'correct horse battery'

/** A test app with one administrator, and helpers that sign in and call with the cookie. */
async function consoleApp(overrides: Parameters<typeof testApp>[0] = {}) {
  const t = testApp(overrides)
  const adminRole = findRoleByName(t.deps, 'Administrator')!
  const ada = await createAdmin(t.deps, CLI_ACTOR, { email: 'ada@example.com', password: PASSWORD, role_id: adminRole.id })

  /** POST /admin/api/session; the cookie value and CSRF token when it worked. */
  const signIn = async (email = 'ada@example.com', password = PASSWORD, headers: Record<string, string> = {}) => {
    const r = await t.call('POST', '/admin/api/session', { body: { email, password }, headers })
    const cookie = /mailroom_session=([^;]+)/.exec(r.headers.get('set-cookie') ?? '')?.[1] ?? null
    return { ...r, cookie, csrf: r.body?.data?.csrf_token as string | undefined }
  }
  /** A call with the session cookie (and, when given, the CSRF header). */
  const withSession = (
    method: string,
    path: string,
    s: { cookie: string | null; csrf?: string },
    opts: { body?: unknown; headers?: Record<string, string> } = {},
  ) =>
    t.call(method, path, {
      body: opts.body,
      headers: { cookie: `mailroom_session=${s.cookie}`, ...(s.csrf ? { 'x-csrf-token': s.csrf } : {}), ...opts.headers },
    })
  return { ...t, ada, adminRole, signIn, withSession }
}

describe('console sign-in', () => {
  test('a right password signs in: HttpOnly SameSite=Strict cookie on /, the session answer names the person and role', async () => {
    const t = await consoleApp()
    const s = await t.signIn('ADA@example.com')
    expect(s.status).toBe(200)
    const cookie = s.headers.get('set-cookie')!
    expect(cookie).toContain('HttpOnly')
    expect(cookie).toContain('SameSite=Strict')
    expect(cookie).toContain('Path=/')
    // Plain http without a trusted proxy saying https: no Secure flag (the browser would drop the cookie).
    expect(cookie).not.toContain('Secure')
    expect(s.body.data.admin).toEqual({ id: t.ada.id, email: 'ada@example.com', role: { id: t.adminRole.id, name: 'Administrator' }, permissions: ['*'] })
    expect(s.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/)
    // The database holds only the hash of the cookie value.
    const stored = t.deps.db.$client.query('SELECT token_hash FROM admin_sessions').all() as Array<{ token_hash: string }>
    expect(stored).toHaveLength(1)
    expect(stored[0]!.token_hash).not.toBe(s.cookie)
    expect(stored[0]!.token_hash).toBe(new Bun.CryptoHasher('sha256').update(s.cookie!).digest('hex'))

    const me = await t.withSession('GET', '/admin/api/session', s)
    expect(me.status).toBe(200)
    expect(me.body.data.csrf_token).toBe(s.csrf)
    expect(t.deps.db.$client.query('SELECT last_sign_in_at FROM admins').get()).toEqual({ last_sign_in_at: t.deps.clock.now() })
  })

  test('a wrong password and an unknown email get the same 401 and set no cookie', async () => {
    const t = await consoleApp()
    const wrong = await t.signIn('ada@example.com', 'not the password')
    const unknown = await t.signIn('nobody@example.com', PASSWORD)
    for (const r of [wrong, unknown]) {
      expect(r.status).toBe(401)
      expect(r.body.error).toEqual({ code: 'unauthorized', message: 'The email or password is wrong.' })
      expect(r.cookie).toBeNull()
    }
    expect((await t.call('GET', '/admin/api/session')).status).toBe(401)
  })

  test('a disabled administrator cannot sign in', async () => {
    const t = await consoleApp()
    t.deps.db.$client.run("UPDATE admins SET status = 'disabled'")
    expect((await t.signIn()).status).toBe(401)
  })

  test('https behind a trusted proxy gets a Secure cookie; an untrusted X-Forwarded-Proto does not', async () => {
    const trusted = await consoleApp({ trust_proxy: true })
    expect((await trusted.signIn(undefined, undefined, { 'x-forwarded-proto': 'https' })).headers.get('set-cookie')).toContain('; Secure')
    const untrusted = await consoleApp()
    expect((await untrusted.signIn(undefined, undefined, { 'x-forwarded-proto': 'https' })).headers.get('set-cookie')).not.toContain('Secure')
  })
})

describe('sign-in throttling', () => {
  test('5 failures for one account in 15 minutes: 429 with Retry-After, even with the right password; a success clears the count', async () => {
    const t = await consoleApp()
    for (let i = 0; i < 5; i++) expect((await t.signIn('ada@example.com', `wrong ${i}`)).status).toBe(401)
    const refused = await t.signIn()
    expect(refused.status).toBe(429)
    expect(refused.body.error.code).toBe('rate_limited')
    expect(Number(refused.headers.get('retry-after'))).toBe(15 * 60)
    expect(refused.cookie).toBeNull()

    // The window moves on: the oldest failure leaves it and the right password works again.
    t.deps.clock.advance(15 * 60_000)
    expect((await t.signIn()).status).toBe(200)
    // The success cleared the account's count: four more failures are still answered 401.
    for (let i = 0; i < 4; i++) expect((await t.signIn('ada@example.com', `wrong ${i}`)).status).toBe(401)
    expect((await t.signIn()).status).toBe(200)
  })

  test('attempts sent at once cannot slip past the limit while their passwords are checked', async () => {
    const t = await consoleApp()
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => t.signIn('ada@example.com', `wrong ${i}`)))
    const statuses = answers.map((r) => r.status).sort()
    expect(statuses.filter((s) => s === 401)).toHaveLength(5)
    expect(statuses.filter((s) => s === 429)).toHaveLength(7)
  })

  test('one client address trying many accounts is stopped too', async () => {
    const t = await consoleApp()
    for (let i = 0; i < 20; i++) expect((await t.signIn(`guess${i}@example.com`, 'password123')).status).toBe(401)
    const r = await t.signIn()
    expect(r.status).toBe(429)
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0)
  })
})

describe('the REST API with a session', () => {
  test('reads need no CSRF header; a change needs the X-CSRF-Token of the session', async () => {
    const t = await consoleApp()
    const s = await t.signIn()
    expect((await t.withSession('GET', '/api/v2/roles', { cookie: s.cookie })).status).toBe(200)

    const body = { name: 'Readers', permissions: ['contacts.read'] }
    const none = await t.withSession('POST', '/api/v2/roles', { cookie: s.cookie }, { body })
    expect(none.status).toBe(403)
    expect(none.body.error.message).toContain('CSRF token missing or wrong')
    const wrong = await t.withSession('POST', '/api/v2/roles', { cookie: s.cookie, csrf: 'x'.repeat(43) }, { body })
    expect(wrong.status).toBe(403)
    expect(wrong.body.error.message).toContain('CSRF token missing or wrong')
    const foreign = await t.withSession('POST', '/api/v2/roles', s, { body, headers: { origin: 'https://evil.example' } })
    expect(foreign.status).toBe(403)
    expect(foreign.body.error.message).toContain('https://evil.example')
    const crossSite = await t.withSession('POST', '/api/v2/roles', s, { body, headers: { 'sec-fetch-site': 'cross-site' } })
    expect(crossSite.status).toBe(403)
    expect(t.deps.db.$client.query("SELECT count(*) AS n FROM roles WHERE name = 'Readers'").get()).toEqual({ n: 0 })

    const own = await t.withSession('POST', '/api/v2/roles', s, { body, headers: { origin: 'http://mailroom.test' } })
    expect(own.status).toBe(201)
  })

  test('the activity log names the person: actor_name is the email, actor_admin_id set, actor_key_id null', async () => {
    const t = await consoleApp()
    const s = await t.signIn()
    const made = await t.withSession('POST', '/api/v2/lists', s, { body: { name: 'Newsletter' } })
    expect(made.status).toBe(201)
    const row = t.deps.db.$client
      .query("SELECT actor_key_id, actor_admin_id, actor_name, action, target_id FROM activity_logs WHERE action = 'lists.create'")
      .get()
    expect(row).toEqual({
      actor_key_id: null,
      actor_admin_id: t.ada.id,
      actor_name: 'ada@example.com',
      action: 'lists.create',
      target_id: String(made.body.data.id),
    })
    const log = await t.withSession('GET', `/api/v2/activity-logs?admin_id=${t.ada.id}`, s)
    expect(log.body.data[0].actor).toEqual({ type: 'admin', key_id: null, admin_id: t.ada.id, name: 'ada@example.com' })
  })

  test("a read-only administrator's role refuses a change with 403, as a key's would", async () => {
    const t = await consoleApp()
    const readOnly = createRole(t.deps, CLI_ACTOR, { name: 'Read only', permissions: ['lists.read', 'roles.read'] })
    await createAdmin(t.deps, CLI_ACTOR, { email: 'olive@example.com', password: PASSWORD, role_id: readOnly.id })
    const s = await t.signIn('olive@example.com')
    expect(s.body.data.admin.permissions).toEqual(['lists.read', 'roles.read'])
    expect((await t.withSession('GET', '/api/v2/lists', s)).status).toBe(200)
    const refused = await t.withSession('POST', '/api/v2/lists', s, { body: { name: 'Nope' } })
    expect(refused.status).toBe(403)
    expect(refused.body.error.message).toContain('lists.create')
  })

  test('an Authorization header wins over the cookie; a cookie that names no session is 401', async () => {
    const t = await consoleApp()
    const s = await t.signIn()
    const reader = t.makeKey({ permissions: ['lists.read'] })
    // The key's role decides, not the session's: the Administrator session would have been allowed.
    const r = await t.call('POST', '/api/v2/lists', {
      key: reader.key,
      body: { name: 'x' },
      headers: { cookie: `mailroom_session=${s.cookie}`, 'x-csrf-token': s.csrf! },
    })
    expect(r.status).toBe(403)
    const bogus = await t.withSession('GET', '/api/v2/lists', { cookie: 'not-a-session' })
    expect(bogus.status).toBe(401)
    expect(bogus.body.error.message).toContain('sign in again')
  })

  test('sending mail needs an API key, not a session', async () => {
    const t = await consoleApp()
    const s = await t.signIn()
    const r = await t.withSession('POST', '/v1/emails', s, { body: { from: 'a@example.com', to: ['b@example.net'], subject: 'x', text: 'y' } })
    expect(r.status).toBe(403)
    expect(r.body.error.message).toContain('needs an API key')
  })

  test('a template test send works with a session: no API key on the message, the person in the activity log, no idempotency record', async () => {
    const t = await consoleApp({ allow_unverified_domains: true })
    const s = await t.signIn()
    const tpl = await t.withSession('POST', '/api/v2/templates', s, {
      body: { name: 'Welcome', subject: 'Hi {{name}}', text: 'Hello {{name}}', from: 'team@example.com' },
    })
    expect(tpl.status, JSON.stringify(tpl.body)).toBe(201)
    const path = `/api/v2/dynamicTemplate/${tpl.body.data.id}`
    const body = { to: 'tester@example.net', variables: { name: 'Ann' } }
    expect((await t.withSession('POST', path, { cookie: s.cookie }, { body })).status).toBe(403)
    const sent = await t.withSession('POST', path, s, { body, headers: { 'idempotency-key': 'k1' } })
    expect(sent.status, JSON.stringify(sent.body)).toBe(202)
    const again = await t.withSession('POST', path, s, { body, headers: { 'idempotency-key': 'k1' } })
    expect(again.status).toBe(202)
    expect(again.body.data.id).not.toBe(sent.body.data.id)
    expect(again.headers.get('idempotent-replayed')).toBeNull()
    const row = t.deps.db.$client.query('SELECT api_key_id, source, subject FROM messages WHERE id = ?').get(sent.body.data.id)
    expect(row).toEqual({ api_key_id: null, source: 'template', subject: 'Hi Ann' })
    expect(t.deps.db.$client.query('SELECT count(*) AS n FROM idempotency_keys').get()).toEqual({ n: 0 })
    const log = t.deps.db.$client
      .query("SELECT actor_admin_id, actor_name, action, target_type, target_id FROM activity_logs WHERE action = 'transactional.send' ORDER BY id")
      .all()
    expect(log[0]).toEqual({
      actor_admin_id: t.ada.id,
      actor_name: 'ada@example.com',
      action: 'transactional.send',
      target_type: 'messages',
      target_id: sent.body.data.id,
    })
    // Other send routes still refuse a session.
    const other = await t.withSession('POST', '/v1/send', s, { body: { from: 'team@example.com', to: 'b@example.net', subject: 'x' } })
    expect(other.status).toBe(403)
  })
})

describe('session expiry and sign-out', () => {
  test('idle expiry: a request within the idle time keeps the session; a gap of admin_session_idle_minutes ends it', async () => {
    const t = await consoleApp({ admin_session_idle_minutes: 30 })
    const s = await t.signIn()
    t.deps.clock.advance(29 * 60_000)
    expect((await t.withSession('GET', '/api/v2/lists', s)).status).toBe(200)
    t.deps.clock.advance(29 * 60_000)
    expect((await t.withSession('GET', '/api/v2/lists', s)).status).toBe(200)
    t.deps.clock.advance(30 * 60_000)
    expect((await t.withSession('GET', '/api/v2/lists', s)).status).toBe(401)
    expect((await t.withSession('GET', '/admin/api/session', s)).status).toBe(401)
    expect(t.deps.db.$client.query('SELECT count(*) AS n FROM admin_sessions').get()).toEqual({ n: 0 })
  })

  test('absolute expiry: admin_session_max_hours after sign-in the session ends however active', async () => {
    const t = await consoleApp({ admin_session_max_hours: 2 })
    const s = await t.signIn()
    expect(s.headers.get('set-cookie')).toContain('Max-Age=7200')
    for (let i = 0; i < 3; i++) {
      t.deps.clock.advance(40 * 60_000 - 1)
      expect((await t.withSession('GET', '/api/v2/lists', s)).status).toBe(200)
    }
    t.deps.clock.advance(3)
    expect((await t.withSession('GET', '/api/v2/lists', s)).status).toBe(401)
  })

  test('sign-out needs the CSRF token, deletes the session and clears the cookie', async () => {
    const t = await consoleApp()
    const s = await t.signIn()
    expect((await t.withSession('DELETE', '/admin/api/session', { cookie: s.cookie })).status).toBe(403)
    const out = await t.withSession('DELETE', '/admin/api/session', s)
    expect(out.status).toBe(200)
    expect(out.headers.get('set-cookie')).toMatch(/^mailroom_session=; .*Max-Age=0/)
    expect((await t.withSession('GET', '/api/v2/lists', s)).status).toBe(401)
    expect((await t.withSession('GET', '/admin/api/session', s)).status).toBe(401)
    const log = t.deps.db.$client.query("SELECT actor_admin_id, actor_name, action FROM activity_logs WHERE action LIKE 'admins.sign_%' ORDER BY id").all()
    expect(log).toEqual([
      { actor_admin_id: t.ada.id, actor_name: 'ada@example.com', action: 'admins.sign_in' },
      { actor_admin_id: t.ada.id, actor_name: 'ada@example.com', action: 'admins.sign_out' },
    ])
  })

  test('a new password ends the other sessions of the person', async () => {
    const t = await consoleApp()
    const first = await t.signIn()
    const second = await t.signIn()
    const r = await t.withSession('PATCH', `/api/v2/admins/${t.ada.id}`, second, { body: { password: 'a brand new password' } })
    expect(r.status).toBe(200)
    expect((await t.withSession('GET', '/api/v2/lists', first)).status).toBe(401)
    expect((await t.withSession('GET', '/api/v2/lists', second)).status).toBe(200)
  })
})

describe('first-run setup', () => {
  test('needed while no administrator exists; the token works once, then setup is done', async () => {
    const t = testApp()
    expect((await t.call('GET', '/admin/api/setup')).body.data).toEqual({ needed: true })
    const { token } = issueSetupToken(t.deps)
    const wrong = await t.call('POST', '/admin/api/setup', { body: { token: 'nope', email: 'root@example.com', password: PASSWORD } })
    expect(wrong.status).toBe(401)

    const done = await t.call('POST', '/admin/api/setup', { body: { token, email: 'root@example.com', password: PASSWORD } })
    expect(done.status).toBe(200)
    expect(done.body.data.admin).toMatchObject({ email: 'root@example.com', role: { name: 'Administrator' }, permissions: ['*'] })
    expect(done.headers.get('set-cookie')).toContain('mailroom_session=')
    expect((await t.call('GET', '/admin/api/setup')).body.data).toEqual({ needed: false })

    const again = await t.call('POST', '/admin/api/setup', { body: { token, email: 'mallory@example.com', password: PASSWORD } })
    expect(again.status).toBe(409)
    expect(t.deps.db.$client.query('SELECT email FROM admins').all()).toEqual([{ email: 'root@example.com' }])
  })

  test('an expired token is refused; a new one replaces the old', async () => {
    const t = testApp()
    const old = issueSetupToken(t.deps).token
    const fresh = issueSetupToken(t.deps).token
    expect((await t.call('POST', '/admin/api/setup', { body: { token: old, email: 'root@example.com', password: PASSWORD } })).status).toBe(401)
    t.deps.clock.advance(60 * 60_000)
    const late = await t.call('POST', '/admin/api/setup', { body: { token: fresh, email: 'root@example.com', password: PASSWORD } })
    expect(late.status).toBe(401)
    expect(late.body.error.message).toContain('expired')
    expect((await t.call('GET', '/admin/api/setup')).body.data).toEqual({ needed: true })
  })

  test('a short password is refused naming the field', async () => {
    const t = testApp()
    const { token } = issueSetupToken(t.deps)
    const r = await t.call('POST', '/admin/api/setup', { body: { token, email: 'root@example.com', password: 'short' } })
    expect(r.status).toBe(422)
    expect(r.body.error.details.password[0]).toContain('10 characters')
  })
})

describe('over real sockets', () => {
  const servers: Array<{ stop(): unknown }> = []
  afterAll(() => servers.forEach((s) => s.stop()))

  test("the browser's cookie and Origin: own origin accepted, a foreign one refused, the client address recorded", async () => {
    const t = await consoleApp()
    t.app.listen({ hostname: '127.0.0.1', port: 0 })
    servers.push({ stop: () => t.app.stop() })
    const base = `http://127.0.0.1:${t.app.server!.port}`
    const signIn = await fetch(`${base}/admin/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base },
      body: JSON.stringify({ email: 'ada@example.com', password: PASSWORD }),
    })
    expect(signIn.status).toBe(200)
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!
    const csrf = ((await signIn.json()) as any).data.csrf_token
    expect(t.deps.db.$client.query('SELECT ip FROM admin_sessions').get()).toEqual({ ip: '127.0.0.1' })

    const post = (origin: string) =>
      fetch(`${base}/api/v2/lists`, {
        method: 'POST',
        headers: { cookie, 'x-csrf-token': csrf, origin, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `list from ${origin}` }),
      })
    expect((await post('http://evil.example:8825')).status).toBe(403)
    expect((await post(base)).status).toBe(201)
    const foreignSignIn = await fetch(`${base}/admin/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
      body: JSON.stringify({ email: 'ada@example.com', password: PASSWORD }),
    })
    expect(foreignSignIn.status).toBe(403)
  })
})
