import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createPublicKey, createSign, createVerify } from 'node:crypto'
import { findSendingDomain, verifySendingDomain } from '../../src/modules/sending-domains/service'
import { startDnsServer, type DnsServer, type ZoneRecords } from '../support/dns-server'
import { testApp } from '../support/app'
import { runScenarios, type Scenario, type ScenarioContext } from '../support/scenarios'

let dns: DnsServer
beforeAll(async () => {
  dns = await startDnsServer()
})
afterAll(() => dns.close())

interface DnsRecord {
  purpose: string
  type: string
  name: string
  value: string
  required: boolean
  state: string
  found?: string[]
  message?: string
  warning?: string
}

/**
 * An app resolving through the loopback DNS server, two IPs in the default pool, and a
 * domain; `publish` puts the domain's records (or variants of them) into the zones.
 */
async function setup(opts: { pool?: boolean; hostname?: string } = {}) {
  const t = testApp({ dns_servers: [dns.server], ...(opts.hostname && { hostname: opts.hostname }) })
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  if (opts.pool !== false) {
    const a = (await call('POST', '/api/v2/ips', { address: '127.0.0.2', hostname: 'mta1.example.net' })).body.data.id
    const b = (await call('POST', '/api/v2/ips', { address: '127.0.0.3', hostname: 'mta2.example.net' })).body.data.id
    await call('POST', '/api/v2/ip-pools', { name: 'main', is_default: true, members: [{ ip_id: a }, { ip_id: b }] })
  }
  // Each test uses its own domain, so tests sharing the DNS server do not see each other's zones.
  const name = `d${Math.random().toString(36).slice(2, 10)}.example.com`
  const created = await call('POST', '/api/v2/sending-domains', { name })
  expect(created.status).toBe(201)
  const domain = created.body.data
  const record = (purpose: string) => (domain.dns_records as DnsRecord[]).find((r) => r.purpose === purpose)!
  const publish = (overrides: Partial<Record<'dkim' | 'spf' | 'dmarc' | 'return_path', ZoneRecords | undefined>> = {}) => {
    const zones: Record<string, ZoneRecords | undefined> = {
      [record('dkim').name]: { TXT: [record('dkim').value] },
      // An unrelated TXT record beside SPF: the two must not be read as one.
      [record('spf').name]: { TXT: [record('spf').value, 'site-verification=abc123'] },
      [record('dmarc').name]: { TXT: [record('dmarc').value] },
      [record('return_path').name]: { CNAME: 'mailroom.test' },
    }
    for (const [purpose, zone] of Object.entries(overrides)) zones[record(purpose).name] = zone
    for (const [zoneName, zone] of Object.entries(zones)) dns.setZone(zoneName, zone)
  }
  const verify = async () => {
    const r = await call('POST', `/api/v2/sending-domains/${domain.id}/verify`)
    expect(r.status).toBe(200)
    const states = Object.fromEntries((r.body.data.dns_records as DnsRecord[]).map((x) => [x.purpose, x.state]))
    return { data: r.body.data, states, record: (purpose: string) => (r.body.data.dns_records as DnsRecord[]).find((x) => x.purpose === purpose)! }
  }
  return { t, call, domain, record, publish, verify }
}

