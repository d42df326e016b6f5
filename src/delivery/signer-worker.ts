/**
 * Worker thread body of the signer pool: signs messages with DKIM off the main thread (one
 * RSA-2048 signature is ~0.5 ms of CPU). Requests (worker-client.ts): { raw: ArrayBuffer, key };
 * answer: the signed message as an ArrayBuffer. Buffers are transferred, not copied.
 *
 * Listed as an extra entrypoint of the single-binary build (scripts/build.ts), since Bun only
 * embeds worker files that are entrypoints.
 */
import { serveRequests } from '../lib/worker-serve'
import { signMessage, type DkimKey } from './dkim'

export interface SignRequest {
  raw: ArrayBuffer
  key: DkimKey
}

serveRequests<SignRequest, ArrayBuffer>(
  async ({ raw, key }) => {
    const signed = await signMessage(Buffer.from(raw), key)
    // A fresh ArrayBuffer holding exactly the signed bytes, so it can be transferred whole.
    const out = new Uint8Array(signed.length)
    out.set(signed)
    return out.buffer
  },
  { transfer: (out) => [out] },
)
