import { expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Golden test on the whole OpenAPI document (as EmailEngine does): any change to a route,
 * schema, permission or error code shows here as a diff of the committed file. A deliberate
 * change updates it: `UPDATE_GOLDEN=1 npx bun test test/http/openapi-snapshot.test.ts`.
 */
const GOLDEN = join(import.meta.dir, '../fixtures/openapi.golden.json')

const SCRIPT = join(import.meta.dir, '../support/openapi-document.ts')

test('GET /openapi.json matches the committed golden document', async () => {
  // Its own process: see test/support/openapi-document.ts for why.
  const proc = Bun.spawnSync([process.execPath, SCRIPT], { stdout: 'pipe', stderr: 'pipe' })
  expect(proc.stderr.toString()).toBe('')
  expect(proc.exitCode).toBe(0)
  const actual = proc.stdout.toString()
  if (process.env.UPDATE_GOLDEN === '1') writeFileSync(GOLDEN, actual)
  const expected = existsSync(GOLDEN) ? readFileSync(GOLDEN, 'utf8') : ''
  if (actual !== expected) {
    const a = actual.split('\n')
    const e = expected.split('\n')
    let line = 0
    while (line < a.length && a[line] === e[line]) line++
    const around = (lines: string[]) => lines.slice(Math.max(0, line - 3), line + 4).join('\n')
    throw new Error(
      [
        `The OpenAPI document differs from ${GOLDEN} from line ${line + 1}.`,
        `--- golden (committed)\n${around(e)}`,
        `+++ served now\n${around(a)}`,
        'If the change is deliberate, update the file and commit it with the change:',
        '  UPDATE_GOLDEN=1 npx bun test test/http/openapi-snapshot.test.ts',
      ].join('\n\n'),
    )
  }
})
