/**
 * The template engine: Handlebars, fenced in. Pure (no database, no clock): the service
 * loads versions and spin tags and hands them here.
 *
 * - One private Handlebars environment (`Handlebars.create()`), so nothing registered
 *   globally by a library can reach templates, with `log` and `lookup` removed.
 * - Every template is checked against its AST before it is compiled: only variables, the
 *   block helpers #if/#unless/#each/#with and our spin helpers are allowed; partials,
 *   decorators, sub-expressions, hash arguments and unknown helpers are refused with their
 *   line and column. Compilation also sets `knownHelpersOnly`, so a plain `{{name}}` is a
 *   property lookup, never a helper call.
 * - Prototype access stays off (Handlebars' default since 4.6, passed explicitly): a lookup
 *   only returns own properties of the variables, which are built on null-prototype objects.
 * - HTML is escaped in `html`; `subject` and `text` are not HTML, so they are rendered
 *   without escaping, and the rendered subject is folded onto one line (header injection,
 *   RFC 5322 section 2.2: a header field body cannot contain CR or LF).
 * - Missing variables come from a walk of the analysed template against the variables of
 *   the call, following the branches Handlebars would render.
 * - Spins pick an alternative by SHA-256 of (recipient, version id, site), so a preview for
 *   a recipient equals what the recipient receives.
 */
import Handlebars from 'handlebars'
import { MAX_ALTERNATIVES, SPIN_TAG_NAME } from '../spin-tags/rules'

export const TEMPLATE_PARTS = ['subject', 'html', 'text'] as const
export type TemplatePart = (typeof TEMPLATE_PARTS)[number]

export interface TemplateSource {
  subject: string
  html: string | null
  text: string | null
}

/** A path as Handlebars reads it: `../` levels, segments, and whether it is a data variable (`@root.x`). */
interface PathRef {
  depth: number
  /** Segments, without the leading `root` of `@root.x`. */
  parts: string[]
  /** `parts` joined with dots, computed once. */
  joined: string
  /** @root.x: read from the variables whatever the scope. */
  root: boolean
  /** @index, @key, @first, @last: set by #each, never a variable. */
  data: boolean
  original: string
}

/** The analysed template: what can be missing, in the shape of the blocks that decide whether it renders. */
type RefNode =
  | { kind: 'value'; path: PathRef }
  | { kind: 'if'; negate: boolean; cond: PathRef; then: RefNode[]; else: RefNode[] }
  | { kind: 'each' | 'with'; subject: PathRef; params: string[]; body: RefNode[]; else: RefNode[] }
  | { kind: 'spin'; name: string }

/**
 * One `{{spin ...}}` or `{{spin_inline ...}}` in a part. `key` identifies it for the choice:
 * the tag (or the inline alternatives) and its occurrence number among equal spins in the
 * part. The first `{{spin "greeting"}}` of the HTML and the first of the text part have the
 * same key, so both parts say the same thing.
 */
interface SpinSite {
  key: string
  name: string | null
  alternatives: string[] | null
}

export interface CompiledPart {
  render: Handlebars.TemplateDelegate
  nodes: RefNode[]
  /** By the helper's source position, `line:column` of its opening braces. */
  sites: Map<string, SpinSite>
  spinNames: string[]
}

export interface CompiledVersion {
  subject: CompiledPart
  html: CompiledPart | null
  text: CompiledPart | null
  /** Named spin tags any part uses, to load before rendering. */
  spinNames: string[]
  /** Source characters, for the cache's budget. */
  size: number
}

export type CompileResult = { ok: true; compiled: CompiledVersion } | { ok: false; errors: Record<string, string[]> }

const BLOCK_HELPERS = new Set(['if', 'unless', 'each', 'with'])
const SPIN_HELPERS = new Set(['spin', 'spin_inline'])
const DATA_VARIABLES = new Set(['root', 'index', 'key', 'first', 'last'])
const HELPER_LIST = '{{spin "name"}}, {{spin_inline "a" "b"}}, #if, #unless, #each and #with'
/** Where the spin helper finds the state of the current render; templates cannot name it (only the data variables above are allowed). */
const SPIN_STATE = 'mailroom_spin_state'

interface SpinState {
  to: string
  versionId: number
  sites: Map<string, SpinSite>
  tags: ReadonlyMap<string, readonly string[]>
}

interface HelperOptions {
  data?: Record<string, unknown>
  loc?: { start: { line: number; column: number } }
}

