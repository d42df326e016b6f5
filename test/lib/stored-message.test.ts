import { describe, expect, test } from 'bun:test'
import { isPacked, packMessage, unpackMessage } from '../../src/lib/stored-message'
import { testApp } from '../support/app'

const message = Buffer.from(
  `From: a@example.com\r\nTo: b@example.net\r\nSubject: Hi\r\nMIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n${'<p>The quick brown fox \u00e9.</p>\r\n'.repeat(200)}`,
)

describe('stored messages', () => {
  test('a packed message unpacks to the same bytes and is smaller', () => {
    const packed = packMessage(message)
    expect(isPacked(packed)).toBe(true)
    expect(packed.length).toBeLessThan(message.length / 4)
    expect(unpackMessage(packed).equals(message)).toBe(true)
  })

  test('bytes stored as they are (rows written before compression) read back unchanged', () => {
    expect(isPacked(message)).toBe(false)
    expect(unpackMessage(new Uint8Array(message)).equals(message)).toBe(true)
    expect(isPacked(new Uint8Array(2))).toBe(false)
  })

  test('an accepted message is stored packed; its size is the message, and /raw answers the message', async () => {
    const t = testApp({ allow_unverified_domains: true })
    const { key } = t.makeKey()
    const sent = await t.call('POST', '/v1/emails', {
      key,
      body: { from: 'a@example.com', to: ['b@example.net'], subject: 'Hi', html: '<p>Hello</p>'.repeat(300) },
    })
    expect(sent.status).toBe(202)
    const id = sent.body.data.id as string
    const row = t.deps.db.$client.query('SELECT raw, size FROM messages WHERE id = ?').get(id) as { raw: Uint8Array; size: number }
    expect(isPacked(row.raw)).toBe(true)
    const raw = unpackMessage(row.raw)
    expect(raw.length).toBe(row.size)
    expect(row.raw.length).toBeLessThan(row.size)
    const served = await t.call('GET', `/api/v2/messages/${id}/raw`, { key })
    expect(served.status).toBe(200)
    expect(served.text).toBe(raw.toString())
  })
})
