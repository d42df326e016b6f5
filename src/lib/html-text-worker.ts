/**
 * Worker thread body of the text pool (html-text-pool.ts): the plain-text parts of HTML-only
 * sends, a batch at a time, made off the thread that serves HTTP and runs deliveries. Listed
 * as an extra entrypoint of the single-binary build (scripts/build.ts), since Bun only embeds
 * worker files that are entrypoints.
 */
import { htmlToText } from './html-text'
import { serveRequests } from './worker-serve'

serveRequests<string[], string[]>((htmls) => htmls.map((html) => htmlToText(html)))
