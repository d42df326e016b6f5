import { expect, test } from 'bun:test'
import { parseFluflData } from '../../bench/bounces'

// A table shaped like flufl.bounce's helpers.py DATA (written here, not copied): a tuple of
// (detector, file, [byte-string addresses], optional True for a temporary failure).
const SOURCE = `
import os

OTHER = ('not', 'data.txt', [b'nobody@example.com'])

DATA = (
    # Postfix bounces
    ('postfix', 'postfix_09.txt', [b'Alice@Example.com']),
    ('simplematch', 'simple_99.txt', [b'bob@example.org',
                                      b'carol@example.org']),
    ('simplewarning', 'simple_98.txt', [b'dan@example.net'], True),
    # Not a bounce
    ('groupwise', 'groupwise_09.txt', []),
    )
`

test('the labels are read from the DATA tuple only: addresses lower-cased, multi-line entries, the temporary flag, empty lists', () => {
  expect(parseFluflData(SOURCE)).toEqual([
    { detector: 'postfix', file: 'postfix_09.txt', addresses: ['alice@example.com'], temporary: false },
    { detector: 'simplematch', file: 'simple_99.txt', addresses: ['bob@example.org', 'carol@example.org'], temporary: false },
    { detector: 'simplewarning', file: 'simple_98.txt', addresses: ['dan@example.net'], temporary: true },
    { detector: 'groupwise', file: 'groupwise_09.txt', addresses: [], temporary: false },
  ])
  expect(parseFluflData('x = 1')).toEqual([])
})
