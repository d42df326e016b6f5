import { setSystemTime } from 'bun:test'
import { Webhook } from 'standardwebhooks'

/**
 * A real HTTP endpoint on loopback for webhook tests. Every request is verified with the
 * `standardwebhooks` package, unchanged; `answers` is a programmable sequence (one answer
 * per request, then `fallback`). With `now`, verification runs at that (fake) time, since the
 * package checks the timestamp against Date.now().
 */
export interface Answer {
  status: number
  headers?: Record<string, string>
  body?: string
  /** Wait this long before answering (timeouts). */
  delayMs?: number
}

export interface Received {
  id: string
  timestamp: number
  signature: string
  body: string
  /** Every request header, lower-cased names (Resend-format requests carry svix-* headers). */
  headers: Record<string, string>
  payload: any
  verified: boolean
  error: string | null
  answered: number
}

export interface WebhookReceiver {
  url: string
  port: number
  received: Received[]
  /** Distinct webhook-ids seen. */
  ids: Set<string>
  answers: Answer[]
  fallback: Answer
  /** Secrets to verify with (any one suffices). */
  secrets: string[]
  close(): Promise<void>
}

export async function startWebhookReceiver(opts: { secrets?: string[]; fallback?: Answer; now?: () => number } = {}): Promise<WebhookReceiver> {
  const r: WebhookReceiver = {
    url: '',
    port: 0,
    received: [],
    ids: new Set(),
    answers: [],
    fallback: opts.fallback ?? { status: 204 },
    secrets: opts.secrets ?? [],
    close: async () => {
      await server.stop(true)
    },
  }
  const verify = (body: string, headers: Record<string, string>): string | null => {
    let last = 'no secret to verify with'
    for (const s of r.secrets) {
      try {
        if (opts.now) setSystemTime(new Date(opts.now()))
        new Webhook(s).verify(body, headers)
        return null
      } catch (e) {
        last = (e as Error).message
      } finally {
        if (opts.now) setSystemTime()
      }
    }
    return last
  }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const body = await req.text()
      const headers = Object.fromEntries(req.headers.entries())
      const error = verify(body, headers)
      const answer = r.answers.shift() ?? r.fallback
      const id = headers['webhook-id'] ?? ''
      let payload: unknown = null
      try {
        payload = JSON.parse(body)
      } catch {}
      r.received.push({
        id,
        timestamp: Number(headers['webhook-timestamp']),
        signature: headers['webhook-signature'] ?? '',
        body,
        headers,
        payload,
        verified: error === null,
        error,
        answered: answer.status,
      })
      if (error === null && answer.status >= 200 && answer.status < 300) r.ids.add(id)
      if (answer.delayMs) await Bun.sleep(answer.delayMs)
      return new Response(answer.body ?? (answer.status === 204 ? null : 'ok'), { status: answer.status, headers: answer.headers })
    },
  })
  r.port = server.port!
  r.url = `http://127.0.0.1:${server.port}/hook`
  return r
}
