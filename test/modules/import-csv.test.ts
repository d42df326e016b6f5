import { expect, test } from 'bun:test'
import { csvRecords, MAX_QUOTED_CHARS } from '../../src/modules/imports/csv'

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
