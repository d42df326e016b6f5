import { useMutation, useQueryClient } from '@tanstack/react-query'
import { Trash2Icon } from 'lucide-react'
import type { ReactElement, ReactNode } from 'react'
import {
  AlertDialog,
  AlertDialogAction,
  AlertDialogCancel,
  AlertDialogContent,
  AlertDialogDescription,
  AlertDialogFooter,
  AlertDialogHeader,
  AlertDialogTitle,
  AlertDialogTrigger,
} from './ui/alert-dialog'
import { toast } from 'sonner'
import { errorMessage } from '../lib/api'
import { Button } from './ui/button'

/**
 * "Delete X?" (or any change that cannot be taken back) asked in an AlertDialog: Cancel, or
 * the confirming button that runs `onConfirm`. Controlled (`open`, `onOpenChange`) or opened
 * by its own `trigger`. It closes on confirming unless `keepOpen` (then the caller closes it
 * when the server has answered, showing `pendingLabel` meanwhile).
 */
export function ConfirmDialog({
  open,
  onOpenChange,
  trigger,
  title,
  description,
  confirmLabel = 'Delete',
  pendingLabel,
  destructive = true,
  pending = false,
  keepOpen = false,
  onConfirm,
}: {
  open?: boolean
  onOpenChange?: (open: boolean) => void
  trigger?: ReactElement
  title: ReactNode
  description: ReactNode
  confirmLabel?: ReactNode
  pendingLabel?: ReactNode
  destructive?: boolean
  pending?: boolean
  keepOpen?: boolean
  onConfirm: () => void
}) {
  return (
    <AlertDialog open={open} onOpenChange={onOpenChange}>
      {trigger ? <AlertDialogTrigger asChild>{trigger}</AlertDialogTrigger> : null}
      <AlertDialogContent>
        <AlertDialogHeader>
          <AlertDialogTitle>{title}</AlertDialogTitle>
          <AlertDialogDescription>{description}</AlertDialogDescription>
        </AlertDialogHeader>
        <AlertDialogFooter>
          <AlertDialogCancel disabled={pending}>Cancel</AlertDialogCancel>
          <AlertDialogAction
            destructive={destructive}
            disabled={pending}
            onClick={(e) => {
              if (keepOpen) e.preventDefault()
              onConfirm()
            }}
          >
            {pending && pendingLabel ? pendingLabel : confirmLabel}
          </AlertDialogAction>
        </AlertDialogFooter>
      </AlertDialogContent>
    </AlertDialog>
  )
}

/** A row's trash-can button (named `label`) that asks before `onConfirm` deletes. */
export function ConfirmDeleteButton({
  label,
  title,
  description,
  onConfirm,
}: {
  label: string
  title: ReactNode
  description: ReactNode
  onConfirm: () => void
}) {
  return (
    <ConfirmDialog
      trigger={
        <Button variant="ghost" size="icon" className="size-8" aria-label={label} title={label}>
          <Trash2Icon />
        </Button>
      }
      title={title}
      description={description}
      onConfirm={onConfirm}
    />
  )
}

/**
 * "Delete X?" answered in an AlertDialog: runs `action`, toasts the outcome, refreshes the
 * queries under `invalidate` and closes.
 */
export function ConfirmDelete({
  open,
  onOpenChange,
  title,
  description,
  confirmLabel = 'Delete',
  action,
  invalidate,
  done,
}: {
  open: boolean
  onOpenChange: (open: boolean) => void
  title: string
  description: ReactNode
  confirmLabel?: string
  action: () => Promise<unknown>
  invalidate: string[]
  done: string
}) {
  const qc = useQueryClient()
  const m = useMutation({
    mutationFn: action,
    onSuccess: async () => {
      toast.success(done)
      onOpenChange(false)
      await Promise.all(invalidate.map((k) => qc.invalidateQueries({ queryKey: [k] })))
    },
    onError: (e) => toast.error(errorMessage(e)),
  })
  return (
    <ConfirmDialog
      open={open}
      onOpenChange={onOpenChange}
      title={title}
      description={description}
      confirmLabel={confirmLabel}
      pendingLabel="Deleting…"
      pending={m.isPending}
      // Stay open until the server has answered.
      keepOpen
      onConfirm={() => m.mutate()}
    />
  )
}
