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
  }
  export default libmime
}