const locKey = (loc: { start: { line: number; column: number } }) => `${loc.start.line}:${loc.start.column}`

/** The alternative a recipient gets at one spin site: SHA-256 of (address, version id, site key) modulo the count. */
export function chooseAlternative(to: string, versionId: number, siteKey: string, count: number): number {
  // Bun's one-shot hash: about twice as fast as node:crypto's createHash here, and a send renders many spins.
  const digest = Bun.CryptoHasher.hash('sha256', `${to}\n${versionId}\n${siteKey}`) as Buffer
  // 48 bits modulo at most 100 alternatives: the bias is below 1e-12.
  return digest.readUIntBE(0, 6) % count
}

function spinHelper(...args: unknown[]): string {
  const options = args[args.length - 1] as HelperOptions
  const state = options.data?.[SPIN_STATE] as SpinState | undefined
  if (!state || !options.loc) return ''
  const site = state.sites.get(locKey(options.loc))
  if (!site) return ''
  const alternatives = site.alternatives ?? (site.name !== null ? state.tags.get(site.name) : undefined)
  if (!alternatives || alternatives.length === 0) return '' // a tag deleted since: reported as missing
  return alternatives[chooseAlternative(state.to, state.versionId, site.key, alternatives.length)]!
}

const env = Handlebars.create()
env.unregisterHelper('log')
env.unregisterHelper('lookup')
env.registerHelper('spin', spinHelper)
env.registerHelper('spin_inline', spinHelper)

const compileOptions = (part: TemplatePart): CompileOptions => ({
  knownHelpers: { spin: true, spin_inline: true, log: false, lookup: false },
  knownHelpersOnly: true,
  // HTML-escape only the HTML part; a subject or text part with "&amp;" in it would be wrong.
  noEscape: part !== 'html',
  strict: false,
  data: true,
})

const runtimeOptions = (state: SpinState): Handlebars.RuntimeOptions => ({
  data: { [SPIN_STATE]: state },
  allowProtoPropertiesByDefault: false,
  allowProtoMethodsByDefault: false,
})

// ------------------------------------------------------------------------------------
// Checking and analysing the AST
// ------------------------------------------------------------------------------------

class Analysis {
  errors: string[] = []
  sites = new Map<string, SpinSite>()
  spinNames = new Set<string>()
  private counters = new Map<string, number>()

  fail(node: hbs.AST.Node, message: string): void {
    this.errors.push(`line ${node.loc.start.line}, column ${node.loc.start.column + 1}: ${message}`)
  }

  site(node: hbs.AST.Node, base: string, name: string | null, alternatives: string[] | null): void {
    const n = this.counters.get(base) ?? 0
    this.counters.set(base, n + 1)
    this.sites.set(locKey(node.loc), { key: `${base}#${n}`, name, alternatives })
  }

  program(program: hbs.AST.Program | undefined): RefNode[] {
    const out: RefNode[] = []
    const seen = new Set<string>()
    for (const st of program?.body ?? []) {
      switch (st.type) {
        case 'ContentStatement':
        case 'CommentStatement':
          break
        case 'MustacheStatement':
          this.mustache(st as hbs.AST.MustacheStatement, out, seen)
          break
        case 'BlockStatement':
          this.block(st as hbs.AST.BlockStatement, out)
          break
        case 'PartialStatement':
        case 'PartialBlockStatement':
          this.fail(st, 'partials ({{> name}}) are not supported')
          break
        case 'Decorator':
        case 'DecoratorBlock':
          this.fail(st, 'decorators ({{* name}}) are not supported')
          break
        default:
          this.fail(st, `${st.type} is not supported`)
      }
    }
    return out
  }

  /** A variable path: data variables limited to @root, @index, @key, @first, @last; ':' is kept for `spin:` in reports. */
  path(node: hbs.AST.Node, p: hbs.AST.PathExpression): PathRef | null {
    if (p.data && !DATA_VARIABLES.has(p.parts[0] ?? '')) {
      this.fail(node, `@${p.parts[0] ?? ''} is not available; the data variables are @root, @index, @key, @first and @last`)
      return null
    }
    if (p.data && p.parts[0] !== 'root' && p.parts.length > 1) {
      this.fail(node, `@${p.parts[0]} has no fields`)
      return null
    }
    if (p.parts.some((s) => s.includes(':'))) {
      this.fail(node, `"${p.original}": ':' is not allowed in variable names`)
      return null
    }
    const root = p.data && p.parts[0] === 'root'
    const parts = root ? p.parts.slice(1) : p.parts
    return { depth: p.depth, parts, joined: parts.join('.'), root, data: p.data && !root, original: p.original }
  }

