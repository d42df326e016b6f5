/**
 * The release artifact: builds the executable the way `npm run build` does (into a temp
 * path, so it never races with dist/) and runs the smoke routine on a copy of it alone in
 * an empty directory.
 */
import { afterAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { buildBinary } from '../scripts/build'
import { smokeTestBinary } from './support/binary-smoke'
import { tempDir } from './support/temp-dirs'

const outDir = tempDir('mailroom-build-')
afterAll(() => rmSync(outDir, { recursive: true, force: true }))

// Generous: compiling on a 2-core CI machine is slow, and the routine starts the binary six times.
const BUILD_AND_SMOKE_MS = 600_000

test(
  'the compiled binary runs alone in an empty directory',
  async () => {
    const built = await buildBinary(join(outDir, 'mailroom'))
    const steps: string[] = []
    const report = await smokeTestBinary(built.outfile, { log: (line) => steps.push(line) })
    expect(report.port).toBeGreaterThan(0)
    expect(steps.at(-1)).toBe('ok: a stray .env and bunfig.toml are ignored')
  },
  BUILD_AND_SMOKE_MS,
)
