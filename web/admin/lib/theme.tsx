import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react'

/** What the person chose: a fixed theme, or whatever the system says. */
export type ThemeChoice = 'light' | 'dark' | 'system'
const KEY = 'mailroom.theme'

/** The saved choice (localStorage), "system" when there is none. */
export function savedTheme(): ThemeChoice {
  try {
    const v = localStorage.getItem(KEY)
    return v === 'light' || v === 'dark' ? v : 'system'
  } catch {
    return 'system'
  }
}

const systemDark = () => window.matchMedia?.('(prefers-color-scheme: dark)').matches ?? false

/** Puts the `dark` class on <html> for a choice; main.tsx calls it before the first render so nothing flashes. */
export function applyTheme(choice: ThemeChoice = savedTheme()): 'light' | 'dark' {
  const resolved = choice === 'system' ? (systemDark() ? 'dark' : 'light') : choice
  document.documentElement.classList.toggle('dark', resolved === 'dark')
  return resolved
}

interface ThemeState {
  choice: ThemeChoice
  resolved: 'light' | 'dark'
  setTheme: (choice: ThemeChoice) => void
}

const ThemeContext = createContext<ThemeState | null>(null)

/** Holds the theme choice: setting it saves it and repaints; "system" follows the OS live. */
export function ThemeProvider({ children }: { children: ReactNode }) {
  const [choice, setChoice] = useState<ThemeChoice>(savedTheme)
  const [resolved, setResolved] = useState<'light' | 'dark'>(() => applyTheme(choice))
  useEffect(() => {
    setResolved(applyTheme(choice))
    if (choice !== 'system' || !window.matchMedia) return
    const mq = window.matchMedia('(prefers-color-scheme: dark)')
    const onChange = () => setResolved(applyTheme('system'))
    mq.addEventListener('change', onChange)
    return () => mq.removeEventListener('change', onChange)
  }, [choice])
  const setTheme = useCallback((next: ThemeChoice) => {
    try {
      if (next === 'system') localStorage.removeItem(KEY)
      else localStorage.setItem(KEY, next)
    } catch {
      // Storage refused (private mode): the choice lasts for this page only.
    }
    setChoice(next)
  }, [])
  const value = useMemo(() => ({ choice, resolved, setTheme }), [choice, resolved, setTheme])
  return <ThemeContext.Provider value={value}>{children}</ThemeContext.Provider>
}

/** The current theme and the way to change it. */
export function useTheme(): ThemeState {
  const state = useContext(ThemeContext)
  if (!state) throw new Error('useTheme outside ThemeProvider')
  return state
}