  /** The name when a path is a bare identifier (how Handlebars decides a helper call). */
  private simpleName(p: hbs.AST.PathExpression): string | null {
    return !p.data && p.depth === 0 && p.parts.length === 1 && !/^(this|\.)/.test(p.original) ? p.parts[0]! : null
  }

  mustache(st: hbs.AST.MustacheStatement, out: RefNode[], seen: Set<string>): void {
    if (st.path.type !== 'PathExpression') {
      this.fail(st, 'a literal cannot be used as a variable; write it as plain text')
      return
    }
    const path = st.path as hbs.AST.PathExpression
    const name = this.simpleName(path)
    if (st.hash?.pairs.length) {
      this.fail(st, 'named arguments (key=value) are not supported')
      return
    }
    if (name !== null && SPIN_HELPERS.has(name)) {
      this.spin(st, name, out)
      return
    }
    if (name !== null && BLOCK_HELPERS.has(name)) {
      this.fail(st, `${name} is a block helper: {{#${name} variable}}...{{/${name}}}`)
      return
    }
    if (st.params.length > 0) {
      this.fail(st, `unknown helper "${path.original}"; the helpers are ${HELPER_LIST}`)
      return
    }
    const ref = this.path(st, path)
    // The same variable twice in one block reports the same way: keep one (templates repeat {{first_name}} a lot).
    if (ref && !seen.has(ref.original)) {
      seen.add(ref.original)
      out.push({ kind: 'value', path: ref })
    }
  }

  spin(st: hbs.AST.MustacheStatement, helper: string, out: RefNode[]): void {
    const literals = st.params.every((p) => p.type === 'StringLiteral') ? (st.params as hbs.AST.StringLiteral[]).map((p) => p.value) : null
    if (helper === 'spin') {
      const name = literals?.length === 1 ? literals[0]! : null
      if (name === null) {
        this.fail(st, 'spin takes the name of a spin tag in quotes: {{spin "greeting"}} (for inline alternatives use {{spin_inline "Hi" "Hello"}})')
      } else if (!SPIN_TAG_NAME.test(name)) {
        this.fail(st, `"${name}" is not a spin tag name (lower-case letters, digits and underscores, starting with a letter)`)
      } else {
        this.spinNames.add(name)
        this.site(st, `tag:${name}`, name, null)
        out.push({ kind: 'spin', name })
      }
      return
    }
    if (literals === null || literals.length < 2 || literals.length > MAX_ALTERNATIVES || literals.some((a) => a === '')) {
      this.fail(st, `spin_inline takes 2 to ${MAX_ALTERNATIVES} non-empty alternatives in quotes: {{spin_inline "Hi" "Hello" "Hey"}}`)
      return
    }
    this.site(st, `inline:${JSON.stringify(literals)}`, null, literals)
  }

  block(st: hbs.AST.BlockStatement, out: RefNode[]): void {
    const name = this.simpleName(st.path)
    if (name === null || !BLOCK_HELPERS.has(name)) {
      this.fail(st, `unknown block helper "#${st.path.original}"; the block helpers are #if, #unless, #each and #with`)
      return
    }
    if (st.hash?.pairs.length) {
      this.fail(st, 'named arguments (key=value) are not supported')
      return
    }
    const param = st.params[0]
    if (st.params.length !== 1 || param?.type !== 'PathExpression') {
      this.fail(st, `#${name} takes one variable: {{#${name} variable}}...{{/${name}}}`)
      return
    }
    const ref = this.path(st, param as hbs.AST.PathExpression)
    const then = this.program(st.program)
    const otherwise = this.program(st.inverse)
    if (!ref) return
    if (name === 'if' || name === 'unless') out.push({ kind: 'if', negate: name === 'unless', cond: ref, then, else: otherwise })
    else out.push({ kind: name as 'each' | 'with', subject: ref, params: st.program?.blockParams ?? [], body: then, else: otherwise })
  }
}

