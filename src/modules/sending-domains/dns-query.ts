import { randomInt } from 'node:crypto'
import dgram from 'node:dgram'
import type { EventEmitter } from 'node:events'
import { getServers } from 'node:dns'
import net from 'node:net'
import packet from 'dns-packet'

/**
 * A minimal DNS client (RFC 1035) for TXT and CNAME questions.
 *
 * Why not node:dns: under Bun 1.4 `resolveTxt` loses the boundaries between TXT resource
 * records (oven-sh/bun#21370): every <character-string> comes back as its own record, so a
 * DKIM key split over two strings (any 2048-bit key: RFC 6376 section 3.6.2.2) looks like two
 * records, and two records (an SPF record and a site-verification token) cannot be told from
 * one record of two strings. Verification must join exactly the strings of one record
 * (RFC 7208 section 3.3), so it reads the answer section itself.
 *
 * Errors carry the codes node:dns uses (ENOTFOUND for NXDOMAIN, ENODATA for a name without
 * records of the type, ESERVFAIL, EREFUSED, ETIMEOUT, ECONNREFUSED), so callers treat both alike.
 */

export type DnsQueryType = 'TXT' | 'CNAME'

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

/** The wire form of one question with an EDNS0 OPT record (RFC 1035 section 4.1, RFC 6891). */
function encodeQuery(id: number, name: string, type: DnsQueryType): Buffer {
  return packet.encode({
    type: 'query',
    id,
    flags: packet.RECURSION_DESIRED, // the server recurses for us
    questions: [{ type, name: name.replace(/\.$/, ''), class: 'IN' }],
    additionals: [{ type: 'OPT', name: '.', udpPayloadSize: EDNS_UDP_SIZE, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }],
  })
}

interface Decoded {
  /** RFC 1035 section 4.1.1: 0 no error, 3 name error (NXDOMAIN), 5 refused. */
  rcode: number
  truncated: boolean
  /** Records of the asked type, in answer order: TXT -> its strings; CNAME -> [target]. */
  records: string[][]
}

/** The answer to our query (null: another packet, not a response to `id`); throws on a malformed packet. */
function decodeResponse(buf: Buffer, id: number, type: DnsQueryType): Decoded | null {
  if (buf.length < 12 || buf.readUInt16BE(0) !== id) return null
  const answer = packet.decode(buf)
  if (answer.type !== 'response') return null
  const records: string[][] = []
  for (const rr of answer.answers ?? []) {
    if (rr.type !== type) continue
    // RFC 1035 section 3.3.14: a TXT record is one or more <character-string>s; keep them apart.
    if (rr.type === 'TXT') records.push((Array.isArray(rr.data) ? rr.data : [rr.data]).map((s) => s.toString()))
    else if (rr.type === 'CNAME') records.push([rr.data])
  }
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

function udpExchange(server: Server, query: Buffer, id: number, type: DnsQueryType, timeout: number): Promise<Decoded> {
  const socket = dgram.createSocket(net.isIPv6(server.host) ? 'udp6' : 'udp4')
  return exchange(
    socket,
    () => socket.close(),
    timeout,
    (settle) => {
      socket.on('message', (msg) => {
        let decoded: Decoded | null = null
        try {
          decoded = decodeResponse(msg, id, type)
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

function tcpExchange(server: Server, query: Buffer, id: number, type: DnsQueryType, timeout: number): Promise<Decoded> {
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
          const decoded = decodeResponse(buffered.subarray(2, 2 + buffered.readUInt16BE(0)), id, type)
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
 * Asks the servers (the dns_servers setting; empty = the system's) for the TXT or CNAME
 * records of `name`. TXT answers are one array of strings per resource record, as node's
 * resolveTxt documents; join a record's strings to get its value. Servers are tried in
 * order; a timeout, refusal or SERVFAIL moves on to the next one.
 */
export async function queryDns(servers: readonly string[], name: string, type: DnsQueryType, options: DnsQueryOptions = {}): Promise<string[][]> {
  const { timeout = 3000, tries = 2 } = options
  const list = (servers.length ? servers : getServers()).map(parseServer)
  let last: DnsQueryError = new DnsQueryError('ESERVFAIL', name, `query${type} ESERVFAIL ${name}: no DNS server`)
  for (const server of list) {
    for (let attempt = 0; attempt < tries; attempt++) {
      const id = randomInt(0, 0x10000)
      const query = encodeQuery(id, name, type)
      let answer: Decoded
      try {
        answer = await udpExchange(server, query, id, type, timeout)
        if (answer.truncated) answer = await tcpExchange(server, query, id, type, timeout)
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
        return answer.records
      }
      const code = answer.rcode === 5 ? 'EREFUSED' : 'ESERVFAIL'
      last = new DnsQueryError(code, name, `query${type} ${code} ${name}`)
      break
    }
  }
  throw last
}

/** TXT records of a name, each record's strings joined (RFC 7208 section 3.3, RFC 6376 section 3.6.2.2). */
export async function queryTxt(servers: readonly string[], name: string, options?: DnsQueryOptions): Promise<string[]> {
  return (await queryDns(servers, name, 'TXT', options)).map((strings) => strings.join(''))
}
