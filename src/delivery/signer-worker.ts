/**
 * Worker thread body of the signer pool: signs messages with DKIM off the main thread (one
 * RSA-2048 signature is ~0.5 ms of CPU). Two kinds of message (worker-client.ts):
 *
 * - `{ kind: 'key', id, key }` (no answer): registers a key under a number the pool chose.
 *   The PEM is parsed once, at its first use, into a KeyObject kept here, so the PEM is not
 *   cloned into this thread with every message (issue 18).
 * - `{ kind: 'sign', items: [{ key: id, raw }] }`: a batch of messages, answered with one
 *   entry per item: the signed message as an ArrayBuffer, or the error's message. One
 *   postMessage per batch instead of one per message. Buffers are transferred, not copied.
 *
 * Listed as an extra entrypoint of the single-binary build (scripts/build.ts), since Bun only
 * embeds worker files that are entrypoints.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto'
import { serveRequests } from '../lib/worker-serve'
import { signMessage, type DkimKey } from './dkim'

export type SignRequest = { kind: 'key'; id: number; key: DkimKey } | { kind: 'sign'; items: Array<{ key: number; raw: ArrayBuffer }> }

/** One answer per item of a batch, in order. */
export type SignReply = Array<ArrayBuffer | { error: string }>

interface HeldKey {
  domain: string
  selector: string
  pem: string | KeyObject
  parsed: KeyObject | null
}

const keys = new Map<number, HeldKey>()

/** The key as a KeyObject, parsed on first use; a PEM that does not parse fails each message signed with it. */
function keyFor(id: number): DkimKey {
  const k = keys.get(id)
  if (!k) throw new Error(`DKIM signing failed: key ${id} was never sent to this signer worker`)
  if (!k.parsed) {
    try {
      k.parsed = typeof k.pem === 'string' ? createPrivateKey(k.pem) : k.pem
    } catch (e) {
      throw new Error(`DKIM signing failed for ${k.selector}._domainkey.${k.domain}: ${(e as Error).message}`)
    }
  }
  return { domain: k.domain, selector: k.selector, privateKey: k.parsed }
}

serveRequests<SignRequest, SignReply | null>(
  async (req) => {
    if (req.kind === 'key') {
      keys.set(req.id, { domain: req.key.domain, selector: req.key.selector, pem: req.key.privateKey, parsed: null })
      return null
    }
    const out: SignReply = []
    for (const item of req.items) {
      try {
        const signed = await signMessage(Buffer.from(item.raw), keyFor(item.key))
        // A fresh ArrayBuffer holding exactly the signed bytes, so it can be transferred whole.
        const copy = new Uint8Array(signed.length)
        copy.set(signed)
        out.push(copy.buffer)
      } catch (e) {
        out.push({ error: (e as Error).message })
      }
    }
    return out
  },
  { transfer: (out) => (out ? out.filter((x): x is ArrayBuffer => x instanceof ArrayBuffer) : []) },
)
