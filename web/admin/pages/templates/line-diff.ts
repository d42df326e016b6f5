/**
 * A line diff for comparing two template versions in the console: the longest common
 * subsequence of lines (dynamic programming), walked back into kept, removed and added
 * lines. Templates are at most 512 KiB a part, but a version usually differs in a few lines,
 * so the common head and tail are cut off first and the table only covers the changed
 * middle; past MAX_CELLS the middle is shown as removed-then-added rather than risk the tab.
 * (docs/decisions.md: why this and not a diff package.)
 */

export type DiffLine = { kind: 'same' | 'removed' | 'added'; text: string; oldNo: number | null; newNo: number | null }

/** Beyond this many table cells (rows x columns of the changed middle), no alignment is attempted. */
export const MAX_CELLS = 4_000_000

/** Lines of `a` and `b` as kept, removed and added, in order (removals before additions at each change). */
export function diffLines(a: string, b: string): DiffLine[] {
  const x = a === '' ? [] : a.split(/\r?\n/)
  const y = b === '' ? [] : b.split(/\r?\n/)
  let head = 0
  while (head < x.length && head < y.length && x[head] === y[head]) head++
  let tail = 0
  while (tail < x.length - head && tail < y.length - head && x[x.length - 1 - tail] === y[y.length - 1 - tail]) tail++
  const xm = x.slice(head, x.length - tail)
  const ym = y.slice(head, y.length - tail)
  const out: DiffLine[] = []
  for (let i = 0; i < head; i++) out.push({ kind: 'same', text: x[i]!, oldNo: i + 1, newNo: i + 1 })

  const middle: Array<{ kind: DiffLine['kind']; text: string }> = []
  if (xm.length * ym.length > MAX_CELLS) {
    for (const t of xm) middle.push({ kind: 'removed', text: t })
    for (const t of ym) middle.push({ kind: 'added', text: t })
  } else {
    // lcs[i][j]: the common subsequence length of xm[i..] and ym[j..], one flat array.
    const w = ym.length + 1
    const lcs = new Uint32Array((xm.length + 1) * w)
    for (let i = xm.length - 1; i >= 0; i--)
      for (let j = ym.length - 1; j >= 0; j--)
        lcs[i * w + j] = xm[i] === ym[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!)
    let i = 0
    let j = 0
    while (i < xm.length || j < ym.length) {
      if (i < xm.length && j < ym.length && xm[i] === ym[j]) {
        middle.push({ kind: 'same', text: xm[i]! })
        i++
        j++
      } else if (j >= ym.length || (i < xm.length && lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!)) {
        middle.push({ kind: 'removed', text: xm[i++]! })
      } else {
        middle.push({ kind: 'added', text: ym[j++]! })
      }
    }
  }
  let oldNo = head
  let newNo = head
  for (const m of middle) {
    if (m.kind === 'same') out.push({ ...m, oldNo: ++oldNo, newNo: ++newNo })
    else if (m.kind === 'removed') out.push({ ...m, oldNo: ++oldNo, newNo: null })
    else out.push({ ...m, oldNo: null, newNo: ++newNo })
  }
  for (let k = 0; k < tail; k++) {
    const line = x[x.length - tail + k]!
    out.push({ kind: 'same', text: line, oldNo: ++oldNo, newNo: ++newNo })
  }
  return out
}
