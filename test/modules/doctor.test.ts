import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import net, { type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { generate } from 'selfsigned'
import type { Config } from '../../src/config'
import { messages } from '../../src/db/schema'
import { emit } from '../../src/modules/events/service'
import { startDoctor } from '../../src/modules/doctor/runner'
import { runDoctor } from '../../src/modules/doctor/service'
import type { CheckResult } from '../../src/modules/doctor/model'
import { reverseName, startDnsServer, type DnsServer, type Zones } from '../support/dns-server'
import { testApp } from '../support/app'

let dns: DnsServer
beforeAll(async () => {
  dns = await startDnsServer()
})
afterAll(() => dns.close())

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
  const name = `d${Math.random().toString(36).slice(2, 10)}.example.com`
  const domain = (await call('POST', '/api/v2/sending-domains', { name })).body.data
  const record = (purpose: string) => (domain.dns_records as DnsRecord[]).find((r) => r.purpose === purpose)!
  const zones: Zones = {
    'mailroom.test': { A: ['192.0.2.1'] },
    'track.mailroom.test': { A: ['192.0.2.1'] },
    [reverseName(IP)]: { PTR: [HELO] },
    [HELO]: { A: [IP] },
    [record('dkim').name]: { TXT: [record('dkim').value] },
    [name]: { TXT: [record('spf').value] },
    [`_dmarc.${name}`]: { TXT: [record('dmarc').value] },
    [record('return_path').name]: { CNAME: 'mailroom.test' },
    [`_mta-sts.${name}`]: { TXT: ['v=STSv1; id=20260301'] },
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

  test('MTA-STS and TLS-RPT missing warn with the records to publish', async () => {
    const { run, name } = await setup()
    dns.setZone(`_mta-sts.${name}`, undefined)
    dns.setZone(`_smtp._tls.${name}`, { TXT: ['v=TLSRPTv1;'] })
    const { byId } = await run()
    expectFix(byId(`domain.mta_sts:${name}`), 'warn', `Publish TXT _mta-sts.${name} = v=STSv1; id=`)
    expectFix(byId(`domain.mta_sts:${name}`), 'warn', `https://mta-sts.${name}/.well-known/mta-sts.txt`)
    expectFix(byId(`domain.tls_rpt:${name}`), 'warn', `Publish TXT _smtp._tls.${name} = v=TLSRPTv1; rua=mailto:`)
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
