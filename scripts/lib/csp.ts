// The site's Content-Security-Policy, built in one place for the preview server's header, the
// <meta> tag in index.html and dist/_headers (vite.config.ts), so the three cannot drift apart.
//
// A page's fetches are limited to its own origin and the model hub. A shard URL on another host must
// be named at build time (LOUPE_CONNECT_SRC): a policy can only be tightened at run time, never
// widened, so no URL option could allow a host the served policy does not list.

/** The model hub: huggingface.co serves the small files and redirects large ones to its CDNs (cdn-lfs*.huggingface.co, cdn-lfs*.hf.co, cas-bridge.xethub.hf.co). */
export const HUB_SOURCES = ['https://huggingface.co', 'https://*.huggingface.co', 'https://*.hf.co'];

/**
 * Extra `connect-src` sources from LOUPE_CONNECT_SRC (space- or comma-separated origins such as
 * `https://data.example.org`, or `http://127.0.0.1:*` for any port of a host: the e2e site lets the tests'
 * range servers through this way). A value that is not an http(s) origin (or `*.` wildcard host) is an error:
 * a typo must not silently block a deployment's shards, and `*` or a keyword must not widen the policy.
 */
export function extraConnectSources(value: string | undefined): string[] {
  if (!value) return [];
  return value
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((s) => {
      if (!/^https?:\/\/(\*\.)?[a-z0-9.-]+(:\d+|:\*)?$/i.test(s))
        throw new Error(
          `LOUPE_CONNECT_SRC: ${JSON.stringify(s)} is not an origin like https://data.example.org`,
        );
      return s;
    });
}

/**
 * The policy. `meta`: for the <meta> tag, which ignores `frame-ancestors` (Chromium warns about it).
 * `framed`: for embed.html, which any page may frame (no `frame-ancestors`); the app itself may not be.
 * style-src allows inline styles: Svelte's style attributes and Observable Plot's <style> inside its
 * figures need it; inline styles cannot run script. Scripts: only files from this origin, plus
 * compiling WebAssembly ('wasm-unsafe-eval'); no inline script, no eval.
 */
export function contentSecurityPolicy(
  opts: { extraConnect?: string[]; meta?: boolean; framed?: boolean } = {},
): string {
  const directives: [string, string[]][] = [
    ['default-src', ["'self'"]],
    ['script-src', ["'self'", "'wasm-unsafe-eval'"]],
    ['worker-src', ["'self'"]],
    ['style-src', ["'self'", "'unsafe-inline'"]],
    ['img-src', ["'self'", 'blob:', 'data:']],
    ['connect-src', ["'self'", ...HUB_SOURCES, ...(opts.extraConnect ?? [])]],
    ['object-src', ["'none'"]],
    ['base-uri', ["'self'"]],
    ['form-action', ["'self'"]],
  ];
  if (!opts.meta && !opts.framed) directives.push(['frame-ancestors', ["'none'"]]);
  return directives.map(([name, values]) => `${name} ${values.join(' ')}`).join('; ');
}

/**
 * Headers of every response of a static deployment. CORP `cross-origin` and CORS `*`: the site is
 * public files only, and a course page on another site loads loupe-embed.js (a module script: CORS)
 * and frames embed.html (under a cross-origin isolated course page: CORP).
 */
export const SITE_HEADERS: Record<string, string> = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'cross-origin',
  'Access-Control-Allow-Origin': '*',
};

/**
 * dist/_headers (Netlify, Cloudflare Pages): the site headers and the framable policy on every path;
 * the app's pages add a second policy, `frame-ancestors 'none'`, which the browser enforces too (a
 * response's policies all apply), so only embed.html can be framed.
 */
export function headersFile(extraConnect: string[] = []): string {
  const all = Object.entries(SITE_HEADERS).map(([k, v]) => `  ${k}: ${v}`);
  const lines = [
    '/*',
    ...all,
    `  Content-Security-Policy: ${contentSecurityPolicy({ extraConnect, framed: true })}`,
    ...['/', '/index.html'].flatMap((path) => [path, "  Content-Security-Policy: frame-ancestors 'none'"]),
  ];
  return lines.join('\n') + '\n';
}
