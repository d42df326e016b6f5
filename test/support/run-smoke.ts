/**
 * CI entry for the smoke routine: `bun test/support/run-smoke.ts dist/mailroom`.
 * Prints one line per step; exits 1 with the reason on the first failure.
 */
import { smokeTestBinary } from './binary-smoke'

const binary = Bun.argv[2]
if (!binary || Bun.argv.length > 3) {
  console.error('usage: bun test/support/run-smoke.ts PATH_TO_BINARY')
  process.exit(2)
}
try {
  await smokeTestBinary(binary, { log: (line) => console.log(line) })
  console.log(`Smoke test passed: ${binary}`)
} catch (e) {
  console.error(`Smoke test FAILED for ${binary}: ${(e as Error).message}`)
  process.exit(1)
}
