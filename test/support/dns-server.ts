/**
 * A real authoritative DNS server on loopback for end-to-end tests of the delivery engine.
 *
 * The server resolves through its own DNS client (src/lib/dns-query.ts) pointed at
 * MAILROOM_DNS_SERVERS, so tests start this server and pass `127.0.0.1:<port>`. It answers A,
 * AAAA, MX, TXT, PTR and CNAME from a plain object of zones, over UDP and TCP on the same port
 * (a resolver asks again over TCP when a UDP answer comes back truncated, which long DKIM TXT
 * records can cause).
 *
 *   - a name absent from the zones: NXDOMAIN (RFC 1035 RCODE 3)
 *   - a name present without records of the asked type: NOERROR with no answers (NODATA)
 *   - a null MX (RFC 7505) is written `MX: [NULL_MX]`, i.e. `MX 0 .`
 *   - a CNAME is followed inside the zones, as an authoritative server does
 *
 * Encoding/decoding is dns-packet; the sockets are node:dgram and node:net.
 */
import dgram from 'node:dgram'
import net from 'node:net'
import * as packet from 'dns-packet'
import type { AddressInfo } from 'node:net'
import { reverseName } from '../../src/lib/dns'

export { reverseName }

export interface MxRecord {
  exchange: string
  priority: number
}

/** The records of one name. TXT: a string is split into 255-byte strings; an array gives the strings as-is. */
export interface ZoneRecords {
  A?: string[]
  AAAA?: string[]
  MX?: MxRecord[]
  TXT?: (string | string[])[]
  CNAME?: string
  /** Reverse names (`4.3.2.1.in-addr.arpa`: use `reverseName`) to host names, for FCrDNS checks. */
  PTR?: string[]
}

/** Names (case-insensitive, trailing dot optional) to their records. */
export type Zones = Record<string, ZoneRecords>

/** RFC 7505 null MX: "this domain accepts no mail". */
export const NULL_MX: MxRecord = { exchange: '.', priority: 0 }

export interface DnsQueryLog {
  name: string
  type: string
  transport: 'udp' | 'tcp'
}

export interface DnsServerOptions {
  /** Loopback address to bind (default 127.0.0.1). */
  address?: string
  /** 0 picks a free port (the same one for UDP and TCP). */
  port?: number
  zones?: Zones
  /**
   * TTL put on every answer (default 0). The resolver caches by TTL (c-ares query cache; seen
   * under Bun 1.4.5: a Resolver kept answering an old MX for ttl 60 after setZone), so 0 lets a
   * test change a zone and be heard at once.
   */
  ttl?: number
}

export interface DnsServer {
  address: string
  port: number
  /** `address:port`, ready for Resolver.setServers or MAILROOM_DNS_SERVERS. */
  server: string
  /** Every question received, in order. */
  queries: DnsQueryLog[]
  /** Replaces the records of one name; `undefined` removes the name (it becomes NXDOMAIN). */
  setZone(name: string, records: ZoneRecords | undefined): void
  /** Replaces all zones. */
  setZones(zones: Zones): void
  /** Publishes a sending domain's `dns_records` (TXT and CNAME, as the API lists them), records of one name together. */
  publishRecords(records: Array<{ type: string; name: string; value: string }>): void
  close(): Promise<void>
}

const UDP_DEFAULT_LIMIT = 512 // RFC 1035 4.2.1, without EDNS
const MAX_CNAME_HOPS = 8

function normalise(name: string): string {
  return name.toLowerCase().replace(/\.+$/, '')
}

/** Splits a TXT value into <=255-byte character-strings (RFC 1035 3.3.14; RFC 6376 3.6.2.2 for DKIM). */
function txtStrings(value: string | string[]): Buffer[] {
  if (Array.isArray(value)) return value.map((s) => Buffer.from(s))
  const bytes = Buffer.from(value)
  if (bytes.length === 0) return [bytes]
  const out: Buffer[] = []
  for (let i = 0; i < bytes.length; i += 255) out.push(bytes.subarray(i, i + 255))
  return out
}

function answersFor(zones: Map<string, ZoneRecords>, name: string, type: string, ttl: number) {
  const answers: packet.Answer[] = []
  let current = normalise(name)
  for (let hop = 0; hop <= MAX_CNAME_HOPS; hop++) {
    const records = zones.get(current)
    if (!records) return { exists: hop > 0, answers }
    if (records.CNAME && type !== 'CNAME') {
      answers.push({ type: 'CNAME', name: current, ttl, class: 'IN', data: records.CNAME })
      current = normalise(records.CNAME)
      continue
    }
    switch (type) {
      case 'A':
        for (const ip of records.A ?? []) answers.push({ type: 'A', name: current, ttl, class: 'IN', data: ip })
        break
      case 'AAAA':
        for (const ip of records.AAAA ?? []) answers.push({ type: 'AAAA', name: current, ttl, class: 'IN', data: ip })
        break
      case 'MX':
        for (const mx of records.MX ?? [])
          answers.push({ type: 'MX', name: current, ttl, class: 'IN', data: { preference: mx.priority, exchange: mx.exchange } })
        break
      case 'TXT':
        for (const txt of records.TXT ?? []) answers.push({ type: 'TXT', name: current, ttl, class: 'IN', data: txtStrings(txt) })
        break
      case 'PTR':
        for (const host of records.PTR ?? []) answers.push({ type: 'PTR', name: current, ttl, class: 'IN', data: host })
        break
      case 'CNAME':
        if (records.CNAME) answers.push({ type: 'CNAME', name: current, ttl, class: 'IN', data: records.CNAME })
        break
    }
    return { exists: true, answers }
  }
  return { exists: true, answers }
}

