import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import net, { type AddressInfo } from 'node:net'
import tls from 'node:tls'
import { join } from 'node:path'
import { generate } from 'selfsigned'
import type { Config } from '../../src/config'
import { messages } from '../../src/db/schema'
import { emit } from '../../src/modules/events/service'
import { startDoctor } from '../../src/modules/doctor/runner'
import { runDoctor } from '../../src/modules/doctor/service'
import type { CheckResult } from '../../src/modules/doctor/model'
import { NULL_MX, reverseName, startDnsServer, type DnsServer, type Zones } from '../support/dns-server'
import { testApp } from '../support/app'

/**
 * The sending domains of the tests, one per setup(), and their MTA-STS policy host: HTTPS on
 * port 443 of a loopback address (where mailauth fetches a policy from, as in
 * test/delivery/tls-policy.test.ts), with one certificate from a throwaway CA that this process
 * trusts, naming mta-sts.<each domain> (Bun's HTTPS server has no SNICallback, so one
 * certificate covers them all). The policy served for a host is POLICIES' entry; none is a 404.
 */
const DOMAINS = Array.from({ length: 40 }, (_, i) => `d${i + 1}-${Math.random().toString(36).slice(2, 8)}.example.com`)
let nextDomain = 0
const POLICY_HOST = '127.0.0.44'
const POLICIES = new Map<string, string>()
const policyFile = (mode: string, ...mx: string[]) => `version: STSv1\r\nmode: ${mode}\r\n${mx.map((m) => `mx: ${m}\r\n`).join('')}max_age: 604800\r\n`

let dns: DnsServer
let https: HttpsServer
beforeAll(async () => {
  dns = await startDnsServer()
  const ca = await generate([{ name: 'commonName', value: 'Mailroom doctor test CA' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  })
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), ca.cert])
  const policyCert = await generate([{ name: 'commonName', value: `mta-sts.${DOMAINS[0]}` }], {
    keySize: 2048,
    algorithm: 'sha256',
    ca: { key: ca.private, cert: ca.cert },
    extensions: [{ name: 'subjectAltName', altNames: DOMAINS.map((d) => ({ type: 2, value: `mta-sts.${d}` })) }],
  })
  https = createHttpsServer({ key: policyCert.private, cert: policyCert.cert }, (req, res) => {
    const policy = req.url === '/.well-known/mta-sts.txt' ? POLICIES.get((req.headers.host ?? '').toLowerCase()) : undefined
    res.writeHead(policy ? 200 : 404, { 'Content-Type': 'text/plain' }).end(policy ?? 'not found')
  })
  await new Promise<void>((resolve) => https.listen(443, POLICY_HOST, resolve))
})
afterAll(async () => {
  await new Promise<void>((resolve) => https.close(() => resolve()))
  await dns.close()
})

const IP = '127.0.0.2'
const HELO = 'mta1.example.net'

interface DnsRecord {
  purpose: string
  type: string
  name: string
  value: string
}

/**
 * An app resolving through the loopback DNS server, with one sending IP in the default pool
 * and one sending domain, and zones where every record is right; a test then breaks one.
 */
