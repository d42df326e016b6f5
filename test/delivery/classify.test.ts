import { describe, expect, test } from 'bun:test'
import { classify, RULES, type ReplyInput } from '../../src/delivery/classify'
import { parseReply } from '../../src/lib/smtp-replies'

const reply = (response: string): ReplyInput => parseReply(response)

describe('parseReply', () => {
  test.each([
    ['250 2.0.0 OK queued', { code: 250, enhanced: '2.0.0', text: 'OK queued' }],
    ['550 5.1.1 <a@b>: user unknown', { code: 550, enhanced: '5.1.1', text: '<a@b>: user unknown' }],
    ['550-5.7.1 first line\r\n550 5.7.1 second line', { code: 550, enhanced: '5.7.1', text: 'first line second line' }],
    ['421 Service not available', { code: 421, enhanced: null, text: 'Service not available' }],
    ['556 5.1.10 null MX', { code: 556, enhanced: '5.1.10', text: 'null MX' }],
    // An enhanced code of another class than the basic code is not trusted (RFC 3463 3.1).
    ['550 4.2.2 odd', { code: 550, enhanced: null, text: 'odd' }],
    ['garbage', { code: null, enhanced: null, text: 'garbage' }],
  ])('%s', (response, expected) => {
    expect(parseReply(response)).toEqual(expected)
  })
})

describe('classify', () => {
  test.each<[string, ReplyInput, string, string, boolean]>([
    // [label, input, outcome, rule, suppress]
    ['250 accepted', reply('250 2.0.0 OK'), 'sent', 'accepted', false],
    ['251 forwarded', reply('251 User not local; will forward'), 'sent', 'accepted', false],
    ['421 closing', reply('421 4.3.2 Service shutting down'), 'deferred', 'service-unavailable', false],
    ['451 tempfail', reply('451 4.3.0 Temporary local problem, try again later'), 'deferred', 'temporary', false],
    ['450 greylist', reply('450 4.7.1 Greylisted, please try again later'), 'deferred', 'greylisted', false],
    ['452 over quota', reply('452 4.2.2 Mailbox full'), 'deferred', 'mailbox-full-temporary', false],
    ['550 5.1.1 unknown', reply('550 5.1.1 The email account that you tried to reach does not exist'), 'bounced', 'bad-mailbox', true],
    ['550 5.1.2 bad domain', reply('550 5.1.2 Host unknown'), 'bounced', 'bad-domain', true],
    ['553 5.1.3 syntax', reply('553 5.1.3 Bad recipient address syntax'), 'bounced', 'bad-syntax', true],
    ['556 5.1.10 null MX', reply('556 5.1.10 Recipient address has null MX'), 'bounced', 'null-mx', true],
    ['552 5.2.2 mailbox full', reply('552 5.2.2 Mailbox full'), 'bounced', 'mailbox-full', false],
    ['550 5.2.1 disabled', reply('550 5.2.1 The account is disabled'), 'bounced', 'mailbox-disabled', false],
    ['552 5.3.4 too big', reply('552 5.3.4 Message size exceeds fixed limit'), 'bounced', 'message-too-large', false],
    ['550 5.7.1 policy', reply('550 5.7.1 Message rejected due to the sending IP reputation (policy)'), 'bounced', 'policy', false],
    ['554 5.7.1 spamhaus', reply('554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org'), 'bounced', 'policy', false],
    ['550 5.7.26 dmarc', reply('550 5.7.26 Unauthenticated email is not accepted'), 'bounced', 'policy', false],
    // A block worded as a block is not a bad address even under a mailbox code.
    ['550 5.1.1 but blocklisted', reply('550 5.1.1 Sender IP is on our blocklist'), 'bounced', 'policy', false],
    ['554 no code blacklisted', reply('554 Your IP is blacklisted'), 'bounced', 'policy', false],
    ['550 no code user unknown', reply('550 User unknown'), 'bounced', 'unknown-user', true],
    ['550 no code no such user', reply('550 No such user here'), 'bounced', 'unknown-user', true],
    ['550 5.0.0 recipient does not exist', reply('550 5.0.0 Recipient address does not exist'), 'bounced', 'unknown-user', true],
    ['550 no code mailbox unavailable', reply('550 Requested action not taken: mailbox unavailable'), 'bounced', 'permanent', false],
    ['554 transaction failed', reply('554 Transaction failed'), 'bounced', 'permanent', false],
    ['554 5.6.0 content', reply('554 5.6.0 Message content rejected'), 'bounced', 'content', false],
    ['354 where a completion was due', reply('354 go ahead'), 'deferred', 'unknown', false],
    ['connection refused', { code: null, enhanced: null, text: 'connect ECONNREFUSED', failure: 'connect' }, 'deferred', 'connection', false],
    ['timeout', { code: null, enhanced: null, text: 'Timeout', failure: 'timeout' }, 'deferred', 'timeout', false],
    ['tls', { code: null, enhanced: null, text: 'handshake', failure: 'tls' }, 'deferred', 'tls', false],
    ['disconnect in DATA', { code: null, enhanced: null, text: 'Connection closed unexpectedly', failure: 'disconnect' }, 'deferred', 'disconnect', false],
    ['dns temporary', { code: null, enhanced: '4.4.3', text: 'SERVFAIL', failure: 'dns' }, 'deferred', 'dns-temporary', false],
    ['5xx greeting', { ...reply('554 5.7.1 go away'), failure: 'session' }, 'deferred', 'session-refused', false],
    ['NXDOMAIN (synthetic 5.1.2)', { code: null, enhanced: '5.1.2', text: 'no such domain' }, 'bounced', 'bad-domain', true],
    ['null MX (synthetic 5.1.10)', { code: null, enhanced: '5.1.10', text: 'null MX' }, 'bounced', 'null-mx', true],
    ['local refusal', { code: null, enhanced: null, text: 'Invalid recipient', failure: 'local' }, 'bounced', 'local', false],
  ])('%s', (_label, input, outcome, rule, suppress) => {
    expect(classify(input)).toMatchObject({ outcome: outcome as 'sent', rule, suppress })
  })

  test('every rule name that suppresses is a bad-address rule', () => {
    const suppressing = new Set(RULES.filter((r) => r.suppress).map((r) => r.name))
    expect([...suppressing].sort()).toEqual(['bad-domain', 'bad-mailbox', 'bad-syntax', 'mailbox-moved', 'null-mx', 'unknown-user'])
  })

  test('the last rule catches everything', () => {
    expect(classify({ code: null, enhanced: null, text: '' }).rule).toBe('unknown')
  })
})

test('"does not have an account" wordings are a bad address', () => {
  for (const text of ["This user doesn't have a yahoo.com account (frank@yahoo.com)", 'The recipient does not have an example.org account']) {
    expect(classify({ code: 554, enhanced: null, text })).toMatchObject({ outcome: 'bounced', suppress: true, rule: 'unknown-user' })
  }
})
