/**
 * Builds the single release executable: `npm run build` writes dist/mailroom.
 *
 * Everything the server needs at run time is imported by the source, so the bundler
 * embeds it: migrations (`with { type: 'text' }`), web/index.html (text), the Scalar
 * docs bundle (`with { type: 'file' }`) and the console (web/admin/index.html, an HTML
 * import: Bun bundles its React code and Tailwind CSS for the browser). The result runs
 * from an empty directory.
 *
 * Usage: bun run scripts/build.ts [--outfile PATH]
 */
import { mkdirSync, rmSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import tailwind from 'bun-plugin-tailwind'

const root = join(import.meta.dir, '..')

/** Where `npm run build` puts the executable. */
export const DEFAULT_OUTFILE = join(root, 'dist', 'mailroom')

export interface BuiltBinary {
  outfile: string
  bytes: number
  ms: number
}

/**
 * Compiles src/main.ts into one executable at `outfile`. Tests call this with a temp
 * path so they never race with dist/.
 */
export async function buildBinary(outfile: string = DEFAULT_OUTFILE): Promise<BuiltBinary> {
  const target = resolve(outfile)
  mkdirSync(dirname(target), { recursive: true })
  const started = performance.now()
  const result = await Bun.build({
    // Worker threads are entrypoints of their own: Bun embeds only entrypoints and what they import.
    entrypoints: [
      join(root, 'src', 'main.ts'),
      join(root, 'src', 'delivery', 'signer-worker.ts'),
      join(root, 'src', 'lib', 'html-text-worker.ts'),
      join(root, 'src', 'db', 'checkpoint-worker.ts'),
      join(root, 'src', 'modules', 'imports', 'prepare-worker.ts'),
      join(root, 'src', 'modules', 'segments', 'count-worker.ts'),
    ],
    target: 'bun',
    minify: true,
    // Tailwind v4 for the console's stylesheet (development uses it via bunfig.toml [serve.static]).
    plugins: [tailwind],
    // The console's React is its production build (the development one is twice the size and
    // slower). Only literal process.env.NODE_ENV is replaced: the server code never reads it,
    // and Elysia reads Bun.env at run time, which this does not touch.
    define: { 'process.env.NODE_ENV': JSON.stringify('production') },
    // In compile mode the map is embedded in the executable, so a stack trace names src/
    // files and lines even though the code is minified. Bun also writes a copy beside it,
    // removed below: the release is the one file.
    sourcemap: 'linked',
    compile: {
      outfile: target,
      // The binary takes its settings from flags, MAILROOM_* variables and --config only.
      // A stray .env or bunfig.toml in the working directory must not change what it does
      // (bunfig.toml could, for one, preload arbitrary code).
      autoloadDotenv: false,
      autoloadBunfig: false,
      autoloadTsconfig: false,
      autoloadPackageJson: false,
    },
    throw: false,
  })
  if (!result.success) {
    const detail = result.logs.map((l) => String(l)).join('\n')
    throw new Error(`build failed:\n${detail}`)
  }
  for (const output of result.outputs) if (output.kind === 'sourcemap') rmSync(output.path, { force: true })
  return { outfile: target, bytes: statSync(target).size, ms: Math.round(performance.now() - started) }
}

if (import.meta.main) {
  try {
    const { values } = parseArgs({ args: Bun.argv.slice(2), options: { outfile: { type: 'string' } }, strict: true })
    const built = await buildBinary(values.outfile ?? DEFAULT_OUTFILE)
    console.log(`Built ${built.outfile} (${(built.bytes / 1024 / 1024).toFixed(1)} MiB) in ${(built.ms / 1000).toFixed(1)} s`)
  } catch (e) {
    console.error((e as Error).message)
    process.exit(1)
  }
}