async function setup(overrides: Partial<Config> = {}) {
  const t = testApp({ dns_servers: [dns.server], public_url: 'https://track.mailroom.test', ...overrides })
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown, key = admin.key) => t.call(method, path, { key, body })
  const ip = (await call('POST', '/api/v2/ips', { address: IP, hostname: HELO })).body.data.id
  await call('POST', '/api/v2/ip-pools', { name: 'main', is_default: true, members: [{ ip_id: ip }] })
  const name = DOMAINS[nextDomain++]
  if (!name) throw new Error('more setups than DOMAINS: make the list longer')
  POLICIES.set(`mta-sts.${name}`, policyFile('enforce', `mx.${name}`))
  const domain = (await call('POST', '/api/v2/sending-domains', { name })).body.data
  const record = (purpose: string) => (domain.dns_records as DnsRecord[]).find((r) => r.purpose === purpose)!
  const zones: Zones = {
    'mailroom.test': { A: ['192.0.2.1'] },
    'track.mailroom.test': { A: ['192.0.2.1'] },
    [reverseName(IP)]: { PTR: [HELO] },
    [HELO]: { A: [IP] },
    [record('dkim').name]: { TXT: [record('dkim').value] },
    [name]: { TXT: [record('spf').value], MX: [{ exchange: `mx.${name}`, priority: 10 }] },
    [`_dmarc.${name}`]: { TXT: [record('dmarc').value] },
    [record('return_path').name]: { CNAME: 'mailroom.test' },
    [`_mta-sts.${name}`]: { TXT: ['v=STSv1; id=20260301'] },
    [`mta-sts.${name}`]: { A: [POLICY_HOST] },
    [`_smtp._tls.${name}`]: { TXT: [`v=TLSRPTv1; rua=mailto:tls@${name}`] },
  }
  dns.setZones(zones)
  const run = async () => {
    const report = await runDoctor(t.deps)
    const byId = (id: string) => {
      const found = report.checks.find((c) => c.id === id)
      if (!found) throw new Error(`no check ${id} in ${report.checks.map((c) => c.id).join(', ')}`)
      return found
    }
    return { report, byId }
  }
  return { t, call, admin, name, domain, record, zones, run }
}

const expectFix = (c: CheckResult, status: 'warn' | 'fail', fix: string | RegExp) => {
  expect(c.status).toBe(status)
  if (typeof fix === 'string') expect(c.fix).toContain(fix)
  else expect(c.fix).toMatch(fix)
}