describe('sending domains: create and read', () => {
  test('create answers 201 with the records to publish and never the private key', async () => {
    const { call, domain, record } = await setup()
    expect(domain).toMatchObject({
      status: 'pending',
      pool_id: null,
      dkim_selector: 'mr202603',
      return_path_host: `bounces.${domain.name}`,
      checked_at: null,
      verified_at: null,
      warnings: [],
    })
    expect(JSON.stringify(domain)).not.toContain('PRIVATE')
    expect(JSON.stringify(domain)).not.toContain('"warning"')
    expect(record('dkim')).toMatchObject({ type: 'TXT', name: `mr202603._domainkey.${domain.name}`, required: true, state: 'unchecked' })
    expect(record('dkim').value).toMatch(/^v=DKIM1; k=rsa; p=MIIBIjAN[A-Za-z0-9+/]+=*$/)
    expect(record('spf')).toMatchObject({ type: 'TXT', name: domain.name, value: 'v=spf1 ip4:127.0.0.2 ip4:127.0.0.3 ~all', required: true })
    expect(record('dmarc')).toMatchObject({
      type: 'TXT',
      name: `_dmarc.${domain.name}`,
      value: `v=DMARC1; p=none; rua=mailto:dmarc@bounces.${domain.name};`,
      required: false,
    })
    expect(record('return_path')).toMatchObject({ type: 'CNAME', name: `bounces.${domain.name}`, value: 'mailroom.test', required: true })
    // The public key is 2048 bits.
    const key = createPublicKey({ key: Buffer.from(record('dkim').value.split('p=')[1]!, 'base64'), format: 'der', type: 'spki' })
    expect(key.asymmetricKeyDetails?.modulusLength).toBe(2048)

    expect((await call('GET', `/api/v2/sending-domains/${domain.id}`)).body.data).toEqual(domain)
    expect((await call('GET', '/api/v2/sending-domains')).body.meta.total).toBe(1)
    const dup = await call('POST', '/api/v2/sending-domains', { name: domain.name.toUpperCase() })
    expect(dup.status).toBe(409)
    expect(dup.body.error.code).toBe('conflict')
  })

  test('names are lower-cased and stored in IDNA ASCII form (refusals: the table)', async () => {
    const { call } = await setup({ pool: false })
    const idn = await call('POST', '/api/v2/sending-domains', { name: 'Bücher.Example.' })
    expect(idn.status).toBe(201)
    expect(idn.body.data.name).toBe('xn--bcher-kva.example')
    expect(idn.body.data.dns_records.find((r: DnsRecord) => r.purpose === 'spf').value).toBe('v=spf1 a:mailroom.test ~all')
    const custom = await call('POST', '/api/v2/sending-domains', { name: 'ok.example.com', return_path_host: 'RP.ok.example.com' })
    expect(custom.body.data.return_path_host).toBe('rp.ok.example.com')
  })

  test('delete answers 200 with the record; bulk delete', async () => {
    const { call, domain } = await setup({ pool: false })
    expect((await call('DELETE', `/api/v2/sending-domains/${domain.id}`)).body.data.name).toBe(domain.name)
    expect((await call('GET', `/api/v2/sending-domains/${domain.id}`)).status).toBe(404)
    expect((await call('POST', '/api/v2/sending-domains/bulk-delete', { ids: [domain.id] })).body.data).toEqual({ deleted: [], not_found: [domain.id] })
  })
})

const inLoopbackDns = () => testApp({ dns_servers: [dns.server] })
runScenarios(
  'sending domains: refused names and references',
  [
    ...['localhost', 'exa mple.com', '-x.example.com', '127.0.0.1', 'a..b.com'].map((name): Scenario => ({
      name: `name ${JSON.stringify(name)}`,
      method: 'POST',
      url: '/api/v2/sending-domains',
      body: { name },
      status: 422,
      detailFields: ['name'],
    })),
    {
      name: 'an unknown pool',
      method: 'POST',
      url: '/api/v2/sending-domains',
      body: { name: 'ok.example.com', pool_id: 77 },
      status: 422,
      details: { pool_id: ['no IP pool with id 77; GET /api/v2/ip-pools lists them'] },
    },
    {
      name: 'a return path outside the domain',
      method: 'POST',
      url: '/api/v2/sending-domains',
      body: { name: 'ok.example.com', return_path_host: 'bounces.other.com' },
      status: 422,
    },
  ],
  { app: inLoopbackDns },
)

