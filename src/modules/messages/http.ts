import type { Deps } from '../../deps'
import { AppError } from '../../lib/errors'
import type { AuthOf } from '../../http/auth'
import { BridgeQuotaError } from '../bridges/quotas'
import type { SendInput } from './compose'
import { IDEMPOTENCY_HEADER, type StoredResponse } from './idempotency'
import { acceptMessages, apiSendContext, prepareMessages, withTextParts, type AcceptContext, type AcceptedMessage, type PreparedMessage } from './service'

/**
 * The HTTP side of accepting mail, shared by the message routes (index.ts) and the
 * Resend-compatible routes (resend.ts): request in, accept service, answer and headers out.
 */

/** One HTTP send: what the route read from the request, and how the answer looks. */
export interface SendCall {
  request: Request
  /** Method and path, part of the idempotency fingerprint. */
  endpoint: string
  /** The parsed body, the rest of the fingerprint. */
  body: unknown
  /** The messages to send; called after the idempotency check (a replay renders nothing). */
  inputs: () => SendInput[] | Promise<SendInput[]>
  /** Checks and builds the messages instead of prepareMessages over inputs (the Resend batch's permissive mode). */
  prepare?: (ctx: AcceptContext) => Promise<PreparedMessage[]>
  ctx: Pick<AcceptContext, 'source' | 'poolId' | 'nodeId'>
  respond: (accepted: AcceptedMessage[]) => StoredResponse
  /** Only a bridge's API key may call (POST /v1/bridge/emails). */
  bridgeOnly?: boolean
  /**
   * A console session may call too (the template editor's test send): the message has no
   * API key, the Idempotency-Key header is not used (its records belong to keys), and the
   * send is in the activity log with the person as actor.
   */
  allowSession?: boolean
}

/**
 * Sends through the accept service and translates its outcome to HTTP: the response (fresh or
 * replayed), `Idempotent-Replayed: true` on a replay, `Retry-After` when a bridge quota is used up.
 */
export async function sendOverHttp(deps: Deps, authOf: AuthOf, call: SendCall, set: { headers: Record<string, string | number> }): Promise<StoredResponse> {
  try {
    const auth = authOf(call.request)
    if (!auth.key && auth.admin && call.allowSession) {
      // A person's test send: rare, so it is worth its activity-log row (left to the auth plugin).
      const ctx: AcceptContext = { ...call.ctx, apiKeyId: null }
      const result = await acceptMessages(deps, {
        ctx,
        prepare: async () => prepareMessages(deps, await withTextParts(deps, await call.inputs()), ctx),
        respond: call.respond,
      })
      if (!result.replayed && result.accepted[0]) auth.target = { type: 'messages', id: result.accepted[0].id }
      return result.response
    }
    // A send is recorded in its message row (api_key_id, source) and events, not also as an
    // activity-log row: that would be a second write, with its own fsync, per message.
    auth.logged = true
    // Idempotency records and bridges belong to keys; a console session sends with a key like any client.
    if (!auth.key) throw new AppError('forbidden', 'Sending mail needs an API key; a console session cannot send.')
    const ctx = apiSendContext(deps, auth.key.id, call.ctx, call.bridgeOnly)
    const result = await acceptMessages(deps, {
      ctx,
      prepare: async () => (call.prepare ? call.prepare(ctx) : prepareMessages(deps, await withTextParts(deps, await call.inputs()), ctx)),
      respond: call.respond,
      idempotency: { key: call.request.headers.get(IDEMPOTENCY_HEADER), scope: auth.key.id, endpoint: call.endpoint, fingerprint: call.body },
    })
    if (result.replayed) set.headers['idempotent-replayed'] = 'true'
    return result.response
  } catch (e) {
    // A bridge quota is used up: say when to come back (RFC 9110 section 10.2.3).
    if (e instanceof BridgeQuotaError) set.headers['retry-after'] = String(Math.max(1, Math.ceil((e.resets_at - deps.clock.now()) / 1000)))
    throw e
  }
}
