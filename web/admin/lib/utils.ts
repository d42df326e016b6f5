import { clsx, type ClassValue } from 'clsx'
import { twMerge } from 'tailwind-merge'

/** Joins class names, letting a later Tailwind class override an earlier one (the shadcn/ui recipe). */
export function cn(...inputs: ClassValue[]): string {
  return twMerge(clsx(inputs))
}

/** A count in the reader's locale (12,345). */
export function formatNumber(n: number): string {
  return new Intl.NumberFormat().format(n)
}

/** A fraction (0..1) as a percentage with one decimal, or a dash when there is none. */
export function formatRate(r: number | null | undefined): string {
  return r == null ? '—' : `${(r * 100).toFixed(1)}%`
}

/** An ISO time as a short local date and time. */
export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '—'
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
}

/** How long ago an ISO time was, in words ("5 minutes ago"). */
export function timeAgo(iso: string, now: number = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000)
  const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' })
  const steps: Array<[Intl.RelativeTimeFormatUnit, number]> = [
    ['year', 31536000],
    ['month', 2592000],
    ['day', 86400],
    ['hour', 3600],
    ['minute', 60],
  ]
  for (const [unit, size] of steps) if (Math.abs(seconds) >= size) return rtf.format(Math.round(seconds / size), unit)
  return rtf.format(seconds, 'second')
}

/** An ISO time as the value of a datetime-local field (local time, minutes). */
export function toLocalInput(iso: string | null | undefined): string {
  if (!iso) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return ''
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`
}

/** A datetime-local value (local time) as ISO 8601 UTC for the API, or null. */
export function fromLocalInput(v: string): string | null {
  if (!v) return null
  const d = new Date(v)
  return Number.isNaN(d.getTime()) ? null : d.toISOString()
}