// A domain made with the scenario's Administrator key; `setup` is its id.
const aDomain = async ({ t, admin }: ScenarioContext) =>
  (await t.call('POST', '/api/v2/sending-domains', { key: admin, body: { name: 'perm.example.com' } })).body.data.id as number
const reader = { permissions: ['sending_domains.read'] }
runScenarios(
  'sending domains: keys without the permission are refused',
  [
    { name: 'a reader reads', method: 'GET', before: aDomain, url: (c) => `/api/v2/sending-domains/${c.setup}`, key: reader, status: 200 },
    { name: 'a reader cannot verify', method: 'POST', before: aDomain, url: (c) => `/api/v2/sending-domains/${c.setup}/verify`, key: reader, status: 403 },
    {
      name: 'a reader cannot create',
      method: 'POST',
      before: aDomain,
      url: '/api/v2/sending-domains',
      body: { name: 'x.example.com' },
      key: reader,
      status: 403,
    },
    {
      name: 'a verifier cannot list',
      method: 'GET',
      before: aDomain,
      url: '/api/v2/sending-domains',
      key: { permissions: ['sending_domains.verify'] },
      status: 403,
    },
  ],
  { app: inLoopbackDns },
)

describe('sending domains: verify against a real DNS server', () => {
  test('all records published: verified (the DKIM key arrives split over several strings)', async () => {
    const { publish, verify, domain, record } = await setup()
    publish()
    expect(record('dkim').value.length).toBeGreaterThan(255) // the test server splits it into 255-byte strings
    const { data, states } = await verify()
    expect(states).toEqual({ dkim: 'verified', spf: 'verified', dmarc: 'verified', return_path: 'verified' })
    expect(data.status).toBe('verified')
    expect(data.checked_at).toBe('2026-03-01T12:00:30.000Z')
    expect(data.verified_at).toBe('2026-03-01T12:00:30.000Z')
    expect(dns.queries.some((q) => q.name.toLowerCase() === record('dkim').name && q.type === 'TXT')).toBe(true)
    expect(data.id).toBe(domain.id)
  })

  test('a DKIM record split at arbitrary places, with whitespace in p=, still verifies', async () => {
    const { publish, verify, record } = await setup()
    const value = record('dkim').value
    const p = value.split('p=')[1]!
    publish({ dkim: { TXT: [['v=DKIM1; k=rsa; ', `p=${p.slice(0, 100)} `, ` ${p.slice(100, 300)}`, p.slice(300)]] } })
    expect((await verify()).states.dkim).toBe('verified')
  })

  test('missing DKIM record: missing, status stays pending', async () => {
    const { publish, verify } = await setup()
    publish({ dkim: undefined })
    const { data, states } = await verify()
    expect(states).toMatchObject({ dkim: 'missing', spf: 'verified', return_path: 'verified' })
    expect(data.status).toBe('pending')
  })

  test('another key published: mismatch with what was found, status failed', async () => {
    const { publish, verify } = await setup()
    const other = 'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong'
    publish({ dkim: { TXT: [other] } })
    const { data, record } = await verify()
    expect(record('dkim')).toMatchObject({ state: 'mismatch', found: [other] })
    expect(data.status).toBe('failed')
    expect(data.verified_at).toBeNull()
  })

  test('an SPF record that leaves out a pool address: mismatch naming it', async () => {
    const { publish, verify } = await setup()
    publish({ spf: { TXT: ['v=spf1 ip4:127.0.0.2 ~all'] } })
    const { data, record } = await verify()
    expect(record('spf')).toMatchObject({ state: 'mismatch', found: ['v=spf1 ip4:127.0.0.2 ~all'] })
    expect(record('spf').message).toContain('127.0.0.3 (softfail)')
    expect(data.status).toBe('failed')
  })

  test('SPF through include: and a CIDR range is accepted; two SPF records are a mismatch', async () => {
    const { publish, verify, domain } = await setup()
    publish({ spf: { TXT: [`v=spf1 ip4:127.0.0.2 include:_spf.${domain.name} -all`] } })
    dns.setZone(`_spf.${domain.name}`, { TXT: ['v=spf1 ip4:127.0.0.0/29 -all'] })
    expect((await verify()).states.spf).toBe('verified')
    publish({ spf: { TXT: ['v=spf1 ip4:127.0.0.2 ~all', 'v=spf1 ip4:127.0.0.3 ~all'] } })
    expect((await verify()).record('spf').message).toContain('more than one SPF record')
  })

  test('a return path pointing elsewhere: mismatch', async () => {
    const { publish, verify } = await setup()
    publish({ return_path: { CNAME: 'bounce.other-provider.net' } })
    const { record, data } = await verify()
    expect(record('return_path')).toMatchObject({ state: 'mismatch', found: ['bounce.other-provider.net'] })
    expect(data.status).toBe('failed')
  })

  test('without pool IPs, SPF is checked for the addresses of the server host name', async () => {
    const { publish, verify, record } = await setup({ pool: false })
    expect(record('spf').value).toBe('v=spf1 a:mailroom.test ~all')
    dns.setZone('mailroom.test', { A: ['127.0.0.9'] })
    publish()
    expect((await verify()).states.spf).toBe('verified')
    publish({ spf: { TXT: ['v=spf1 ip4:127.0.0.2 ~all'] } })
    expect((await verify()).record('spf').message).toContain('127.0.0.9')
  })

  test('DNS server unreachable: error states with the message, status unchanged', async () => {
    const closed = await startDnsServer()
    await closed.close()
    const t = testApp({ dns_servers: [closed.server] })
    const admin = t.makeKey()
    const created = (await t.call('POST', '/api/v2/sending-domains', { key: admin.key, body: { name: 'down.example.com' } })).body.data
    const r = await t.call('POST', `/api/v2/sending-domains/${created.id}/verify`, { key: admin.key })
    const records = r.body.data.dns_records as DnsRecord[]
    expect(records.map((x) => x.state)).toEqual(['error', 'error', 'error', 'error'])
    expect(records[0]!.message).toContain('ECONNREFUSED')
    expect(r.body.data.status).toBe('pending')
    expect(r.body.data.checked_at).not.toBeNull()
  })

  test('a verified domain stays verified through a DNS outage', async () => {
    const { publish, verify, t, domain } = await setup()
    publish()
    expect((await verify()).data.status).toBe('verified')
    // Same database, resolver pointed at a closed port.
    const closed = await startDnsServer()
    await closed.close()
    const after = await verifySendingDomain({ ...t.deps, config: { ...t.deps.config, dns_servers: [closed.server] } }, domain.id)
    expect(after.status).toBe('verified')
    expect(after.dns_records.find((r) => r.purpose === 'dkim')!.state).toBe('error')
  })

  test('changing the pool changes the SPF record, which shows unchecked until the next verify', async () => {
    const { publish, verify, call, domain } = await setup()
    publish()
    await verify()
    const other = (await call('POST', '/api/v2/ip-pools', { name: 'other', members: [] })).body.data
    const patched = (await call('PATCH', `/api/v2/sending-domains/${domain.id}`, { pool_id: other.id })).body.data
    const spf = patched.dns_records.find((r: DnsRecord) => r.purpose === 'spf')
    expect(spf).toMatchObject({ value: 'v=spf1 a:mailroom.test ~all', state: 'unchecked' })
    expect(patched.dns_records.find((r: DnsRecord) => r.purpose === 'dkim').state).toBe('verified')
    expect(patched.status).toBe('verified')
  })
})

