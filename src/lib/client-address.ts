/** The client address, taking X-Forwarded-For only when the operator says a proxy is in front (its last entry is the one the proxy saw). */
export function clientAddress(request: Request, server: { requestIP(r: Request): { address: string } | null } | null, trustProxy: boolean): string | null {
  if (trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for')
    const last = forwarded?.split(',').pop()?.trim()
    if (last) return last
  }
  return server?.requestIP(request)?.address ?? null
}
