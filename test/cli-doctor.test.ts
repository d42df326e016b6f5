import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { runCli } from '../src/cli'
import { systemClock } from '../src/lib/clock'
import { reverseName, startDnsServer, type DnsServer } from './support/dns-server'
import { tempDir } from './support/temp-dirs'

let dns: DnsServer
beforeAll(async () => {
  dns = await startDnsServer({
    zones: {
      'mailroom.test': { A: ['192.0.2.1'] },
      [reverseName('192.0.2.1')]: { PTR: ['mailroom.test'] },
    },
  })
})
afterAll(() => dns.close())

/** Runs the CLI in-process with captured output. */
async function cli(argv: string[]) {
  const out: string[] = []
  const err: string[] = []
  const code = await runCli({
    argv: [...argv, '--log-level', 'error'],
    env: {},
    clock: systemClock,
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    stopSignal: new Promise(() => {}),
  })
  return { code, out, err }
}

describe('mailroom doctor', () => {
  test('prints every check; exit code 0 when nothing fails, 1 with the failing check and its fix', async () => {
    const dir = tempDir('mailroom-cli-')
    expect((await cli(['migrate', '--data-dir', dir])).code).toBe(0)
    const common = ['--data-dir', dir, '--dns-servers', dns.server, '--public-url', 'https://mailroom.test']

    const good = await cli(['doctor', ...common, '--hostname', 'mailroom.test'])
    expect(good.err).toEqual([])
    expect(good.code).toBe(0)
    // With no IP registered, the host name's own address is checked, greeting as the host name.
    expect(good.out).toContain('PASS    ip.ptr:192.0.2.1  Reverse DNS (PTR) exists and forward-confirms')
    expect(good.out).toContain('SKIPPED network.port25  Outbound SMTP (TCP 25) is open')
    expect(good.out.at(-1)).toMatch(/^deliverability doctor: \d+ pass, 0 warn, 0 fail, \d+ skipped$/)

    dns.setZone(reverseName('192.0.2.1'), undefined)
    const bad = await cli(['doctor', ...common, '--hostname', 'mailroom.test'])
    expect(bad.code).toBe(1)
    const at = bad.out.indexOf('FAIL    ip.ptr:192.0.2.1  Reverse DNS (PTR) exists and forward-confirms')
    expect(at).toBeGreaterThanOrEqual(0)
    expect(bad.out[at + 1]).toBe('        192.0.2.1 has no PTR record.')
    expect(bad.out[at + 2]).toStartWith('        fix: Ask the owner of 192.0.2.1 (your hosting provider) to set its PTR record to mailroom.test')
    expect(bad.out.at(-1)).toContain('failing: ip.ptr:192.0.2.1')
  })

  test('needs an existing database', async () => {
    const r = await cli(['doctor', '--data-dir', tempDir('mailroom-cli-')])
    expect(r.code).toBe(1)
    expect(r.err[0]).toContain('no database in')
  })
})
