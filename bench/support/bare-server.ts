/**
 * The baseline of bench/http.ts: the smallest Bun HTTP server there is. It runs in its own
 * process (never inside the load generator's), listens on 127.0.0.1 with port 0 and prints
 * the port it got; SIGTERM stops it.
 */
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch: () => new Response('Hello, world!'),
})
process.stdout.write(`bare listening on http://127.0.0.1:${server.port}\n`)
process.once('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})
