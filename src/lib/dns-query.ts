import { randomInt } from 'node:crypto'
import dgram from 'node:dgram'
import type { EventEmitter } from 'node:events'
import { getServers } from 'node:dns'
import net from 'node:net'
import packet from 'dns-packet'

/**
 * The server's DNS client (RFC 1035) for every question it asks: MX, A and AAAA for delivery,
 * TXT and CNAME for domain verification and MTA-STS, PTR and DNSBL lookups for the doctor.
 *
 * Why not node:dns (c-ares under Bun 1.4):
 * - `resolveTxt` loses the boundaries between TXT resource records (oven-sh/bun#21370):
 *   every <character-string> comes back as its own record, so a DKIM key split over two
 *   strings (any 2048-bit key: RFC 6376 section 3.6.2.2) looks like two records, and two
 *   records (an SPF record and a site-verification token) cannot be told from one record of
 *   two strings. Verification must join exactly the strings of one record (RFC 7208 section
 *   3.3), so it reads the answer section itself.
 * - A nameserver with nothing listening (a stopped local resolver: ICMP port unreachable)
 *   makes every query wait out its whole timeout while the event loop spins on the socket's
 *   error (oven-sh/bun#32164): 6 s of a full core per lookup with our timeout and tries, for
 *   every destination, and the server at 100 % of a core while idle (docs/benchmarks.md,
 *   ninth round). Here the connected socket hears the refusal and the next server is asked
 *   at once.
 *
 * Errors carry the codes node:dns uses (ENOTFOUND for NXDOMAIN, ENODATA for a name without
 * records of the type, ESERVFAIL, EREFUSED, ETIMEOUT, ECONNREFUSED), so callers treat both alike.
 */

export type DnsQueryType = 'A' | 'AAAA' | 'MX' | 'TXT' | 'CNAME' | 'PTR' | 'NS'

/** What one record of each type holds, in node:dns's shapes: TXT keeps its strings apart. */
export interface RecordData {
  A: string
  AAAA: string
  MX: { exchange: string; priority: number }
  TXT: string[]
  CNAME: string
  PTR: string
  NS: string
}

/** One answer record with its time to live in seconds. */
export interface DnsRecord<T extends DnsQueryType> {
  data: RecordData[T]
  ttl: number
}

const QUERY_TYPES: ReadonlySet<string> = new Set<DnsQueryType>(['A', 'AAAA', 'MX', 'TXT', 'CNAME', 'PTR', 'NS'])

/** Whether `type` is a record type this client asks for. */
export function isQueryType(type: string): type is DnsQueryType {
  return QUERY_TYPES.has(type)
}

export interface DnsQueryOptions {
  /** Per-attempt timeout in ms (default 3000, as createResolver). */
  timeout?: number
  /** Attempts per server (default 2). */
  tries?: number
}

const EDNS_UDP_SIZE = 1232 // RFC 6891 OPT; the size the DNS flag day 2020 settled on

/** An error shaped like node:dns errors (`code`, `hostname`). */
export class DnsQueryError extends Error {
  constructor(
    readonly code: string,
    readonly hostname: string,
    message: string,
  ) {
    super(message)
    this.name = 'DnsQueryError'
  }
}

interface Server {
  host: string
  port: number
}

/** Parses `ADDRESS`, `IPV4:PORT` or `[IPV6]:PORT` (the forms of the dns_servers setting and dns.getServers()). */
export function parseServer(entry: string): Server {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry)
  if (bracketed) return { host: bracketed[1]!, port: Number(bracketed[2] ?? 53) }
  if (net.isIP(entry)) return { host: entry, port: 53 }
  const colon = entry.lastIndexOf(':')
  return { host: entry.slice(0, colon), port: Number(entry.slice(colon + 1)) }
}

/** A domain name without the root's trailing dot ("example.com." -> "example.com"), as node:dns gives names. */
const withoutRootDot = (name: string) => name.replace(/\.$/, '')

/** The wire form of one question with an EDNS0 OPT record (RFC 1035 section 4.1, RFC 6891). */
function encodeQuery(id: number, name: string, type: DnsQueryType): Buffer {
  return packet.encode({
    type: 'query',
    id,
    flags: packet.RECURSION_DESIRED, // the server recurses for us
    questions: [{ type, name: withoutRootDot(name), class: 'IN' }],
    additionals: [{ type: 'OPT', name: '.', udpPayloadSize: EDNS_UDP_SIZE, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }],
  })
}

interface Decoded {
  /** RFC 1035 section 4.1.1: 0 no error, 3 name error (NXDOMAIN), 5 refused. */
  rcode: number
  truncated: boolean
  /** Records of the asked type, in answer order (a CNAME chain's own records left out). */
  records: Array<DnsRecord<DnsQueryType>>
}

/** A record's data in node:dns's shape: names without the root's trailing dot. */
function dataOf(rr: packet.Answer): RecordData[DnsQueryType] {
  switch (rr.type) {
    // RFC 1035 section 3.3.14: a TXT record is one or more <character-string>s; keep them apart.
    case 'TXT':
      return (Array.isArray(rr.data) ? rr.data : [rr.data]).map((s) => s.toString())
    // RFC 7505: a null MX's exchange is the root, ".", given here as "".
    case 'MX':
      return { exchange: withoutRootDot(rr.data.exchange), priority: rr.data.preference ?? 0 }
    case 'A':
    case 'AAAA':
      return rr.data
    default:
      return withoutRootDot((rr as { data: string }).data)
  }
}

/** The question asked: its random ID, the name and the type. */
interface Question {
  id: number
  name: string
  type: DnsQueryType
}

const sameName = (a: string, b: string) => withoutRootDot(a).toLowerCase() === withoutRootDot(b).toLowerCase()

