import type { Deps } from '../../deps'
import { AppError, invalidField } from '../../lib/errors'
import { isSubset } from '../permissions/service'
import { acceptMessages, prepareMessages, type AcceptContext } from '../messages/service'
import type { Actor } from '../roles/service'
import type { BridgeIdentity } from './identity'
import type { BridgeTestInput, BridgeTestResult } from './model'
import { getBridge } from './service'

/**
 * A test message through a bridge (the console's "Send test"): one message queued through
 * the same accept service as the bridge's own sends, with the bridge's identity, so its From
 * domains, active flag, pool, node, quotas, tracking defaults and counters all apply. The
 * operator sees whether the bridge works without configuring an application first.
 */

/** The local part of the default From: a name no person reads, at the bridge's first domain. */
const TEST_LOCAL_PART = 'mailroom-test'

/** Sends one test message through a bridge to `to` (from `from`, or mailroom-test@<its first domain>). */
export async function sendBridgeTest(deps: Deps, actor: Actor, id: number, input: BridgeTestInput): Promise<BridgeTestResult> {
  const view = getBridge(deps, id)
  // The test sends mail: only a caller who may send may trigger it (as for minting credentials).
  if (!isSubset(['transactional.send'], actor.permissions))
    throw new AppError('forbidden', 'A test message is mail sent in the bridge\u2019s name; your role lacks transactional.send, so it cannot send one.')
  const domain = view.domains[0]
  if (!domain) throw invalidField('from', 'the bridge has no domains to send from')
  const bridge: BridgeIdentity = {
    id: view.id,
    name: view.name,
    domains: view.domains,
    pool_id: view.pool_id,
    node_id: view.node_id,
    allowed_ips: view.allowed_ips,
    api_key_id: view.api_key_id,
    active: view.active,
    tracking: { track_opens: view.track_opens, track_clicks: view.track_clicks },
  }
  if (!bridge.active) throw new AppError('forbidden', `The bridge "${bridge.name}" is inactive; activate it before sending a test.`)
  const from = input.from ?? `Mailroom test <${TEST_LOCAL_PART}@${domain}>`
  const ctx: AcceptContext = { source: 'api', apiKeyId: bridge.api_key_id, bridge, poolId: bridge.pool_id, nodeId: bridge.node_id }
  const subject = input.subject ?? `Test message through the bridge "${bridge.name}"`
  const text = [
    `This is a test message sent through the Mailroom bridge "${bridge.name}" by ${actor.name}.`,
    '',
    'It took the same path as the application\u2019s own mail: the bridge\u2019s domains, quotas, IP pool and sending node applied.',
    'If you can read it, the bridge delivers.',
  ].join('\n')
  const result = await acceptMessages(deps, {
    ctx,
    prepare: () => {
      try {
        return prepareMessages(deps, [{ from, to: [input.to], subject, text }], ctx)
      } catch (e) {
        // The one recipient is the body's `to`, not the list entry `to.0` the send path names.
        if (e instanceof AppError && e.details?.['to.0']) {
          const { 'to.0': to, ...rest } = e.details
          throw new AppError(e.code, e.message, { ...rest, to })
        }
        throw e
      }
    },
    respond: ([a]) => ({ status: 202, body: { id: a!.id, status: a!.status, queued: a!.queued, suppressed: a!.suppressed.map((s) => s.address) } }),
  })
  const [accepted] = result.replayed ? [] : result.accepted
  if (!accepted) throw new AppError('internal', 'The test message was not accepted.')
  return {
    id: accepted.id,
    // A test send is never scheduled.
    status: 'queued' as const,
    from,
    to: input.to,
    queued: accepted.queued,
    suppressed: accepted.suppressed.map((s) => s.address),
  }
}
