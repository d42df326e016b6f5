import { CheckIcon, CopyIcon, TriangleAlertIcon } from 'lucide-react'
import { useState, type ReactNode } from 'react'
import { copyWithToast } from '../lib/clipboard'
import { Button } from './ui/button'
import { Dialog, DialogContent, DialogDescription, DialogFooter, DialogHeader, DialogTitle } from './ui/dialog'

/**
 * A secret shown once (an API key, bridge credentials, a webhook secret): the value in a
 * read-only field, a copy button, and a warning that it will not be shown again. Closing it
 * is final: the caller drops the value when `onClose` runs.
 */
export function SecretDialog({
  open,
  title,
  description,
  label,
  value,
  onClose,
  warning = 'It will not be shown again, here or anywhere else. If it is lost, make a new one.',
  doneLabel = 'I have stored it',
  children,
}: {
  open: boolean
  title: string
  description?: ReactNode
  /** What the value is ("API key"), the field's label. */
  label: string
  value: string
  onClose: () => void
  /** What follows "Copy it now." in the warning: why it cannot be shown again, what to do when it is lost. */
  warning?: ReactNode
  /** The closing button's words. */
  doneLabel?: string
  /** More to show under the value (how to use it). */
  children?: ReactNode
}) {
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    if (await copyWithToast(value, label)) setCopied(true)
  }
  return (
    <Dialog
      open={open}
      onOpenChange={(o) => {
        if (!o) {
          setCopied(false)
          onClose()
        }
      }}
    >
      <DialogContent className="sm:max-w-xl" onInteractOutside={(e) => e.preventDefault()}>
        <DialogHeader>
          <DialogTitle>{title}</DialogTitle>
          {description ? <DialogDescription>{description}</DialogDescription> : null}
        </DialogHeader>
        <div role="note" className="flex gap-3 rounded-lg border border-warning/40 bg-warning/10 p-3 text-sm">
          <TriangleAlertIcon className="mt-0.5 size-4 shrink-0 text-warning" aria-hidden="true" />
          <p>
            <strong className="font-semibold">Copy it now.</strong> {warning}
          </p>
        </div>
        <div className="grid gap-2">
          <label htmlFor="secret-value" className="text-sm font-medium">
            {label}
          </label>
          <div className="flex gap-2">
            <input
              id="secret-value"
              readOnly
              value={value}
              onFocus={(e) => e.currentTarget.select()}
              className="h-9 min-w-0 flex-1 rounded-md border border-input bg-muted px-3 font-mono text-sm outline-none focus-visible:ring-[3px] focus-visible:ring-ring/40"
              data-secret
            />
            <Button type="button" variant="outline" onClick={copy}>
              {copied ? <CheckIcon /> : <CopyIcon />}
              {copied ? 'Copied' : 'Copy'}
            </Button>
          </div>
        </div>
        {children}
        <DialogFooter>
          <Button type="button" onClick={() => (setCopied(false), onClose())}>
            {doneLabel}
          </Button>
        </DialogFooter>
      </DialogContent>
    </Dialog>
  )
}
