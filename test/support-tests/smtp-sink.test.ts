import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import SMTPConnection from 'nodemailer/lib/smtp-connection'
import nodemailer from 'nodemailer'
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.ts'

// Exercised with nodemailer, the project's SMTP client library, so the sink is proven against
// the same client code the engine will use.

interface SendResult {
  error?: Error & { responseCode?: number; response?: string; code?: string; rejectedErrors?: { response?: string }[] }
  info?: SMTPConnection.SentMessageInfo
  secure: boolean
}

function connect(sink: SmtpSink, options: Partial<SMTPConnection.Options> = {}): Promise<SMTPConnection> {
  const connection = new SMTPConnection({
    host: sink.host,
    port: sink.port,
    name: 'client.mailroom.test',
    tls: { rejectUnauthorized: false },
    connectionTimeout: 3000,
    greetingTimeout: 3000,
    socketTimeout: 3000,
    ...options,
  })
  return new Promise((resolve, reject) => {
    connection.once('error', reject)
    connection.connect((err) => (err ? reject(err) : resolve(connection)))
  })
}

function send(connection: SMTPConnection, from: string, to: string[], message: string | Buffer): Promise<SendResult> {
  return new Promise((resolve) => {
    connection.on('error', (error) => resolve({ error, secure: connection.secure }))
    connection.send({ from, to }, message, (error, info) => resolve(error ? { error, secure: connection.secure } : { info, secure: connection.secure }))
  })
}

/** One message on a fresh connection, closed afterwards. */
async function sendOnce(sink: SmtpSink, to: string[], message: string | Buffer = body(), options: Partial<SMTPConnection.Options> = {}) {
  const connection = await connect(sink, options)
  try {
    return await send(connection, 'sender@mailroom.test', to, message)
  } finally {
    connection.close()
  }
}

function body(extra = ''): string {
  return ['From: sender@mailroom.test', 'To: someone@example.test', 'Subject: hello', '', 'line one', 'line two' + extra, ''].join('\r\n')
}

let sink: SmtpSink

beforeAll(async () => {
  sink = await startSmtpSink({ host: '127.0.0.2' })
})
afterAll(async () => {
  await sink.close()
})
beforeEach(() => sink.reset())

