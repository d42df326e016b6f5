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
})

/** How the operator runs this program, for the hints it prints: the executable, or bun on the source file. */
function programName(): string {
  const cwd = process.cwd()
  const shown = (path: string, dotSlash: boolean) => {
    const rel = relative(cwd, path)
    return rel.startsWith('..') || isAbsolute(rel) ? path : dotSlash ? `./${rel}` : rel
  }
  // A compiled executable runs its bundle from Bun's embedded file system.
  if (Bun.main.startsWith('/$bunfs/')) return shown(process.execPath, true)
  const bun = process.execPath.includes('/node_modules/') ? 'npx bun' : 'bun'
  return `${bun} ${shown(Bun.main, false)}`
}

const code = await runCli({
  argv: process.argv.slice(2),
  env: processEnv(),
  clock: systemClock,
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
  stopSignal,
  program: programName(),
})
process.exit(code)
