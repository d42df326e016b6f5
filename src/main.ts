#!/usr/bin/env bun
/**
 * Process entry: the only place (with config.ts) that touches the outside world: argv,
 * the environment, the wall clock, stdout/stderr and signals. Everything else gets them
 * as arguments.
 */
import { runCli } from './cli'
import { systemClock } from './lib/clock'
import { processEnv } from './config'

const stopSignal = new Promise<string>((resolve) => {
  process.once('SIGTERM', () => resolve('SIGTERM'))
  process.once('SIGINT', () => resolve('SIGINT'))
})

const code = await runCli({
  argv: process.argv.slice(2),
  env: processEnv(),
  clock: systemClock,
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
  stopSignal,
})
process.exit(code)
