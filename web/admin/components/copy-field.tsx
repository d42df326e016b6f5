import { CheckIcon, CopyIcon } from 'lucide-react'
import { useId, useState } from 'react'
import { copyWithToast } from '../lib/clipboard'
import { cn } from '../lib/utils'
import { Button } from './ui/button'

/** "SMTP host" stays, "Password" becomes "password": the label inside a sentence. */
function inSentence(label: string): string {
  return /^[A-Z][A-Z]/.test(label) ? label : label.charAt(0).toLowerCase() + label.slice(1)
}

/** A small button that copies `value`; `label` names what is copied for screen readers and the toast. */
export function CopyButton({ value, label, className, size = 'icon' }: { value: string; label: string; className?: string; size?: 'icon' | 'sm' }) {
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    if (await copyWithToast(value, label)) {
      setCopied(true)
      setTimeout(() => setCopied(false), 1500)
    }
  }
  return (
    <Button
      type="button"
      variant="outline"
      size={size}
      className={cn(size === 'icon' && 'size-8', className)}
      onClick={copy}
      aria-label={`Copy ${inSentence(label)}`}
      title={`Copy ${inSentence(label)}`}
    >
      {copied ? <CheckIcon /> : <CopyIcon />}
      {size === 'sm' ? (copied ? 'Copied' : 'Copy') : null}
    </Button>
  )
}

/** A labelled read-only value (a DNS record value, a credential) with a copy button beside it. */
export function CopyField({ label, value, secret, className }: { label: string; value: string; secret?: boolean; className?: string }) {
  const id = useId()
  return (
    <div className={cn('grid gap-1.5', className)}>
      <label htmlFor={id} className="text-xs font-medium text-muted-foreground">
        {label}
      </label>
      <div className="flex gap-2">
        <input
          id={id}
          readOnly
          value={value}
          onFocus={(e) => e.currentTarget.select()}
          className="h-9 min-w-0 flex-1 rounded-md border border-input bg-muted px-3 font-mono text-sm outline-none focus-visible:ring-[3px] focus-visible:ring-ring/40"
          data-secret={secret ? '' : undefined}
        />
        <CopyButton value={value} label={label} size="sm" />
      </div>
    </div>
  )
}