describe('deliverability doctor: checks through the loopback DNS server', () => {
  test('every check passes (or is skipped) when the records are right', async () => {
    const { run, name } = await setup()
    const { report, byId } = await run()
    const notPassing = report.checks.filter((c) => c.status !== 'pass' && c.status !== 'skipped')
    expect(notPassing).toEqual([])
    for (const id of [
      'host.fqdn:mailroom.test',
      'host.tracking:track.mailroom.test',
      `ip.ptr:${IP}`,
      `ip.helo:${IP}`,
      `blocklist.zen.spamhaus.org:${IP}`,
      `blocklist.bl.spamcop.net:${IP}`,
      `blocklist.b.barracudacentral.org:${IP}`,
      `blocklist.dbl.spamhaus.org:${name}`,
      `domain.dkim:${name}`,
      `domain.spf:${name}`,
      `domain.spf_lookups:${name}`,
      `domain.dmarc:${name}`,
      `domain.return_path:${name}`,
      `domain.alignment:${name}`,
      `domain.mta_sts:${name}`,
      `domain.mta_sts_mx:${name}`,
      `domain.tls_rpt:${name}`,
      'bulk.dmarc',
    ])
      expect(byId(id).status).toBe('pass')
    // Not configured / nothing to measure.
    for (const id of ['network.port25', 'host.tls:mailroom.test', 'bulk.one_click_unsubscribe', 'bulk.complaint_rate']) expect(byId(id).status).toBe('skipped')
    expect(report.summary.fail).toBe(0)
    expect(report.checks.every((c) => c.fix === null)).toBe(true)
  })

  test('PTR: missing, not forward-confirmed, or another name than the HELO name', async () => {
    const { run } = await setup()
    dns.setZone(reverseName(IP), undefined)
    let { byId } = await run()
    expectFix(byId(`ip.ptr:${IP}`), 'fail', `set its PTR record to ${HELO}`)
    expect(byId(`ip.ptr:${IP}`).detail).toContain('has no PTR record')

    dns.setZone(reverseName(IP), { PTR: ['elsewhere.example.net'] })
    dns.setZone('elsewhere.example.net', { A: ['192.0.2.99'] })
    ;({ byId } = await run())
    expectFix(byId(`ip.ptr:${IP}`), 'fail', `A ${HELO} -> ${IP}`)
    expect(byId(`ip.ptr:${IP}`).detail).toContain('does not resolve back')

    dns.setZone('elsewhere.example.net', { A: [IP] })
    ;({ byId } = await run())
    expectFix(byId(`ip.ptr:${IP}`), 'warn', 'elsewhere.example.net')
  })

  test('HELO name: not resolving, or resolving elsewhere', async () => {
    const { run } = await setup()
    dns.setZone(HELO, { A: ['192.0.2.7'] })
    let { byId } = await run()
    expectFix(byId(`ip.helo:${IP}`), 'fail', `Publish A ${HELO} -> ${IP}`)
    expect(byId(`ip.helo:${IP}`).detail).toContain('192.0.2.7')
    dns.setZone(HELO, undefined)
    ;({ byId } = await run())
    expect(byId(`ip.helo:${IP}`).detail).toContain('does not resolve')
  })

  test('blocklists: a listing fails with its meaning and where to get removed; a refused query warns', async () => {
    const { run, name } = await setup()
    dns.setZone(reverseName(IP, 'zen.spamhaus.org'), { A: ['127.0.0.4', '127.0.0.10'] })
    dns.setZone(reverseName(IP, 'bl.spamcop.net'), { A: ['127.0.0.2'] })
    dns.setZone(`${name}.dbl.spamhaus.org`, { A: ['127.0.1.2'] })
    dns.setZone(reverseName(IP, 'b.barracudacentral.org'), { A: ['127.255.255.254'] })
    const { byId } = await run()
    const zen = byId(`blocklist.zen.spamhaus.org:${IP}`)
    expectFix(zen, 'fail', 'https://check.spamhaus.org/')
    expect(zen.detail).toContain('XBL')
    expect(zen.detail).toContain('PBL')
    expectFix(byId(`blocklist.bl.spamcop.net:${IP}`), 'fail', 'spamcop.net')
    const dbl = byId(`blocklist.dbl.spamhaus.org:${name}`)
    expectFix(dbl, 'fail', 'https://check.spamhaus.org/')
    expect(dbl.detail).toContain('spam domain')
    const refused = byId(`blocklist.b.barracudacentral.org:${IP}`)
    expectFix(refused, 'warn', 'resolver of your own')
    expect(refused.detail).toContain('public or open resolver')
  })

  test('DKIM, SPF, return path: missing or wrong records fail with the record to publish', async () => {
    const { run, name, record } = await setup()
    dns.setZone(record('dkim').name, { TXT: ['v=DKIM1; k=rsa; p=MIIBold'] })
    dns.setZone(name, { TXT: ['v=spf1 ip4:192.0.2.200 -all'] })
    dns.setZone(record('return_path').name, undefined)
    const { byId } = await run()
    expectFix(byId(`domain.dkim:${name}`), 'fail', `Publish TXT ${record('dkim').name} = ${record('dkim').value}`)
    expectFix(byId(`domain.spf:${name}`), 'fail', `Publish TXT ${name} = v=spf1 ip4:${IP} ~all`)
    expect(byId(`domain.spf:${name}`).detail).toContain(IP)
    expectFix(byId(`domain.return_path:${name}`), 'fail', `Publish CNAME ${record('return_path').name} = mailroom.test`)
    expectFix(byId(`domain.alignment:${name}`), 'fail', record('dkim').value)
  })

  test('return path: the CNAME is right but the host name has no address', async () => {
    const { run, name } = await setup()
    dns.setZone('mailroom.test', {})
    const { byId } = await run()
    expectFix(byId(`domain.return_path:${name}`), 'fail', 'Publish A mailroom.test')
    expectFix(byId('host.fqdn:mailroom.test'), 'fail', 'Publish A mailroom.test')
  })

  test('SPF over 10 lookups (include, a, mx, redirect counted through includes) fails', async () => {
    const { run, name } = await setup()
    // include, a, mx, ptr, exists (5) + a, a, mx, include in spf. (4) + a, a, a in spf2. (3) = 12 lookups.
    dns.setZone(name, { TXT: [`v=spf1 ip4:${IP} include:spf.${name} a mx ptr exists:x.${name} ~all`] })
    dns.setZone(`spf.${name}`, { TXT: ['v=spf1 a:a1.example a:a2.example mx:m1.example include:spf2.example ~all'] })
    dns.setZone('spf2.example', { TXT: ['v=spf1 a:b1.example a:b2.example a:b3.example ~all'] })
    const { byId } = await run()
    const lookups = byId(`domain.spf_lookups:${name}`)
    expectFix(lookups, 'fail', 'ip4:')
    expect(lookups.detail).toContain('needs 12 DNS lookups')
    // The record still authorises the IP.
    expect(byId(`domain.spf:${name}`).status).toBe('pass')

    dns.setZone(name, { TXT: [`v=spf1 ip4:${IP} include:gone.${name} ~all`] })
    const again = (await run()).byId(`domain.spf_lookups:${name}`)
    expect(again.status).toBe('warn')
    expect(again.detail).toContain(`gone.${name}`)
  })

  test('DMARC: missing fails (also as a bulk-sender rule), no rua warns, strict SPF alignment warns', async () => {
    const { run, name, domain } = await setup()
    dns.setZone(`_dmarc.${name}`, undefined)
    let { byId } = await run()
    expectFix(byId(`domain.dmarc:${name}`), 'fail', `Publish TXT _dmarc.${name} = v=DMARC1; p=none; rua=mailto:dmarc@${domain.return_path_host};`)
    expectFix(byId('bulk.dmarc'), 'fail', `_dmarc.${name}`)

    dns.setZone(`_dmarc.${name}`, { TXT: ['v=DMARC1; p=quarantine; aspf=s'] })
    ;({ byId } = await run())
    expectFix(byId(`domain.dmarc:${name}`), 'warn', `rua=mailto:dmarc@${domain.return_path_host}`)
    expectFix(byId(`domain.alignment:${name}`), 'warn', 'Remove aspf=s')
    expect(byId('bulk.dmarc').status).toBe('pass')
  })

  test('MTA-STS: the enforced policy is fetched over HTTPS; missing warns with the records and the policy to serve', async () => {
    const { run, name } = await setup()
    let { byId } = await run()
    expect(byId(`domain.mta_sts:${name}`).detail).toBe(`Policy 20260301: mode enforce, mx mx.${name}, max_age 604800 s.`)
    expect(byId(`domain.mta_sts_mx:${name}`).detail).toContain(
      `mx.${name} match the policy. ${name} does not receive mail through this server (mailroom.test is not among its MX hosts)`,
    )

    dns.setZone(`_mta-sts.${name}`, undefined)
    ;({ byId } = await run())
    expectFix(byId(`domain.mta_sts:${name}`), 'warn', `https://mta-sts.${name}/.well-known/mta-sts.txt`)
    expectFix(byId(`domain.mta_sts:${name}`), 'warn', `"version: STSv1", "mode: testing", "mx: mx.${name}", "max_age: 604800"`)
    expectFix(byId(`domain.mta_sts:${name}`), 'warn', new RegExp(`publish TXT _mta-sts\\.${name.replace(/\./g, '\\.')} = v=STSv1; id=\\d{8}01;$`))
    expect(byId(`domain.mta_sts_mx:${name}`).status).toBe('skipped')

    dns.setZone(`_mta-sts.${name}`, { TXT: ['v=STSv1; id=20260301', 'v=STSv1; id=20260302'] })
    ;({ byId } = await run())
    expectFix(byId(`domain.mta_sts:${name}`), 'fail', `Keep one record: TXT _mta-sts.${name} = v=STSv1; id=`)

    dns.setZone(`_mta-sts.${name}`, { TXT: ['v=STSv1; id=not-valid!'] })
    ;({ byId } = await run())
    expect(byId(`domain.mta_sts:${name}`)).toMatchObject({ status: 'fail', detail: expect.stringContaining('has no valid id=') })
  })

  test('MTA-STS announced but not served fails: no policy host, an HTTP error, an invalid policy', async () => {
    const { run, name } = await setup()
    dns.setZone(`mta-sts.${name}`, undefined)
    let { byId } = await run()
    expectFix(byId(`domain.mta_sts:${name}`), 'fail', `A mta-sts.${name} -> your web server`)
    expect(byId(`domain.mta_sts:${name}`).detail).toContain(`announces policy 20260301, but mta-sts.${name} has no A or AAAA record`)
    // A new policy needs a new id (RFC 8461 section 3.1).
    expect(byId(`domain.mta_sts:${name}`).fix).not.toContain('id=20260301;')
    expect(byId(`domain.mta_sts_mx:${name}`).status).toBe('skipped')

    dns.setZone(`mta-sts.${name}`, { A: [POLICY_HOST] })
    POLICIES.delete(`mta-sts.${name}`)
    ;({ byId } = await run())
    expect(byId(`domain.mta_sts:${name}`)).toMatchObject({ status: 'fail', detail: expect.stringContaining('404') })

    POLICIES.set(`mta-sts.${name}`, 'version: STSv1\r\nmode: enforce\r\nmax_age: 604800\r\n')
    ;({ byId } = await run())
    expect(byId(`domain.mta_sts:${name}`)).toMatchObject({ status: 'fail', detail: expect.stringContaining('Missing mx field') })
  })

  test('MTA-STS modes: testing and none warn; an MX outside the policy fails in enforce mode, warns in testing', async () => {
    const { run, name } = await setup()
    POLICIES.set(`mta-sts.${name}`, policyFile('testing', `mx.${name}`))
    dns.setZone(`_smtp._tls.${name}`, undefined)
    let { byId } = await run()
    expectFix(byId(`domain.mta_sts:${name}`), 'warn', `change "mode: testing" to "mode: enforce" in https://mta-sts.${name}/.well-known/mta-sts.txt`)
    expect(byId(`domain.mta_sts:${name}`).fix).not.toContain('id=20260301;')
    expect(byId(`domain.mta_sts_mx:${name}`).status).toBe('pass')
    expectFix(byId(`domain.tls_rpt:${name}`), 'warn', `Publish TXT _smtp._tls.${name} = v=TLSRPTv1; rua=mailto:tls-reports@${name}`)
    expect(byId(`domain.tls_rpt:${name}`).detail).toContain('In testing mode these reports are the only sign')

    POLICIES.set(`mta-sts.${name}`, policyFile('none'))
    ;({ byId } = await run())
    expectFix(byId(`domain.mta_sts:${name}`), 'warn', '"mode: enforce"')
    expect(byId(`domain.mta_sts_mx:${name}`).status).toBe('skipped')

    // A second MX the policy does not name; then a wildcard that covers both.
    dns.setZone(name, {
      MX: [
        { exchange: `mx.${name}`, priority: 10 },
        { exchange: `backup.${name}`, priority: 20 },
      ],
    })
    POLICIES.set(`mta-sts.${name}`, policyFile('enforce', `mx.${name}`))
    ;({ byId } = await run())
    expectFix(byId(`domain.mta_sts_mx:${name}`), 'fail', `Add "mx: backup.${name}" to https://mta-sts.${name}/.well-known/mta-sts.txt`)
    expect(byId(`domain.mta_sts_mx:${name}`).detail).toContain('refuse to deliver there')
    POLICIES.set(`mta-sts.${name}`, policyFile('testing', `mx.${name}`))
    ;({ byId } = await run())
    expect(byId(`domain.mta_sts_mx:${name}`).status).toBe('warn')
    POLICIES.set(`mta-sts.${name}`, policyFile('enforce', `*.${name}`))
    ;({ byId } = await run())
    expect(byId(`domain.mta_sts_mx:${name}`)).toMatchObject({ status: 'pass', detail: expect.stringContaining(`mx.${name}, backup.${name} match the policy`) })

    // No MX: the domain itself is the implicit MX (RFC 5321 section 5.1), which *.<domain> does not cover.
    dns.setZone(name, { TXT: ['v=spf1 -all'] })
    ;({ byId } = await run())
    expectFix(byId(`domain.mta_sts_mx:${name}`), 'fail', `Add "mx: ${name}"`)
    // A null MX (RFC 7505): no mail, nothing to match.
    dns.setZone(name, { MX: [NULL_MX] })
    ;({ byId } = await run())
    expect(byId(`domain.mta_sts_mx:${name}`).status).toBe('skipped')
  })

  test('MTA-STS: when the domain receives mail through this server, its host name must match the policy', async () => {
    const { run, name } = await setup()
    dns.setZone(name, { MX: [{ exchange: 'mailroom.test', priority: 10 }] })
    let { byId } = await run()
    expectFix(byId(`domain.mta_sts_mx:${name}`), 'fail', `Add "mx: mailroom.test" to https://mta-sts.${name}/.well-known/mta-sts.txt`)
    expect(byId(`domain.mta_sts_mx:${name}`).detail).toContain(`mailroom.test (this server) is an MX of ${name}`)
    POLICIES.set(`mta-sts.${name}`, policyFile('enforce', 'mailroom.test'))
    ;({ byId } = await run())
    expect(byId(`domain.mta_sts_mx:${name}`)).toMatchObject({
      status: 'pass',
      detail: expect.stringContaining('senders also check its certificate (see host.tls)'),
    })
  })

  test('TLS-RPT: no rua, a rua that is not mailto:/https:, or two records warn', async () => {
    const { run, name } = await setup()
    dns.setZone(`_smtp._tls.${name}`, { TXT: ['v=TLSRPTv1;'] })
    let { byId } = await run()
    expectFix(byId(`domain.tls_rpt:${name}`), 'warn', `Publish TXT _smtp._tls.${name} = v=TLSRPTv1; rua=mailto:`)
    expect(byId(`domain.tls_rpt:${name}`).detail).toContain('has no rua=')

    dns.setZone(`_smtp._tls.${name}`, { TXT: [`v=TLSRPTv1; rua=mailto:tls@${name},ftp://reports.example.com`] })
    ;({ byId } = await run())
    expect(byId(`domain.tls_rpt:${name}`)).toMatchObject({ status: 'warn', detail: expect.stringContaining('ftp://reports.example.com is neither') })

    dns.setZone(`_smtp._tls.${name}`, { TXT: [`v=TLSRPTv1; rua=mailto:a@${name}`, `v=TLSRPTv1; rua=https://reports.example.com/tls`] })
    ;({ byId } = await run())
    expect(byId(`domain.tls_rpt:${name}`)).toMatchObject({ status: 'warn', detail: expect.stringContaining('has 2 TLSRPTv1 records') })

    dns.setZone(`_smtp._tls.${name}`, { TXT: [`v=TLSRPTv1; rua=mailto:a@${name},https://reports.example.com/tls`] })
    ;({ byId } = await run())
    expect(byId(`domain.tls_rpt:${name}`)).toMatchObject({
      status: 'pass',
      detail: `_smtp._tls.${name}: reports go to mailto:a@${name}, https://reports.example.com/tls.`,
    })
  })

  test('host name and tracking host: a short name and a private public_url fail with the setting to change', async () => {
    const { run } = await setup({ hostname: 'vm', public_url: 'http://localhost:8025' })
    const { byId } = await run()
    expectFix(byId('host.fqdn:vm'), 'fail', 'Set hostname (MAILROOM_HOSTNAME')
    expectFix(byId('host.tracking:localhost'), 'fail', 'Set public_url (MAILROOM_PUBLIC_URL)')
  })

  test('TLS certificate: not for the host name fails, self-signed warns, issued by a CA passes', async () => {
    const { t, run } = await setup({ smtp_tls_cert: '' })
    const dir = join(t.deps.config.data_dir, 'tls')
    mkdirSync(dir, { recursive: true })
    const path = join(dir, 'smtp-cert.pem')
    const leaf = (name: string, ca?: { key: string; cert: string }) =>
      generate([{ name: 'commonName', value: name }], {
        keySize: 2048,
        algorithm: 'sha256',
        extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: name }] }],
        ...(ca && { ca }),
      })
    writeFileSync(path, (await leaf('other.example')).cert)
    expectFix((await run()).byId('host.tls:mailroom.test'), 'fail', 'smtp_tls_cert')
    writeFileSync(path, (await leaf('mailroom.test')).cert)
    expectFix((await run()).byId('host.tls:mailroom.test'), 'warn', 'smtp_tls_cert')
    const ca = await generate([{ name: 'commonName', value: 'Test CA' }], {
      keySize: 2048,
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: true },
        { name: 'keyUsage', keyCertSign: true },
      ],
    })
    writeFileSync(path, (await leaf('mailroom.test', { key: ca.private, cert: ca.cert })).cert)
    expect((await run()).byId('host.tls:mailroom.test').status).toBe('pass')
  })

  test('outbound port 25: a greeting passes, a closed port fails with what to do', async () => {
    const server = net.createServer((s) => s.end('220 probe.example ESMTP\r\n'))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const port = (server.address() as AddressInfo).port
    try {
      const open = await setup({ doctor_probe: { host: '127.0.0.1', port } })
      const passed = (await open.run()).byId('network.port25')
      expect(passed.status).toBe('pass')
      expect(passed.detail).toContain('220 probe.example ESMTP')
    } finally {
      await new Promise<void>((r) => server.close(() => r()))
    }
    const closed = await setup({ doctor_probe: { host: '127.0.0.1', port } })
    const failed = (await closed.run()).byId('network.port25')
    expectFix(failed, 'fail', 'open outbound TCP port 25')
    expect(failed.detail).toContain('ECONNREFUSED')
  })

  test('bulk senders: complaint rate over 0.3 % fails, over 0.1 % warns; broadcast mail without one-click unsubscribe fails', async () => {
    const { t, run } = await setup()
    const now = t.deps.clock.now()
    for (let i = 0; i < 1000; i++) emit(t.deps.db, now - 3600_000, { kind: 'message.sent', data: {} })
    emit(t.deps.db, now - 3600_000, { kind: 'message.complained', data: {} })
    let { byId } = await run()
    expectFix(byId('bulk.complaint_rate'), 'warn', 'opt-in')
    expect(byId('bulk.complaint_rate').detail).toContain('0.10 %')
    for (let i = 0; i < 3; i++) emit(t.deps.db, now - 3600_000, { kind: 'message.complained', data: {} })
    ;({ byId } = await run())
    expectFix(byId('bulk.complaint_rate'), 'fail', 'opt-in')

    const message = (id: string, headers: string) =>
      t.deps.db
        .insert(messages)
        .values({
          id,
          source: 'broadcast',
          mail_from: 'b@bounces.example.com',
          from_address: 'news@example.com',
          subject: 'News',
          message_id_header: `${id}@example.com`,
          broadcast_id: 1,
          raw: Buffer.from(`From: news@example.com\r\n${headers}Subject: News\r\n\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n`),
          size: 100,
          created_at: now - 60_000,
        })
        .run()
    message(
      'm-good',
      'List-Unsubscribe: <https://track.mailroom.test/u/abc>,\r\n <mailto:u@example.com>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n',
    )
    ;({ byId } = await run())
    expect(byId('bulk.one_click_unsubscribe').status).toBe('pass')
    // The header only in the body does not count.
    message('m-bad', 'List-Unsubscribe: <mailto:u@example.com>\r\n')
    ;({ byId } = await run())
    expectFix(byId('bulk.one_click_unsubscribe'), 'fail', '"unsubscribe": true')
    expect(byId('bulk.one_click_unsubscribe').detail).toContain('m-bad')
  })
})

