// A plain static file server for e2e tests of the built site: files of one folder under a sub-path,
// real 404s, correct MIME types for module scripts and wasm, and no COOP/COEP headers (as GitHub
// Pages or a university web space serve it). Records every request path.
import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { extname, resolve, sep } from 'node:path';

/** A test build (`npm run build` with the generated test models) into `outDir` (a production build: vitest sets NODE_ENV=test), of the checkout at `root`. */
export function buildSite(outDir: string, root = resolve(import.meta.dirname, '../..')): void {
  execFileSync('npx', ['vite', 'build', '--outDir', resolve(outDir), '--emptyOutDir', '--logLevel', 'warn'], {
    cwd: root,
    stdio: 'pipe',
    // A test build: dist/models/ gets the generated test models (vite.config.ts, LOUPE_TEST_MODELS).
    env: { ...process.env, NODE_ENV: 'production', LOUPE_TEST_MODELS: '1' },
  });
}

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.svg': 'image/svg+xml',
  '.wasm': 'application/wasm',
  '.jsonl': 'application/x-ndjson',
  '.tsv': 'text/tab-separated-values; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.jpg': 'image/jpeg',
  '.png': 'image/png',
};

export interface StaticServer {
  /** `http://127.0.0.1:<port><prefix>` with a trailing slash. */
  url: string;
  /** Every request as `METHOD path`. */
  requests: string[];
  close(): Promise<void>;
}

/**
 * Serves `root` at `prefix` (e.g. `/course/loupe/`) on 127.0.0.1, any free port. `cors`: also send
 * `Access-Control-Allow-Origin: *`, as GitHub Pages does (a page on another origin can then load
 * module scripts from it).
 */
export async function serveStatic(
  root: string,
  prefix = '/',
  opts: { cors?: boolean } = {},
): Promise<StaticServer> {
  const base = resolve(root);
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    requests.push(`${req.method} ${path}`);
    if (path === prefix.replace(/\/$/, '')) {
      res.writeHead(301, { Location: prefix });
      return void res.end();
    }
    if (!path.startsWith(prefix)) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      return void res.end('not found');
    }
    let file = resolve(base, path.slice(prefix.length));
    if (existsSync(file) && statSync(file).isDirectory()) file = resolve(file, 'index.html');
    if ((file !== base && !file.startsWith(base + sep)) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      return void res.end('not found');
    }
    res.writeHead(200, {
      'Content-Type': MIME[extname(file).toLowerCase()] ?? 'application/octet-stream',
      'Content-Length': String(statSync(file).size),
      ...(opts.cors ? { 'Access-Control-Allow-Origin': '*' } : {}),
    });
    if (req.method === 'HEAD') return void res.end();
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('static server did not bind a TCP port');
  return {
    url: `http://127.0.0.1:${address.port}${prefix}`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
