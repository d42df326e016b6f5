import { expect, test } from 'bun:test'
import { pageRequest, pageWindow } from '../../src/lib/pagination'

test('pageWindow reads near pages from the start and far pages from the end, covering exactly the page', () => {
  const ids = Array.from({ length: 53 }, (_, i) => i + 1)
  for (const perPage of [1, 7, 10, 53, 100]) {
    for (let page = 1; page <= Math.ceil(53 / perPage) + 1; page++) {
      const req = pageRequest({ page, per_page: perPage })
      const w = pageWindow(req, ids.length)
      const got = !w
        ? []
        : w.descending
          ? [...ids]
              .reverse()
              .slice(w.offset, w.offset + w.limit)
              .reverse()
          : ids.slice(w.offset, w.offset + w.limit)
      expect(got).toEqual(ids.slice(req.offset, req.offset + perPage))
      if (w) expect(w.offset).toBeLessThanOrEqual(Math.ceil(ids.length / 2))
    }
  }
  expect(pageWindow(pageRequest({ page: 1 }), 0)).toBeNull()
})
