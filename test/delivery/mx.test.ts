import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { promises as nodeDns } from 'node:dns'
import { createDestinationCache, resolveDestination } from '../../src/delivery/mx'
import { createResolver } from '../../src/lib/dns'
import { NULL_MX, startDnsServer, type DnsServer } from '../support/dns-server'

let dns: DnsServer
let resolver: ReturnType<typeof createResolver>

beforeAll(async () => {
  dns = await startDnsServer({
    zones: {
      'ordered.test': {
        MX: [
          { exchange: 'mx-b.ordered.test', priority: 20 },
          { exchange: 'mx-a.ordered.test', priority: 10 },
          { exchange: 'mx-c.ordered.test', priority: 30 },
        ],
      },
      'mx-a.ordered.test': { A: ['127.0.0.10'], AAAA: ['::1'] },
      'mx-b.ordered.test': { A: ['127.0.0.11'] },
      'mx-c.ordered.test': { A: ['127.0.0.12'] },
      'equal.test': {
        MX: [
          { exchange: 'one.equal.test', priority: 10 },
          { exchange: 'two.equal.test', priority: 10 },
          { exchange: 'three.equal.test', priority: 10 },
        ],
      },
      'one.equal.test': { A: ['127.0.0.21'] },
      'two.equal.test': { A: ['127.0.0.22'] },
      'three.equal.test': { A: ['127.0.0.23'] },
      'implicit.test': { A: ['127.0.0.30'] },
      'nullmx.test': { MX: [NULL_MX] },
      'txtonly.test': { TXT: ['v=spf1 -all'] },
      'dangling.test': { MX: [{ exchange: 'missing.dangling.test', priority: 10 }] },
      'partial.test': {
        MX: [
          { exchange: 'missing.partial.test', priority: 5 },
          { exchange: 'ok.partial.test', priority: 10 },
        ],
      },
      'ok.partial.test': { A: ['127.0.0.40'] },
    },
  })
  resolver = createResolver([dns.server])
})
afterAll(() => dns.close())

describe('resolveDestination', () => {
  test('MX hosts in preference order, each with A then AAAA addresses', async () => {
    const d = await resolveDestination(resolver, 'ordered.test')
    expect(d).toMatchObject({
      kind: 'hosts',
      implicit: false,
      hosts: [
        { host: 'mx-a.ordered.test', priority: 10, addresses: ['127.0.0.10', '::1'] },
        { host: 'mx-b.ordered.test', priority: 20, addresses: ['127.0.0.11'] },
        { host: 'mx-c.ordered.test', priority: 30, addresses: ['127.0.0.12'] },
      ],
    })
  })

  test('equal preferences are shuffled (RFC 5321 5.1)', async () => {
    const first = await resolveDestination(resolver, 'equal.test', () => 0)
    const last = await resolveDestination(resolver, 'equal.test', () => 0.999)
    const names = (d: typeof first) => (d.kind === 'hosts' ? d.hosts.map((h) => h.host) : [])
    expect(names(first).sort()).toEqual(['one.equal.test', 'three.equal.test', 'two.equal.test'])
    expect(names(first)).not.toEqual(names(last))
  })

  test('no MX: the domain itself is the implicit MX', async () => {
    expect(await resolveDestination(resolver, 'Implicit.Test.')).toMatchObject({
      kind: 'hosts',
      implicit: true,
      hosts: [{ host: 'implicit.test', priority: 0, addresses: ['127.0.0.30'] }],
    })
  })

  test('null MX fails permanently at once, without address lookups', async () => {
    const before = dns.queries.length
    expect(await resolveDestination(resolver, 'nullmx.test')).toMatchObject({ kind: 'fail', permanent: true, enhanced: '5.1.10' })
    expect(dns.queries.slice(before).map((q) => q.type)).toEqual(['MX'])
  })

  test('NXDOMAIN and a name without MX or addresses fail permanently', async () => {
    expect(await resolveDestination(resolver, 'nowhere.test')).toMatchObject({ kind: 'fail', permanent: true, enhanced: '5.1.2' })
    expect(await resolveDestination(resolver, 'txtonly.test')).toMatchObject({ kind: 'fail', permanent: true, enhanced: '5.1.2' })
  })

  test('MX hosts without addresses are skipped; none left is temporary', async () => {
    expect(await resolveDestination(resolver, 'partial.test')).toMatchObject({ kind: 'hosts', hosts: [{ host: 'ok.partial.test', addresses: ['127.0.0.40'] }] })
    expect(await resolveDestination(resolver, 'dangling.test')).toMatchObject({ kind: 'fail', permanent: false })
  })

  test('an unreachable DNS server is a temporary failure', async () => {
    const dead = new nodeDns.Resolver({ timeout: 100, tries: 1 })
    dead.setServers(['127.0.0.1:9'])
    expect(await resolveDestination(dead, 'ordered.test')).toMatchObject({ kind: 'fail', permanent: false, enhanced: '4.4.3' })
  })
})

describe('createDestinationCache', () => {
  test('TTL 0 answers are not cached, so zone changes are seen at once', async () => {
    const cache = createDestinationCache({ resolver, now: () => 0 })
    dns.setZone('changing.test', { A: ['127.0.0.50'] })
    expect(await cache.resolve('changing.test')).toMatchObject({ hosts: [{ addresses: ['127.0.0.50'] }] })
    dns.setZone('changing.test', { A: ['127.0.0.51'] })
    expect(await cache.resolve('changing.test')).toMatchObject({ hosts: [{ addresses: ['127.0.0.51'] }] })
  })

  test('answers with a TTL are kept until it runs out; concurrent lookups share one query', async () => {
    const ttlDns = await startDnsServer({ ttl: 60, zones: { 'cached.test': { A: ['127.0.0.60'] } } })
    try {
      let now = 0
      const cache = createDestinationCache({ resolver: createResolver([ttlDns.server]), now: () => now })
      const [a, b] = await Promise.all([cache.resolve('cached.test'), cache.resolve('CACHED.test')])
      expect(a).toBe(b)
      const queries = ttlDns.queries.length
      expect(queries).toBe(3) // MX, A, AAAA once
      ttlDns.setZone('cached.test', { A: ['127.0.0.61'] })
      expect(await cache.resolve('cached.test')).toMatchObject({ hosts: [{ addresses: ['127.0.0.60'] }] })
      expect(ttlDns.queries.length).toBe(queries)
      expect(await cache.resolve('cached.test')).toBe(a)
      // Past the TTL the cache asks the resolver again (which has its own TTL cache, hence no
      // assertion on the new address here).
      now += 61_000
      expect(await cache.resolve('cached.test')).not.toBe(a)
    } finally {
      await ttlDns.close()
    }
  })
})
