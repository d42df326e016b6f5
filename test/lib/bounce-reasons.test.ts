import { describe, expect, test } from 'bun:test'
import { BOUNCE_REASONS, classifyReply, parseReply, replyReason } from '../../src/lib/smtp-replies'

describe('bounce reasons', () => {
  test.each<[string, string, boolean]>([
    // [reply, reason, suppressed]
    ['550 5.1.1 <a@b.example>: Recipient address rejected: User unknown in local recipient table', 'user_unknown', true],
    ['550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup', 'user_unknown', true],
    ['556 5.1.10 Recipient address has null MX', 'host_unknown', true],
    ['550 5.1.2 Host unknown', 'host_unknown', true],
    // Exchange Online: X.4.4 is "unable to route"; only the nonexistent-domain wording is a dead domain.
    ['550 5.4.4 SMTPSEND.DNS.NonExistentDomain; nonexistent domain', 'host_unknown', true],
    ['550 5.4.310 DNS domain gone.example does not exist [Message=InfoDomainNonexistent]', 'host_unknown', true],
    ['550 5.4.4 Unable to route: hop count exceeded, the message is looping', 'other', false],
    // Exchange's 5.1.351 wraps whatever the remote said: the words decide.
    ["550 5.1.351 Remote server returned 'No Such User Here'", 'user_unknown', true],
    ["550 5.1.351 Remote server returned 'Recipient address rejected: Access denied'", 'policy', false],
    // Vendor filter details under X.0.x are filters, not addresses.
    ["550 5.0.910 Message rejected by the recipient's content filter", 'policy', false],
    ['550 5.1.1 <a@b.example>: Recipient address rejected: Access denied', 'policy', false],
    ['550 5.4.1 Recipient address rejected: Access denied. AS(201806281)', 'policy', false],
    // "User unknown" without an enhanced code is read from the text.
    ['550 No Such User Here', 'user_unknown', true],
    ["554 delivery error: dd This user doesn't have a yahoo.com account (x@yahoo.com) [0]", 'user_unknown', true],
    ['550 Mailbox not found or access denied', 'user_unknown', true],
    ['554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org', 'spam_block', false],
    ['550 5.7.26 Unauthenticated email from example.com is not accepted due to domain DMARC policy', 'auth_failure', false],
    ['421 4.7.28 Gmail has detected an unusual rate of unsolicited mail originating from your IP address', 'rate_limit', false],
    ['552 5.2.2 Mailbox full', 'mailbox_full', false],
    ['552 5.3.4 Message size exceeds fixed limit', 'message_too_large', false],
    ['554 5.7.1 <a@b.example>: Relay access denied', 'relay_denied', false],
    ['550 5.2.1 The email account that you tried to reach is disabled', 'mailbox_disabled', false],
    ['554 5.6.0 Message rejected: virus found in attachment', 'policy', false],
    ['450 4.2.0 Recipient address rejected: Greylisted', 'other', false],
    ['554 Transaction failed', 'other', false],
  ])('%s', (response, reason, suppress) => {
    const c = classifyReply(parseReply(response))
    expect(c.reason).toBe(reason as (typeof BOUNCE_REASONS)[number])
    expect(c.suppress).toBe(suppress)
  })

  test('a sent reply has no reason, and an undecided one none either', () => {
    expect(classifyReply(parseReply('250 2.0.0 OK')).reason).toBeNull()
    expect(classifyReply(parseReply('354 go ahead')).reason).toBeNull()
  })

  test('only the dead-address reasons ever suppress', () => {
    for (const response of ['550 5.1.1 Sender IP is on our blocklist', '550 5.7.1 user unknown (policy)', '552 5.2.2 user unknown, mailbox full']) {
      const c = classifyReply(parseReply(response))
      expect(c.suppress, response).toBe(false)
      expect(['user_unknown', 'host_unknown']).not.toContain(c.reason)
    }
    expect(replyReason({ code: null, enhanced: null, text: '' })).toBe('other')
  })
})