describe('the public host name', () => {
  test('a short host name ("vm"): placeholders marked with a warning instead of a:vm and CNAME vm; verify calls them errors', async () => {
    const { call, domain, record, publish, verify } = await setup({ pool: false, hostname: 'vm' })
    expect(domain.warnings).toHaveLength(1)
    const warning = domain.warnings[0] as string
    expect(warning).toContain('"vm" is a short name')
    expect(warning).toContain('MAILROOM_HOSTNAME')
    expect(record('spf')).toMatchObject({ value: 'v=spf1 a:<public-host-name> ~all', warning })
    expect(record('return_path')).toMatchObject({ type: 'CNAME', value: '<public-host-name>', warning })
    expect(record('dkim').warning).toBeUndefined()
    expect(record('dmarc').warning).toBeUndefined()
    expect(JSON.stringify(domain.dns_records)).not.toMatch(/a:vm\b|"value":"vm"/)
    expect((await call('GET', `/api/v2/sending-domains/${domain.id}`)).body.data.warnings).toEqual([warning])

    publish({ return_path: { CNAME: 'vm' } })
    const { data, states, record: checked } = await verify()
    expect(states).toMatchObject({ dkim: 'verified', dmarc: 'verified', spf: 'error', return_path: 'error' })
    expect(checked('return_path')).toMatchObject({ message: warning, warning })
    expect(data.status).toBe('pending')
  })

  test('a name under .local: the return-path CNAME is a placeholder; SPF built from pool addresses is not', async () => {
    const { domain, record } = await setup({ hostname: 'mailroom.local' })
    expect(domain.warnings[0]).toContain('under .local')
    expect(record('spf').value).toBe('v=spf1 ip4:127.0.0.2 ip4:127.0.0.3 ~all')
    expect(record('spf').warning).toBeUndefined()
    expect(record('return_path')).toMatchObject({ value: '<public-host-name>', warning: domain.warnings[0] })
  })
})

