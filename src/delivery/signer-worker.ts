/**
 * Worker thread body of the signer pool: signs messages with DKIM off the main thread (one
 * RSA-2048 signature is ~0.5 ms of CPU). Messages in: { id, raw: ArrayBuffer, key }; out:
 * { id, raw: ArrayBuffer } or { id, error }. Buffers are transferred, not copied.
 *
 * Listed as an extra entrypoint of the single-binary build (scripts/build.ts), since Bun only
 * embeds worker files that are entrypoints.
 */
import { signMessage, type DkimKey } from './dkim'

declare const self: Worker

export interface SignRequest {
  id: number
  raw: ArrayBuffer
  key: DkimKey
}

export type SignResponse = { id: number; raw: ArrayBuffer } | { id: number; error: string }

self.onmessage = async (event: MessageEvent<SignRequest>) => {
  const { id, raw, key } = event.data
  try {
    const signed = await signMessage(Buffer.from(raw), key)
    // A fresh ArrayBuffer holding exactly the signed bytes, so it can be transferred whole.
    const out = new Uint8Array(signed.length)
    out.set(signed)
    self.postMessage({ id, raw: out.buffer } satisfies SignResponse, [out.buffer])
  } catch (e) {
    self.postMessage({ id, error: (e as Error).message } satisfies SignResponse)
  }
}
