/**
 * A minimal IMAP4rev1 server (RFC 3501) for testing the feedback-loop poller with imapflow
 * over a real socket. It implements only what that flow needs: CAPABILITY, LOGIN, NAMESPACE,
 * LIST/LSUB (one mailbox), SELECT/EXAMINE, UID SEARCH UNSEEN (and ALL), UID FETCH of BODY[] / BODY.PEEK[], UID STORE
 * +FLAGS(.SILENT), NOOP, LOGOUT. Anything else gets a tagged BAD, and is recorded so a
 * test sees what the client tried. Plain TCP only (no STARTTLS advertised).
 *
 * No maintained IMAP server package on npm fits a test dependency (hoodiecrow-imap, the
 * usual choice, depends on long-abandoned modules), so this stays small and in the tests.
 */
import net from 'node:net'
import type { AddressInfo } from 'node:net'

export interface StoredMessage {
  uid: number
  flags: Set<string>
  raw: Buffer
}

export interface ImapServer {
  port: number
  /** Every command line received (literals elided), e.g. "UID SEARCH UNSEEN". */
  commands: string[]
  messages: StoredMessage[]
  /** Appends a message to INBOX; returns its UID. */
  add(raw: string | Buffer, flags?: string[]): number
  close(): Promise<void>
}

const CAPABILITIES = 'IMAP4rev1 NAMESPACE'

/** Splits IMAP arguments: atoms, "quoted strings" (with \\ escapes), parenthesised lists kept whole. */
function parseArgs(text: string): string[] {
  const out: string[] = []
  let i = 0
  while (i < text.length) {
    if (text[i] === ' ') {
      i++
      continue
    }
    if (text[i] === '"') {
      let s = ''
      i++
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\') i++
        s += text[i++]
      }
      i++
      out.push(s)
    } else if (text[i] === '(') {
      let depth = 0
      const start = i
      do {
        if (text[i] === '(') depth++
        if (text[i] === ')') depth--
        i++
      } while (i < text.length && depth > 0)
      out.push(text.slice(start, i))
    } else {
      const start = i
      while (i < text.length && text[i] !== ' ') i++
      out.push(text.slice(start, i))
    }
  }
  return out
}

/** UID set "1,3:5,7:*" against the existing UIDs. */
function uidSet(set: string, uids: number[]): number[] {
  const max = Math.max(0, ...uids)
  const wanted = new Set<number>()
  for (const part of set.split(',')) {
    const [a, b] = part.split(':')
    const lo = a === '*' ? max : Number(a)
    const hi = b === undefined ? lo : b === '*' ? max : Number(b)
    for (const u of uids) if (u >= Math.min(lo, hi) && u <= Math.max(lo, hi)) wanted.add(u)
  }
  return uids.filter((u) => wanted.has(u))
}

