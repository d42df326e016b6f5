import { useQuery, useQueryClient } from '@tanstack/react-query'
import { ApiError, api, setCsrfToken } from './api'

/** The signed-in administrator, as GET /admin/api/session answers. */
export interface Admin {
  id: number | string
  email: string
  role: { id: number | string; name: string }
  permissions: string[]
}

/** The session answer: who is signed in and the token every change must carry. */
export interface SessionAnswer {
  admin: Admin
  csrf_token: string
}

export const SESSION_KEY = ['admin-session'] as const

/** Reads the session; null when nobody is signed in (401). */
export async function fetchSession(): Promise<SessionAnswer | null> {
  try {
    const s = await api<SessionAnswer>('GET', '/admin/api/session')
    setCsrfToken(s.csrf_token)
    return s
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 404)) return null
    throw e
  }
}

/** The session as a query (cached; the shell, the top bar and permission checks share it). */
export function useSession() {
  return useQuery({ queryKey: SESSION_KEY, queryFn: fetchSession, staleTime: 60_000, retry: false })
}

/** After signing in or up: keep the answer so the shell does not fetch it again. */
export function useSetSession() {
  const qc = useQueryClient()
  return (s: SessionAnswer | null) => {
    setCsrfToken(s?.csrf_token ?? null)
    qc.setQueryData(SESSION_KEY, s)
  }
}

/** True when the administrator's role grants the permission ("*" grants everything). */
export function can(admin: Admin | null | undefined, permission: string | null): boolean {
  if (!permission) return true
  if (!admin) return false
  return admin.permissions.includes('*') || admin.permissions.includes(permission)
}