describe('GET /api/v2/doctor', () => {
  test('needs doctor.read; runs once, then answers the stored run until refresh=true; changes raise doctor.changed events', async () => {
    const { t, call, name, record } = await setup()
    const none = t.makeKey({ permissions: ['settings.read'] })
    expect((await call('GET', '/api/v2/doctor', undefined, none.key)).status).toBe(403)
    const reader = t.makeKey({ permissions: ['doctor.read', 'statistics.read'] })

    const first = await call('GET', '/api/v2/doctor', undefined, reader.key)
    expect(first.status).toBe(200)
    expect(first.body.data.summary.fail).toBe(0)
    expect((await call('GET', '/api/v2/system/overview', undefined, reader.key)).body.data.warnings.map((w: { kind: string }) => w.kind)).not.toContain(
      'doctor_failed',
    )
    expect(first.body.data.checks.find((c: CheckResult) => c.id === `domain.dkim:${name}`).status).toBe('pass')

    // Break DKIM: the stored run is answered until a refresh.
    dns.setZone(record('dkim').name, undefined)
    t.deps.clock.advance(60_000)
    const stored = await call('GET', '/api/v2/doctor', undefined, reader.key)
    expect(stored.body.data).toEqual(first.body.data)
    const fresh = await call('GET', '/api/v2/doctor?refresh=true', undefined, reader.key)
    expect(fresh.body.data.ran_at).not.toBe(first.body.data.ran_at)
    const dkim = fresh.body.data.checks.find((c: CheckResult) => c.id === `domain.dkim:${name}`)
    expect(dkim).toMatchObject({ status: 'fail', category: 'domain', subject: name })
    expect(dkim.fix).toContain(record('dkim').value)

    const events = await call('GET', '/api/v2/events?kind=doctor.changed', undefined, reader.key)
    expect(events.status).toBe(200)
    const changed = events.body.data.map((e: { data: { check_id: string; from: string; to: string } }) => e.data)
    expect(changed).toContainEqual(expect.objectContaining({ check_id: `domain.dkim:${name}`, from: 'pass', to: 'fail' }))
    // Nothing else changed between the two runs (the first run had nothing failing to announce).
    expect(changed.map((c: { check_id: string }) => c.check_id).sort()).toEqual([`domain.alignment:${name}`, `domain.dkim:${name}`].sort())

    // The dashboard's warnings name what fails.
    const overview = await call('GET', '/api/v2/system/overview', undefined, reader.key)
    expect(overview.body.data.warnings).toContainEqual({
      kind: 'doctor_failed',
      message: `1 deliverability check failed at the last run: DKIM record matches the signing key (${name}).`,
      href: '/admin/sending/deliverability',
    })

    expect((await call('GET', '/api/v2/doctor?refresh=maybe', undefined, reader.key)).status).toBe(422)
  })

  test('an IP newly listed on a blocklist pauses the running broadcasts of its pool, once', async () => {
    const { t, call } = await setup()
    const reader = t.makeKey({ permissions: ['doctor.read'] })
    const db = t.deps.db.$client
    const broadcast = (status: string) =>
      Number(
        db
          .prepare(
            `INSERT INTO broadcasts (name, status, from_address, subject, pool_id, archive_id, created_at, updated_at) VALUES (?, ?, 'Ada <ada@example.com>', 'Hi', NULL, ?, 0, 0)`,
          )
          .run(`b-${status}`, status, `arch-${status}`).lastInsertRowid,
      )
    const running = broadcast('sending')
    const draft = broadcast('draft')
    const status = (id: number) =>
      db.query('SELECT status, status_reason FROM broadcasts WHERE id = ?').get(id) as { status: string; status_reason: string | null }
    const alerts = () =>
      (db.query(`SELECT data FROM events WHERE kind = 'deliverability.alert' ORDER BY id`).all() as Array<{ data: string }>).map((e) => JSON.parse(e.data))

    expect((await call('GET', '/api/v2/doctor?refresh=true', undefined, reader.key)).status).toBe(200)
    expect(status(running).status).toBe('sending')
    dns.setZone(reverseName(IP, 'bl.spamcop.net'), { A: ['127.0.0.2'] })
    expect((await call('GET', '/api/v2/doctor?refresh=true', undefined, reader.key)).status).toBe(200)
    expect(status(running)).toEqual({ status: 'paused', status_reason: expect.stringContaining(`IP ${IP} is listed: ${IP} is listed on bl.spamcop.net`) })
    expect(status(draft).status).toBe('draft')
    expect(alerts()).toEqual([expect.objectContaining({ type: 'ip_listed', ip: IP, paused_broadcast_ids: [running] })])

    // Still listed at the next run: not news, no second alert (an operator who resumed is not overruled daily).
    await call('GET', '/api/v2/doctor?refresh=true', undefined, reader.key)
    expect(alerts()).toHaveLength(1)
  })

  test('the background runner stores a run and logs one summary line', async () => {
    const { t } = await setup()
    const runner = startDoctor(t.deps)
    try {
      for (let i = 0; i < 200 && !t.deps.log.lines.some((l) => l.msg.startsWith('deliverability doctor:')); i++) await Bun.sleep(25)
    } finally {
      await runner.stop()
    }
    const line = t.deps.log.lines.find((l) => l.msg.startsWith('deliverability doctor:'))
    expect(line?.msg).toMatch(/^deliverability doctor: \d+ pass, 0 warn, 0 fail, \d+ skipped$/)
    const reader = t.makeKey({ permissions: ['doctor.read'] })
    const stored = await t.call('GET', '/api/v2/doctor', { key: reader.key })
    expect(stored.body.data.summary.fail).toBe(0)
  })
})
