import { readFileSync, writeFileSync } from 'node:fs'

/**
 * Memory of a process from /proc/<pid>/status (Linux), in KiB. VmHWM is the peak resident
 * set since the process started, kept by the kernel, so it catches peaks between samples.
 * RssAnon is the heap and stacks; RssFile is file pages mapped in (the binary, and SQLite's
 * memory-mapped database reads); both count towards VmRSS and VmHWM.
 */
export interface ProcMemory {
  vmRssKiB: number
  vmHwmKiB: number
  rssAnonKiB: number
  rssFileKiB: number
  rssShmemKiB: number
}

/** A file of /proc/<pid>/; null once the process has gone. */
function procFile(pid: number | 'self', name: string): string | null {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'utf8')
  } catch {
    return null
  }
}

/** The memory lines of /proc/<pid>/status (`self` for this process); null once it has gone. */
export function readProcMemory(pid: number | 'self'): ProcMemory | null {
  const text = procFile(pid, 'status')
  if (text === null) return null
  const kib = (name: string) => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)
    return m ? Number(m[1]) : 0
  }
  return { vmRssKiB: kib('VmRSS'), vmHwmKiB: kib('VmHWM'), rssAnonKiB: kib('RssAnon'), rssFileKiB: kib('RssFile'), rssShmemKiB: kib('RssShmem') }
}

/** Resets a process's VmHWM to its current RSS (Linux: writing 5 to /proc/PID/clear_refs); false where that is not possible. */
export function resetPeakMemory(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

/**
 * Samples a process's memory every `everyMs` until stopped, keeping the largest value of
 * each line; `last` is the latest sample.
 */
export function sampleMemory(pid: number, everyMs = 100) {
  const max: ProcMemory = { vmRssKiB: 0, vmHwmKiB: 0, rssAnonKiB: 0, rssFileKiB: 0, rssShmemKiB: 0 }
  let last: ProcMemory | null = null
  let samples = 0
  const take = () => {
    const m = readProcMemory(pid)
    if (!m) return
    last = m
    samples++
    for (const k of Object.keys(max) as Array<keyof ProcMemory>) max[k] = Math.max(max[k], m[k])
  }
  take()
  const timer = setInterval(take, everyMs)
  return {
    max,
    get last() {
      return last
    },
    get samples() {
      return samples
    },
    /** Takes a last sample and stops. */
    stop(): ProcMemory {
      clearInterval(timer)
      take()
      return max
    },
  }
}

/** KiB -> MiB with one decimal. */
export function fmtMiB(kib: number): string {
  return (kib / 1024).toFixed(1)
}

/** Clock ticks per second of /proc/<pid>/stat times (`getconf CLK_TCK`: 100 on Linux). */
const CLOCK_TICKS_PER_S = 100

/**
 * CPU time a process has used so far (user + system, all its threads), in milliseconds, from
 * /proc/<pid>/stat fields 14 and 15 (clock ticks); null
 * once it has gone. The difference of two readings is the CPU a run cost that process.
 */
export function readProcCpuMs(pid: number | 'self'): number | null {
  const split = readProcCpuSplitMs(pid)
  return split && split.user + split.system
}

/**
 * The same split into user and system (kernel) time; with `tid`, one thread's
 * (/proc/<pid>/task/<tid>/stat; the main thread's id is the process's).
 */
export function readProcCpuSplitMs(pid: number | 'self', tid?: number): { user: number; system: number } | null {
  const text = procFile(pid, tid === undefined ? 'stat' : `task/${tid}/stat`)
  if (text === null) return null
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis are plain.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { user: (Number(fields[11]) * 1000) / CLOCK_TICKS_PER_S, system: (Number(fields[12]) * 1000) / CLOCK_TICKS_PER_S }
}

/**
 * A thread's time waiting to run: runnable, but the (guest's) scheduler gave its CPU to
 * something else (the second field of schedstat, in ns), in ms; without `tid`, the main
 * thread's (/proc/<pid>/schedstat). Time the hypervisor takes the virtual CPU away is not in
 * it: the guest does not see that.
 */
export function readRunQueueWaitMs(pid: number | 'self', tid?: number): number | null {
  const text = procFile(pid, tid === undefined ? 'schedstat' : `task/${tid}/schedstat`)
  return text === null ? null : Number(text.split(' ')[1]) / 1e6
}

/** Busy and total jiffies of the whole machine (all CPUs, /proc/stat), for the share of it in use between two readings. */
export function readMachineTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!
  const n = line.trim().split(/\s+/).slice(1).map(Number)
  const total = n.reduce((a, b) => a + b, 0)
  // idle and iowait (fields 4 and 5) are the time nobody ran.
  return { busy: total - n[3]! - (n[4] ?? 0), total }
}

/**
 * Bytes a process (all its threads) has caused to be written to storage (`write_bytes` of
 * /proc/<pid>/io: the WAL appends and the checkpoints' copies into the database file, once
 * the kernel writes them back); null once it has gone.
 */
export function readProcWriteBytes(pid: number | 'self'): number | null {
  const text = procFile(pid, 'io')
  const m = text && /^write_bytes: (\d+)$/m.exec(text)
  return m ? Number(m[1]) : null
}

/**
 * Waits until a process has used under 5 ms of CPU in 250 ms (at most `maxMs`): work it
 * goes on with after answering (outcomes, checkpoints, garbage collection) would otherwise
 * share the cores with whatever is measured next.
 */
export async function waitUntilIdle(pid: number, maxMs = 30_000): Promise<void> {
  for (let waited = 0; waited < maxMs; waited += 250) {
    const before = readProcCpuMs(pid) ?? 0
    await Bun.sleep(250)
    if ((readProcCpuMs(pid) ?? 0) - before < 5) return
  }
}
