/**
 * Turns off Elysia's runtime check of responses against their schemas (issue 18: on the hot
 * path it is per-request work that only finds bugs the tests already find). Elysia skips the
 * check for a schema marked `noValidate` when it compiles a route. Each route gets a shallow
 * copy of its schema carrying the mark as a non-enumerable property: the schema objects are
 * shared by every app built in the process (the tests build many, with validation on), and
 * the OpenAPI document made from the copies reads the same. Must run before the first
 * request (routes compile lazily, once). Returns how many schemas it marked.
 */
export function skipResponseValidation(routes: Array<{ hooks?: unknown }>): number {
  let marked = 0
  const unchecked = (schema: object): object => {
    const copy = { ...schema }
    Object.defineProperty(copy, 'noValidate', { value: true, enumerable: false, configurable: true, writable: true })
    marked++
    return copy
  }
  for (const route of routes) {
    const hooks = route.hooks as { response?: Record<string, unknown> } | undefined
    const response = hooks?.response
    if (!hooks || !response || typeof response !== 'object') continue
    // Only schemas by status code: Elysia builds the validator of a route's single schema (a
    // TypeBox schema, with its kind symbol) at once, so a copy made here would not be read;
    // those few routes keep their check.
    if (Object.getOwnPropertySymbols(response).length > 0) continue
    for (const [status, schema] of Object.entries(response)) if (schema && typeof schema === 'object') response[status] = unchecked(schema)
  }
  return marked
}
