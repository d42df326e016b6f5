/** The console's entry (web/admin/index.html loads it): theme first, so the first paint has the right colours. */
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './app'
import { applyTheme } from './lib/theme'

applyTheme()
createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
)
