import { describe, expect, test } from 'bun:test'
import { diffLines, MAX_CELLS } from '../../web/admin/pages/templates/line-diff'

const shape = (a: string, b: string) => diffLines(a, b).map((l) => `${l.kind === 'same' ? ' ' : l.kind === 'removed' ? '-' : '+'}${l.text}`)

describe('diffLines (the template versions diff)', () => {
  test('equal texts are all kept, with both line numbers', () => {
    expect(diffLines('a\nb', 'a\nb')).toEqual([
      { kind: 'same', text: 'a', oldNo: 1, newNo: 1 },
      { kind: 'same', text: 'b', oldNo: 2, newNo: 2 },
    ])
  })

  test('a changed line is removed then added; lines around it are kept', () => {
    expect(shape('<p>\nHi {{name}}\n</p>', '<p>\nHello {{name}}\n</p>')).toEqual([' <p>', '-Hi {{name}}', '+Hello {{name}}', ' </p>'])
  })

  test('insertions and deletions in the middle align on the common lines, numbers follow each side', () => {
    const d = diffLines('a\nb\nc\nd', 'a\nc\nx\nd\ne')
    expect(d.map((l) => [l.kind, l.text, l.oldNo, l.newNo])).toEqual([
      ['same', 'a', 1, 1],
      ['removed', 'b', 2, null],
      ['same', 'c', 3, 2],
      ['added', 'x', null, 3],
      ['same', 'd', 4, 4],
      ['added', 'e', null, 5],
    ])
  })

  test('from nothing and to nothing; CRLF and LF are the same line break', () => {
    expect(shape('', 'a\nb')).toEqual(['+a', '+b'])
    expect(shape('a', '')).toEqual(['-a'])
    expect(shape('a\r\nb', 'a\nb')).toEqual([' a', ' b'])
  })

  test('a middle too large to align is shown as removed then added, not computed', () => {
    const n = Math.ceil(Math.sqrt(MAX_CELLS)) + 1
    const a = Array.from({ length: n }, (_, i) => `a${i}`).join('\n')
    const b = Array.from({ length: n }, (_, i) => `b${i}`).join('\n')
    const d = diffLines(`top\n${a}\nend`, `top\n${b}\nend`)
    expect(d[0]).toEqual({ kind: 'same', text: 'top', oldNo: 1, newNo: 1 })
    expect(d.slice(1, n + 1).every((l) => l.kind === 'removed')).toBe(true)
    expect(d.slice(n + 1, 2 * n + 1).every((l) => l.kind === 'added')).toBe(true)
    expect(d.at(-1)).toEqual({ kind: 'same', text: 'end', oldNo: n + 2, newNo: n + 2 })
  })
})
