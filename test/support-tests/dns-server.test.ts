import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { promises as dns } from 'node:dns'
import net from 'node:net'
import * as packet from 'dns-packet'
import dgram from 'node:dgram'
import { NULL_MX, startDnsServer, type DnsServer } from '../support/dns-server.ts'

/** Sends one raw UDP query and decodes the reply, to check what is on the wire. */
async function queryWire(name: string, type: 'A' | 'MX' | 'TXT'): Promise<packet.Packet & { rcode?: string }> {
  const socket = dgram.createSocket('udp4')
  try {
    const reply = await new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no UDP answer')), 2000)
      socket.once('message', (message) => {
        clearTimeout(timer)
        resolve(message)
      })
      socket.send(packet.encode({ type: 'query', id: 9, questions: [{ type, name }] }), server.port, server.address)
    })
    return packet.decode(reply)
  } finally {
    socket.close()
  }
}

// Queried with node's own resolver pointed at the server, exactly as the engine will resolve
// with MAILROOM_DNS_SERVERS.

const longDkim = 'v=DKIM1; k=rsa; p=' + 'A'.repeat(392) // about the size of a 2048-bit key

let server: DnsServer
let resolver: dns.Resolver

beforeAll(async () => {
  server = await startDnsServer({
    zones: {
      'example.test': {
        MX: [
          { exchange: 'mx2.example.test', priority: 20 },
          { exchange: 'mx1.example.test', priority: 10 },
        ],
        TXT: ['v=spf1 ip4:127.0.0.2 -all'],
      },
      'mx1.example.test': { A: ['127.0.0.2'], AAAA: ['::1'] },
      'mx2.example.test': { A: ['127.0.0.3'] },
      'nomail.test': { MX: [NULL_MX] },
      'bare.test': { A: ['127.0.0.4'] },
      'alias.test': { CNAME: 'mx1.example.test' },
      's1._domainkey.example.test': { TXT: [longDkim] },
    },
  })
  resolver = new dns.Resolver({ timeout: 2000, tries: 1 })
  resolver.setServers([server.server])
})
afterAll(async () => {
  await server.close()
})

