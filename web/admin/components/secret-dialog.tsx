import { CheckIcon, CopyIcon, TriangleAlertIcon } from 'lucide-react'
import { useState, type ReactNode } from 'react'
import { toast } from 'sonner'
import { Button } from './ui/button'
import { Dialog, DialogContent, DialogDescription, DialogFooter, DialogHeader, DialogTitle } from './ui/dialog'

/** Copies text to the clipboard; falls back to a selected hidden textarea where the Clipboard API is missing (plain http). */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text)
      return true
    }
  } catch {
    // fall through to the old way
  }
  const area = document.createElement('textarea')
  area.value = text
  area.setAttribute('readonly', '')
  area.style.position = 'fixed'
  area.style.opacity = '0'
  document.body.appendChild(area)
  area.select()
  const ok = document.execCommand('copy')
  area.remove()
  return ok
}

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
  children,
}: {
  open: boolean
  title: string
  description?: ReactNode
  /** What the value is ("API key"), the field's label. */
  label: string
  value: string
  onClose: () => void
  /** More to show under the value (how to use it). */
  children?: ReactNode
}) {
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    if (await copyText(value)) {
      setCopied(true)
      toast.success(`${label} copied`)
    } else toast.error('Copying failed: select the text and copy it yourself.')
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
            <strong className="font-semibold">Copy it now.</strong> It will not be shown again, here or anywhere else. If it is lost, make a new one.
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
            I have stored it
          </Button>
        </DialogFooter>
      </DialogContent>
    </Dialog>
  )
}
