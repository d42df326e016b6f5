import { Loader2Icon } from 'lucide-react'
import type { FormEvent, ReactElement, ReactNode } from 'react'
import { Button } from './ui/button'
import { Dialog, DialogContent, DialogDescription, DialogFooter, DialogHeader, DialogTitle, DialogTrigger } from './ui/dialog'

/**
 * A dialog that is one form: the title and description, the fields, and Cancel beside the
 * submit button. Submitting does not reload the page (`onSubmit` gets the event after
 * `preventDefault`); Cancel runs `onCancel`, else closes.
 */
export function FormDialog({
  open,
  onOpenChange,
  trigger,
  title,
  description,
  onSubmit,
  onCancel,
  submitLabel,
  submitDisabled,
  busy,
  className,
  formClassName = 'grid gap-4',
  noValidate,
  children,
}: {
  open: boolean
  onOpenChange: (open: boolean) => void
  /** The button that opens it, where the dialog owns one. */
  trigger?: ReactElement
  title: ReactNode
  description?: ReactNode
  onSubmit: (e: FormEvent<HTMLFormElement>) => void
  onCancel?: () => void
  submitLabel: ReactNode
  submitDisabled?: boolean
  /** Shows a spinner in the submit button while the change is under way. */
  busy?: boolean
  className?: string
  formClassName?: string
  noValidate?: boolean
  children: ReactNode
}) {
  return (
    <Dialog open={open} onOpenChange={onOpenChange}>
      {trigger ? <DialogTrigger asChild>{trigger}</DialogTrigger> : null}
      <DialogContent className={className}>
        <form
          className={formClassName}
          noValidate={noValidate}
          onSubmit={(e) => {
            e.preventDefault()
            onSubmit(e)
          }}
        >
          <DialogHeader>
            <DialogTitle>{title}</DialogTitle>
            {description ? <DialogDescription>{description}</DialogDescription> : null}
          </DialogHeader>
          {children}
          <DialogFooter>
            <Button type="button" variant="outline" onClick={onCancel ?? (() => onOpenChange(false))}>
              Cancel
            </Button>
            <Button type="submit" disabled={submitDisabled}>
              {busy === undefined ? (
                submitLabel
              ) : (
                <>
                  {busy ? <Loader2Icon className="animate-spin" /> : null} {submitLabel}
                </>
              )}
            </Button>
          </DialogFooter>
        </form>
      </DialogContent>
    </Dialog>
  )
}
