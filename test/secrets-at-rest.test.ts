/**
 * Issue 13 item 3: the secrets the database holds are sealed with a key kept outside it, the
 * data directory is 0700 and its files 0600. Through the real server process and the CLI.
 */
import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { chmodSync, copyFileSync, existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { runCli } from '../src/cli'
import { systemClock } from '../src/lib/clock'
import { createSecretBox, generateSecretKey, readKeyFile, sealedKeyId } from '../src/lib/secret-box'
import { SECRET_COLUMNS } from '../src/modules/system/secrets'
import { createAdminKey, startMailroom } from './support/server-process'
import { tempDir } from './support/temp-dirs'

/** Runs the CLI in-process with captured output. */
async function cli(argv: string[], env: Record<string, string> = {}) {
  const out: string[] = []
  const err: string[] = []
  const code = await runCli({
    argv: [...argv, '--log-level', 'error'],
    env,
    clock: systemClock,
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    stopSignal: new Promise(() => {}),
  })
  return { code, out, err }
}

const mode = (path: string) => statSync(path).mode & 0o777

/** The bytes of a database file and its WAL, as a copy of the data directory would have them. */
const fileBytes = (file: string) =>
  [file, `${file}-wal`]
    .filter((f) => existsSync(f))
    .map((f) => readFileSync(f).toString('latin1'))
    .join('')

/** Every stored secret, as stored. */
function storedSecrets(file: string): string[] {
  const db = new Database(file, { readonly: true })
  try {
    return SECRET_COLUMNS.flatMap((s) =>
      db
        .query<{ v: string }, []>(`SELECT ${s.column} AS v FROM ${s.table} WHERE ${s.column} IS NOT NULL ${s.where}`)
        .all()
        .map((r) => r.v),
    )
  } finally {
    db.close()
  }
}

const RELAY_PASSWORD = 'relay-pass-7f3a9c1e5b'
const IMAP_PASSWORD = 'imap-pass-2d8e4b6a0c'

describe('secrets at rest', () => {
  test('a copied database holds none of the secrets; the directory is 0700, its files 0600; the server still uses them', async () => {
    const dir = join(tempDir('mailroom-secrets-'), 'data')
    const flags = [
      '--data-dir',
      dir,
      '--hostname',
      'mailroom.test',
      '--smtp-listen',
      '127.0.0.1:0',
      '--webhooks-allow-private',
      'true',
      '--access-log',
      'false',
    ]
    const server = await startMailroom(flags)
    let webhookSecret = ''
    try {
      const key = await createAdminKey(flags, 'secrets')
      const call = (method: string, path: string, body?: unknown) =>
        fetch(`${server.base}${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
      expect((await call('POST', '/api/v2/sending-domains', { name: 'example.com' })).status).toBe(201)
      const node = { name: 'smarthost', kind: 'relay', relay_host: 'smtp.example.net', relay_username: 'u', relay_password: RELAY_PASSWORD }
      expect((await call('POST', '/api/v2/sending-nodes', node)).status).toBe(201)
      const fbl = { name: 'Yahoo', kind: 'imap', host: 'imap.example.net', username: 'fbl@example.net', password: IMAP_PASSWORD }
      expect((await call('POST', '/api/v2/feedback-loops', fbl)).status).toBe(201)
      const hook = await call('POST', '/api/v2/webhooks', { endpoint: 'http://127.0.0.1:9/hook', events: ['*'] })
      expect(hook.status).toBe(201)
      webhookSecret = hook.body.data.secret
      // The server opens what it sealed: rotating to the same secret is refused as "must differ".
      const same = await call('POST', `/api/v2/webhooks/${hook.body.data.id}/rotate-secret`, { secret: webhookSecret })
      expect(same.status).toBe(422)
      expect(JSON.stringify(same.body.error.details)).toContain('must differ')
    } finally {
      server.proc.kill('SIGTERM')
      expect(await server.proc.exited).toBe(0)
    }

    expect(mode(dir)).toBe(0o700)
    for (const file of ['mailroom.db', 'secret.key']) expect(mode(join(dir, file))).toBe(0o600)

    const copy = join(tempDir('mailroom-copy-'), 'copy.db')
    copyFileSync(join(dir, 'mailroom.db'), copy)
    const bytes = readFileSync(copy).toString('latin1')
    const stored = storedSecrets(copy)
    // DKIM key, relay and IMAP passwords, webhook secret, return-path and tracking HMAC secrets.
    expect(stored.length).toBeGreaterThanOrEqual(5)
    const box = createSecretBox(readKeyFile(join(dir, 'secret.key')))
    const plain = stored.map((v) => box.open(v))
    for (const v of stored) expect(sealedKeyId(v)).toBe(box.keyId)
    expect(plain).toEqual(expect.arrayContaining([RELAY_PASSWORD, IMAP_PASSWORD, webhookSecret]))
    const pem = plain.find((p) => p.startsWith('-----BEGIN PRIVATE KEY-----'))!
    expect(pem).toBeDefined()
    // Grep the file for every secret, and for each line of the PEM body.
    const needles = [...plain.filter((p) => !p.startsWith('-----')), ...pem.split('\n').filter((l) => l.length > 40)]
    for (const needle of needles) expect(bytes.includes(needle)).toBe(false)
    expect(bytes.includes('PRIVATE KEY')).toBe(false)
  }, 60_000)

  test('plaintext secrets of an older database are sealed at start, once, leaving no trace in the file', async () => {
    const dir = tempDir('mailroom-secrets-')
    chmodSync(dir, 0o700)
    expect((await cli(['migrate', '--data-dir', dir])).code).toBe(0)
    const file = join(dir, 'mailroom.db')
    // What an older version wrote: secrets in plain form.
    const old = new Database(file)
    const hex = 'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90'
    old.run(`INSERT OR REPLACE INTO system_state (key, value, updated_at) VALUES ('secret:return-path', ?, 0)`, [hex])
    old.run(
      `INSERT INTO sending_nodes (name, kind, relay_host, relay_port, relay_tls, relay_username, relay_password, created_at, updated_at)
             VALUES ('old', 'relay', 'smtp.example.net', 587, 'starttls', 'u', ?, 0, 0)`,
      [RELAY_PASSWORD],
    )
    old.run(
      `INSERT INTO webhooks (url, description, kinds, secret, created_at, updated_at) VALUES ('http://127.0.0.1:9/', '', '["*"]', 'whsec_b2xkLXNlY3JldC1vbGQtc2VjcmV0LW9sZA==', 0, 0)`,
    )
    old.close()
    // The grep below can see plaintext: here it does.
    expect(fileBytes(file).includes(RELAY_PASSWORD)).toBe(true)

    expect((await cli(['roles', 'list', '--data-dir', dir])).code).toBe(0)
    const first = storedSecrets(file)
    expect(first).toHaveLength(3)
    for (const v of first) expect(v.startsWith('enc:v1:')).toBe(true)
    const box = createSecretBox(readKeyFile(join(dir, 'secret.key')))
    expect(first.map((v) => box.open(v)).sort()).toEqual([RELAY_PASSWORD, hex, 'whsec_b2xkLXNlY3JldC1vbGQtc2VjcmV0LW9sZA=='].sort())
    const bytes = fileBytes(file)
    for (const needle of [RELAY_PASSWORD, hex, 'whsec_b2xkLXNlY3JldC1vbGQtc2VjcmV0LW9sZA==']) expect(bytes.includes(needle)).toBe(false)
    // Idempotent: a second start changes nothing.
    expect((await cli(['roles', 'list', '--data-dir', dir])).code).toBe(0)
    expect(storedSecrets(file)).toEqual(first)
  })

  test('a key that does not fit stops with a clear line; a missing key file is not replaced by a new one', async () => {
    const dir = tempDir('mailroom-secrets-')
    expect((await cli(['migrate', '--data-dir', dir])).code).toBe(0)
    expect((await cli(['roles', 'list', '--data-dir', dir])).code).toBe(0)
    // A return-path secret exists once delivery has started; make one as the server would.
    const key = readKeyFile(join(dir, 'secret.key'))
    const db = new Database(join(dir, 'mailroom.db'))
    db.run(`INSERT INTO system_state (key, value, updated_at) VALUES ('secret:return-path', ?, 0)`, [createSecretBox(key).seal('00ff')])
    db.close()

    const other = generateSecretKey().toString('base64')
    const wrong = await cli(['keys', 'list', '--data-dir', dir], { MAILROOM_SECRET_KEY: other })
    expect(wrong.code).toBe(1)
    expect(wrong.err).toHaveLength(1)
    expect(wrong.err[0]).toContain(
      `sealed with key ${createSecretBox(key).keyId}, but the key in use is ${createSecretBox(Buffer.from(other, 'base64')).keyId}`,
    )

    const missing = join(dir, 'elsewhere.key')
    const none = await cli(['keys', 'list', '--data-dir', dir, '--secret-key-file', missing])
    expect(none.code).toBe(1)
    expect(none.err[0]).toContain(`the secret key file ${missing} does not exist`)
    expect(existsSync(missing)).toBe(false)

    expect((await cli(['keys', 'list', '--data-dir', dir], { MAILROOM_SECRET_KEY: key.toString('base64') })).code).toBe(0)
  })

  test('secrets rotate-key seals every secret under a new key and keeps the old one', async () => {
    const dir = tempDir('mailroom-secrets-')
    expect((await cli(['migrate', '--data-dir', dir])).code).toBe(0)
    const keyFile = join(dir, 'secret.key')
    const oldKey = readKeyFile(keyFile)
    const db = new Database(join(dir, 'mailroom.db'))
    const oldBox = createSecretBox(oldKey)
    db.run(`INSERT INTO system_state (key, value, updated_at) VALUES ('secret:return-path', ?, 0)`, [oldBox.seal('00ff')])
    db.run(
      `INSERT INTO sending_nodes (name, kind, relay_host, relay_port, relay_tls, relay_username, relay_password, created_at, updated_at)
       VALUES ('r', 'relay', 'smtp.example.net', 587, 'starttls', 'u', ?, 0, 0)`,
      [oldBox.seal(RELAY_PASSWORD)],
    )
    db.close()

    const r = await cli(['secrets', 'rotate-key', '--data-dir', dir])
    expect(r.err).toEqual([])
    expect(r.code).toBe(0)
    const newKey = readKeyFile(keyFile)
    const newBox = createSecretBox(newKey)
    expect(newBox.keyId).not.toBe(oldBox.keyId)
    expect(r.out[0]).toContain(`Sealed 2 stored secret(s) under the new key ${newBox.keyId} (was ${oldBox.keyId})`)
    expect(readKeyFile(`${keyFile}.old`).equals(oldKey)).toBe(true)
    expect(existsSync(`${keyFile}.new`)).toBe(false)
    expect(mode(keyFile)).toBe(0o600)
    const stored = storedSecrets(join(dir, 'mailroom.db'))
    for (const v of stored) expect(sealedKeyId(v)).toBe(newBox.keyId)
    expect(stored.map((v) => newBox.open(v)).sort()).toEqual(['00ff', RELAY_PASSWORD])
    expect(() => oldBox.open(stored[0]!)).toThrow(/sealed with key/)
    // The server's commands open the store with the new key.
    expect((await cli(['keys', 'list', '--data-dir', dir])).code).toBe(0)
  })

  test('a data directory writable by others stops the start', async () => {
    const dir = tempDir('mailroom-secrets-')
    chmodSync(dir, 0o777)
    const r = await cli(['migrate', '--data-dir', dir])
    expect(r.code).toBe(1)
    expect(r.err[0]).toBe(`mailroom: the data directory ${dir} is writable by anyone (mode 777); run chmod 700 ${dir}`)
    expect(existsSync(join(dir, 'mailroom.db'))).toBe(false)
    chmodSync(dir, 0o755)
    expect((await cli(['migrate', '--data-dir', dir])).code).toBe(0)
    expect(mode(dir)).toBe(0o700)
    expect(mode(join(dir, 'mailroom.db'))).toBe(0o600)
    const backup = join(dir, 'copy.db')
    expect((await cli(['backup', backup, '--data-dir', dir])).code).toBe(0)
    expect(mode(backup)).toBe(0o600)
  })
})
