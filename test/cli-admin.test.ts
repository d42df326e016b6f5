import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openDatabase } from '../src/db/client'
import { tempDir } from './support/temp-dirs'

/** The real CLI as a child process, with `stdin` piped in (not a terminal), and only PATH from the environment. */
const MAIN = join(import.meta.dir, '../src/main.ts')
async function mailroom(args: string[], stdin = '') {
  const proc = Bun.spawn([process.execPath, MAIN, ...args, '--log-level', 'error'], {
    stdin: new TextEncoder().encode(stdin),
    stdout: 'pipe',
    stderr: 'pipe',
    env: { PATH: process.env.PATH ?? '' },
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { out, err, code }
}

const PASSWORD = 'correct horse battery'

describe('mailroom admin', () => {
  test('create reads the password from stdin, list shows it, reset-password changes it; argv never carries one', async () => {
    const dir = tempDir('mailroom-admin-')
    const flags = ['--data-dir', dir]
    expect((await mailroom(['migrate', ...flags])).code).toBe(0)

    const created = await mailroom(['admin', 'create', '--email', 'Ada@Example.com', ...flags], `${PASSWORD}\n`)
    expect(created.err).toBe('')
    expect(created.code).toBe(0)
    expect(created.out).toContain('Created administrator 1 ada@example.com with role Administrator')
    expect(created.out).not.toContain(PASSWORD)

    const readOnly = await mailroom(['admin', 'create', '--email', 'olive@example.com', '--role', 'nobody', ...flags], `${PASSWORD}\n`)
    expect(readOnly.code).toBe(2)
    expect(readOnly.err).toContain('no role named "nobody"')

    for (const argv of [
      ['admin', 'create', '--email', 'eve@example.com', '--password', PASSWORD],
      ['admin', 'create', '--email', 'eve@example.com', `--password=${PASSWORD}`],
      ['admin', 'reset-password', '--email', 'ada@example.com', '--password', PASSWORD],
    ]) {
      const r = await mailroom([...argv, ...flags])
      expect(r.code).toBe(2)
      expect(r.err).toContain('passwords are never taken from the command line')
    }
    const short = await mailroom(['admin', 'create', '--email', 'eve@example.com', ...flags], 'short\n')
    expect(short.code).toBe(1)
    expect(short.err).toContain('at least 10 characters')
    const none = await mailroom(['admin', 'create', '--email', 'eve@example.com', ...flags], '')
    expect(none.code).toBe(1)
    expect(none.err).toContain('no password given')
    const twice = await mailroom(['admin', 'create', '--email', 'ADA@example.com', ...flags], `${PASSWORD}\n`)
    expect(twice.code).toBe(1)
    expect(twice.err).toContain('already exists')

    const list = await mailroom(['admin', 'list', ...flags])
    expect(list.code).toBe(0)
    expect(list.out.trim().split('\n')).toEqual(['1\tada@example.com\tAdministrator\tactive\tlast sign-in never'])

    const db = openDatabase(join(dir, 'mailroom.db'))
    const hashOf = () => (db.$client.query('SELECT password_hash FROM admins WHERE id = 1').get() as { password_hash: string }).password_hash
    expect(await Bun.password.verify(PASSWORD, hashOf())).toBe(true)
    // A session that the reset must end.
    db.$client.run("INSERT INTO admin_sessions (token_hash, admin_id, csrf_token, created_at, last_seen_at, expires_at) VALUES ('h', 1, 'c', 1, 1, 9e15)")

    const reset = await mailroom(['admin', 'reset-password', '--email', 'ADA@example.com', ...flags], 'a new password here\r\n')
    expect(reset.code).toBe(0)
    expect(reset.out).toContain('Password of ada@example.com changed')
    expect(await Bun.password.verify('a new password here', hashOf())).toBe(true)
    expect(db.$client.query('SELECT count(*) AS n FROM admin_sessions').get()).toEqual({ n: 0 })
    const unknown = await mailroom(['admin', 'reset-password', '--email', 'nobody@example.com', ...flags], `${PASSWORD}\n`)
    expect(unknown.code).toBe(1)
    expect(unknown.err).toContain('no administrator with the email nobody@example.com')

    const log = db.$client.query("SELECT actor_name, action, target_id FROM activity_logs WHERE action LIKE 'admins.%' ORDER BY id").all()
    expect(log).toEqual([
      { actor_name: 'command line', action: 'admins.create', target_id: '1' },
      { actor_name: 'command line', action: 'admins.update', target_id: '1' },
    ])
    db.$client.close()
  }, 60_000)

  test('serve prints a one-time setup link while no administrator exists, a new one at each start; none once one exists', async () => {
    const dir = tempDir('mailroom-setup-')
    /** Starts serve, reads its output until the setup line (or the key hint that follows it), stops it. */
    const start = async () => {
      const proc = Bun.spawn(
        [process.execPath, MAIN, 'serve', '--data-dir', dir, '--http-listen', '127.0.0.1:0', '--smtp-listen', 'off', '--log-level', 'error'],
        {
          stdout: 'pipe',
          stderr: 'pipe',
          env: { PATH: process.env.PATH ?? '' },
        },
      )
      const reader = proc.stdout.getReader()
      let text = ''
      while (!/No API keys yet/.test(text)) {
        const { value, done } = await reader.read()
        if (done) break
        text += new TextDecoder().decode(value)
      }
      proc.kill('SIGTERM')
      await proc.exited
      return text
    }
    const first = await start()
    const link = /(http:\/\/127\.0\.0\.1:\d+)\/admin\/setup#token=([A-Za-z0-9_-]{43})/.exec(first)
    expect(link, first).not.toBeNull()
    expect(first).toContain('within 1 hour')
    const second = await start()
    const token2 = /#token=([A-Za-z0-9_-]{43})/.exec(second)![1]
    expect(token2).not.toBe(link![2])

    const db = openDatabase(join(dir, 'mailroom.db'))
    const rows = db.$client.query('SELECT token_hash, expires_at - created_at AS ttl FROM admin_setup_tokens').all() as Array<{
      token_hash: string
      ttl: number
    }>
    // Only the newest token is valid, stored as its hash, for one hour.
    expect(rows).toEqual([{ token_hash: new Bun.CryptoHasher('sha256').update(token2!).digest('hex'), ttl: 3_600_000 }])
    db.$client.run(
      "INSERT INTO admins (email, password_hash, role_id, status, created_at, updated_at) VALUES ('a@example.com', 'x', (SELECT id FROM roles WHERE name = 'Administrator'), 'active', 1, 1)",
    )
    db.$client.close()
    expect(await start()).not.toContain('/admin/setup')
  }, 30_000)
})