describe('smtp sink', () => {
  test('listens on the chosen loopback address and records envelope, addresses and bytes', async () => {
    expect(sink.host).toBe('127.0.0.2')
    const raw = body() + '..leading dot line\r\nno final newline'
    const result = await sendOnce(sink, ['alice@example.test'], raw, { localAddress: '127.0.0.3' })
    expect(result.error).toBeUndefined()
    expect(result.info?.accepted).toEqual(['alice@example.test'])

    const [message] = await sink.waitFor(1, 3000)
    expect(message).toBeDefined()
    expect(message!.remoteAddress).toBe('127.0.0.3')
    expect(message!.localAddress).toBe('127.0.0.2')
    expect(message!.localPort).toBe(sink.port)
    expect(message!.ehlo).toBe('client.mailroom.test')
    expect(message!.mailFrom).toBe('sender@mailroom.test')
    expect(message!.rcptTo).toEqual(['alice@example.test'])
    // nodemailer dot-stuffs and appends CRLF before the terminator; the sink unstuffs.
    expect(message!.raw.toString()).toBe(raw + '\r\n')
    expect(message!.raw.includes('\r\n')).toBe(true)
  })

  test('STARTTLS is advertised and used when the client wants it; plain is allowed too', async () => {
    const tls = await sendOnce(sink, ['tls@example.test'], body(), { requireTLS: true })
    expect(tls.error).toBeUndefined()
    expect(tls.secure).toBe(true)
    const plain = await sendOnce(sink, ['plain@example.test'], body(), { ignoreTLS: true })
    expect(plain.error).toBeUndefined()
    expect(plain.secure).toBe(false)

    const messages = await sink.waitFor(2, 3000)
    const byRcpt = Object.fromEntries(messages.map((m) => [m.rcptTo[0], m]))
    expect(byRcpt['tls@example.test']?.secure).toBe(true)
    expect(byRcpt['tls@example.test']?.tlsProtocol).toMatch(/^TLSv1\.[23]$/)
    expect(byRcpt['plain@example.test']?.secure).toBe(false)
    expect(byRcpt['plain@example.test']?.tlsProtocol).toBeNull()
  })

  test('tempfail@ is refused with 451 4.3.0 at RCPT', async () => {
    const result = await sendOnce(sink, ['tempfail@example.test'])
    expect(result.error?.responseCode).toBe(451)
    expect(result.error?.rejectedErrors?.[0]?.response).toStartWith('451 4.3.0 ')
    expect(sink.refused).toMatchObject([{ rcpt: 'tempfail@example.test', code: 451 }])
    expect(sink.messages).toHaveLength(0)
  })

  test('permfail@ is refused with 550 5.1.1 at RCPT', async () => {
    const result = await sendOnce(sink, ['permfail@example.test'])
    expect(result.error?.responseCode).toBe(550)
    expect(result.error?.rejectedErrors?.[0]?.response).toStartWith('550 5.1.1 ')
  })

  test('policy@ is refused with 550 5.7.1 (a policy block, not a bad mailbox)', async () => {
    const result = await sendOnce(sink, ['policy@example.test'])
    expect(result.error?.responseCode).toBe(550)
    expect(result.error?.rejectedErrors?.[0]?.response).toStartWith('550 5.7.1 ')
  })

  test('greylist@ is deferred with 450 4.7.1 once per (ip, sender, recipient), then accepted', async () => {
    const first = await sendOnce(sink, ['greylist@example.test'])
    expect(first.error?.responseCode).toBe(450)
    expect(first.error?.rejectedErrors?.[0]?.response).toStartWith('450 4.7.1 ')

    // A different client IP is a different triplet: greylisted again.
    const otherIp = await sendOnce(sink, ['greylist@example.test'], body(), { localAddress: '127.0.0.3' })
    expect(otherIp.error?.responseCode).toBe(450)

    const second = await sendOnce(sink, ['greylist@example.test'])
    expect(second.error).toBeUndefined()
    expect(second.info?.accepted).toEqual(['greylist@example.test'])
    const [message] = await sink.waitFor(1, 3000)
    expect(message!.rcptTo).toEqual(['greylist@example.test'])
  })

  test('mixed RCPT results in one transaction: accepted ones get the message', async () => {
    const result = await sendOnce(sink, ['ok@example.test', 'permfail@example.test', 'tempfail@example.test', 'ok2@example.test'])
    expect(result.error).toBeUndefined()
    expect(result.info?.accepted).toEqual(['ok@example.test', 'ok2@example.test'])
    expect(result.info?.rejected).toEqual(['permfail@example.test', 'tempfail@example.test'])
    const responses = (result.info?.rejectedErrors ?? []).map((e) => (e as { response?: string }).response)
    expect(responses[0]).toStartWith('550 5.1.1 ')
    expect(responses[1]).toStartWith('451 4.3.0 ')
    const [message] = await sink.waitFor(1, 3000)
    expect(message!.rcptTo).toEqual(['ok@example.test', 'ok2@example.test'])
  })

  test('disconnect@ drops the connection during DATA without a reply', async () => {
    const result = await sendOnce(sink, ['disconnect@example.test'], body('x'.repeat(10_000)))
    expect(result.error).toBeDefined()
    expect(result.error?.responseCode).toBeUndefined() // no SMTP reply, a connection error
    expect(sink.messages).toHaveLength(0)
    expect(sink.aborted).toHaveLength(1)
    expect(sink.aborted[0]!.rcptTo).toEqual(['disconnect@example.test'])
    expect(sink.aborted[0]!.partial.length).toBeGreaterThan(0)
  })

  test('several transactions on one connection are recorded separately', async () => {
    const connection = await connect(sink)
    try {
      const a = await send(connection, 'a@mailroom.test', ['one@example.test'], body('A'))
      expect(a.error).toBeUndefined()
      await new Promise<void>((resolve, reject) => connection.reset((err) => (err ? reject(err) : resolve())))
      const b = await send(connection, 'b@mailroom.test', ['two@example.test'], body('B'))
      expect(b.error).toBeUndefined()
    } finally {
      connection.close()
    }
    const messages = await sink.waitFor(2, 3000)
    expect(messages.map((m) => m.mailFrom)).toEqual(['a@mailroom.test', 'b@mailroom.test'])
    expect(messages[0]!.connectionId).toBe(messages[1]!.connectionId)
    expect(messages[0]!.raw.toString()).toContain('line twoA')
    expect(messages[1]!.raw.toString()).toContain('line twoB')
  })

  test('a nodemailer transport delivers through it (opportunistic STARTTLS)', async () => {
    const transport = nodemailer.createTransport({ host: sink.host, port: sink.port, secure: false, tls: { rejectUnauthorized: false } })
    try {
      const info = await transport.sendMail({ from: 'sender@mailroom.test', to: 'bob@example.test', subject: 'hi', text: 'hello' })
      expect(info.accepted).toEqual(['bob@example.test'])
    } finally {
      transport.close()
    }
    const [message] = await sink.waitFor(1, 3000)
    expect(message!.secure).toBe(true)
    expect(message!.raw.toString()).toContain('Subject: hi\r\n')
  })

  test('waitFor rejects after its timeout when too few messages arrive', async () => {
    await expect(sink.waitFor(1, 50)).rejects.toThrow('0/1 messages')
  })
})
