import { afterEach, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { heapSizeOf } from './support/binary-smoke'
import { startMailroom } from './support/server-process'

// js_heap_ram_mib: `serve` re-executes itself (same pid) with BUN_JSC_forceRAMSize, which
// JavaScriptCore reads only when it starts (decision 63). The executable is checked by the
// binary smoke test; this is `bun src/main.ts`, whose runtime flags must survive the re-exec.
describe('serve sizes the JavaScript heap', () => {
  const dirs: string[] = []
  const procs: Array<{ kill(): void; exited: Promise<number> }> = []
  afterEach(async () => {
    for (const p of procs.splice(0)) (p.kill(), await p.exited)
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
  })
  const serve = async (flags: string[]) => {
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-heap-'))
    dirs.push(dir)
    const { proc } = await startMailroom(['--data-dir', dir, '--smtp-listen', 'off', '--mx-listen', 'off', ...flags])
    procs.push(proc)
    return proc
  }

  test('for 512 MiB by default, in the process that was started', async () => {
    const proc = await serve([])
    expect(heapSizeOf(proc.pid)).toBe(String(512 * 1024 * 1024))
  }, 60_000)

  test('for the size asked, or left to the runtime with 0', async () => {
    expect(heapSizeOf((await serve(['--js-heap-ram-mib', '300'])).pid)).toBe(String(300 * 1024 * 1024))
    expect(heapSizeOf((await serve(['--js-heap-ram-mib', '0'])).pid)).toBeNull()
  }, 60_000)
})
