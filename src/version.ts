import pkg from '../package.json' with { type: 'json' }

/** The release version, from package.json (embedded at build time). */
export const VERSION: string = pkg.version
