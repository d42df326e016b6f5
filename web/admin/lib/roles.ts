import { useQuery } from '@tanstack/react-query'
import { api, apiPage } from './api'

/** A role as GET /api/v2/roles answers. */
export interface Role {
  id: number
  name: string
  description: string
  permissions: string[]
  builtin: boolean
  key_count: number
  created_at: string
  updated_at: string
}

/** One group of the permission tree (GET /api/v2/permissions). */
export interface PermissionGroup {
  id: string
  name: string
  permissions: Array<{ id: string; action: string; description: string }>
}

/** Every role, for pickers (a role list is short: the first 100 by id). */
export function useAllRoles(enabled = true) {
  return useQuery({ queryKey: ['roles', 'all'], queryFn: () => apiPage<Role>('/api/v2/roles', { per_page: 100 }).then((p) => p.data), enabled })
}

/** The permission tree roles are built from. */
export function usePermissionTree() {
  return useQuery({ queryKey: ['permissions'], queryFn: () => api<PermissionGroup[]>('GET', '/api/v2/permissions'), staleTime: Infinity })
}
