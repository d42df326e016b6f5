import { expect, test } from 'bun:test'
import { resolve } from 'node:path'

/**
 * The packages a server loads only when it first needs them (issue 18, decision 83): each
 * holds 12-17 MiB once loaded, so a static import of one anywhere under src/cli.ts puts that
 * back into every server at rest. Loads the whole command line, as `mailroom serve` does, in
 * a fresh process and lists the packages in its module registry.
 */
const LAZY = ['mailauth', 'mailparser', 'imapflow', 'selfsigned']

test('the server loads mailauth, mailparser, imapflow and selfsigned only on first use', () => {
  const cli = resolve(import.meta.dir, '../../src/cli.ts')
  const script = `await import(${JSON.stringify(cli)}); console.log(JSON.stringify(Object.keys(require.cache)))`
  const run = Bun.spawnSync([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'pipe' })
  expect(run.exitCode).toBe(0)
  const loaded = JSON.parse(run.stdout.toString()) as string[]
  // The registry does list what was loaded: the command line's own modules and its other packages.
  expect(loaded).toContain(cli)
  expect(loaded.some((path) => path.includes('/node_modules/elysia/'))).toBe(true)
  for (const name of LAZY) expect(loaded.filter((path) => path.includes(`/node_modules/${name}/`))).toEqual([])
})
