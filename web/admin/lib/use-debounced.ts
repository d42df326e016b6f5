import { useEffect, useState } from 'react'

/** The value after it has stopped changing for `ms` (search boxes, the live segment count). */
export function useDebounced<T>(value: T, ms = 350): T {
  const [settled, setSettled] = useState(value)
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms)
    return () => clearTimeout(t)
  }, [value, ms])
  return settled
}
