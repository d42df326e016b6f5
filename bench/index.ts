/**
 * `npm run bench` runs every benchmark; `npm run bench -- NAME... [--option ...]` runs the
 * named ones, passing the options to each. Each benchmark is a module under bench/ with
 * `run(argv, command)` resolving to an exit code; add new ones to BENCHMARKS.
 */

export type Benchmark = (argv: string[], command: string) => Promise<number>

const BENCHMARKS: Record<string, { describe: string; load: () => Promise<Benchmark> }> = {
  http: { describe: 'authenticated API GET against a bare Bun.serve (wrk)', load: async () => (await import('./http')).run },
  audience: {
    describe: 'a million-contact CSV import, segment count and listing pages, against a plain bulk insert',
    load: async () => (await import('./audience')).run,
  },
  broadcast: {
    describe: 'a broadcast to a million imported contacts to an SMTP sink: rows, first message, peak memory, DB growth, rate against /v1/send',
    load: async () => (await import('./broadcast')).run,
  },
  delivery: {
    describe:
      '20,000 messages through /v1/send to an SMTP sink via real DNS, with and without DKIM, against a plain SMTP client and Postfix (when installed); --footprint N queues N with the MX silent',
    load: async () => (await import('./delivery')).run,
  },
  accept: {
    describe: 'POST /v1/send alone (MX silent) against Elysia + one bun:sqlite insert with group commit (wrk, 64 connections)',
    load: async () => (await import('./accept')).run,
  },
  smtp: {
    describe: 'messages/s accepted (committed) through the SMTP submission listener from parallel STARTTLS sessions, against a discarding listener',
    load: async () => (await import('./smtp')).run,
  },
  stats: {
    describe: 'GET /api/v2/stats over 5 million events (30 days by day, by domain, IP, ...) and the rollup job rate',
    load: async () => (await import('./stats')).run,
  },
  'raw-mime': {
    describe: 'tracking whole messages: raw-mime.ts against the same rewrite on mailsplit (byte-exactness, and speed as a ratio)',
    load: async () => (await import('./raw-mime')).run,
  },
  'html-text': {
    describe: 'the text part of HTML-only sends: html-text.ts against html-to-text (compiled), CPU per conversion as a ratio',
    load: async () => (await import('./html-text')).run,
  },
  bounces: {
    describe: "reading real bounces: flufl.bounce's 116 test messages (python3-flufl.bounce, read in place) through classifyInbound, scored by its labels",
    load: async () => (await import('./bounces')).run,
  },
  webhooks: { describe: 'webhook deliveries/s for 10,000 queued events to a receiver on loopback', load: async () => (await import('./webhooks')).run },
}

const USAGE = `Usage: npm run bench [-- NAME... [options]]
Runs every benchmark, or the named ones; options go to each (NAME --help lists them).

${Object.entries(BENCHMARKS)
  .map(([name, b]) => `  ${name.padEnd(12)} ${b.describe}`)
  .join('\n')}
`

async function main(argv: string[]): Promise<number> {
  // Option values (`--rounds 5`) are not names: a positional right after an option that takes
  // a value belongs to that option.
  const picked: string[] = []
  const passed: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a.startsWith('-')) {
      passed.push(a)
      const next = argv[i + 1]
      if (!a.includes('=') && next !== undefined && !next.startsWith('-') && !(next in BENCHMARKS)) passed.push(argv[++i]!)
    } else picked.push(a)
  }
  if (picked.length === 0 && (passed.includes('--help') || passed.includes('-h'))) return (process.stdout.write(USAGE), 0)
  const unknown = picked.filter((n) => !(n in BENCHMARKS))
  if (unknown.length) {
    process.stderr.write(`bench: no benchmark named ${unknown.map((n) => `"${n}"`).join(', ')}.\n\n${USAGE}`)
    return 2
  }
  const selected = picked.length ? [...new Set(picked)] : Object.keys(BENCHMARKS)
  const viaNpm = process.env.npm_lifecycle_event === 'bench'
  let worst = 0
  for (const name of selected) {
    process.stdout.write(`\n== ${name}\n`)
    const command = viaNpm ? `npm run bench -- ${name}` : `bun bench/index.ts ${name}`
    const bench = await BENCHMARKS[name]!.load()
    const code = await bench(passed, command)
    if (code !== 0) process.stderr.write(`bench: ${name} exited with ${code}\n`)
    worst = Math.max(worst, code)
  }
  return worst
}

try {
  process.exit(await main(process.argv.slice(2)))
} catch (e) {
  process.stderr.write(`bench: ${(e as Error).message}\n`)
  process.exit(1)
}
