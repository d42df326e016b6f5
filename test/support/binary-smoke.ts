/**
 * Smoke routine for a built executable: what an operator does in the first minute, run
 * against a copy of the binary alone in an empty directory, so anything it reads from
 * beside itself (migrations, the landing page, the docs bundle) shows up as a failure.
 *
 * Used by test/binary.test.ts and by CI (test/support/run-smoke.ts) on dist/mailroom.
 * Every step has a bounded wait, and the server is killed in `finally` whatever happens.
 */
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { createResolver } from '../../src/lib/dns'
import { VERSION } from '../../src/version'
import { startDnsServer, type DnsServer } from './dns-server'
import { startSmtpSink, type SmtpSink } from './smtp-sink'

export interface SmokeOptions {
  /** Receives one line per finished step. */
  log?: (line: string) => void
  /** Keep the temp directory (for a post-mortem); it is removed by default. */
  keepDir?: boolean
}

export interface SmokeReport {
  dir: string
  port: number
  scalarBytes: number
}

/** Bounds for each wait; generous, since a cold 100 MB executable can be slow to start on a busy CI box. */
const COMMAND_MS = 30_000
const READY_MS = 30_000
const REQUEST_MS = 10_000
const STOP_MS = 10_000

class SmokeFailure extends Error {}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new SmokeFailure(message)
}

interface Finished {
  code: number | null
  signal: string | number | null
  stdout: string
  stderr: string
}

/** Collects a stream as text in the background; the child never blocks on a full pipe. */
function drain(stream: ReadableStream<Uint8Array>) {
  const state = { text: '' }
  const done = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) state.text += decoder.decode(chunk, { stream: true })
    state.text += decoder.decode()
  })()
  return { state, done }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The promise's value, or null after `ms`; the timer is cleared so it never holds the process open. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([promise, new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)))])
  } finally {
    clearTimeout(timer)
  }
}

/** A variable of a running process's environment (Linux /proc), or null. */
export function environOf(pid: number, name: string): string | null {
  const vars = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
  return vars.find((v) => v.startsWith(`${name}=`))?.slice(name.length + 1) ?? null
}

/**
 * Runs the binary in `dir` with a clean environment: only PATH, and HOME pointing at the
 * temp directory, so no MAILROOM_* variable or user file from the caller leaks in.
 */
function environment(dir: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir }
}

async function runCommand(binary: string, dir: string, args: string[]): Promise<Finished> {
  const proc = Bun.spawn([binary, ...args], {
    cwd: dir,
    env: environment(dir),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    timeout: COMMAND_MS,
    killSignal: 'SIGKILL',
  })
  const out = drain(proc.stdout)
  const err = drain(proc.stderr)
  const code = await proc.exited
  await Promise.all([out.done, err.done])
  const finished = { code: proc.signalCode ? null : code, signal: proc.signalCode, stdout: out.state.text, stderr: err.state.text }
  check(!finished.signal, `mailroom ${args.join(' ')}: killed by ${finished.signal} (no exit within ${COMMAND_MS} ms?)\nstderr: ${finished.stderr}`)
  return finished
}

function describe(args: string[], r: Finished): string {
  return `mailroom ${args.join(' ')} exited ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`
}

async function expectExit(binary: string, dir: string, args: string[], code: number): Promise<Finished> {
  const r = await runCommand(binary, dir, args)
  check(r.code === code, `expected exit ${code}: ${describe(args, r)}`)
  return r
}

async function request(url: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_MS) })
}

/**
 * Copies `binaryPath` into a new empty temp directory and exercises it there: --version,
 * --help, a bad setting, key creation, the server on an ephemeral port (health, an
 * authenticated API call, the embedded docs), a clean SIGTERM stop, and finally that a
 * stray .env or bunfig.toml beside the binary is ignored. Throws on the first failure.
 */