/**
 * The answer to our question (null: another packet, not a response to it); throws on a
 * malformed packet. A response must carry our ID and repeat our question (RFC 5452 section
 * 9.1: ID, question name and type, from the server asked; the socket is connected to it).
 */
function decodeResponse(buf: Buffer, q: Question): Decoded | null {
  if (buf.length < 12 || buf.readUInt16BE(0) !== q.id) return null
  const answer = packet.decode(buf)
  if (answer.type !== 'response') return null
  const asked = answer.questions?.[0]
  if (!asked || asked.type !== q.type || !sameName(asked.name, q.name)) return null
  const type = q.type
  const records: Array<DnsRecord<DnsQueryType>> = []
  for (const rr of answer.answers ?? []) if (rr.type === type) records.push({ data: dataOf(rr), ttl: rr.ttl ?? 0 })
  return { rcode: (answer.flags ?? 0) & 0x0f, truncated: answer.flag_tc, records }
}

/** How an exchange ends: once, with an answer or an error. */
interface Settle {
  resolve(answer: Decoded): void
  reject(err: unknown): void
}

/**
 * One query over a socket, settled once: by `start`'s listeners, a socket error or the
 * timeout (ETIMEOUT), whichever comes first; the socket is closed then.
 */
function exchange(socket: EventEmitter, close: () => void, timeout: number, start: (settle: Settle) => void): Promise<Decoded> {
  return new Promise((resolve, reject) => {
    let settled = false
    const done = (fn: () => void) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      close()
      fn()
    }
    const timer = setTimeout(() => done(() => reject(Object.assign(new Error('timeout'), { code: 'ETIMEOUT' }))), timeout)
    socket.on('error', (err) => done(() => reject(err)))
    start({ resolve: (answer) => done(() => resolve(answer)), reject: (err) => done(() => reject(err)) })
  })
}

function udpExchange(server: Server, query: Buffer, q: Question, timeout: number): Promise<Decoded> {
  const socket = dgram.createSocket(net.isIPv6(server.host) ? 'udp6' : 'udp4')
  return exchange(
    socket,
    () => socket.close(),
    timeout,
    (settle) => {
      socket.on('message', (msg) => {
        let decoded: Decoded | null = null
        try {
          decoded = decodeResponse(msg, q)
        } catch (err) {
          return settle.reject(err)
        }
        if (decoded) settle.resolve(decoded)
      })
      // A connected socket hears ICMP port-unreachable, so a closed port fails at once (ECONNREFUSED).
      socket.connect(server.port, server.host, () => socket.send(query))
    },
  )
}

function tcpExchange(server: Server, query: Buffer, q: Question, timeout: number): Promise<Decoded> {
  const socket = net.connect(server.port, server.host)
  let buffered = Buffer.alloc(0)
  return exchange(
    socket,
    () => socket.destroy(),
    timeout,
    (settle) => {
      socket.on('connect', () => {
        // RFC 1035 section 4.2.2: a two-byte length before the message.
        const length = Buffer.alloc(2)
        length.writeUInt16BE(query.length)
        socket.write(Buffer.concat([length, query]))
      })
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk])
        if (buffered.length < 2 || buffered.length < 2 + buffered.readUInt16BE(0)) return
        try {
          const decoded = decodeResponse(buffered.subarray(2, 2 + buffered.readUInt16BE(0)), q)
          if (decoded) settle.resolve(decoded)
          else settle.reject(new Error('unexpected answer'))
        } catch (err) {
          settle.reject(err)
        }
      })
      socket.on('end', () => settle.reject(Object.assign(new Error('connection closed'), { code: 'ECONNREFUSED' })))
    },
  )
}

/**
 * Asks the servers (the dns_servers setting; empty = the system's) for the records of one
 * type, with their TTLs. Servers are tried in order; a timeout, refusal or SERVFAIL moves on
 * to the next one. A truncated answer is asked again over TCP (RFC 7766 section 5).
 */
export async function queryRecords<T extends DnsQueryType>(
  servers: readonly string[],
  name: string,
  type: T,
  options: DnsQueryOptions = {},
): Promise<Array<DnsRecord<T>>> {
  const { timeout = 3000, tries = 2 } = options
  const list = (servers.length ? servers : getServers()).map(parseServer)
  let last: DnsQueryError = new DnsQueryError('ESERVFAIL', name, `query${type} ESERVFAIL ${name}: no DNS server`)
  for (const server of list) {
    for (let attempt = 0; attempt < tries; attempt++) {
      const q: Question = { id: randomInt(0, 0x10000), name, type }
      const query = encodeQuery(q.id, name, type)
      let answer: Decoded
      try {
        answer = await udpExchange(server, query, q, timeout)
        if (answer.truncated) answer = await tcpExchange(server, query, q, timeout)
      } catch (err) {
        const code = (err as { code?: string }).code ?? 'EBADRESP'
        last = new DnsQueryError(
          code,
          name,
          `query${type} ${code} ${name}${(err as Error).message && code === 'EBADRESP' ? `: ${(err as Error).message}` : ''}`,
        )
        // A refused connection will not be accepted on a retry: next server.
        if (code === 'ECONNREFUSED') break
        continue
      }
      if (answer.rcode === 3) throw new DnsQueryError('ENOTFOUND', name, `query${type} ENOTFOUND ${name}`)
      if (answer.rcode === 0) {
        if (answer.records.length === 0) throw new DnsQueryError('ENODATA', name, `query${type} ENODATA ${name}`)
        return answer.records as Array<DnsRecord<T>>
      }
      const code = answer.rcode === 5 ? 'EREFUSED' : 'ESERVFAIL'
      last = new DnsQueryError(code, name, `query${type} ${code} ${name}`)
      break
    }
  }
  throw last
}