describe('dns server', () => {
  test('answers MX with priorities', async () => {
    const mx = await resolver.resolveMx('example.test')
    expect(mx.sort((a, b) => a.priority - b.priority)).toEqual([
      { exchange: 'mx1.example.test', priority: 10 },
      { exchange: 'mx2.example.test', priority: 20 },
    ])
  })

  test('answers A, AAAA and TXT', async () => {
    expect(await resolver.resolve4('mx1.example.test')).toEqual(['127.0.0.2'])
    expect(await resolver.resolve6('mx1.example.test')).toEqual(['::1'])
    expect(await resolver.resolveTxt('example.test')).toEqual([['v=spf1 ip4:127.0.0.2 -all']])
  })

  test('names are case-insensitive', async () => {
    expect(await resolver.resolve4('MX1.Example.TEST')).toEqual(['127.0.0.2'])
  })

  test('a long TXT value is one record of 255-byte strings that join to the value', async () => {
    const wire = await queryWire('s1._domainkey.example.test', 'TXT')
    expect(wire.answers).toHaveLength(1)
    const strings = (wire.answers![0] as { data: Buffer[] }).data
    expect(strings.map((b) => b.length)).toEqual([255, longDkim.length - 255])
    // Node returns [[s1, s2]]; Bun 1.4.5 returns [[s1], [s2]] (one entry per string, not per
    // record). Joining everything is right under both while the name has a single TXT record.
    const txt = await resolver.resolveTxt('s1._domainkey.example.test')
    expect(txt.flat().join('')).toBe(longDkim)
  })

  test('null MX (RFC 7505) is MX 0 "."', async () => {
    const mx = await resolver.resolveMx('nomail.test')
    expect(mx).toHaveLength(1)
    expect(mx[0]!.priority).toBe(0)
    expect(['', '.']).toContain(mx[0]!.exchange)
  })

  test('unknown names are NXDOMAIN; known names without the type are NODATA', async () => {
    const nx = await queryWire('unknown.test', 'MX')
    expect(nx.rcode).toBe('NXDOMAIN')
    const nodata = await queryWire('bare.test', 'MX')
    expect(nodata.rcode).toBe('NOERROR')
    expect(nodata.answers).toHaveLength(0)

    await expect(resolver.resolveMx('unknown.test')).rejects.toMatchObject({ code: 'ENOTFOUND' })
    // Node says ENODATA for NODATA; Bun 1.4.5 says ENOTFOUND for both (the wire differs, above).
    const nodataError = await resolver.resolveMx('bare.test').then(
      () => null,
      (err: NodeJS.ErrnoException) => err.code,
    )
    expect(nodataError ?? 'resolved').toMatch(/^(ENODATA|ENOTFOUND)$/)
    // An A-only domain: no MX (the engine falls back to A, RFC 5321 5.1), but A resolves.
    expect(await resolver.resolve4('bare.test')).toEqual(['127.0.0.4'])
  })

  test('CNAME is followed', async () => {
    expect(await resolver.resolve4('alias.test')).toEqual(['127.0.0.2'])
    expect(await resolver.resolveCname('alias.test')).toEqual(['mx1.example.test'])
  })

  test('setZone changes answers at run time and removes names', async () => {
    server.setZone('late.test', { MX: [{ exchange: 'mx1.example.test', priority: 5 }] })
    expect(await resolver.resolveMx('late.test')).toEqual([{ exchange: 'mx1.example.test', priority: 5 }])
    server.setZone('late.test', undefined)
    await expect(resolver.resolveMx('late.test')).rejects.toMatchObject({ code: 'ENOTFOUND' })
    expect(server.queries.some((q) => q.name === 'late.test' && q.type === 'MX')).toBe(true)
  })

  test('answers over TCP with the two-byte length framing', async () => {
    const query = packet.encode({ type: 'query', id: 4242, flags: packet.RECURSION_DESIRED, questions: [{ type: 'MX', name: 'example.test' }] })
    const framed = Buffer.concat([Buffer.from([query.length >> 8, query.length & 0xff]), query])
    const socket = net.connect({ host: server.address, port: server.port })
    const reply = await new Promise<Buffer>((resolve, reject) => {
      let buffered = Buffer.alloc(0)
      const timer = setTimeout(() => reject(new Error('no TCP answer')), 2000)
      socket.on('error', reject)
      socket.on('connect', () => socket.write(framed))
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk])
        if (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
          clearTimeout(timer)
          resolve(buffered.subarray(2, 2 + buffered.readUInt16BE(0)))
        }
      })
    }).finally(() => socket.destroy())
    const decoded = packet.decode(reply)
    expect(decoded.id).toBe(4242)
    expect(decoded.answers?.map((a) => (a.type === 'MX' ? a.data.exchange : null)).sort()).toEqual(['mx1.example.test', 'mx2.example.test'])
    expect(server.queries.some((q) => q.transport === 'tcp')).toBe(true)
  })

  test('a UDP answer too big for the client is truncated, and the resolver retries over TCP', async () => {
    const many = Array.from({ length: 40 }, (_, i) => `127.0.1.${i + 1}`)
    server.setZone('big.test', { A: many, TXT: Array.from({ length: 12 }, (_, i) => `record-${i}-` + 'x'.repeat(200)) })
    const before = server.queries.length
    const txt = await resolver.resolveTxt('big.test')
    expect(txt).toHaveLength(12)
    const asked = server.queries.slice(before).filter((q) => q.name === 'big.test')
    expect(asked.map((q) => q.transport)).toContain('udp')
    expect(asked.map((q) => q.transport)).toContain('tcp')
  })
})
