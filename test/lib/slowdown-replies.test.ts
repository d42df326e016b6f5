import { describe, expect, test } from 'bun:test'
import { matchSlowdown } from '../../src/lib/slowdown-replies'
import fixtures from '../fixtures/slowdown-replies.json'

/** Real provider replies (test/fixtures/slowdown-replies.json) and the pace action each must get. */
describe('slow-down and block replies', () => {
  for (const f of fixtures as Array<{ from: string; code: number; enhanced: string | null; text: string; action: string }>) {
    test(`${f.from} ${f.code} ${f.enhanced ?? ''}: ${f.action}`, () => {
      const rule = matchSlowdown({ code: f.code, enhanced: f.enhanced, text: f.text })
      expect(rule === null ? 'null' : rule.action).toBe(f.action)
    })
  }
})
