#!/usr/bin/env bun
/**
 * Process entry: the only place (with config.ts) that touches the outside world: argv,
 * the environment, the wall clock, stdout/stderr and signals. Everything else gets them
 * as arguments.
 */
import { isAbsolute, relative } from 'node:path'
import { runCli } from './cli'
import { systemClock } from './lib/clock'
import { processEnv } from './config'

const stopSignal = new Promise<string>((resolve) => {
  process.once('SIGTERM', () => resolve('SIGTERM'))
  process.once('SIGINT', () => resolve('SIGINT'))
  // Stop with the program that started us: `npm start` forwards SIGTERM to its child, but
  // not always (npm killed first, or a forward lost under load), and an orphaned server would
  // keep the ports and the database. A parent that exits reparents us, so a changed ppid
  // means it is gone. A server started by init (ppid 1) is never an orphan.
  const parent = process.ppid
  if (parent > 1) {
    const watch = setInterval(() => {
      if (process.ppid === parent) return
      clearInterval(watch)
      resolve('parent exited')
    }, 1000)
    watch.unref()
  }
})

/** A compiled executable runs its bundle from Bun's embedded file system. */
const compiled = Bun.main.startsWith('/$bunfs/')

/** How the operator runs this program, for the hints it prints: the executable, or bun on the source file. */
function programName(): string {
  const cwd = process.cwd()
  const shown = (path: string, dotSlash: boolean) => {
    const rel = relative(cwd, path)
    return rel.startsWith('..') || isAbsolute(rel) ? path : dotSlash ? `./${rel}` : rel
  }
  if (compiled) return shown(process.execPath, true)
  const bun = process.execPath.includes('/node_modules/') ? 'npx bun' : 'bun'
  return `${bun} ${shown(Bun.main, false)}`
}

/** One line typed at the terminal without echo (raw mode: the characters are never printed). */
function promptHidden(prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin
    process.stderr.write(prompt)
    stdin.setRawMode(true)
    stdin.setEncoding('utf8')
    stdin.resume()
    let value = ''
    const finish = () => {
      stdin.off('data', onData)
      stdin.setRawMode(false)
      stdin.pause()
      process.stderr.write('\n')
    }
    const onData = (chunk: string) => {
      for (const c of chunk) {
        if (c === '\r' || c === '\n') return (finish(), resolve(value))
        if (c === '\u0003' || c === '\u0004') return (finish(), reject(new Error('cancelled')))
        if (c === '\u007f' || c === '\b') value = value.slice(0, -1)
        else if (c >= ' ') value += c
      }
    }
    stdin.on('data', onData)
  })
}

/** A password: asked for twice on a terminal, else the first line of stdin (never argv). */
async function readPassword(prompt: string): Promise<string> {
  if (!process.stdin.isTTY) return (await Bun.stdin.text()).split('\n')[0]!.replace(/\r$/, '')
  const first = await promptHidden(`${prompt}: `)
  if (first !== (await promptHidden('Repeat it: '))) throw new Error('the two passwords differ')
  return first
}

/**
 * mimalloc's purge delay (MIMALLOC_PURGE_DELAY, ms): how long freed pages stay committed
 * before they go back to the system. Its default, 100 ms, hands back and faults in again the
 * pages of the buffers every delivered message churns through (the raw message, the DATA
 * block, socket writes): its scavenger thread, page faults and TLB shootdowns. 1 s cut the
 * server's CPU per delivered message by 11 % and left the memory peaks where they were
 * (decision 78).
 */
const ALLOCATOR_PURGE_DELAY_MS = '1000'

/**
 * Applies what the runtime reads only when it starts (cli.ts `tuneRuntime`): JavaScriptCore's
 * heap size (`js_heap_ram_mib`, BUN_JSC_forceRAMSize) and the allocator's purge delay. The
 * process replaces itself (execve: the same pid, arguments and open descriptors) with them
 * set. A variable already set, by us or by the operator, is kept, so this re-executes once.
 */
function tuneRuntime(heapBytes: number | null): void {
  const set: Record<string, string> = {}
  if (heapBytes !== null && process.env.BUN_JSC_forceRAMSize === undefined) set.BUN_JSC_forceRAMSize = String(heapBytes)
  if (process.env.MIMALLOC_PURGE_DELAY === undefined) set.MIMALLOC_PURGE_DELAY = ALLOCATOR_PURGE_DELAY_MS
  if (Object.keys(set).length === 0) return
  // A compiled executable's argv[1] is its bundle's virtual path, which it adds by itself;
  // `bun src/main.ts` needs its runtime flags (execArgv) and the script back.
  const args = compiled ? process.argv.slice(2) : [...process.execArgv, ...process.argv.slice(1)]
  process.execve!(process.execPath, [process.execPath, ...args], { ...process.env, ...set })
}

const code = await runCli({
  argv: process.argv.slice(2),
  env: processEnv(),
  clock: systemClock,
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
  stopSignal,
  program: programName(),
  readPassword,
  tuneRuntime,
})
process.exit(code)