function compilePart(part: TemplatePart, source: string): { part: CompiledPart } | { errors: string[] } {
  let ast: hbs.AST.Program
  try {
    ast = env.parse(source)
  } catch (err) {
    return { errors: [(err as Error).message] }
  }
  const analysis = new Analysis()
  const nodes = analysis.program(ast)
  if (analysis.errors.length) return { errors: analysis.errors }
  // Compiled from the source, not the AST: parse() has already applied whitespace control to this AST.
  const render = env.compile(source, compileOptions(part))
  const compiled: CompiledPart = { render, nodes, sites: analysis.sites, spinNames: [...analysis.spinNames] }
  try {
    // Handlebars compiles lazily: one empty render surfaces compiler errors now, not on a send.
    render(emptyVariables(), runtimeOptions({ to: '', versionId: 0, sites: compiled.sites, tags: new Map() }))
  } catch (err) {
    return { errors: [(err as Error).message] }
  }
  return { part: compiled }
}

/** Checks and compiles a version's parts; errors are keyed by part (`subject`, `html`, `text`). */
export function compileVersion(source: TemplateSource): CompileResult {
  const errors: Record<string, string[]> = {}
  const parts: Partial<Record<TemplatePart, CompiledPart>> = {}
  for (const part of TEMPLATE_PARTS) {
    const text = source[part]
    if (text === null) continue
    const result = compilePart(part, text)
    if ('errors' in result) errors[part] = result.errors
    else parts[part] = result.part
  }
  if (Object.keys(errors).length) return { ok: false, errors }
  const spinNames = new Set<string>()
  for (const p of Object.values(parts)) for (const n of p.spinNames) spinNames.add(n)
  return {
    ok: true,
    compiled: {
      subject: parts.subject!,
      html: parts.html ?? null,
      text: parts.text ?? null,
      spinNames: [...spinNames],
      size: source.subject.length + (source.html?.length ?? 0) + (source.text?.length ?? 0),
    },
  }
}

// ------------------------------------------------------------------------------------
// Variables
// ------------------------------------------------------------------------------------

/** Marks the objects built from dotted variable names (`user.name` makes a `user` group). */
const GROUP = Symbol('variable group')
type Group = { [key: string]: string | Group }

function newGroup(): Group {
  const g = Object.create(null) as Group
  // A group printed as a value ({{user}} when only user.name exists) renders as nothing, instead of failing.
  Object.defineProperty(g, Symbol.toPrimitive, { value: () => '' })
  Object.defineProperty(g, GROUP, { value: true })
  return g
}

const isGroup = (v: unknown): v is Group => typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[GROUP] === true

function emptyVariables(): Group {
  return newGroup()
}

export type VariablesResult = { ok: true; variables: Group } | { ok: false; errors: Record<string, string[]> }

/**
 * Builds the render context from flat string variables. A dotted name is a nested path:
 * `{"user.name": "Ann"}` is what `{{user.name}}` reads. The objects have no prototype, so
 * no name (`constructor`, `__proto__`) can reach anything but the caller's own values.
 */
export function buildVariables(input: Record<string, string>): VariablesResult {
  const root = newGroup()
  const errors: Record<string, string[]> = {}
  for (const [name, value] of Object.entries(input)) {
    const parts = name.split('.')
    const field = `variables.${name}`
    if (parts.some((p) => p === '')) {
      errors[field] = ['has an empty segment between dots']
      continue
    }
    // Handlebars calls a value's toHTML() when it exists: a variable of that name would break HTML rendering of its parent.
    if (parts.includes('toHTML')) {
      errors[field] = ['"toHTML" is reserved']
      continue
    }
    let node = root
    let clash = false
    for (const p of parts.slice(0, -1)) {
      const next = node[p]
      if (next === undefined) node = node[p] = newGroup()
      else if (isGroup(next)) node = next
      else {
        clash = true
        break
      }
    }
    const last = parts[parts.length - 1]!
    if (clash || isGroup(node[last])) {
      errors[field] = ['clashes with another variable: a name cannot be both a value and the start of a dotted name']
      continue
    }
    node[last] = typeof value === 'string' ? value : String(value)
  }
  return Object.keys(errors).length ? { ok: false, errors } : { ok: true, variables: root }
}

// ------------------------------------------------------------------------------------
// Missing variables
// ------------------------------------------------------------------------------------

interface Scope {
  /** The context value; `undefined` with `opaque` for the item of an #each, which differs per iteration. */
  value: unknown
  opaque: boolean
  /** How to name a path read in this scope (`user.` inside {{#with user}}). */
  prefix: string
  params: string[]
}

/** A value the walk cannot know: the item of an #each, a block parameter, @index. */
const UNKNOWN = Symbol('unknown')

function descend(value: unknown, parts: string[]): unknown {
  let v = value
  for (const p of parts) {
    if (!isGroup(v) || !Object.hasOwn(v, p)) return undefined
    v = v[p]
  }
  return v
}

