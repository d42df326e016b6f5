import { Elysia } from 'elysia'
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

/** A JSON schema as TypeBox builds it, as far as extraFields reads it. */
interface SchemaNode {
  type?: string | string[]
  properties?: Record<string, SchemaNode>
  additionalProperties?: boolean | SchemaNode
  patternProperties?: Record<string, SchemaNode>
  items?: SchemaNode
  anyOf?: SchemaNode[]
  oneOf?: SchemaNode[]
  allOf?: SchemaNode[]
}

/**
 * The paths of the fields in `value` that `schema` does not declare. With response checks on,
 * Elysia removes such fields quietly before it checks; with them off (`validate_responses`
 * false) they would go out. Tests fail on any (strictResponsesPlugin), so a handler cannot
 * come to rely on the removal. For a union, the branch with the fewest undeclared fields.
 */
export function extraFields(schema: SchemaNode | object | undefined, value: unknown, path = ''): string[] {
  return undeclared(schema as SchemaNode | undefined, value, path)
}

function undeclared(schema: SchemaNode | undefined, value: unknown, path: string): string[] {
  if (!schema || value === null || typeof value !== 'object') return []
  const branches = schema.anyOf ?? schema.oneOf
  if (branches) {
    let best: string[] | null = null
    // Only branches of the value's kind: a null branch says nothing of an object's fields.
    const kind = Array.isArray(value) ? 'array' : 'object'
    for (const b of branches) {
      const types = b.type === undefined ? null : [b.type].flat()
      if (types && !types.includes(kind)) continue
      const found = undeclared(b, value, path)
      if (!best || found.length < best.length) best = found
      if (found.length === 0) break
    }
    return best ?? []
  }
  if (schema.allOf) return schema.allOf.length === 1 ? undeclared(schema.allOf[0], value, path) : []
  if (Array.isArray(value)) return schema.items ? value.flatMap((v, i) => undeclared(schema.items, v, `${path}[${i}]`)) : []
  if (!schema.properties && !schema.additionalProperties && !schema.patternProperties) return []
  const found: string[] = []
  for (const [key, v] of Object.entries(value)) {
    const here = path ? `${path}.${key}` : key
    const declared = schema.properties?.[key]
    if (declared) found.push(...undeclared(declared, v, here))
    else if (typeof schema.additionalProperties === 'object') found.push(...undeclared(schema.additionalProperties, v, here))
    else if (schema.patternProperties) {
      const match = Object.entries(schema.patternProperties).find(([p]) => new RegExp(p).test(key))
      if (match) found.push(...undeclared(match[1], v, here))
      else found.push(here)
    } else if (schema.additionalProperties !== true) found.push(here)
  }
  return found
}

type RouteSchemas = Array<{ method: string; path: string; hooks?: { response?: unknown } }>

/**
 * For tests: a handler's answer with a field its response schema does not declare is a 500
 * naming the fields, instead of the field being removed by the response check. Registered
 * before the routes (Elysia's hooks cover only routes registered after them); `routes` is
 * read at the first request.
 */
export function strictResponsesPlugin(routes: () => RouteSchemas) {
  let byRoute: Map<string, unknown> | null = null
  return new Elysia({ name: 'strict-responses' }).onAfterHandle({ as: 'global' }, ({ request, route, set, responseValue }) => {
    byRoute ??= new Map(routes().map((r) => [`${r.method} ${r.path}`, r.hooks?.response]))
    const declared = byRoute.get(`${request.method} ${route}`)
    if (!declared || typeof declared !== 'object') return
    const custom = responseValue as { code?: unknown; response?: unknown } | null
    const [status, body] =
      typeof custom?.code === 'number' ? [custom.code, custom.response] : [typeof set.status === 'number' ? set.status : 200, responseValue]
    const schema = (Object.getOwnPropertySymbols(declared).length > 0 ? declared : (declared as Record<number, unknown>)[status]) as SchemaNode | undefined
    const extra = extraFields(schema, body)
    if (extra.length) throw new Error(`${request.method} ${route} answered fields its ${status} schema does not declare: ${extra.slice(0, 10).join(', ')}`)
  })
}