export async function startImapServer(options: { user: string; pass: string; mailbox?: string }): Promise<ImapServer> {
  const mailbox = options.mailbox ?? 'INBOX'
  const messages: StoredMessage[] = []
  const commands: string[] = []
  let nextUid = 1
  const sockets = new Set<net.Socket>()

  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buffer = Buffer.alloc(0)
    let pending: { line: string; literal: number } | null = null
    let authenticated = false
    let selected = false

    const send = (text: string | Buffer) => socket.write(text)
    socket.write(`* OK [CAPABILITY ${CAPABILITIES}] test IMAP server ready\r\n`)

    const fetchLine = (m: StoredMessage, items: string[]): Buffer => {
      const seq = messages.indexOf(m) + 1
      const parts: Buffer[] = [Buffer.from(`* ${seq} FETCH (UID ${m.uid}`)]
      if (items.includes('FLAGS')) parts.push(Buffer.from(` FLAGS (${[...m.flags].join(' ')})`))
      if (items.includes('BODY[]') || items.includes('BODY.PEEK[]') || items.includes('RFC822')) {
        parts.push(Buffer.from(` BODY[] {${m.raw.length}}\r\n`), m.raw)
        if (!items.includes('BODY.PEEK[]')) m.flags.add('\\Seen')
      }
      parts.push(Buffer.from(')\r\n'))
      return Buffer.concat(parts)
    }

    const handle = (line: string) => {
      const m = /^(\S+) (\S+)(?: (.*))?$/.exec(line)
      if (!m) return send('* BAD unparsable command\r\n')
      const [, tag, rawCommand, rest = ''] = m
      let command = rawCommand!.toUpperCase()
      let args = rest
      commands.push(`${command} ${args}`.trim())
      let uid = false
      if (command === 'UID') {
        uid = true
        const sp = args.indexOf(' ')
        command = `${(sp < 0 ? args : args.slice(0, sp)).toUpperCase()}`
        args = sp < 0 ? '' : args.slice(sp + 1)
      }
      const ok = (text = `${command} completed`) => send(`${tag} OK ${text}\r\n`)
      const bad = (text: string) => send(`${tag} BAD ${text}\r\n`)
      switch (command) {
        case 'CAPABILITY':
          send(`* CAPABILITY ${CAPABILITIES}\r\n`)
          return ok()
        case 'NOOP':
          return ok()
        case 'LOGOUT':
          send('* BYE logging out\r\n')
          ok()
          return socket.end()
        case 'LOGIN': {
          const [user, pass] = parseArgs(args)
          if (user === options.user && pass === options.pass) {
            authenticated = true
            return ok(`[CAPABILITY ${CAPABILITIES}] LOGIN completed`)
          }
          return send(`${tag} NO [AUTHENTICATIONFAILED] Invalid credentials\r\n`)
        }
      }
      if (!authenticated) return bad('log in first')
      switch (command) {
        case 'NAMESPACE':
          send('* NAMESPACE (("" "/")) NIL NIL\r\n')
          return ok()
        case 'LIST':
        case 'LSUB': {
          const [, pattern = ''] = parseArgs(args)
          // LIST "" "" asks for the hierarchy delimiter (RFC 3501 section 6.3.8).
          if (pattern === '') send(`* ${command} (\\Noselect) "/" ""\r\n`)
          else if (pattern === '*' || pattern === '%' || pattern.toUpperCase() === mailbox.toUpperCase())
            send(`* ${command} (\\HasNoChildren) "/" "${mailbox}"\r\n`)
          return ok()
        }
        case 'SELECT':
        case 'EXAMINE': {
          const [name] = parseArgs(args)
          if (name?.toUpperCase() !== mailbox.toUpperCase()) return send(`${tag} NO [NONEXISTENT] no such mailbox\r\n`)
          selected = true
          send('* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)\r\n')
          send('* OK [PERMANENTFLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)] flags\r\n')
          send(`* ${messages.length} EXISTS\r\n`)
          send('* 0 RECENT\r\n')
          send('* OK [UIDVALIDITY 1] UIDs valid\r\n')
          send(`* OK [UIDNEXT ${nextUid}] next UID\r\n`)
          return ok(`[${command === 'SELECT' ? 'READ-WRITE' : 'READ-ONLY'}] ${command} completed`)
        }
      }
      if (!selected) return bad('select a mailbox first')
      switch (command) {
        case 'SEARCH': {
          const criteria = args.toUpperCase()
          let found = messages
          if (criteria.includes('UNSEEN')) found = found.filter((x) => !x.flags.has('\\Seen'))
          else if (!/^(ALL|\d|\d+:\*|1:\*)/.test(criteria)) return bad(`unsupported search: ${args}`)
          send(`* SEARCH${found.map((x) => ` ${uid ? x.uid : messages.indexOf(x) + 1}`).join('')}\r\n`)
          return ok()
        }
        case 'FETCH': {
          if (!uid) return bad('only UID FETCH is implemented')
          const [set, itemText = ''] = parseArgs(args)
          const items = itemText.replace(/[()]/g, '').toUpperCase().split(/\s+/)
          for (const u of uidSet(
            set!,
            messages.map((x) => x.uid),
          ))
            send(
              fetchLine(
                messages.find((x) => x.uid === u)!,
                items,
              ),
            )
          return ok()
        }
        case 'STORE': {
          if (!uid) return bad('only UID STORE is implemented')
          const [set, op = '', flagText = ''] = parseArgs(args)
          const flags = flagText.replace(/[()]/g, '').split(/\s+/).filter(Boolean)
          const silent = op.toUpperCase().endsWith('.SILENT')
          for (const u of uidSet(
            set!,
            messages.map((x) => x.uid),
          )) {
            const msg = messages.find((x) => x.uid === u)!
            if (op.startsWith('+')) flags.forEach((f) => msg.flags.add(f))
            else if (op.startsWith('-')) flags.forEach((f) => msg.flags.delete(f))
            else msg.flags = new Set(flags)
            if (!silent) send(fetchLine(msg, ['FLAGS']))
          }
          return ok()
        }
        case 'CLOSE':
          selected = false
          return ok()
      }
      return bad(`${command} is not implemented by the test server`)
    }

    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk])
      for (;;) {
        if (pending && pending.literal >= 0) {
          if (buffer.length < pending.literal) return
          // The literal's bytes are elided from the recorded line; they are the argument.
          const value = buffer.subarray(0, pending.literal).toString()
          buffer = buffer.subarray(pending.literal)
          pending = { line: `${pending.line}"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`, literal: -1 }
        }
        const end = buffer.indexOf('\r\n')
        if (end < 0) return
        const text = buffer.subarray(0, end).toString()
        buffer = buffer.subarray(end + 2)
        const line = pending ? pending.line + text : text
        pending = null
        const literal = /\{(\d+)(\+?)\}$/.exec(line)
        if (literal) {
          pending = { line: line.slice(0, literal.index), literal: Number(literal[1]) }
          if (!literal[2]) send('+ go ahead\r\n')
          continue
        }
        handle(line)
      }
    })
  })

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    commands,
    messages,
    add(raw, flags = []) {
      const uid = nextUid++
      messages.push({ uid, flags: new Set(flags), raw: Buffer.isBuffer(raw) ? raw : Buffer.from(raw) })
      return uid
    },
    close() {
      for (const s of sockets) s.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