function lookup(path: PathRef, stack: Scope[]): unknown {
  if (path.data) return UNKNOWN
  if (path.root) return descend(stack[0]!.value, path.parts)
  if (stack.length > 1 && path.depth === 0 && path.parts.length > 0) {
    for (const s of stack) if (s.params.includes(path.parts[0]!)) return UNKNOWN
  }
  const scope = stack[stack.length - 1 - path.depth]
  // ../ beyond the top renders nothing in Handlebars too.
  if (!scope) return undefined
  return scope.opaque ? UNKNOWN : descend(scope.value, path.parts)
}

/** The name to report for a path (`company.address.city` for `address.city` inside {{#with company}}). */
function nameOf(path: PathRef, stack: Scope[]): string {
  if (path.root) return path.joined
  const scope = stack[stack.length - 1 - path.depth]
  return scope ? scope.prefix + path.joined : path.original
}

/** Handlebars' truthiness for our values: a non-empty string or a group. */
const truthy = (v: unknown) => v !== undefined && v !== null && v !== ''

function collectMissing(nodes: RefNode[], stack: Scope[], tags: ReadonlyMap<string, unknown>, missing: Set<string>): void {
  for (const node of nodes) {
    switch (node.kind) {
      case 'value':
        if (lookup(node.path, stack) === undefined) missing.add(nameOf(node.path, stack))
        break
      case 'spin':
        if (!tags.has(node.name)) missing.add(`spin:${node.name}`)
        break
      case 'if': {
        // The tested variable is not reported: testing for it is how a template makes it optional.
        const value = lookup(node.cond, stack)
        if (value === UNKNOWN) {
          collectMissing(node.then, stack, tags, missing)
          collectMissing(node.else, stack, tags, missing)
        } else collectMissing(truthy(value) !== node.negate ? node.then : node.else, stack, tags, missing)
        break
      }
      case 'each':
      case 'with': {
        const value = lookup(node.subject, stack)
        const inner = (s: Omit<Scope, 'params'>) => collectMissing(node.body, [...stack, { ...s, params: node.params }], tags, missing)
        if (value === UNKNOWN) {
          inner({ value: undefined, opaque: true, prefix: '' })
          collectMissing(node.else, stack, tags, missing)
        } else if (!truthy(value)) collectMissing(node.else, stack, tags, missing)
        else if (node.kind === 'each') inner({ value: undefined, opaque: true, prefix: '' })
        else {
          const name = nameOf(node.subject, stack)
          inner({ value, opaque: false, prefix: name === '' ? '' : `${name}.` })
        }
        break
      }
    }
  }
}

// ------------------------------------------------------------------------------------
// Rendering
// ------------------------------------------------------------------------------------

/**
 * A rendered subject on one line: runs of line breaks (CR, LF, NEL, U+2028/9) become one
 * space and other control characters are dropped, so no variable can add a header
 * (RFC 5322 section 2.2; section 3.6.5 for Subject). Not an error: a contact's name with a
 * stray newline should not stop a send.
 */
export function oneLine(subject: string): string {
  // eslint-disable-next-line no-control-regex
  return subject
    .replace(/[\r\n\u0085\u2028\u2029]+/g, ' ')
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '')
    .trim()
}

export interface RenderInput {
  /** The recipient's normalised address ('' for a preview without one). */
  to: string
  versionId: number
  variables: Group
  /** Alternatives of the named spin tags that exist now. */
  spinTags: ReadonlyMap<string, readonly string[]>
}

export interface Rendered {
  subject: string
  html: string | null
  text: string | null
  missing_variables: string[]
}

/** Renders a compiled version for one recipient. */
export function renderVersion(compiled: CompiledVersion, input: RenderInput): Rendered {
  const run = (part: CompiledPart | null) =>
    part === null ? null : part.render(input.variables, runtimeOptions({ to: input.to, versionId: input.versionId, sites: part.sites, tags: input.spinTags }))
  const missing = new Set<string>()
  const root: Scope = { value: input.variables, opaque: false, prefix: '', params: [] }
  for (const part of [compiled.subject, compiled.html, compiled.text]) if (part) collectMissing(part.nodes, [root], input.spinTags, missing)
  return { subject: oneLine(run(compiled.subject)!), html: run(compiled.html), text: run(compiled.text), missing_variables: [...missing] }
}

/** Handlebars' own compile options type, not exported by its typings under a usable name. */
type CompileOptions = Parameters<typeof Handlebars.compile>[1]
