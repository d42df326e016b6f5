declare module '*.sql' {
  const text: string
  export default text
}

declare module '*/standalone.js' {
  const path: string
  export default path
}

/** libmime (nodemailer's author; mailparser's MIME helpers) ships no types; the part used here. */
declare module 'libmime' {
  const libmime: {
    /** Decodes RFC 2047 encoded words in a header value. */
    decodeWords(value: string): string
    /** A content type for a file name's extension; application/octet-stream when unknown. */
    detectMimeType(filename: string): string
  }
  export default libmime
}

/** html-to-text (mailparser's dependency, and bench/html-text.ts's baseline) ships no types; the part used there. */
declare module 'html-to-text' {
  type Options = { wordwrap?: number | false; selectors?: Array<{ selector: string; format?: string }> }
  export function convert(html: string, options?: Options): string
  export function compile(options?: Options): (html: string) => string
}
