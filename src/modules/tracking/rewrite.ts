/**
 * Rewrites a message's HTML for tracking, with Bun's HTMLRewriter (lol-html: a streaming
 * HTML parser, so markup is changed where a browser would see it, never by regular
 * expressions over the text):
 * - clicks: the href of every `<a>` pointing at an http(s) URL becomes a tracking link that
 *   redirects to it; other schemes (mailto:, tel:, #fragments) and links marked
 *   `data-mailroom-no-track` are left alone (the marker is removed);
 * - opens: a 1x1 image at the end of `<body>` (or of the document when it has none).
 */

export interface HtmlTracking {
  /** The image URL, when opens are tracked. */
  pixelUrl?: string
  /** The tracking URL of a link target, when clicks are tracked. */
  clickUrl?: (target: string) => string
}

/** What the rewrite did, for the message record and the tests. */
export interface RewriteResult {
  html: string
  links: number
}

const NO_TRACK = 'data-mailroom-no-track'

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

/**
 * Attribute values come from lol-html as written in the source, character references
 * included; a browser follows the decoded URL (HTML Standard 13.2.5.72), so the redirect must
 * go there too: `?a=1&amp;b=2` is `?a=1&b=2`.
 */
export function decodeAttribute(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10)
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
    }
    return NAMED[ref.toLowerCase()] ?? whole
  })
}

/** Only absolute http and https links are tracked; a click link must redirect to a web page. */
export function isTrackableUrl(url: string): boolean {
  return /^https?:\/\/[^\s]+$/i.test(url)
}

const pixel = (url: string) => `<img src="${url}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />`

export function rewriteHtml(html: string, tracking: HtmlTracking): RewriteResult {
  let links = 0
  let body = false
  let rewriter = new HTMLRewriter()
  if (tracking.clickUrl) {
    const clickUrl = tracking.clickUrl
    rewriter = rewriter.on('a[href]', {
      element(el) {
        if (el.hasAttribute(NO_TRACK)) {
          el.removeAttribute(NO_TRACK)
          return
        }
        const target = decodeAttribute(el.getAttribute('href')!.trim())
        if (!isTrackableUrl(target)) return
        el.setAttribute('href', clickUrl(target))
        links++
      },
    })
  }
  if (tracking.pixelUrl) {
    const url = tracking.pixelUrl
    rewriter = rewriter
      .on('body', {
        element(el) {
          if (body) return
          body = true
          el.append(pixel(url), { html: true })
        },
      })
      .onDocument({
        end(end) {
          if (!body) end.append(pixel(url), { html: true })
        },
      })
  }
  return { html: rewriter.transform(html), links }
}
