/**
 * A reference point for `bench/http.ts --profile`: the web framework alone, with nothing of
 * Mailroom (no plugins, hooks, schemas, database or log). The gap between this and the bare
 * Bun.serve is the framework's own cost; the gap between this and Mailroom's /health is ours.
 */
import { Elysia } from 'elysia'

const app = new Elysia().get('/', () => 'Hello, world!').listen({ hostname: '127.0.0.1', port: 0 })
process.stdout.write(`elysia listening on http://127.0.0.1:${app.server!.port}\n`)
process.once('SIGTERM', () => {
  void app.stop(true).finally(() => process.exit(0))
})
