import { describe, expect, test } from 'bun:test'
import { createIpRotation } from '../../src/delivery/ip-rotation'
import { testApp } from '../support/app'
import { runScenarios, type Scenario, type ScenarioContext } from '../support/scenarios'

/** An app with an admin key and helpers for IPs and pools. 127.0.0.2 and .3 are bindable on Linux loopback; 192.0.2.1 (TEST-NET-1) is not. */
function infra() {
  const t = testApp()
  const admin = t.makeKey()
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: admin.key, body })
  const ip = async (address: string, hostname = `mta-${address.replaceAll('.', '-')}.example.net`) => {
    const r = await call('POST', '/api/v2/ips', { address, hostname })
    expect(r.status).toBe(201)
    return r.body.data.id as number
  }
  return { t, call, ip }
}

describe('IPs', () => {
  test('register a bindable address, read, list, change, delete', async () => {
    const { call } = infra()
    const created = await call('POST', '/api/v2/ips', { address: ' 127.0.0.2 ', hostname: 'MTA1.Example.NET' })
    expect(created.status).toBe(201)
    expect(created.body.data).toMatchObject({ address: '127.0.0.2', family: 4, hostname: 'mta1.example.net', pools: [] })
    const id = created.body.data.id
    expect((await call('GET', `/api/v2/ips/${id}`)).body.data.address).toBe('127.0.0.2')
    expect((await call('GET', '/api/v2/ips')).body.meta.total).toBe(1)
    expect((await call('POST', '/api/v2/ips', { address: '127.0.0.2', hostname: 'x.example.net' })).status).toBe(409)
    const changed = await call('PATCH', `/api/v2/ips/${id}`, { hostname: 'mta2.example.net', address: '127.0.0.3' })
    expect(changed.body.data).toMatchObject({ address: '127.0.0.3', hostname: 'mta2.example.net' })
    expect((await call('DELETE', `/api/v2/ips/${id}`)).body.data.id).toBe(id)
    expect((await call('GET', `/api/v2/ips/${id}`)).status).toBe(404)
  })

  test('an address this host cannot bind is refused on update (on create: the table)', async () => {
    const { call, ip } = infra()
    const id = await ip('127.0.0.2')
    expect((await call('PATCH', `/api/v2/ips/${id}`, { address: '192.0.2.1' })).status).toBe(422)
    expect((await call('GET', `/api/v2/ips/${id}`)).body.data.address).toBe('127.0.0.2')
  })

  test('IPv6 loopback is stored in RFC 5952 form', async () => {
    const { call } = infra()
    const r = await call('POST', '/api/v2/ips', { address: '0:0:0:0:0:0:0:1', hostname: 'mta6.example.net' })
    expect(r.status).toBe(201)
    expect(r.body.data).toMatchObject({ address: '::1', family: 6 })
  })
})

runScenarios('IPs: refusals', [
  {
    name: 'an address this host cannot bind',
    method: 'POST',
    url: '/api/v2/ips',
    body: { address: '192.0.2.1', hostname: 'mta.example.net' },
    status: 422,
    code: 'validation_failed',
    after: (_, r) => expect(r.body.error.details.address[0]).toContain('this host cannot send from 192.0.2.1 (EADDRNOTAVAIL)'),
  },
  ...(
    [
      ['not an address', { address: 'mail.example.net', hostname: 'a.example.net' }, 'address'],
      ['a legacy IPv4 form', { address: '127.2', hostname: 'a.example.net' }, 'address'],
      ['the unspecified address', { address: '0.0.0.0', hostname: 'a.example.net' }, 'address'],
      ['a multicast address', { address: '224.0.0.1', hostname: 'a.example.net' }, 'address'],
      ['a hostname that is not a FQDN', { address: '127.0.0.2', hostname: 'localhost' }, 'hostname'],
      ['a hostname with a space', { address: '127.0.0.2', hostname: 'a b.example.net' }, 'hostname'],
    ] as Array<[string, Record<string, string>, string]>
  ).map(([name, body, field]): Scenario => ({ name, method: 'POST', url: '/api/v2/ips', body, status: 422, detailFields: [field] })),
])

runScenarios('IPs: keys without the permission are refused', [
  {
    name: 'ips.read cannot register',
    method: 'POST',
    url: '/api/v2/ips',
    body: { address: '127.0.0.2', hostname: 'a.example.net' },
    key: { permissions: ['ips.read'] },
    status: 403,
  },
  { name: 'ips.read lists', method: 'GET', url: '/api/v2/ips', key: { permissions: ['ips.read'] }, status: 200 },
  { name: 'another permission cannot list pools', method: 'GET', url: '/api/v2/ip-pools', key: { permissions: ['sending_domains.read'] }, status: 403 },
])

// A registered IP, made with the scenario's Administrator key; `setup` is its id.
const registered = async ({ t, admin }: ScenarioContext) =>
  (await t.call('POST', '/api/v2/ips', { key: admin, body: { address: '127.0.0.2', hostname: 'mta-127-0-0-2.example.net' } })).body.data.id as number
runScenarios(
  'IP pools: a member weight is 1 to 1000',
  [0, 1001].map((weight): Scenario => ({
    name: `weight ${weight}`,
    method: 'POST',
    before: registered,
    url: '/api/v2/ip-pools',
    body: (c) => ({ name: 'p', members: [{ ip_id: c.setup, weight }] }),
    status: 422,
  })),
)

