import { describe, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { csvRecords, MAX_QUOTED_CHARS } from '../../src/modules/imports/csv'
import { estimateRows, rowCounter, type ImportFormat } from '../../src/modules/imports/source'
import { tempDir } from '../support/temp-dirs'

async function read(text: string, chunkSize = 7): Promise<Array<string[] | string>> {
  async function* chunks() {
    for (let i = 0; i < text.length; i += chunkSize) yield text.slice(i, i + chunkSize)
  }
  const out: Array<string[] | string> = []
  for await (const r of csvRecords(chunks())) out.push('fields' in r ? r.fields : `ERROR ${r.error}`)
  return out
}

test('plain, quoted, escaped, multi-line, CRLF, empty fields, blank lines', async () => {
  for (const size of [1, 3, 7, 1000]) {
    expect(await read('a,b,c\r\n1,"two, too","say ""hi"""\n\n"multi\nline",,x\n"",end\nlast,"q"', size)).toEqual([
      ['a', 'b', 'c'],
      ['1', 'two, too', 'say "hi"'],
      ['multi\nline', '', 'x'],
      ['', 'end'],
      ['last', 'q'],
    ])
  }
})

test('a broken row is reported alone and reading goes on with the next line', async () => {
  expect(await read('a,b\nz@x.com,"pro"oops,\nlast@x.com,free\n', 5)).toEqual([
    ['a', 'b'],
    'ERROR broken quoting: a closing quote is followed by other characters',
    ['last@x.com', 'free'],
  ])
  expect(await read('a,b\nun"quoted,ok\n')).toEqual([
    ['a', 'b'],
    ['un"quoted', 'ok'],
  ])
})

test('a quote that never closes: to the end of the file, or past the cap', async () => {
  expect(await read('a,b\n"open,x\nnext,y\n')).toEqual([['a', 'b'], 'ERROR a quoted value is never closed', ['next', 'y']])
  const long = 'a\n"' + 'x'.repeat(MAX_QUOTED_CHARS + 10) + '\nafter\n'
  expect(await read(long, 5000)).toEqual([['a'], 'ERROR a quoted value is never closed', ['after']])
})

describe('rowCounter: the estimate of total_rows from line breaks', () => {
  const count = (format: ImportFormat, chunks: Array<string | Uint8Array>) => {
    const counter = rowCounter(format)
    for (const c of chunks) counter.push(typeof c === 'string' ? new TextEncoder().encode(c) : c)
    return counter.rows()
  }
  test('a CSV: the header does not count, a last line without a break does, chunk edges do not matter', () => {
    expect(count('csv', ['email\na@x.io\nb@x.io\n'])).toBe(2)
    expect(count('csv', ['email\na@x.io\nb@x.io'])).toBe(2)
    expect(count('csv', ['email\r\na@', 'x.io\r', '\nb@x.io\r\n', ''])).toBe(2)
    expect(count('csv', ['email\n'])).toBe(0)
    expect(count('csv', [])).toBe(0)
  })
  test('JSON Lines: every line is a row', () => {
    expect(count('jsonl', ['{"email":"a@x.io"}\n{"email":', '"b@x.io"}'])).toBe(2)
    expect(count('jsonl', ['{"email":"a@x.io"}\n'])).toBe(1)
  })
  test('the same figure as estimateRows over the stored file', async () => {
    const dir = tempDir('rows-')
    try {
      const text = 'email,name\n' + Array.from({ length: 5000 }, (_, i) => `u${i}@x.io,"N\u00e9${i}"`).join('\r\n')
      writeFileSync(join(dir, 'f.csv'), text)
      const bytes = new TextEncoder().encode(text)
      const chunks: Uint8Array[] = []
      for (let i = 0; i < bytes.length; i += 777) chunks.push(bytes.subarray(i, i + 777))
      expect(await estimateRows(join(dir, 'f.csv'), 'csv')).toBe(5000)
      expect(count('csv', chunks)).toBe(5000)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