describe('the DKIM key', () => {
  test('a signature made with the stored private key verifies with the published p= value', async () => {
    const { t, domain, record } = await setup({ pool: false })
    const found = findSendingDomain(t.deps, domain.name.toUpperCase())!
    expect(found).toMatchObject({
      id: domain.id,
      name: domain.name,
      status: 'pending',
      pool_id: null,
      return_path_host: `bounces.${domain.name}`,
    })
    const stored = t.deps.db.$client
      .query<{ dkim_selector: string; dkim_private_key: string }, [number]>('SELECT dkim_selector, dkim_private_key FROM sending_domains WHERE id = ?')
      .get(domain.id)!
    expect(stored.dkim_selector).toBe('mr202603')
    // Stored sealed (issue 13 item 3); the box opens it to the PEM the signer uses.
    expect(stored.dkim_private_key).toStartWith('enc:v1:')
    const pem = t.deps.secrets.open(stored.dkim_private_key)
    expect(pem).toStartWith('-----BEGIN PRIVATE KEY-----')
    const message = 'from:Ada <ada@example.com>\r\nsubject:hello\r\n'
    const signature = createSign('RSA-SHA256').update(message).sign(pem)
    const published = createPublicKey({ key: Buffer.from(record('dkim').value.split('p=')[1]!, 'base64'), format: 'der', type: 'spki' })
    expect(createVerify('RSA-SHA256').update(message).verify(published, signature)).toBe(true)
    expect(
      createVerify('RSA-SHA256')
        .update(message + 'x')
        .verify(published, signature),
    ).toBe(false)
  })

  test('findSendingDomain matches the exact ASCII name only', async () => {
    const { t, call } = await setup({ pool: false })
    await call('POST', '/api/v2/sending-domains', { name: 'bücher.example' })
    expect(findSendingDomain(t.deps, 'BÜCHER.example')?.name).toBe('xn--bcher-kva.example')
    expect(findSendingDomain(t.deps, 'xn--bcher-kva.example.')?.name).toBe('xn--bcher-kva.example')
    expect(findSendingDomain(t.deps, 'sub.xn--bcher-kva.example')).toBeNull()
    expect(findSendingDomain(t.deps, 'example')).toBeNull()
  })
})
