import { describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { runCli } from '../src/cli'
import { openDatabase } from '../src/db/client'
import type { Deps } from '../src/deps'
import { systemClock } from '../src/lib/clock'
import { SETTINGS } from '../src/config'
import { listActivity } from '../src/modules/activity-logs/service'
import { until } from './support/server-process'
import { tempDir } from './support/temp-dirs'

/** Runs the CLI in-process with captured output; `stop` resolves the stop signal. */
function cli(argv: string[], env: Record<string, string> = {}) {
  const out: string[] = []
  const err: string[] = []
  let stop: (s: string) => void = () => {}
  const stopSignal = new Promise<string>((r) => (stop = r))
  const done = runCli({ argv: [...argv, '--log-level', 'error'], env, clock: systemClock, out: (l) => out.push(l), err: (l) => err.push(l), stopSignal })
  return { done, out, err, stop }
}

const dataDir = () => tempDir('mailroom-cli-')

/** A data directory with a migrated database: commands other than serve and migrate need one. */
async function migratedDir(): Promise<string> {
  const dir = dataDir()
  expect(await cli(['migrate', '--data-dir', dir]).done).toBe(0)
  return dir
}

describe('command line', () => {
  test('--version and --help', async () => {
    const v = cli(['--version'])
    expect(await v.done).toBe(0)
    expect(v.out[0]).toMatch(/^mailroom \d+\.\d+\.\d+$/)
    const h = cli(['--help'])
    expect(await h.done).toBe(0)
    for (const word of ['serve', 'migrate', 'keys create', 'keys list', 'roles list', 'backup PATH', 'MAILROOM_DATA_DIR', '--http-listen'])
      expect(h.out[0]).toContain(word)
  })

  test('bad settings and bad commands stop with one line and exit code 2', async () => {
    for (const [argv, env, message] of [
      [['serve', '--http-listen', 'nowhere'], {}, /^mailroom: invalid http_listen from --http-listen \("nowhere"\)/],
      [['migrate'], { MAILROOM_MAX_BODY_BYTES: 'lots' }, /^mailroom: invalid max_body_bytes from MAILROOM_MAX_BODY_BYTES/],
      [['fly'], {}, /unknown command "fly"/],
      [['--no-such-flag'], {}, /Unknown option '--no-such-flag'/],
      [['keys', 'create', '--name', 'x'], {}, /needs --role NAME and --name LABEL/],
      [['keys', 'create', '--role', 'Nobody', '--name', 'x'], {}, /no role named "Nobody"/],
      [['keys', 'create', '--role', 'Administrator', '--name', 'x', '--allow', '10.0.0.300'], {}, /"10.0.0.300" is not a valid IP address/],
      [['keys', 'create', '--role', 'Administrator', '--name', 'x', '--rate-limit', 'fast'], {}, /--rate-limit takes a whole number/],
      [['backup'], {}, /backup takes one PATH/],
    ] as Array<[string[], Record<string, string>, RegExp]>) {
      const r = cli([...argv, '--data-dir', await migratedDir()], env)
      expect(await r.done).toBe(2)
      expect(r.err).toHaveLength(1)
      expect(r.err[0]).toMatch(message)
    }
  })

  test('keys create prints the key once, keys list and roles list show it without the secret', async () => {
    const dir = await migratedDir()
    const created = cli([
      'keys',
      'create',
      '--role',
      'administrator',
      '--name',
      'ci',
      '--rate-limit',
      'unlimited',
      '--allow',
      '127.0.0.1',
      '--allow',
      '::1',
      '--data-dir',
      dir,
    ])
    expect(await created.done).toBe(0)
    const key = created.out.at(-1)!
    expect(key).toMatch(/^mr_[a-z0-9]{12}_/)
    const list = cli(['keys', 'list', '--data-dir', dir])
    expect(await list.done).toBe(0)
    expect(list.out).toHaveLength(1)
    expect(list.out[0]).toContain('ci\tAdministrator\tactive\tunlimited/min')
    expect(list.out[0]).toContain(key.slice(0, 15))
    expect(list.out.join('\n')).not.toContain(key)
    const roles = cli(['roles', 'list', '--data-dir', dir])
    expect(await roles.done).toBe(0)
    expect(roles.out[0]).toMatch(/^1\tAdministrator\t1 key\(s\)\tevery permission$/)
    // The creation is in the activity log with the command line as actor.
    const db = openDatabase(join(dir, 'mailroom.db'))
    // The service reads only the database; the rest of Deps is not needed for a read.
    const entries = listActivity({ db } as Deps, {}).items
    expect(entries.map((e) => ({ actor_name: e.actor.name, action: e.action, target_id: e.target?.id }))).toEqual([
      { actor_name: 'command line', action: 'api_keys.create', target_id: '1' },
    ])
  })

  test('migrate and backup work on a fresh data directory', async () => {
    const dir = dataDir()
    const m = cli(['migrate', '--data-dir', dir])
    expect(await m.done).toBe(0)
    expect(existsSync(join(dir, 'mailroom.db'))).toBe(true)
    const target = join(dir, 'copy.db')
    const b = cli(['backup', target, '--data-dir', dir])
    expect(await b.done).toBe(0)
    const copy = openDatabase(target)
    // Raw SQL on purpose: the test is of the backup file itself.
    expect(copy.$client.query('SELECT name FROM roles').all()).toEqual([{ name: 'Administrator' }])
    const again = cli(['backup', target, '--data-dir', dir])
    expect(await again.done).toBe(2)
    expect(again.err[0]).toContain('already exists')
  })

  test('serve answers, shows how to create the first key, and stops cleanly on a signal', async () => {
    const dir = dataDir()
    const s = cli(['--http-listen', '127.0.0.1:0', '--smtp-listen', '127.0.0.1:0', '--data-dir', dir])
    for (let i = 0; i < 100 && !s.out.some((l) => l.includes('listening on')); i++) await Bun.sleep(20)
    const url = /listening on (http:\/\/\S+)/.exec(s.out.join('\n'))![1]!
    expect(s.out.join('\n')).toContain('mailroom keys create --role Administrator --name admin')
    const health = await fetch(`${url}/health`)
    expect(await health.json()).toMatchObject({ success: true, data: { status: 'ok' } })
    expect((await fetch(`${url}/ready`)).status).toBe(200)
    s.stop('SIGTERM')
    expect(await s.done).toBe(0)
    expect(s.out.at(-1)).toBe('Mailroom stopped.')
    expect(
      await fetch(`${url}/health`).then(
        () => 'answered',
        () => 'refused',
      ),
    ).toBe('refused')
  })

  test('serve warns loudly on stderr when the host name is not public, and not otherwise', async () => {
    const cases: Array<[hostname: string, warned: boolean]> = [
      ['vm', true],
      ['mail.example.com', false],
    ]
    for (const [hostname, warned] of cases) {
      // Ports 0: a default port held by anything else on the machine must not fail this test.
      const s = cli(['--http-listen', '127.0.0.1:0', '--smtp-listen', '127.0.0.1:0', '--hostname', hostname, '--data-dir', dataDir()])
      await until('the server to announce itself', () => s.out.some((l) => l.includes('listening on')), 60_000)
      s.stop('SIGTERM')
      expect(await s.done).toBe(0)
      const warning = s.err.find((l) => l.startsWith('mailroom: WARNING:'))
      if (warned) expect(warning).toContain('"vm" is a short name')
      else expect(warning).toBeUndefined()
    }
  })

  test('serve stops with exit 1 and one line when the SMTP port is taken', async () => {
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    const taken = (holder.address() as AddressInfo).port
    try {
      const s = cli(['--http-listen', '127.0.0.1:0', '--smtp-listen', `127.0.0.1:${taken}`, '--data-dir', dataDir()])
      expect(await s.done).toBe(1)
      expect(s.err.join('\n')).toContain(String(taken))
      // Nothing was announced: every listener is bound before the "listening" lines.
      expect(s.out.join('\n')).not.toContain('listening')
    } finally {
      holder.close()
    }
  })

  test('--help shows the default of every setting', async () => {
    const h = cli(['--help'])
    expect(await h.done).toBe(0)
    expect(h.out[0]).toContain('(default: 127.0.0.1:8825)')
    expect(h.out[0]).toContain('(default: ./data)')
    expect(h.out[0]).toContain('(default: DATA_DIR/secret.key)')
    for (const s of SETTINGS) expect(h.out[0]).toMatch(new RegExp(`--${s.flag} .*\\(default: [^)]+\\)`))
  })

  test('commands other than serve and migrate refuse to make a database, naming the directory they looked at', async () => {
    const dir = join(dataDir(), 'elsewhere')
    for (const argv of [
      ['keys', 'create', '--role', 'Administrator', '--name', 'x'],
      ['keys', 'list'],
      ['roles', 'list'],
      ['backup', join(dataDir(), 'b.db')],
      ['secrets', 'rotate-key'],
    ]) {
      const r = cli([...argv, '--data-dir', dir])
      expect(await r.done).toBe(1)
      expect(r.err).toHaveLength(1)
      expect(r.err[0]).toStartWith(`mailroom: no database in ${dir} (the data directory this command looked at)`)
      expect(existsSync(dir)).toBe(false)
    }
  })

  test('control characters in stored names reach the terminal escaped; keys create refuses them', async () => {
    const dir = await migratedDir()
    expect(await cli(['keys', 'create', '--role', 'Administrator', '--name', 'ok', '--data-dir', dir]).done).toBe(0)
    // Stored by an older version, or by hand in sqlite3.
    const db = openDatabase(join(dir, 'mailroom.db'))
    db.$client.run(`UPDATE api_keys SET name = ?`, ['\x1b[2J\x07evil\x9b31m\u202e'])
    db.$client.run(`UPDATE roles SET name = ?`, ['Admin\x1b]0;title\x07'])
    db.$client.close()
    const list = cli(['keys', 'list', '--data-dir', dir])
    expect(await list.done).toBe(0)
    expect(list.out[0]).toContain('\\x1b[2J\\x07evil\\x9b31m\\u202e\tAdmin\\x1b]0;title\\x07\t')
    expect(list.out.join('')).not.toMatch(/[\x00-\x08\x0a-\x1f\x7f-\x9f\u202e]/)
    const roles = cli(['roles', 'list', '--data-dir', dir])
    expect(await roles.done).toBe(0)
    expect(roles.out[0]).toContain('Admin\\x1b]0;title\\x07')
    const bad = cli(['keys', 'create', '--role', 'Admin\x1b]0;title\x07', '--name', 'a\x1bb', '--data-dir', dir])
    expect(await bad.done).toBe(2)
    expect(bad.err[0]).toContain('--name must not contain control characters')
  })
})