describe('IP pools', () => {
  test('create with members, read with addresses, replace members, delete', async () => {
    const { call, ip } = infra()
    const a = await ip('127.0.0.2')
    const b = await ip('127.0.0.3')
    const created = await call('POST', '/api/v2/ip-pools', { name: 'marketing', members: [{ ip_id: a, weight: 3 }, { ip_id: b }] })
    expect(created.status).toBe(201)
    const pool = created.body.data
    expect(pool).toMatchObject({
      name: 'marketing',
      is_default: false,
      members: [
        { ip_id: a, address: '127.0.0.2', hostname: 'mta-127-0-0-2.example.net', weight: 3 },
        { ip_id: b, address: '127.0.0.3', weight: 1 },
      ],
    })
    expect((await call('GET', `/api/v2/ips/${a}`)).body.data.pools).toEqual([{ id: pool.id, name: 'marketing', weight: 3 }])
    const replaced = await call('PATCH', `/api/v2/ip-pools/${pool.id}`, { members: [{ ip_id: b, weight: 10 }] })
    expect(replaced.body.data.members).toEqual([{ ip_id: b, address: '127.0.0.3', hostname: 'mta-127-0-0-3.example.net', weight: 10 }])
    expect((await call('POST', '/api/v2/ip-pools', { name: 'marketing' })).status).toBe(409)
    // Deleting an IP takes it out of its pools.
    await call('DELETE', `/api/v2/ips/${b}`)
    expect((await call('GET', `/api/v2/ip-pools/${pool.id}`)).body.data.members).toEqual([])
    expect((await call('DELETE', `/api/v2/ip-pools/${pool.id}`)).status).toBe(200)
    expect((await call('GET', `/api/v2/ip-pools/${pool.id}`)).status).toBe(404)
  })

  test('members must be known IPs, each once (weights: the table)', async () => {
    const { call, ip } = infra()
    const a = await ip('127.0.0.2')
    const r = await call('POST', '/api/v2/ip-pools', { name: 'p', members: [{ ip_id: a }, { ip_id: 4242 }, { ip_id: a }] })
    expect(r.status).toBe(422)
    expect(r.body.error.details).toEqual({
      'members.1.ip_id': ['no IP with id 4242; GET /api/v2/ips lists them'],
      'members.2.ip_id': ['appears more than once'],
    })
  })

  test('at most one default pool', async () => {
    const { call } = infra()
    const one = (await call('POST', '/api/v2/ip-pools', { name: 'one', is_default: true })).body.data
    const two = (await call('POST', '/api/v2/ip-pools', { name: 'two', is_default: true })).body.data
    expect((await call('GET', `/api/v2/ip-pools/${one.id}`)).body.data.is_default).toBe(false)
    expect(two.is_default).toBe(true)
    await call('PATCH', `/api/v2/ip-pools/${one.id}`, { is_default: true })
    const list = (await call('GET', '/api/v2/ip-pools')).body.data
    expect(list.map((p: { name: string; is_default: boolean }) => [p.name, p.is_default])).toEqual([
      ['one', true],
      ['two', false],
    ])
  })
})

describe('weighted rotation', () => {
  test('weights 3:1 give 3:1 over 400 picks, evenly spread; the default pool is used for null', async () => {
    const { t, call, ip } = infra()
    const a = await ip('127.0.0.2')
    const b = await ip('127.0.0.3')
    const pool = (
      await call('POST', '/api/v2/ip-pools', {
        name: 'main',
        is_default: true,
        members: [
          { ip_id: a, weight: 3 },
          { ip_id: b, weight: 1 },
        ],
      })
    ).body.data
    const rotation = createIpRotation(t.deps)
    const picks = Array.from({ length: 400 }, () => rotation.next(null)!)
    const counts = picks.reduce<Record<string, number>>((c, p) => ({ ...c, [p.address]: (c[p.address] ?? 0) + 1 }), {})
    expect(counts).toEqual({ '127.0.0.2': 300, '127.0.0.3': 100 })
    // Smooth: the light address comes once in every window of four, never two heavy bursts back to back.
    expect(picks.slice(0, 8).map((p) => p.address.at(-1))).toEqual(['2', '2', '3', '2', '2', '2', '3', '2'])
    expect(picks[0]).toEqual({ address: '127.0.0.2', hostname: 'mta-127-0-0-2.example.net', pool_id: pool.id })
    expect(rotation.next(pool.id)?.pool_id).toBe(pool.id)
  })

  test('a pool change made through the API is seen by the next pick', async () => {
    const { t, call, ip } = infra()
    const a = await ip('127.0.0.2')
    const b = await ip('127.0.0.3')
    const pool = (await call('POST', '/api/v2/ip-pools', { name: 'main', members: [{ ip_id: a }] })).body.data
    const rotation = createIpRotation(t.deps)
    expect(rotation.next(pool.id)?.address).toBe('127.0.0.2')
    await call('PATCH', `/api/v2/ip-pools/${pool.id}`, { members: [{ ip_id: b }] })
    expect(rotation.next(pool.id)?.address).toBe('127.0.0.3')
    await call('PATCH', `/api/v2/ips/${b}`, { hostname: 'renamed.example.net' })
    expect(rotation.next(pool.id)?.hostname).toBe('renamed.example.net')
    // A write outside the services (another process) is seen after invalidate().
    t.deps.db.$client.run('DELETE FROM ip_pool_members')
    expect(rotation.next(pool.id)?.address).toBe('127.0.0.3')
    rotation.invalidate()
    expect(rotation.next(pool.id)).toBeNull()
  })

  test('no pool, an unknown pool, or an empty pool: null (the host default address)', async () => {
    const { t, call } = infra()
    const rotation = createIpRotation(t.deps)
    expect(rotation.next(null)).toBeNull()
    expect(rotation.next(99)).toBeNull()
    const empty = (await call('POST', '/api/v2/ip-pools', { name: 'empty', is_default: true })).body.data
    expect(rotation.next(null)).toBeNull()
    expect(rotation.next(empty.id)).toBeNull()
  })
})