export async function smokeTestBinary(binaryPath: string, options: SmokeOptions = {}): Promise<SmokeReport> {
  const log = options.log ?? (() => {})
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-smoke-'))
  const binary = join(dir, 'mailroom')
  copyFileSync(resolve(binaryPath), binary)
  chmodSync(binary, 0o755)
  let server: { kill(signal?: NodeJS.Signals): void; exited: Promise<number> } | null = null
  let sink: SmtpSink | null = null
  let dns: DnsServer | null = null
  try {
    const version = await expectExit(binary, dir, ['--version'], 0)
    check(version.stdout.trim() === `mailroom ${VERSION}`, `--version printed ${JSON.stringify(version.stdout)}, expected "mailroom ${VERSION}"`)
    log(`ok: --version (${version.stdout.trim()})`)

    const help = await expectExit(binary, dir, ['--help'], 0)
    check(help.stdout.includes('Usage:') && help.stdout.includes('keys create'), `--help does not show the usage:\n${help.stdout}`)
    log('ok: --help')

    const bad = await expectExit(binary, dir, ['serve', '--http-listen', 'nonsense'], 2)
    const badLines = bad.stderr.trimEnd().split('\n')
    check(
      badLines.length === 1 && badLines[0]!.startsWith('mailroom: invalid http_listen'),
      `a bad --http-listen should give one line "mailroom: invalid http_listen ...", got:\n${bad.stderr}`,
    )
    log('ok: bad setting exits 2 with one line')

    // Before any server ran here, keys create refuses to make a database, naming where it looked.
    const early = await expectExit(binary, dir, ['keys', 'create', '--role', 'Administrator', '--name', 'smoke'], 1)
    check(
      early.stderr.startsWith(`mailroom: no database in ${join(dir, 'data')} `) && !existsSync(join(dir, 'data')),
      `keys create without a database should refuse and make nothing, got:\n${early.stderr}`,
    )
    log('ok: keys create refuses to make a database')

    // A recipient's MX and the sending domain's records live in a DNS server on loopback; the
    // MX is a recording sink. A signed delivery proves the DKIM worker thread is in the binary.
    sink = await startSmtpSink({ host: '127.0.0.1' })
    dns = await startDnsServer({
      zones: {
        'example.net': { MX: [{ exchange: 'mx.example.net', priority: 10 }] },
        'mx.example.net': { A: ['127.0.0.1'] },
        'mailroom.test': { A: ['127.0.0.1'] },
      },
    })
    const serveArgs = [
      'serve',
      '--http-listen',
      '127.0.0.1:0',
      // A free port for SMTP submission: never the default, which another server may hold.
      '--smtp-listen',
      '127.0.0.1:0',
      '--hostname',
      'mailroom.test',
      '--mx-port',
      String(sink.port),
      '--dns-servers',
      dns.server,
    ]
    const proc = Bun.spawn([binary, ...serveArgs], {
      cwd: dir,
      env: environment(dir),
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    })
    server = proc
    const out = drain(proc.stdout)
    const err = drain(proc.stderr)
    const serverOutput = () => `--- stdout\n${out.state.text}\n--- stderr\n${err.state.text.slice(-4000)}`

    // Port 0: the kernel picks the port, and the "listening on" line reports the bound one.
    let base: string | null = null
    const readyBy = Date.now() + READY_MS
    while (proc.exitCode === null && Date.now() < readyBy) {
      base = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out.state.text)?.[1] ?? null
      if (base) break
      await sleep(50)
    }
    check(base, `the server did not print "listening on http://127.0.0.1:PORT" (exit ${proc.exitCode}):\n${serverOutput()}`)
    const port = Number(new URL(base).port)
    check(port > 0, `the server printed port ${port}; it should print the port it really bound`)

    let healthy = false
    while (proc.exitCode === null && Date.now() < readyBy) {
      healthy = await request(`${base}/health`).then(
        (r) => r.ok,
        () => false,
      )
      if (healthy) break
      await sleep(100)
    }
    check(healthy, `GET /health never answered 200:\n${serverOutput()}`)
    log(`ok: serve on ${base}, /health`)

    // js_heap_ram_mib (512 by default): the executable re-executed itself, same pid, with the heap size set.
    const heap = environOf(proc.pid, 'BUN_JSC_forceRAMSize')
    check(heap === String(512 * 1024 * 1024), `the server should run with BUN_JSC_forceRAMSize=${512 * 1024 * 1024}, has ${heap}`)
    const purge = environOf(proc.pid, 'MIMALLOC_PURGE_DELAY')
    check(purge === '1000', `the server should run with MIMALLOC_PURGE_DELAY=1000, has ${purge}`)
    log('ok: re-executed with the heap sized for 512 MiB and the allocator purging after 1 s')

    // The hint names the binary as it was started, and works: the server has made the database.
    check(
      out.state.text.includes('No API keys yet. Create the first one with:\n  ./mailroom keys create --role Administrator --name admin\n'),
      `the key hint should name ./mailroom:\n${serverOutput()}`,
    )
    const created = await expectExit(binary, dir, ['keys', 'create', '--role', 'Administrator', '--name', 'smoke'], 0)
    const key = created.stdout.trimEnd().split('\n').at(-1)?.trim() ?? ''
    check(/^mr_\S+$/.test(key), `keys create: last line should be the key, got:\n${created.stdout}`)
    log('ok: the key hint names ./mailroom; keys create on the server database')

    const anonymous = await request(`${base}/api/v2/api-keys`)
    check(anonymous.status === 401, `GET /api/v2/api-keys without a key: expected 401, got ${anonymous.status}`)
    const keys = await request(`${base}/api/v2/api-keys`, { headers: { authorization: `Bearer ${key}` } })
    const body = (await keys.json().catch(() => null)) as { success?: unknown; data?: unknown; meta?: Record<string, unknown> } | null
    check(keys.status === 200, `GET /api/v2/api-keys with the key: expected 200, got ${keys.status} ${JSON.stringify(body)}`)
    check(
      body?.success === true && Array.isArray(body.data) && body.meta && typeof body.meta === 'object',
      `GET /api/v2/api-keys: not the list envelope: ${JSON.stringify(body)}`,
    )
    for (const field of ['current_page', 'per_page', 'total', 'last_page'])
      check(typeof body.meta[field] === 'number', `GET /api/v2/api-keys: meta.${field} missing: ${JSON.stringify(body.meta)}`)
    check(
      (body.data as Array<{ name?: unknown }>).some((k) => k.name === 'smoke'),
      `GET /api/v2/api-keys: the "smoke" key is not listed: ${JSON.stringify(body.data)}`,
    )
    log('ok: authenticated GET /api/v2/api-keys')

    const landing = await request(`${base}/`)
    check(landing.status === 200 && (await landing.text()).toLowerCase().includes('<html'), `GET / did not serve the embedded landing page (${landing.status})`)
    const docs = await request(`${base}/docs`)
    const docsHtml = await docs.text()
    check(
      docs.status === 200 && docsHtml.includes('/docs/assets/scalar.js'),
      `GET /docs: expected 200 and a page loading /docs/assets/scalar.js, got ${docs.status}`,
    )
    const scalar = await request(`${base}/docs/assets/scalar.js`)
    const scalarBytes = (await scalar.arrayBuffer()).byteLength
    check(
      scalar.status === 200 && scalarBytes > 100_000,
      `GET /docs/assets/scalar.js: expected 200 and the embedded bundle, got ${scalar.status} with ${scalarBytes} bytes`,
    )
    const spec = await request(`${base}/openapi.json`)
    check(
      spec.status === 200 && typeof ((await spec.json()) as { openapi?: unknown }).openapi === 'string',
      `GET /openapi.json: expected an OpenAPI document (${spec.status})`,
    )
    log(`ok: /, /docs, /openapi.json, /docs/assets/scalar.js (${scalarBytes} bytes)`)

    const api = async (method: string, path: string, payload?: unknown) => {
      const r = await request(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: payload === undefined ? undefined : JSON.stringify(payload),
      })
      const json = (await r.json().catch(() => null)) as { data?: any } | null
      check(r.ok, `${method} ${path}: HTTP ${r.status} ${JSON.stringify(json)}`)
      return json!.data
    }
    const domain = await api('POST', '/api/v2/sending-domains', { name: 'example.com' })
    dns.publishRecords(domain.dns_records)
    const verified = await api('POST', `/api/v2/sending-domains/${domain.id}/verify`)
    check(verified.status === 'verified', `the sending domain did not verify: ${JSON.stringify(verified.dns_records)}`)
    // HTML only: its text part is made on the text worker thread (an entrypoint of the build).
    const sent = await api('POST', '/v1/send', {
      from: 'ada@example.com',
      to: 'bob@example.net',
      subject: 'Smoke',
      html: '<p>Signed in a <b>worker</b> thread.</p>',
    })
    const [delivered] = (await within(sink.waitFor(1, REQUEST_MS), REQUEST_MS)) ?? []
    check(delivered, `the message ${sent.id} never reached the sink:\n${serverOutput()}`)
    check(
      delivered.raw.toString().includes('Signed in a worker thread.'),
      `the delivered message has no text part made from its HTML:\n${delivered.raw.toString()}`,
    )
    check(!err.state.text.includes('text worker failed'), `the text worker did not run in the executable:\n${serverOutput()}`)
    const dnsServer = dns.server
    const dkim = await dkimVerify(delivered.raw, { resolver: createResolver([dnsServer]).resolve as never })
    check(dkim.results[0]?.status?.result === 'pass', `the delivered message's DKIM signature did not verify: ${JSON.stringify(dkim.results)}`)
    log('ok: a send is delivered over SMTP with its text part and DKIM signature made on worker threads')

    // The Resend read parses the stored message with mailparser, which the server loads only then.
    const read = await request(`${base}/compat/resend/emails/${sent.id}`, { headers: { authorization: `Bearer ${key}` } })
    const readBody = (await read.json().catch(() => null)) as { subject?: string; html?: string } | null
    check(
      read.ok && readBody?.subject === 'Smoke' && readBody.html?.includes('worker'),
      `GET /compat/resend/emails/${sent.id}: HTTP ${read.status} ${JSON.stringify(readBody)}`,
    )
    log('ok: the sent message read back in the Resend format (mailparser, loaded on first use)')

    // A contact import reads its rows on a worker thread (an entrypoint of the build too).
    const list = await api('POST', '/api/v2/lists', { name: 'Smoke' })
    const upload = await request(`${base}/api/v2/imports?list_id=${list.id}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
      body: 'email,first_name\nada@example.org,Ada\nbob@example.org,Bob\n',
    })
    const uploaded = await upload.text()
    check(upload.status === 202, `POST /api/v2/imports: expected 202, got ${upload.status} ${uploaded}`)
    const importId = (JSON.parse(uploaded) as { data: { id: number } }).data.id
    let imported: { status?: string; created?: number } = {}
    const importBy = Date.now() + REQUEST_MS
    while (imported.status !== 'completed' && Date.now() < importBy) {
      await sleep(50)
      imported = await api('GET', `/api/v2/imports/${importId}`)
    }
    check(imported.status === 'completed' && imported.created === 2, `the import did not complete with 2 contacts: ${JSON.stringify(imported)}`)
    check(!err.state.text.includes('the import worker could not start'), `the import worker did not start in the binary:\n${serverOutput()}`)
    log('ok: a CSV import runs on its worker thread')

    proc.kill('SIGTERM')
    const stopped = await within(
      proc.exited.then((code) => ({ code })),
      STOP_MS,
    )
    check(stopped, `the server did not exit within ${STOP_MS} ms of SIGTERM:\n${serverOutput()}`)
    await Promise.all([out.done, err.done])
    check(
      stopped.code === 0 && proc.signalCode === null,
      `after SIGTERM the server exited ${stopped.code} (signal ${proc.signalCode}), expected 0:\n${serverOutput()}`,
    )
    check(out.state.text.includes('Mailroom stopped.'), `after SIGTERM the server did not print "Mailroom stopped.":\n${serverOutput()}`)
    server = null
    // The checkpoint worker (a worker thread, so an entrypoint of the build) ran the last checkpoint.
    check(err.state.text.includes('"msg":"WAL checkpointed"'), `the checkpoint worker did not report its shutdown checkpoint:\n${serverOutput()}`)
    log('ok: SIGTERM stops the server with exit 0, WAL checkpointed by its worker thread')

    // Settings come from flags, MAILROOM_* and --config only: the build switches off Bun's
    // autoloading, so these files beside the binary must change nothing.
    writeFileSync(join(dir, '.env'), 'MAILROOM_LOG_LEVEL=nonsense\n')
    writeFileSync(join(dir, 'bunfig.toml'), 'preload = ["./missing-preload.ts"]\n')
    const migrate = await runCommand(binary, dir, ['migrate'])
    check(
      migrate.code === 0 && migrate.stdout.includes('The database is up to date.'),
      `with a stray .env and bunfig.toml beside it, mailroom migrate should ignore them: ${describe(['migrate'], migrate)}`,
    )
    log('ok: a stray .env and bunfig.toml are ignored')

    return { dir, port, scalarBytes }
  } finally {
    await sink?.close()
    await dns?.close()
    if (server) {
      server.kill('SIGKILL')
      await within(server.exited, STOP_MS)
    }
    if (!options.keepDir) rmSync(dir, { recursive: true, force: true })
  }
}
