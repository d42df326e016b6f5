/** A whole-number flag of at least 1: `fallback` when absent, a clear error for anything else. */
export function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new Error(`--${name} takes a whole number of at least 1, not "${value}"`)
  return Number(value)
}