/** Starts a DNS server on loopback (UDP + TCP, same port) answering from `zones`. */
export async function startDnsServer(options: DnsServerOptions = {}): Promise<DnsServer> {
  const { address = '127.0.0.1', port = 0, ttl = 0 } = options
  const zones = new Map<string, ZoneRecords>()
  const queries: DnsQueryLog[] = []
  const setZones = (all: Zones) => {
    zones.clear()
    for (const [name, records] of Object.entries(all)) zones.set(normalise(name), records)
  }
  setZones(options.zones ?? {})

  /** Builds the response to one query, or null when the query cannot be parsed. */
  function respond(message: Buffer, transport: 'udp' | 'tcp'): Buffer | null {
    let query: packet.Packet
    try {
      query = packet.decode(message)
    } catch {
      return null
    }
    const question = query.questions?.[0]
    const base = {
      id: query.id,
      type: 'response' as const,
      // QR + AA + RD echoed; RA is not claimed since we do not recurse.
      flags: packet.AUTHORITATIVE_ANSWER | ((query.flags ?? 0) & packet.RECURSION_DESIRED),
      questions: query.questions ?? [],
    }
    if (!question) return packet.encode({ ...base, flags: base.flags | 1 /* FORMERR */ })
    queries.push({ name: question.name, type: question.type, transport })
    const { exists, answers } = answersFor(zones, question.name, question.type, ttl)
    const rcode = exists ? 0 : 3 // NOERROR / NXDOMAIN
    let response = packet.encode({ ...base, flags: base.flags | rcode, answers })
    if (transport === 'udp') {
      // Respect the client's UDP size (EDNS0 OPT, RFC 6891) and set TC so it retries over TCP.
      const opt = query.additionals?.find((a) => a.type === 'OPT') as { udpPayloadSize?: number } | undefined
      const limit = Math.max(UDP_DEFAULT_LIMIT, opt?.udpPayloadSize ?? 0)
      if (response.length > limit) {
        response = packet.encode({ ...base, flags: base.flags | packet.TRUNCATED_RESPONSE | rcode, answers: [] })
      }
    }
    return response
  }

  const createUdp = () => {
    const socket = dgram.createSocket('udp4')
    socket.on('message', (message, remote) => {
      const response = respond(message, 'udp')
      if (response) socket.send(response, remote.port, remote.address)
    })
    return socket
  }

  const sockets = new Set<net.Socket>()
  const tcp = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    // RFC 1035 4.2.2: each message is preceded by a two-byte length.
    let buffered = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk])
      while (buffered.length >= 2) {
        const length = buffered.readUInt16BE(0)
        if (buffered.length < 2 + length) break
        const message = buffered.subarray(2, 2 + length)
        buffered = buffered.subarray(2 + length)
        const response = respond(message, 'tcp')
        if (!response) return socket.destroy()
        const framed = Buffer.alloc(2 + response.length)
        framed.writeUInt16BE(response.length, 0)
        response.copy(framed, 2)
        socket.write(framed)
      }
    })
  })

  const bindUdp = (socket: dgram.Socket, p: number) =>
    new Promise<number>((resolve, reject) => {
      socket.once('error', reject)
      socket.bind(p, address, () => {
        socket.off('error', reject)
        socket.on('error', () => {})
        resolve(socket.address().port)
      })
    })
  const listenTcp = (p: number) =>
    new Promise<void>((resolve, reject) => {
      tcp.once('error', reject)
      tcp.listen(p, address, () => {
        tcp.off('error', reject)
        resolve()
      })
    })

  // UDP picks the port and TCP must get the same one; with port 0 that TCP port may be taken
  // by someone else, so try again with a fresh UDP socket a few times.
  let udp: dgram.Socket | undefined
  let bound = 0
  for (let attempt = 0; !udp; attempt++) {
    const candidate = createUdp()
    bound = await bindUdp(candidate, port)
    try {
      await listenTcp(bound)
      udp = candidate
    } catch (err) {
      await new Promise<void>((resolve) => candidate.close(() => resolve()))
      if (port !== 0 || attempt >= 9) throw err
    }
  }
  const udpSocket = udp

  return {
    address: (tcp.address() as AddressInfo).address,
    port: bound,
    server: `${address}:${bound}`,
    queries,
    setZone(name, records) {
      if (records) zones.set(normalise(name), records)
      else zones.delete(normalise(name))
    },
    setZones,
    publishRecords(records) {
      const byName = new Map<string, ZoneRecords>()
      for (const r of records) {
        const entry = byName.get(r.name) ?? {}
        if (r.type === 'TXT') (entry.TXT ??= []).push(r.value)
        if (r.type === 'CNAME') entry.CNAME = r.value
        byName.set(r.name, entry)
      }
      for (const [name, rr] of byName) zones.set(normalise(name), rr)
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await Promise.all([new Promise<void>((resolve) => tcp.close(() => resolve())), new Promise<void>((resolve) => udpSocket.close(() => resolve()))])
    },
  }
}
