import { AlertCircleIcon } from 'lucide-react'
import type { ReactNode } from 'react'
import { Brand } from '../layout/nav'
import { ThemeMenu } from '../layout/theme-menu'

/** The frame of the signed-out pages (sign-in, first-run setup): a centred card. */
export function AuthLayout({ title, description, children }: { title: string; description: ReactNode; children: ReactNode }) {
  return (
    <div className="relative flex min-h-dvh flex-col items-center justify-center bg-gradient-to-b from-primary/[0.06] via-background to-background px-4 py-12">
      <div className="absolute top-4 right-4">
        <ThemeMenu />
      </div>
      <main className="grid w-full max-w-sm gap-6">
        <div className="flex justify-center">
          <Brand />
        </div>
        <div className="rounded-xl border bg-card p-6 shadow-sm sm:p-8">
          <div className="mb-6 grid gap-1.5 text-center">
            <h1 className="text-xl font-semibold tracking-tight">{title}</h1>
            <p className="text-sm text-muted-foreground">{description}</p>
          </div>
          {children}
        </div>
      </main>
    </div>
  )
}

/** Why the form was refused, above its fields (sign-in and setup). */
export function FormAlert({ children }: { children: ReactNode }) {
  return (
    <div role="alert" className="flex gap-2 rounded-lg border border-destructive/30 bg-destructive/5 p-3 text-sm text-destructive">
      <AlertCircleIcon className="mt-0.5 size-4 shrink-0" aria-hidden="true" />
      <span>{children}</span>
    </div>
  )
}
