import { expect, test } from 'bun:test'
import { chartSvg, linearFit, trend, type Sample } from '../../bench/soak'

const series = (rss: (t: number) => number, p99: (t: number) => number): Sample[] =>
  Array.from({ length: 90 }, (_, i) => {
    const t = (i + 1) * 10
    return { t, rssMiB: rss(t), ops: 100, p50: 1, p99: p99(t), errors: 0 }
  })

test('the least-squares line of a straight series is that line', () => {
  expect(linearFit([0, 1, 2, 3], [1, 3, 5, 7])).toEqual({ slope: 2, intercept: 1, meanY: 4, sxx: 5 })
  expect(linearFit([5], [4])).toEqual({ slope: 0, intercept: 4, meanY: 4, sxx: 0 })
})

test('the soak calls RSS that keeps growing in the second half not flat, and noise around a level flat', () => {
  const noisy = (level: number) => (t: number) => level + ((t * 7919) % 13) - 6
  const growing = series((t) => 200 + (t / 60) * 6, noisy(20))
  const flat = series(noisy(240), noisy(20))
  expect(trend(growing, (s) => s.rssMiB, 8).flat).toBe(false)
  expect(trend(flat, (s) => s.rssMiB, 8).flat).toBe(true)
  expect(trend(flat, (s) => s.p99, 5).flat).toBe(true)
  const slowing = series(noisy(240), (t) => 10 + t / 10)
  expect(trend(slowing, (s) => s.p99, 5).flat).toBe(false)
})

test("the standard error of a trend's change is zero on a straight line and grows with the scatter around it", () => {
  const p99Trend = (p99: (t: number) => number) =>
    trend(
      series(() => 100, p99),
      (s) => s.p99,
      5,
    )
  expect(p99Trend((t) => 10 + t / 60).changeSe).toBeCloseTo(0, 9)
  // Alternating 0 / 2 around a level of 1: no change, and a standard error of 0.5165 (worked out apart
  // from this code: the slope's sqrt(SSR / (n - 2) / Sxx) times the 7.33 minutes of the second half).
  const z = p99Trend((t) => ((t / 10) % 2) * 2)
  expect(z.change).toBeCloseTo(0, 9)
  expect(z.changeSe).toBeCloseTo(0.5165, 4)
  expect(p99Trend((t) => ((t / 10) % 2) * 20).changeSe).toBeCloseTo(z.changeSe * 10, 6)
})

/** Deterministic noise, uniform in [-amplitude, amplitude] (a linear congruential generator). */
function noise(seed: number, amplitude: number): () => number {
  let x = seed
  return () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    return (x / 2 ** 32) * 2 * amplitude - amplitude
  }
}

test('a p99 change beyond the floor that the scatter alone makes is flat; a steady rise under the same scatter is not', () => {
  // Windows scattered by +-25 ms around 40 ms, as the long runs' p99 is: over 40 seeds the
  // fitted change is past the 5 ms floor in many and past twice its standard error in few.
  let beyondFloor = 0
  let notFlat = 0
  for (let seed = 1; seed <= 40; seed++) {
    const jitter = noise(seed, 25)
    const t = trend(
      series(
        () => 100,
        () => 40 + jitter(),
      ),
      (s) => s.p99,
      5,
    )
    if (t.beyondFloor) beyondFloor++
    if (!t.flat) notFlat++
    expect(t.flat).toBe(!(t.beyondFloor && Math.abs(t.change) > 2 * t.changeSe))
  }
  expect(beyondFloor).toBeGreaterThan(10)
  expect(notFlat).toBeLessThan(6)
  // A p99 rising 4 ms a minute (30 ms over the second half) under the same scatter is a trend.
  const jitter = noise(7, 25)
  const rising = trend(
    series(
      () => 100,
      (t) => 40 + (t / 60) * 4 + jitter(),
    ),
    (s) => s.p99,
    5,
  )
  expect(rising.change).toBeGreaterThan(15)
  expect(rising.flat).toBe(false)
})

test('the chart is one SVG with a path per series', () => {
  const svg = chartSvg(
    series(
      () => 100,
      () => 5,
    ),
    'soak',
  )
  expect(svg.startsWith('<svg')).toBe(true)
  expect(svg.match(/<path /g)?.length).toBe(2)
})
