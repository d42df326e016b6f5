import { afterAll } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * Temporary directories removed once the whole test run is over. This file is preloaded
 * (bunfig.toml), so its afterAll runs after the last test file (Bun's global hooks); `bun
 * test` emits no process 'exit' to hang this on. Without it a full run left about 3,000 data
 * directories in /tmp.
 */
const dirs = new Set<string>()

try {
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
    dirs.clear()
  })
} catch {
  // Outside `bun test` (a script importing the test helpers) there are no hooks: the directories stay.
}

/** A fresh directory under the system's temporary directory, removed after the run. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  dirs.add(dir)
  return dir
}
