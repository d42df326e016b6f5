/**
 * The browser side of the web forms' proof of work, served at /f/pow.js: finds the counter
 * of an altcha-lib challenge (SHA-256 over salt, nonce and a big-endian 32-bit counter, key
 * prefix matched byte by byte) and puts `{ challenge, solution }` in the form's `altcha`
 * input. A plain script of our own rather than altcha's widget: no build step for a second
 * bundle, and SHA-256 in plain JavaScript instead of crypto.subtle, which browsers only
 * offer on HTTPS pages and localhost, where a hosted form on plain HTTP would never solve
 * (docs/decisions.md). It works in slices and yields between them, so the page stays live.
 */
export const SOLVER_JS = `(function () {
  'use strict';
  var K = [], H0 = [];
  (function () {
    var n = 2, found = 0;
    while (found < 64) {
      var prime = true;
      for (var d = 2; d * d <= n; d++) if (n % d === 0) { prime = false; break; }
      if (prime) {
        if (found < 8) H0[found] = (Math.sqrt(n) % 1) * 4294967296 | 0;
        K[found] = (Math.cbrt(n) % 1) * 4294967296 | 0;
        found++;
      }
      n++;
    }
  })();
  var W = new Int32Array(64);
  function sha256(msg) {
    var l = msg.length, n = ((l + 9 + 63) >> 6) << 6, m = new Uint8Array(n), H = H0.slice(), i;
    m.set(msg); m[l] = 0x80;
    var bits = l * 8;
    m[n - 4] = bits >>> 24; m[n - 3] = (bits >>> 16) & 255; m[n - 2] = (bits >>> 8) & 255; m[n - 1] = bits & 255;
    for (var o = 0; o < n; o += 64) {
      for (i = 0; i < 16; i++) W[i] = (m[o + 4 * i] << 24) | (m[o + 4 * i + 1] << 16) | (m[o + 4 * i + 2] << 8) | m[o + 4 * i + 3];
      for (i = 16; i < 64; i++) {
        var x = W[i - 15], y = W[i - 2];
        var s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
        var s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
        W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
      }
      var a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
      for (i = 0; i < 64; i++) {
        var S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        var t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
        var S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        var t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      H[0] = (H[0] + a) | 0; H[1] = (H[1] + b) | 0; H[2] = (H[2] + c) | 0; H[3] = (H[3] + d) | 0;
      H[4] = (H[4] + e) | 0; H[5] = (H[5] + f) | 0; H[6] = (H[6] + g) | 0; H[7] = (H[7] + h) | 0;
    }
    var out = new Uint8Array(32);
    for (i = 0; i < 8; i++) { out[4 * i] = H[i] >>> 24; out[4 * i + 1] = (H[i] >>> 16) & 255; out[4 * i + 2] = (H[i] >>> 8) & 255; out[4 * i + 3] = H[i] & 255; }
    return out;
  }
  function fromHex(h) { var b = new Uint8Array(h.length / 2); for (var i = 0; i < b.length; i++) b[i] = parseInt(h.substr(i * 2, 2), 16); return b; }
  function toHex(b) { var s = ''; for (var i = 0; i < b.length; i++) s += (b[i] < 16 ? '0' : '') + b[i].toString(16); return s; }
  function solve(challenge, done) {
    var p = challenge.parameters;
    if (p.algorithm !== 'SHA-256') return done(null);
    var salt = fromHex(p.salt), nonce = fromHex(p.nonce), prefix = fromHex(p.keyPrefix), len = p.keyLength || 32, cost = Math.max(1, p.cost || 1);
    var buf = new Uint8Array(salt.length + nonce.length + 4), at = salt.length + nonce.length, view = new DataView(buf.buffer), n = 0;
    buf.set(salt, 0); buf.set(nonce, salt.length);
    (function slice() {
      for (var stop = n + 2000; n < stop && n <= 0xffffffff; n++) {
        view.setUint32(at, n, false);
        var k = sha256(buf);
        for (var r = 1; r < cost; r++) k = sha256(k);
        var ok = true;
        for (var j = 0; j < prefix.length; j++) if (k[j] !== prefix[j]) { ok = false; break; }
        if (ok) return done({ counter: n, derivedKey: toHex(k.slice(0, len)) });
      }
      if (n > 0xffffffff) return done(null);
      setTimeout(slice, 0);
    })();
  }
  function setup(form) {
    var status = form.querySelector('[data-mailroom-status]'), field = form.querySelector('input[name="altcha"]');
    var button = form.querySelector('button[type="submit"]'), solved = false, waiting = false;
    function say(t) { if (status) status.textContent = t; }
    form.addEventListener('submit', function (e) { if (!solved) { e.preventDefault(); waiting = true; say('Almost ready: finishing a quick check before sending…'); } });
    function start(challenge) {
      say('Running a quick check that you are not a robot…');
      solve(challenge, function (solution) {
        if (!solution) return say('The check failed. Reload the page to try again.');
        field.value = btoa(JSON.stringify({ challenge: challenge, solution: solution }));
        solved = true;
        form.setAttribute('data-mailroom-ready', '');
        say('Ready.');
        if (waiting) { if (form.requestSubmit) form.requestSubmit(button || undefined); else form.submit(); }
      });
    }
    var inline = form.getAttribute('data-challenge');
    if (inline) return start(JSON.parse(inline));
    fetch(form.getAttribute('data-challenge-url'), { credentials: 'omit' }).then(function (r) { return r.json(); })
      .then(function (body) { start(body.data); }, function () { say('The check could not start. Reload the page to try again.'); });
  }
  function init() { var forms = document.querySelectorAll('form[data-mailroom-form]'); for (var i = 0; i < forms.length; i++) setup(forms[i]); }
  if (typeof document === 'undefined') { if (typeof module !== 'undefined') module.exports = { sha256: sha256, solve: solve }; return; }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init); else init();
})();
`
