import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import dgram from 'node:dgram'
import packet from 'dns-packet'
import { ConfigError, loadConfig } from '../src/config'
import { createResolver } from '../src/lib/dns'
import { parseServer, queryRecords } from '../src/lib/dns-query'
import { NULL_MX, reverseName, startDnsServer, type DnsServer } from './support/dns-server'

let dns: DnsServer
beforeAll(async () => {
  dns = await startDnsServer({
    zones: {
      'example.com': { TXT: ['v=spf1 ip4:127.0.0.2 ~all', ['site-', 'verification=1']], A: ['127.0.0.5'] },
      'bounces.example.com': { CNAME: 'mailroom.test' },
      'mail.example.com': { MX: [{ exchange: 'mx1.example.com', priority: 10 }], AAAA: ['::1'] },
      'nomail.example.com': { MX: [NULL_MX] },
      [reverseName('127.0.0.5')]: { PTR: ['mx1.example.com'] },
    },
    ttl: 120,
  })
})
afterAll(() => dns.close())

describe('the dns_servers setting', () => {
  test('parses ADDRESS, IPV4:PORT and [IPV6]:PORT; "system" or empty means the system resolvers', () => {
    const load = (value: string) => loadConfig({ env: { MAILROOM_DNS_SERVERS: value } }).dns_servers
    expect(load('127.0.0.1:5353, 9.9.9.9,[::1]:53')).toEqual(['127.0.0.1:5353', '9.9.9.9', '[::1]:53'])
    expect(load('system')).toEqual([])
    expect(load('')).toEqual([])
    expect(loadConfig({ env: {} }).dns_servers).toEqual([])
    expect(loadConfig({ env: {}, flags: { 'dns-servers': '127.0.0.1:53' } }).dns_servers).toEqual(['127.0.0.1:53'])
  })

  for (const bad of ['dns.example.com', '127.0.0.1:0', '127.0.0.1:70000', '[::1]']) {
    test(`refuses "${bad}" naming the setting`, () => {
      expect(() => loadConfig({ env: { MAILROOM_DNS_SERVERS: bad } })).toThrow(ConfigError)
      expect(() => loadConfig({ env: { MAILROOM_DNS_SERVERS: bad } })).toThrow(/dns/i)
    })
  }

  test('every accepted form is understood by both resolvers', () => {
    expect(parseServer('127.0.0.1:5353')).toEqual({ host: '127.0.0.1', port: 5353 })
    expect(parseServer('9.9.9.9')).toEqual({ host: '9.9.9.9', port: 53 })
    expect(parseServer('[::1]:5353')).toEqual({ host: '::1', port: 5353 })
    expect(parseServer('::1')).toEqual({ host: '::1', port: 53 })
    expect(() => createResolver(['127.0.0.1:5353', '9.9.9.9', '[::1]:53'])).not.toThrow()
  })

  test('lookups go to the configured server and port', async () => {
    const { dns_servers } = loadConfig({ env: { MAILROOM_DNS_SERVERS: dns.server } })
    expect(await createResolver(dns_servers).resolve4('example.com')).toEqual(['127.0.0.5'])
    const resolver = createResolver(dns_servers)
    // TXT records keep their boundaries: two records, the second made of two strings.
    expect(await resolver.resolve('example.com', 'TXT')).toEqual([['v=spf1 ip4:127.0.0.2 ~all'], ['site-', 'verification=1']])
    expect(await resolver.resolve('bounces.example.com', 'CNAME')).toEqual(['mailroom.test'])
    await expect(resolver.resolve('nowhere.example.com', 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' })
    await expect(resolver.resolve('bounces.example.com', 'TXT')).rejects.toMatchObject({ code: 'ENODATA' })
  })

  test('a server that does not answer is skipped for the next one', async () => {
    const closed = await startDnsServer()
    await closed.close()
    expect(await createResolver([closed.server, dns.server]).resolve('example.com', 'TXT')).toHaveLength(2)
    await expect(createResolver([closed.server]).resolve('example.com', 'TXT')).rejects.toMatchObject({ code: 'ECONNREFUSED' })
  })

  test('the resolver answers in node:dns shapes: addresses with TTLs, MX, a null MX, TXT records apart, PTR', async () => {
    const resolver = createResolver([dns.server])
    expect(await resolver.resolve4('example.com', { ttl: true })).toEqual([{ address: '127.0.0.5', ttl: 120 }])
    expect(await resolver.resolve6('mail.example.com')).toEqual(['::1'])
    expect(await resolver.resolveMx('mail.example.com')).toEqual([{ exchange: 'mx1.example.com', priority: 10 }])
    expect(await resolver.resolveMx('nomail.example.com')).toEqual([{ exchange: '', priority: 0 }])
    expect(await resolver.resolve('example.com', 'TXT')).toEqual([['v=spf1 ip4:127.0.0.2 ~all'], ['site-', 'verification=1']])
    expect(await resolver.reverse('127.0.0.5')).toEqual(['mx1.example.com'])
    await expect(resolver.resolveMx('nowhere.example.com')).rejects.toMatchObject({ code: 'ENOTFOUND' })
    await expect(resolver.resolveMx('example.com')).rejects.toMatchObject({ code: 'ENODATA' })
    await expect(resolver.resolve('example.com', 'SOA')).rejects.toMatchObject({ code: 'ENOTIMP' })
  })

  test('a nameserver with nothing listening fails at once with ECONNREFUSED (not a timeout), and the next one answers', async () => {
    const closed = await startDnsServer()
    await closed.close()
    // The resolver waits 3 s twice for a silent server, beyond the test's 5 s: only a refusal heard at once ends this lookup in time.
    const resolver = createResolver([closed.server])
    await expect(resolver.resolveMx('mail.example.com')).rejects.toMatchObject({ code: 'ECONNREFUSED' })
    expect(await createResolver([closed.server, dns.server]).resolveMx('mail.example.com')).toEqual([{ exchange: 'mx1.example.com', priority: 10 }])
  })

  test('an answer with our ID but another question is not taken (RFC 5452 9.1)', async () => {
    // A server that answers every query with its ID, but for another name: what a spoofer guessing the ID would send.
    const socket = dgram.createSocket('udp4')
    socket.on('message', (msg, from) => {
      const query = packet.decode(msg)
      const forged = packet.encode({
        type: 'response',
        id: query.id,
        flags: packet.RECURSION_DESIRED,
        questions: [{ type: 'A', name: 'elsewhere.example', class: 'IN' }],
        answers: [{ type: 'A', name: 'elsewhere.example', ttl: 60, data: '192.0.2.66' }],
      })
      socket.send(forged, from.port, from.address)
    })
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
    try {
      const server = `127.0.0.1:${socket.address().port}`
      await expect(queryRecords([server], 'example.com', 'A', { timeout: 300, tries: 1 })).rejects.toMatchObject({ code: 'ETIMEOUT' })
    } finally {
      socket.close()
    }
  })
})
