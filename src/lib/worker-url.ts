/**
 * Where a worker module is. From source, beside the module that starts it. In the single
 * binary (`bun build --compile`, scripts/build.ts) each worker is an entrypoint of its own,
 * laid out relative to the entrypoints' common directory (src/), while import.meta.url of
 * every bundled module is the executable in Bun's embedded file system (/$bunfs/root/...).
 *
 * @param here import.meta.url of the calling module
 * @param besideCaller the worker's path relative to the caller, e.g. './signer-worker.ts'
 * @param fromSrc the same file relative to src/, e.g. './delivery/signer-worker.ts'
 */
export function workerUrl(here: string, besideCaller: string, fromSrc: string): URL {
  return new URL(here.includes('/$bunfs/') ? fromSrc : besideCaller, here)
}
