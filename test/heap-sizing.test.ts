import { afterEach, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { environOf } from './support/binary-smoke'
import { startMailroom } from './support/server-process'
import { tempDir } from './support/temp-dirs'

// `serve` re-executes itself (same pid) with what the runtime reads only when it starts:
// BUN_JSC_forceRAMSize for js_heap_ram_mib (decision 63) and mimalloc's purge delay (decision
// 78). The executable is checked by the binary smoke test; this is `bun src/main.ts`, whose
// runtime flags must survive the re-exec.
describe('serve tunes the runtime when it starts', () => {
  const dirs: string[] = []
  const procs: Array<{ kill(): void; exited: Promise<number> }> = []
  afterEach(async () => {
    for (const p of procs.splice(0)) (p.kill(), await p.exited)
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
  })
  const serve = async (flags: string[], env: Record<string, string> = {}) => {
    const dir = tempDir('mailroom-heap-')
    dirs.push(dir)
    const { proc } = await startMailroom(['--data-dir', dir, '--smtp-listen', 'off', '--mx-listen', 'off', ...flags], { env })
    procs.push(proc)
    return proc.pid
  }
  const heap = (pid: number) => environOf(pid, 'BUN_JSC_forceRAMSize')
  const purge = (pid: number) => environOf(pid, 'MIMALLOC_PURGE_DELAY')

  test('the heap for 512 MiB and the allocator purging after 1 s by default, in the process that was started', async () => {
    const pid = await serve([])
    expect(heap(pid)).toBe(String(512 * 1024 * 1024))
    expect(purge(pid)).toBe('1000')
  }, 60_000)

  test('the heap for the size asked, or left to the runtime with 0 (the purge delay still set)', async () => {
    expect(heap(await serve(['--js-heap-ram-mib', '300']))).toBe(String(300 * 1024 * 1024))
    const unsized = await serve(['--js-heap-ram-mib', '0'])
    expect(heap(unsized)).toBeNull()
    expect(purge(unsized)).toBe('1000')
  }, 60_000)

  test("the operator's own values are kept", async () => {
    const pid = await serve([], { BUN_JSC_forceRAMSize: String(256 * 1024 * 1024), MIMALLOC_PURGE_DELAY: '250' })
    expect(heap(pid)).toBe(String(256 * 1024 * 1024))
    expect(purge(pid)).toBe('250')
  }, 60_000)
})
