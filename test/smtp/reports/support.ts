import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export const FIXTURES = join(import.meta.dir, '../../fixtures/reports')

/** The secret the fixtures' return-path tokens were made with (see the tokens in the .eml files). */
export const SECRET = Buffer.from('mailroom-test-return-path-secret')

/** A fixture's bytes; `crlf` gives the wire form (the files are stored with LF). */
export function fixture(name: string, crlf = false): Buffer {
  const raw = readFileSync(join(FIXTURES, name))
  return crlf ? Buffer.from(raw.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1') : raw
}

/** The token in a fixture's bounces+ address for message ...6f7<n>. */
export const TOKENS: Record<string, { token: string; messageId: string; recipientId: number }> = {
  postfixHard: { token: 'aeazl4ospq5hwtu2cavtytk6n5ycuv66s7loihiix46fu', messageId: '0195f1d2-7c3a-7b4e-9a10-2b3c4d5e6f70', recipientId: 42 },
  postfixDelayed: { token: 'aeazl4ospq5hwtu2cavtytk6n5yqh2knn533ufsj4b7lsqi', messageId: '0195f1d2-7c3a-7b4e-9a10-2b3c4d5e6f71', recipientId: 1001 },
  office365: { token: 'aeazl4ospq5hwtu2cavtytk6n5zapwbn65chrlsqhnsc2', messageId: '0195f1d2-7c3a-7b4e-9a10-2b3c4d5e6f72', recipientId: 7 },
  gmail: { token: 'aeazl4ospq5hwtu2cavtytk6n5zqdysayehyrwtgrfxioj76', messageId: '0195f1d2-7c3a-7b4e-9a10-2b3c4d5e6f73', recipientId: 123456 },
  yahoo: { token: 'aeazl4ospq5hwtu2cavtytk6n52aseno57hhuadazg4ni', messageId: '0195f1d2-7c3a-7b4e-9a10-2b3c4d5e6f74', recipientId: 9 },
  qmail: { token: 'aeazl4ospq5hwtu2cavtytk6n52u2vp7qdlwwhrizltw4', messageId: '0195f1d2-7c3a-7b4e-9a10-2b3c4d5e6f75', recipientId: 77 },
  sendmail: { token: 'aeazl4ospq5hwtu2cavtytk6n53aktwnf6ozmpmyai7ce', messageId: '0195f1d2-7c3a-7b4e-9a10-2b3c4d5e6f76', recipientId: 5 },
  exchangeLegacy: { token: 'aeazl4ospq5hwtu2cavtytk6n53vqqg5f267w6554vo7i', messageId: '0195f1d2-7c3a-7b4e-9a10-2b3c4d5e6f77', recipientId: 88 },
  yahooArf: { token: 'aeazl4ospq5hwtu2cavtytk6n54ahpd33vz6tvmzamd7w', messageId: '0195f1d2-7c3a-7b4e-9a10-2b3c4d5e6f78', recipientId: 3 },
  aolArf: {
    token: 'aeazl4ospq5hwtu2cavtytk6n54r7777777777yj6z65drnh6hjmqby',
    messageId: '0195f1d2-7c3a-7b4e-9a10-2b3c4d5e6f79',
    recipientId: Number.MAX_SAFE_INTEGER,
  },
}

/** The envelope the inbound listener would see for a bounce to a token. */
export function bounceEnvelope(token: string): { mailFrom: string; rcptTo: string[] } {
  return { mailFrom: '', rcptTo: [`bounces+${token}@bounces.example.com`] }
}
