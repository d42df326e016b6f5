import { toast } from 'sonner'

/** Copies text to the clipboard; falls back to a selected hidden textarea where the Clipboard API is missing (plain http). */
export async function copyToClipboard(text: string): Promise<boolean> {
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

/** Copies `text` and says so in a toast: "`what` copied", or how to copy it by hand when the browser refuses. */
export async function copyWithToast(text: string, what: string): Promise<boolean> {
  const ok = await copyToClipboard(text)
  if (ok) toast.success(`${what} copied`)
  else toast.error('Copying failed: select the text and copy it yourself.')
  return ok
}
