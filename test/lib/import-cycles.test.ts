import { expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

/**
 * No import cycles in src/ (docs/architecture.md, "Layout"): a cycle makes module load order
 * decide which bindings exist yet, and ties two parts of the tree so that neither can move
 * or be tested alone. Type-only imports count too: they are erased at run time, but they tie
 * the files together the same way for a reader and for every later refactor.
 */

const SRC = resolve(import.meta.dir, '../../src')

/** Every .ts and .tsx file under src/, as paths relative to it. */
function sourceFiles(): string[] {
  return (readdirSync(SRC, { recursive: true }) as string[])
    .filter((f) => /\.tsx?$/.test(f) && !f.endsWith('.d.ts'))
    .map((f) => f.split('\\').join('/'))
    .sort()
}

/**
 * The module specifiers a file names: `import ... from`, `import type ... from`,
 * `export ... from` (statements at the start of a line, as the formatter writes them; the
 * text between keyword and `from` holds no quote, parenthesis or `=`, so a match never runs
 * into code), side-effect `import '...'`, and `import('...')` in code or in types.
 */
function specifiersOf(code: string): string[] {
  const found: string[] = []
  const patterns = [
    /^[ \t]*(?:import|export)\b[^'"`()=;]*?\bfrom\s*['"]([^'"]+)['"]/gm,
    /^[ \t]*import\s*['"]([^'"]+)['"]/gm,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ]
  for (const pattern of patterns) for (const m of code.matchAll(pattern)) found.push(m[1]!)
  return found
}

/** A relative specifier resolved to a file under src/ (relative path), as the bundler resolution of tsconfig.json does. */
function resolveSpecifier(from: string, spec: string): string | null {
  const base = resolve(SRC, dirname(from), spec)
  const candidates = [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')]
  for (const c of candidates) if (existsSync(c) && statSync(c).isFile()) return relative(SRC, c).split('\\').join('/')
  return null
}

/** Strongly connected components (Tarjan) of more than one file, or of one file importing itself. */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0
  const indexOf = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const out: string[][] = []
  const visit = (v: string) => {
    indexOf.set(v, index)
    low.set(v, index++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!indexOf.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indexOf.get(w)!))
    }
    if (low.get(v) !== indexOf.get(v)) return
    const component: string[] = []
    let w: string
    do {
      w = stack.pop()!
      onStack.delete(w)
      component.push(w)
    } while (w !== v)
    if (component.length > 1 || graph.get(v)!.includes(v)) out.push(component.sort())
  }
  for (const v of graph.keys()) if (!indexOf.has(v)) visit(v)
  return out
}

const files = sourceFiles()
const known = new Set(files)
const graph = new Map<string, string[]>()
const unresolved: string[] = []
const missed: string[] = []
const transpilers = { ts: new Bun.Transpiler({ loader: 'ts' }), tsx: new Bun.Transpiler({ loader: 'tsx' }) }
for (const file of files) {
  // A shebang line (main.ts) is not TypeScript.
  const code = readFileSync(join(SRC, file), 'utf8').replace(/^#!.*/, '')
  const specs = specifiersOf(code)
  // Bun's own scanner sees the imports that survive compilation (not type-only ones): each must be among ours.
  for (const i of transpilers[file.endsWith('.tsx') ? 'tsx' : 'ts'].scanImports(code)) if (!specs.includes(i.path)) missed.push(`${file}: ${i.path}`)
  const edges = new Set<string>()
  for (const spec of specs.filter((s) => s.startsWith('.'))) {
    const target = resolveSpecifier(file, spec)
    if (target === null) unresolved.push(`${file}: ${spec}`)
    // Files outside src/ (migrations, package.json, the console's pages) are leaves here.
    else if (known.has(target)) edges.add(target)
  }
  graph.set(file, [...edges])
}

test('the scanner reads the tree: every file, every import Bun sees, every relative import resolved', () => {
  expect(files.length).toBeGreaterThan(100)
  expect(missed).toEqual([])
  expect(unresolved).toEqual([])
  // A type-only import and a re-export are edges too.
  expect(specifiersOf("import type { A } from './a'\nexport { B } from '../b'\nexport type * from './c'")).toEqual(['./a', '../b', './c'])
})

test('the cycle finder finds cycles of any length, a self-import, and nothing in a tree', () => {
  const g = (edges: Record<string, string[]>) => new Map(Object.entries(edges))
  expect(cycles(g({ a: ['b'], b: ['c'], c: ['a'], d: ['a'], e: ['e'], f: [] }))).toEqual([['a', 'b', 'c'], ['e']])
  expect(cycles(g({ a: ['b', 'c'], b: ['c'], c: [] }))).toEqual([])
})

test('src/ has no import cycle', () => {
  const found = cycles(graph).map((c) => c.join(' <-> '))
  expect(found, `import cycles in src/:\n${found.join('\n')}`).toEqual([])
})
