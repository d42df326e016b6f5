import type { ReactNode } from 'react'
import { Select, SelectContent, SelectItem, SelectTrigger, SelectValue } from './ui/select'

/**
 * A select as a form control: FormField's id, invalid state and description land on the
 * trigger (the button a person focuses), so the label names it. FormField's Slot cannot give
 * them to a bare Radix Select: its root renders no element. Options come as `options` or as
 * `SelectItem` children.
 */
export function SelectField({
  value,
  onValueChange,
  options,
  children,
  disabled,
  placeholder,
  className,
  ...aria
}: {
  value: string | undefined
  onValueChange: (v: string) => void
  options?: Array<{ value: string; label: string }>
  children?: ReactNode
  disabled?: boolean
  placeholder?: string
  className?: string
  id?: string
  'aria-invalid'?: boolean
  'aria-describedby'?: string
  'aria-label'?: string
}) {
  return (
    <Select value={value} onValueChange={onValueChange} disabled={disabled}>
      <SelectTrigger className={className} {...aria}>
        <SelectValue placeholder={placeholder} />
      </SelectTrigger>
      <SelectContent>
        {options?.map((o) => (
          <SelectItem key={o.value} value={o.value}>
            {o.label}
          </SelectItem>
        ))}
        {children}
      </SelectContent>
    </Select>
  )
}
