import { randomInt } from 'node:crypto'
import dgram from 'node:dgram'
import { getServers } from 'node:dns'
import net from 'node:net'

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

const TYPE_CODES: Record<DnsQueryType, number> = { TXT: 16, CNAME: 5 }
const EDNS_UDP_SIZE = 1232 // RFC 6891 OPT; the size the DNS flag day 2020 settled on
const MAX_POINTER_HOPS = 64

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
  const labels = name.replace(/\.$/, '').split('.')
  const qname = Buffer.concat([...labels.map((l) => Buffer.concat([Buffer.from([Buffer.byteLength(l)]), Buffer.from(l)])), Buffer.from([0])])
  const header = Buffer.alloc(12)
  header.writeUInt16BE(id, 0)
  header.writeUInt16BE(0x0100, 2) // RD: the server recurses for us
  header.writeUInt16BE(1, 4) // QDCOUNT
  header.writeUInt16BE(1, 10) // ARCOUNT: the OPT record
  const question = Buffer.alloc(4)
  question.writeUInt16BE(TYPE_CODES[type], 0)
  question.writeUInt16BE(1, 2) // IN
  const opt = Buffer.from([0, 0, 41, EDNS_UDP_SIZE >> 8, EDNS_UDP_SIZE & 0xff, 0, 0, 0, 0, 0, 0])
  return Buffer.concat([header, qname, question, opt])
}

/** Reads a possibly compressed name (RFC 1035 section 4.1.4); returns it and the offset after it. */
function readName(buf: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = []
  let pos = offset
  let next = -1
  for (let hops = 0; hops < MAX_POINTER_HOPS; hops++) {
    const len = buf[pos]
    if (len === undefined) throw new Error('truncated name')
    if ((len & 0xc0) === 0xc0) {
      if (next < 0) next = pos + 2
      pos = ((len & 0x3f) << 8) | buf[pos + 1]!
      continue
    }
    if (len === 0) return { name: labels.join('.'), next: next < 0 ? pos + 1 : next }
    labels.push(buf.toString('latin1', pos + 1, pos + 1 + len))
    pos += 1 + len
  }
  throw new Error('name compression loop')
}

interface Decoded {
  rcode: number
  truncated: boolean
  /** Records of the asked type, in answer order: TXT -> its strings; CNAME -> [target]. */
  records: string[][]
}

function decodeResponse(buf: Buffer, id: number, type: DnsQueryType): Decoded | null {
  if (buf.length < 12 || buf.readUInt16BE(0) !== id) return null
  const flags = buf.readUInt16BE(2)
  if ((flags & 0x8000) === 0) return null
  const qd = buf.readUInt16BE(4)
  const an = buf.readUInt16BE(6)
  let pos = 12
  for (let i = 0; i < qd; i++) pos = readName(buf, pos).next + 4
  const records: string[][] = []
  for (let i = 0; i < an; i++) {
    pos = readName(buf, pos).next
    const rtype = buf.readUInt16BE(pos)
    const rdlength = buf.readUInt16BE(pos + 8)
    const rdata = pos + 10
    if (rdata + rdlength > buf.length) throw new Error('truncated record')
    if (rtype === TYPE_CODES[type]) {
      if (type === 'TXT') {
        // RFC 1035 section 3.3.14: one or more <character-string>s, each a length byte and data.
        const strings: string[] = []
        for (let p = rdata; p < rdata + rdlength;) {
          const len = buf[p]!
          strings.push(buf.toString('utf8', p + 1, p + 1 + len))
          p += 1 + len
        }
        records.push(strings)
      } else {
        records.push([readName(buf, rdata).name])
      }
    }
    pos = rdata + rdlength
  }
  return { rcode: flags & 0x0f, truncated: (flags & 0x0200) !== 0, records }
}

function udpExchange(server: Server, query: Buffer, id: number, type: DnsQueryType, timeout: number): Promise<Decoded> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIPv6(server.host) ? 'udp6' : 'udp4')
    let settled = false
    const done = (fn: () => void) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.close()
      fn()
    }
    const timer = setTimeout(() => done(() => reject(Object.assign(new Error('timeout'), { code: 'ETIMEOUT' }))), timeout)
    socket.on('error', (err) => done(() => reject(err)))
    socket.on('message', (msg) => {
      let decoded: Decoded | null = null
      try {
        decoded = decodeResponse(msg, id, type)
      } catch (err) {
        return done(() => reject(err))
      }
      if (decoded) done(() => resolve(decoded))
    })
    // A connected socket hears ICMP port-unreachable, so a closed port fails at once (ECONNREFUSED).
    socket.connect(server.port, server.host, () => socket.send(query))
  })
}

function tcpExchange(server: Server, query: Buffer, id: number, type: DnsQueryType, timeout: number): Promise<Decoded> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, server.host)
    let buffered = Buffer.alloc(0)
    let settled = false
    const done = (fn: () => void) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      fn()
    }
    const timer = setTimeout(() => done(() => reject(Object.assign(new Error('timeout'), { code: 'ETIMEOUT' }))), timeout)
    socket.on('error', (err) => done(() => reject(err)))
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
        done(() => (decoded ? resolve(decoded) : reject(new Error('unexpected answer'))))
      } catch (err) {
        done(() => reject(err))
      }
    })
    socket.on('end', () => done(() => reject(Object.assign(new Error('connection closed'), { code: 'ECONNREFUSED' }))))
  })
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
