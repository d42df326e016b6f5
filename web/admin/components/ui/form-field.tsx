import { Slot } from 'radix-ui'
import * as React from 'react'
import { cn } from '../../lib/utils'
import { Label } from './label'

/**
 * A labelled form control with its hint and its error: the label is tied to the control,
 * the control is marked invalid and described by the error, so a screen reader reads both.
 * Pass the API's `details[field]` (lib/api.ts `fieldError`) as `error`.
 */
export function FormField({
  label,
  hint,
  error,
  className,
  children,
  id: givenId,
}: {
  label: React.ReactNode
  hint?: React.ReactNode
  error?: string | string[] | null
  className?: string
  children: React.ReactElement
  id?: string
}) {
  const autoId = React.useId()
  const id = givenId ?? autoId
  const message = Array.isArray(error) ? error.join(' ') : error
  const hintId = hint ? `${id}-hint` : undefined
  const errorId = message ? `${id}-error` : undefined
  return (
    <div data-slot="form-field" className={cn('grid content-start gap-2', className)}>
      <Label htmlFor={id}>{label}</Label>
      <Slot.Root id={id} aria-invalid={message ? true : undefined} aria-describedby={[hintId, errorId].filter(Boolean).join(' ') || undefined}>
        {children}
      </Slot.Root>
      {hint && !message ? (
        <p id={hintId} className="text-xs text-muted-foreground">
          {hint}
        </p>
      ) : null}
      {message ? (
        <p id={errorId} role="alert" className="text-sm text-destructive">
          {/* Several messages (one per bad entry of a list field) each on a line of their own. */}
          {Array.isArray(error) && error.length > 1
            ? error.map((m, i) => (
                <span key={i} className="block">
                  {m}
                </span>
              ))
            : message}
        </p>
      ) : null}
    </div>
  )
}
